// PASS
// static: columns [2, 7) of a tensor with 5 columns (the compiling twin of static_slice_bounds_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4, 5> a;
  auto b = a.slice<1, 2, 5>();
}
