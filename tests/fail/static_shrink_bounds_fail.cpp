// FAIL-FIRST-REGEX: shrink_out_of_bounds<tinygrad::op::shrink<0, 3, 0, 5>, tinygrad::error::shape<2, 5>
// static: rows [0, 3) of a tensor with 2 rows
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 5> a;
  auto b = a.shrink<0, 3, 0, 5>();
}
