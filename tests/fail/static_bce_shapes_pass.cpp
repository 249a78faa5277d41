// PASS
// static: binary cross-entropy of (4,3) probabilities against (4,2) targets: a loss does not broadcast
// (the compiling twin of static_bce_shapes_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4, 3> p;
  static_tensor<float, 4, 3> y;
  auto l = binary_crossentropy(p, y);
}
