// PASS
// static: a 5x5 pooling window on a 4x4 image (the compiling twin of static_pool_too_large_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 1, 1, 4, 4> x;
  auto y = max_pool2d<2>(x);
}
