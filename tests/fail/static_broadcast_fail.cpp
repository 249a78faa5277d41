// FAIL-FIRST-REGEX: shapes_not_broadcastable<tinygrad::op::add, tinygrad::error::shape<2, 3>, tinygrad::error::shape<4>
// static: adding a (2,3) and a (4) tensor: trailing dims 3 and 4 do not broadcast
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  static_tensor<float, 4> b;
  auto c = a + b;
}
