// FAIL-FIRST-REGEX: kernel_larger_than_input<tinygrad::op::conv2d<1, 0, 1, 1>, tinygrad::error::shape<1, 1, 4, 4>, tinygrad::error::shape<2, 1, 5, 5>
// static: a 5x5 kernel on a 4x4 image without padding
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 1, 1, 4, 4> x;
  static_tensor<float, 2, 1, 5, 5> w;
  auto y = conv2d(x, w);
}
