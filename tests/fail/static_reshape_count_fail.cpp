// FAIL-FIRST-REGEX: reshape_changes_element_count<tinygrad::op::reshape<4, 2>, tinygrad::error::shape<2, 3>, tinygrad::error::shape<4, 2>
// static: 6 elements do not make a (4,2)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto b = a.reshape<4, 2>();
}
