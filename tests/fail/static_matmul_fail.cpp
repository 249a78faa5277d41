// FAIL-FIRST-REGEX: inner_dims_differ<tinygrad::op::matmul, tinygrad::error::shape<64, 784>, tinygrad::error::shape<100, 10>
// static: a (64,784) by (100,10) matmul: 784 != 100
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 64, 784> x;
  static_tensor<float, 100, 10> w;
  auto y = x.matmul(w);
}
