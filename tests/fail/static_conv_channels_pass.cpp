// PASS
// static: an RGB input (3 channels) against a weight made for 1 channel (the compiling twin of static_conv_channels_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 3, 28, 28> x;
  static_tensor<float, 16, 3, 5, 5> w;
  auto y = conv2d(x, w);
}
