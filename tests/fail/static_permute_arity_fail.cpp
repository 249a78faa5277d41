// FAIL-FIRST-REGEX: permute_needs_one_axis_per_dim<tinygrad::op::permute<1, 0>, tinygrad::error::shape<2, 3, 4>
// static: a rank-3 tensor needs 3 axes in its permutation
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3, 4> a;
  auto b = a.permute<1, 0>();
}
