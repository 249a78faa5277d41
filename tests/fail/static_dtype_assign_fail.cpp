// FAIL-FIRST-REGEX: dtypes_differ<tinygrad::op::assign, int, float>
// static: a float expression assigned to an int tensor without a cast
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4> a;
  static_tensor<int32_t, 4> b = a * 2.0f;
}
