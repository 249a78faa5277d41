// FAIL-FIRST-REGEX: channels_differ<tinygrad::op::conv2d<1, 0, 1, 1>, tinygrad::error::shape<8, 3, 28, 28>, tinygrad::error::shape<16, 1, 5, 5>
// static: an RGB input (3 channels) against a weight made for 1 channel
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 3, 28, 28> x;
  static_tensor<float, 16, 1, 5, 5> w;
  auto y = conv2d(x, w);
}
