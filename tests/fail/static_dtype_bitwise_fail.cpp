// FAIL-FIRST-REGEX: needs_integer_dtype<tinygrad::op::bitwise_and, float, float>
// static: bitwise and of float tensors
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4> a, b;
  auto c = a & b;
}
