// PASS
// static: bitwise and of float tensors (the compiling twin of static_dtype_bitwise_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<int32_t, 4> a, b;
  auto c = a & b;
}
