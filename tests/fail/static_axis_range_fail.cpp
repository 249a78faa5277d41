// FAIL-FIRST-REGEX: axis_out_of_range<tinygrad::op::sum<false, 2>, tinygrad::error::shape<2, 3>
// static: a rank-2 tensor has axes 0, 1 (and -1, -2)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto s = a.sum<2>();
}
