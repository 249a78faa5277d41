// FAIL-FIRST-REGEX: shapes_differ<tinygrad::op::binary_crossentropy, tinygrad::error::shape<4, 3>, tinygrad::error::shape<4, 2>
// static: binary cross-entropy of (4,3) probabilities against (4,2) targets: a loss does not broadcast
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4, 3> p;
  static_tensor<float, 4, 2> y;
  auto l = binary_crossentropy(p, y);
}
