// FAIL-FIRST-REGEX: shapes_differ<tinygrad::op::cat<0>, tinygrad::error::shape<2, 3>, tinygrad::error::shape<2, 4>
// static: stacking rows of 3 and rows of 4
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  static_tensor<float, 2, 4> b;
  auto c = cat<0>(a, b);
}
