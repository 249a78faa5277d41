// FAIL-FIRST-REGEX: slice_out_of_bounds<tinygrad::op::slice<1, 2, 7>, tinygrad::error::shape<4, 5>
// static: columns [2, 7) of a tensor with 5 columns
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 4, 5> a;
  auto b = a.slice<1, 2, 7>();
}
