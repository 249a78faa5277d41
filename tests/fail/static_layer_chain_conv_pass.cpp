// PASS
// static: a conv expecting 16 channels after one that makes 8 (the compiling twin of static_layer_chain_conv_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto model = static_nn::seq(static_nn::Conv2d<1, 8, 3>{}, static_nn::relu, static_nn::Conv2d<8, 32, 3>{});
  auto x = static_tensor<float, dyn, 1, 28, 28>::zeros(2);
  auto y = model(x);
}
