// Train tinygrad's beautiful_mnist CNN on Fashion-MNIST (Debian: apt-get install dataset-fashion-mnist).
//   STEPS (default 400) training steps of batch BS (default 512) with Adam, then test accuracy.
// TEST-ENV: STEPS=40
// EXPECT-OUTPUT: test accuracy ([7-9][0-9])\.[0-9]+%
#include <tinygrad.hpp>
#include <chrono>
#include <cstdio>
#include <random>

using namespace tinygrad;

struct Model {
  nn::Conv2d c1{1, 32, 5}, c2{32, 32, 5};
  nn::BatchNorm bn1{32};
  nn::Conv2d c3{32, 64, 3}, c4{64, 64, 3};
  nn::BatchNorm bn2{64};
  nn::Linear fc{576, 10};
  Tensor operator()(const Tensor& x) const {
    Tensor h = bn1(c2(c1(x).relu()).relu()).max_pool2d();
    h = bn2(c4(c3(h).relu()).relu()).max_pool2d();
    return fc(h.flatten(1));
  }
};
TINYGRAD_STATE(Model, c1, c2, bn1, c3, c4, bn2, fc);

int main() {
  const int64_t steps = getenv_int("STEPS", 400), bs = getenv_int("BS", 512);
  auto data = nn::datasets::fashion_mnist();
  const auto X = data.X_train.to_vector<uint8_t>(), Y = data.Y_train.to_vector<uint8_t>();
  const int64_t n = data.X_train.shape(0), px = 28 * 28;
  // images to [0, 1] floats on the host, one batch at a time (a host gather is cheaper than a device one-hot)
  auto batch = [&](const std::vector<uint8_t>& xs, const std::vector<uint8_t>& ys, const std::vector<int64_t>& idx) {
    std::vector<float> xb(idx.size() * px);
    std::vector<int32_t> yb(idx.size());
    for (size_t i = 0; i < idx.size(); i++) {
      for (int64_t k = 0; k < px; k++) xb[i * px + k] = float(xs[size_t(idx[i] * px + k)]) / 255.f;
      yb[i] = ys[size_t(idx[i])];
    }
    return std::pair{Tensor::from_data(xb.data(), {int64_t(idx.size()), 1, 28, 28}), Tensor::from_data(yb.data(), {int64_t(idx.size())})};
  };

  Tensor::manual_seed(42);
  Model model;
  nn::optim::Adam opt(nn::get_parameters(model));
  std::mt19937_64 rng(42);
  std::printf("training on %s: %lld steps of batch %lld\n", default_device().c_str(), (long long)steps, (long long)bs);
  auto t_start = std::chrono::steady_clock::now();
  double loss_v = 0;
  for (int64_t step = 1; step <= steps; step++) {
    std::vector<int64_t> idx(static_cast<size_t>(bs));
    for (auto& i : idx) i = int64_t(rng() % uint64_t(n));
    auto [x, y] = batch(X, Y, idx);
    TrainingScope train;
    opt.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    auto todo = opt.schedule_step();
    todo.push_back(loss);
    Tensor::realize_all(todo);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (step % 10 == 0 || step == steps) {
      loss_v = loss.item<float>();
      int bar = int(30 * step / steps);
      std::printf("\r[%.*s%*s] %4lld/%lld  loss %.3f  %.2f s/step ", bar, "==============================", 30 - bar, "", (long long)step, (long long)steps, loss_v, secs / double(step));
      std::fflush(stdout);
    }
  }
  double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf("\n");

  // evaluate on the 10000 test images, in batches, with running BatchNorm statistics
  const auto Xt = data.X_test.to_vector<uint8_t>(), Yt = data.Y_test.to_vector<uint8_t>();
  const int64_t nt = data.X_test.shape(0);
  int64_t correct = 0;
  for (int64_t s = 0; s < nt; s += 1000) {
    std::vector<int64_t> idx;
    for (int64_t i = s; i < std::min(nt, s + 1000); i++) idx.push_back(i);
    auto [x, y] = batch(Xt, Yt, idx);
    correct += (model(x).argmax(-1) == y).sum().item<int64_t>();
  }
  std::printf("test accuracy %.2f%% after %lld steps, %.3f s/step\n", 100.0 * double(correct) / double(nt), (long long)steps, train_s / double(steps));
}
