// The second translation unit: it sees the library's declarations only (TINYGRAD_SEPARATE_COMPILATION).
#include "model.hpp"

using tinygrad::Tensor;

float train_mlp(int steps) {
  Tensor::manual_seed(1);
  tinygrad::nn::Linear l1(3, 16), l2(16, 1);
  tinygrad::nn::optim::Adam opt({l1.weight, *l1.bias, l2.weight, *l2.bias}, 0.02);
  Tensor x = Tensor::randn({32, 3}), y = (x * Tensor({1.f, -2.f, 0.5f})).sum(1, true);
  float loss = 0;
  for (int i = 0; i < steps; i++) {
    Tensor l = (l2(l1(x).relu()) - y).square().mean();
    opt.zero_grad();
    l.backward();
    opt.step();
    loss = l.item<float>();
  }
  return loss;
}

Tensor scaled_sum(const Tensor& x) { return (x * 2 + 1).sum(0); }
