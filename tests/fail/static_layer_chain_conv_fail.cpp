// FAIL-FIRST-REGEX: layer_does_not_fit<tinygrad::layer<2>, tinygrad::static_nn::Conv2d<16, 32, 3(, 1, 0)?(, float)?>, tinygrad::error::shape<tinygrad::dyn, 8, 26, 26>
// static: a conv expecting 16 channels after one that makes 8
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto model = static_nn::seq(static_nn::Conv2d<1, 8, 3>{}, static_nn::relu, static_nn::Conv2d<16, 32, 3>{});
  auto x = static_tensor<float, dyn, 1, 28, 28>::zeros(2);
  auto y = model(x);
}
