// PASS
// static: the result is (2,3), the tensor it goes into (3,2) (the compiling twin of static_assign_shape_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  static_tensor<float, 3, 2> b = (a * 2.0f).T();
}
