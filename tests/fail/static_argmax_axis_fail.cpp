// FAIL-FIRST-REGEX: axis_out_of_range<tinygrad::op::argmax<false, 2>, tinygrad::error::shape<2, 3>
// static: argmax along axis 2 of a rank-2 tensor
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto i = a.argmax<2>();
}
