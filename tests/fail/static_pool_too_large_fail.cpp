// FAIL-FIRST-REGEX: window_larger_than_input<tinygrad::op::max_pool2d<5, 5>, tinygrad::error::shape<1, 1, 4, 4>
// static: a 5x5 pooling window on a 4x4 image
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 1, 1, 4, 4> x;
  auto y = max_pool2d<5>(x);
}
