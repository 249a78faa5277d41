// FAIL-FIRST-REGEX: expand_does_not_fit<tinygrad::op::expand<4, 3>, tinygrad::error::shape<2, 3>, tinygrad::error::shape<4, 3>
// static: only extents of 1 can be expanded
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto b = a.expand<4, 3>();
}
