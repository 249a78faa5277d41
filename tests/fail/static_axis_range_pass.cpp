// PASS
// static: a rank-2 tensor has axes 0, 1 (and -1, -2) (the compiling twin of static_axis_range_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto s = a.sum<1>();
}
