// Seconds per training step (jitted: TinyJit) of the Fashion-MNIST model (tinygrad's beautiful_mnist: 4 convs, 2
// batchnorms, 2 max-pools, a linear; Adam) at batch BS (default 512) on DEV (default CPU), next to tinygrad's jitted step on the
// same machine in the same run (bench/tinygrad_train_peer.py; skipped when tinygrad is not installed), and PyTorch's
// eager step with as many threads as ours (bench/torch_train_peer.py; skipped when torch is not installed).
// MLP=1: the MLP 784-512-512-10 (ReLU, Adam) at batch BS (default 256) instead, against PyTorch's (issue 12's row).
#include <algorithm>
#include <string>
#include "../examples/fashion_mnist.hpp"
#include "peer.hpp"

using namespace tinygrad;

int main() {
  std::string dev = pin_device("CPU");
  const bool mlp = getenv_int("MLP", 0) != 0;
  const int64_t bs = getenv_int("BS", mlp ? 256 : 512), warm = getenv_int("WARM", 3), steps = getenv_int("STEPS", mlp ? 50 : 5);
  fashion::Model model;
  nn::Linear l1(784, 512), l2(512, 512), l3(512, 10);
  auto forward = [&](const Tensor& xs) { return mlp ? l3(l2(l1(xs).relu()).relu()) : model(xs); };
  nn::optim::Adam opt(mlp ? std::vector<Tensor>{l1.weight, *l1.bias, l2.weight, *l2.bias, l3.weight, *l3.bias} : nn::get_parameters(model));
  Tensor x = (mlp ? Tensor::rand({bs, 784}) : Tensor::rand({bs, 1, 28, 28})).realize(), y = (Tensor::rand({bs}) * 10).cast(DType::Int32).realize();
  TinyJit step([&](const Tensor& xs, const Tensor& ys) {
    TrainingScope train;
    opt.zero_grad();
    Tensor loss = forward(xs).sparse_categorical_crossentropy(ys);
    loss.backward();
    opt.step({loss});
    return loss;
  }, "train_step");
  std::vector<double> times;
  for (int64_t i = 0; i < warm + steps; i++) {
    auto t0 = std::chrono::steady_clock::now();
    step(x, y).item<float>();
    if (i >= warm) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  double ours = times[times.size() / 2];
  std::printf("tinygrad.hpp  %.4g s/step (jitted) on %s, %s (batch %lld, %d CPU threads, median of %lld)\n", ours, dev.c_str(),
              mlp ? "MLP 784-512-512-10" : "Fashion-MNIST model", (long long)bs, cpu_threads(), (long long)steps);
  ::setenv("BS", std::to_string(bs).c_str(), 1);
  ::setenv("MLP", mlp ? "1" : "0", 1);
  ::setenv("STEPS", std::to_string(steps).c_str(), 1);

  ::setenv("THREADS", std::to_string(cpu_threads()).c_str(), 1);  // the peers use as many threads as we do, and our device
  ::setenv("DEV", dev.c_str(), 1);
  double torch = dev == "CPU" || dev.rfind("CUDA", 0) == 0 ? peer_value("torch_train_peer.py", "s_per_step") : NAN;
  if (std::isnan(torch)) std::printf("PyTorch       (not run: pip install torch; CPU or CUDA)\n");
  else std::printf("PyTorch       %.4g s/step (eager, %d threads)\nratio         %.2fx PyTorch's time (target <= %s)\n", torch, cpu_threads(), ours / torch, dev == "CPU" ? "2x" : "1x");
  if (mlp) return 0;  // tinygrad's peer runs the Fashion-MNIST model only
  double peer = peer_value("tinygrad_train_peer.py", "s_per_step");
  if (std::isnan(peer)) { std::printf("tinygrad      (not run: pip install tinygrad numpy)\n"); return 0; }
  std::printf("tinygrad      %.3f s/step (jitted, CPU backend)\nratio         %.2fx faster than tinygrad (target >= 1x, goal 2x)\n", peer, peer / ours);
}
