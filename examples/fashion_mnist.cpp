// Train tinygrad's beautiful_mnist CNN on Fashion-MNIST (Debian: apt-get install dataset-fashion-mnist).
//   STEPS (default 1000) training steps of batch BS (default 512) with Adam, then test accuracy (>= 90%).
//   GPUS=n trains data-parallel on n devices (CUDA:0..n-1, or CPU:0..n-1 without CUDA), the batch split between them.
// TEST-ENV: STEPS=60;BS=256
// EXPECT-OUTPUT: test accuracy ([7-9][0-9])\.[0-9]+%
#include "fashion_mnist.hpp"

using namespace tinygrad;

int main() {
  fashion::Data data;
  Tensor::manual_seed(42);
  fashion::Model model;
  auto gpus = fashion::gpus();  // GPUS=n: data-parallel
  fashion::replicate(model, gpus);
  nn::optim::Adam opt(nn::get_parameters(model));
  auto input = [&](const fashion::Batch& b) { return fashion::place(Tensor::from_data(b.x.data(), {b.n, 1, 28, 28}), gpus); };
  auto labels = [&](const fashion::Batch& b) { return fashion::place(Tensor::from_data(b.y.data(), {b.n}), gpus); };
  // the step is captured once and replayed: no graph is built, scheduled or lowered after the second step
  TinyJit train_step([&](const Tensor& x, const Tensor& y) {
    TrainingScope train;
    opt.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    opt.step({loss});
    return loss;
  }, "train_step");
  double s_per_step = fashion::train(data, opt, [&](const fashion::Batch& b) {
    return train_step(input(b), labels(b));
  });
  fashion::report(data, s_per_step, [&](const fashion::Batch& b) {
    return (model(input(b)).argmax(-1) == labels(b)).sum().item<int64_t>();
  });
}
