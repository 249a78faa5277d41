// FAIL-FIRST-REGEX: shapes_not_broadcastable<tinygrad::op::mul, tinygrad::error::shape<2, tinygrad::dyn>, tinygrad::error::shape<3, tinygrad::dyn>
// static: the static extents are checked even next to a dyn one
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto a = static_tensor<float, 2, dyn>::zeros(5);
  auto b = static_tensor<float, 3, dyn>::zeros(5);
  auto c = a * b;
}
