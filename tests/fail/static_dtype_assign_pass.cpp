// PASS
// static: a float expression assigned to an int tensor without a cast (the compiling twin of static_dtype_assign_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4> a;
  static_tensor<int32_t, 4> b = (a * 2.0f).cast<int32_t>();
}
