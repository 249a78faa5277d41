// PASS
// static: 6 elements do not make a (4,2) (the compiling twin of static_reshape_count_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto b = a.reshape<3, 2>();
}
