// FAIL-FIRST-REGEX: needs_two_values_per_dim<tinygrad::op::pad<1, 1>, tinygrad::error::shape<2, 3>
// static: pad needs (before, after) for every dim
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto b = a.pad<1, 1>();
}
