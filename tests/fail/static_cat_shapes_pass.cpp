// PASS
// static: stacking rows of 3 and rows of 4 (the compiling twin of static_cat_shapes_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  static_tensor<float, 2, 4> b;
  auto c = cat<1>(a, b);
}
