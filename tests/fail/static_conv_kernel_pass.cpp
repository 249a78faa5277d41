// PASS
// static: a 5x5 kernel on a 4x4 image without padding (the compiling twin of static_conv_kernel_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 1, 1, 4, 4> x;
  static_tensor<float, 2, 1, 5, 5> w;
  auto y = conv2d<1, 1>(x, w);
}
