// PASS
// static: a (64,784) by (100,10) matmul: 784 != 100 (the compiling twin of static_matmul_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 64, 784> x;
  static_tensor<float, 784, 10> w;
  auto y = x.matmul(w);
}
