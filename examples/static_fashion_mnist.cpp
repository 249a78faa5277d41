// examples/fashion_mnist.cpp (tinygrad's beautiful_mnist CNN on Fashion-MNIST) written with static shapes:
// layer sizes are template arguments and the batch is dyn, so the compiler checks the whole chain (a layer
// that does not fit the one before it is an error naming the layer; see tests/fail/static_layer_chain_*).
//   STEPS (default 1000) training steps of batch BS (default 512) with Adam, then test accuracy (>= 90%).
// TEST-ENV: STEPS=60;BS=256
// EXPECT-OUTPUT: test accuracy ([7-9][0-9])\.[0-9]+%
#include "fashion_mnist.hpp"

using namespace tinygrad;
namespace snn = tinygrad::static_nn;

int main() {
  fashion::Data data;
  using Images = static_tensor<float, dyn, 1, 28, 28>;
  using Labels = static_tensor<int32_t, dyn>;
  auto input = [](const fashion::Batch& b) { return std::pair{Images::from(b.x, b.n), Labels::from(b.y, b.n)}; };

  Tensor::manual_seed(42);
  // 28 -conv5-> 24 -conv5-> 20 -pool-> 10 -conv3-> 8 -conv3-> 6 -pool-> 3: 64 * 3 * 3 = 576 features
  auto model = snn::seq(snn::Conv2d<1, 32, 5>{}, snn::relu, snn::Conv2d<32, 32, 5>{}, snn::relu, snn::BatchNorm<32>{}, snn::MaxPool2d<2>{},
                        snn::Conv2d<32, 64, 3>{}, snn::relu, snn::Conv2d<64, 64, 3>{}, snn::relu, snn::BatchNorm<64>{}, snn::MaxPool2d<2>{},
                        snn::Flatten<1>{}, snn::Linear<576, 10>{});
  nn::optim::Adam opt(model.parameters());
  double s_per_step = fashion::train(data, opt, [&](const fashion::Batch& b) {
    auto [x, y] = input(b);
    TrainingScope train;
    opt.zero_grad();
    static_tensor<float> loss = sparse_categorical_crossentropy(model(x), y);
    loss.backward();
    opt.step({loss});
    return loss;
  });
  fashion::report(data, s_per_step, [&](const fashion::Batch& b) {
    auto [x, y] = input(b);
    return (Tensor(model(x)).argmax(-1) == Tensor(y)).sum().item<int64_t>();
  });
}
