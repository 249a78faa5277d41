// PASS
// static: rows [0, 3) of a tensor with 2 rows (the compiling twin of static_shrink_bounds_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 5> a;
  auto b = a.shrink<0, 2, 0, 5>();
}
