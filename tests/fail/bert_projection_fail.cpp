// FAIL-FIRST-REGEX: inner_dims_differ<tinygrad::op::matmul, tinygrad::error::shape<tinygrad::dyn, tinygrad::dyn, 1536>, tinygrad::error::shape<384, 384>
// models/bert.hpp: a feed-forward block whose down projection expects 384 features but gets the 1536 of the up one
#include <tinygrad/models/bert.hpp>
using namespace tinygrad;

int main() {
  models::Dense<384, 1536, float> up;
  models::Dense<384, 384, float> down;
  static_tensor<float, dyn, dyn, 384> x = static_tensor<float, dyn, dyn, 384>::zeros(2, 8);
  auto y = down(up(x).gelu());
}
