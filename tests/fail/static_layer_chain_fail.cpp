// FAIL-FIRST-REGEX: layer_does_not_fit<tinygrad::layer<2>, tinygrad::static_nn::Linear<100, 10(, float)?>, tinygrad::error::shape<tinygrad::dyn, 128>
// static: the third layer (index 2) expects 100 features, the one before it gives 128
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto model = static_nn::seq(static_nn::Linear<784, 128>{}, static_nn::relu, static_nn::Linear<100, 10>{});
  auto x = static_tensor<float, dyn, 784>::zeros(4);
  auto y = model(x);
}
