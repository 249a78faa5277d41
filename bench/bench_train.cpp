// Seconds per training step (jitted: TinyJit) of the Fashion-MNIST model (tinygrad's beautiful_mnist: 4 convs, 2
// batchnorms, 2 max-pools, a linear; Adam) at batch BS (default 512) on DEV (default CPU), next to tinygrad's jitted step on the
// same machine in the same run (bench/tinygrad_train_peer.py; skipped when tinygrad is not installed), and PyTorch's
// eager step with as many threads as ours (bench/torch_train_peer.py; skipped when torch is not installed).
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include "../examples/fashion_mnist.hpp"
#include "peer.hpp"

using namespace tinygrad;

// the model's jitted training step (Adam) on batch (x, y): a call runs one step and returns its seconds
template <class M>
std::function<double()> timed_step(std::shared_ptr<M> model, const Tensor& x, const Tensor& y) {
  auto opt = std::make_shared<nn::optim::Adam>(nn::get_parameters(*model));
  auto body = [model, opt](const Tensor& xs, const Tensor& ys) {
    TrainingScope train;
    opt->zero_grad();
    Tensor loss = (*model)(xs).sparse_categorical_crossentropy(ys);
    loss.backward();
    opt->step({loss});
    return loss;
  };
  auto step = std::make_shared<decltype(TinyJit(body, "train_step"))>(body, "train_step");
  return [step, x, y] {
    auto t0 = std::chrono::steady_clock::now();
    (*step)(x, y).template item<float>();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
}
// the medians of steps calls of each of fs after warm of each, the calls of fs interleaved (a host's drift hits all alike)
std::vector<double> medians(const std::vector<std::function<double()>>& fs, int64_t warm, int64_t steps) {
  std::vector<std::vector<double>> ts(fs.size());
  for (int64_t i = 0; i < warm + steps; i++)
    for (size_t f = 0; f < fs.size(); f++) {
      double t = fs[f]();
      if (i >= warm) ts[f].push_back(t);
    }
  std::vector<double> m;
  for (auto& t : ts) std::sort(t.begin(), t.end()), m.push_back(t[t.size() / 2]);
  return m;
}

// the median seconds of a jitted step at batch bs per device, data-parallel over gpus (none: one device)
static double measure(const std::vector<std::string>& gpus, int64_t bs, int64_t warm, int64_t steps) {
  auto model = std::make_shared<fashion::Model>();
  int64_t n = std::max<int64_t>(int64_t(gpus.size()), 1);
  fashion::replicate(*model, gpus);
  Tensor x = fashion::place(Tensor::rand({bs * n, 1, 28, 28}), gpus).realize();
  Tensor y = fashion::place((Tensor::rand({bs * n}) * 10).cast(DType::Int32), gpus).realize();
  return medians({timed_step(model, x, y)}, warm, steps)[0];
}

// BatchNorm -> ReLU -> max-pool -> conv, the pool's output fused into the conv or realized by hand (.contiguous()): a
// scheduler that fused the normalisation, ReLU and pool into the conv would compute them again for every output channel
struct PoolConv {
  nn::Conv2d c1{1, 32, 5};
  nn::BatchNorm bn{32};
  nn::Conv2d c2{32, 32, 5};
  nn::Linear fc{32 * 8 * 8, 10};
  bool by_hand = false;
  Tensor operator()(const Tensor& x) const {
    Tensor h = bn(c1(x)).relu().max_pool2d();
    return fc(c2(by_hand ? h.contiguous() : h).relu().flatten(1));
  }
};
TINYGRAD_STATE(PoolConv, c1, bn, c2, fc);

int main() {
  std::string dev = pin_device("CPU");
  const int64_t bs = detail::getenv_int("BS", 512), warm = detail::getenv_int("WARM", 3), steps = detail::getenv_int("STEPS", 5);
  auto gpus = fashion::gpus();  // GPUS=n: data-parallel, batch BS per device, against one device at batch BS
  double ours = measure({}, bs, warm, steps);
  std::printf("tinygrad.hpp  %.4f s/step (jitted) on %s (batch %lld, %d CPU threads, median of %lld)\n", ours, dev.c_str(), (long long)bs,
              cpu_threads(), (long long)steps);
  if (gpus.empty()) {  // FBS (default 1000): the fusion row's batch
    const int64_t fbs = detail::getenv_int("FBS", 1000);
    Tensor fx = Tensor::rand({fbs, 1, 28, 28}).realize(), fy = (Tensor::rand({fbs}) * 10).cast(DType::Int32).realize();
    std::vector<std::function<double()>> fs;
    for (bool by_hand : {false, true}) {
      Tensor::manual_seed(1);
      auto m = std::make_shared<PoolConv>();
      m->by_hand = by_hand;
      fs.push_back(timed_step(m, fx, fy));
    }
    auto t = medians(fs, warm, steps);
    std::printf("BN->ReLU->pool->conv step  %.4f s fused, %.4f s with .contiguous() after the pool (batch %lld, steps interleaved): %.2fx "
                "(target: equal within 5%%)\n",
                t[0], t[1], (long long)fbs, t[0] / t[1]);
  }
  if (!gpus.empty()) {
    double many = measure(gpus, bs, warm, steps);
    std::printf("tinygrad.hpp  %.4f s/step on %zu devices (%s, batch %lld each)\nscaling       %.1f%% efficiency (one device's time / theirs at "
                "the same batch per device; target >= 90%% on 2, 85%% on 4)\n",
                many, gpus.size(), gpus[0].c_str(), (long long)bs, 100 * ours / many);
    ::setenv("GPUS", std::to_string(gpus.size()).c_str(), 1);
    double ddp = dev.rfind("CUDA", 0) == 0 ? peer_value("torch_ddp_peer.py", "s_per_step") : NAN;
    if (std::isnan(ddp)) std::printf("PyTorch DDP   (not run: CUDA devices and pip install torch)\n");
    else std::printf("PyTorch DDP   %.4f s/step on %zu GPUs (one process each, NCCL)\nratio         %.2fx DDP's time (target <= 1x)\n", ddp,
                     gpus.size(), many / ddp);
    return 0;
  }

  ::setenv("THREADS", std::to_string(cpu_threads()).c_str(), 1);  // the peers use as many threads as we do, and our device
  ::setenv("DEV", dev.c_str(), 1);
  double torch = dev == "CPU" || dev.rfind("CUDA", 0) == 0 ? peer_value("torch_train_peer.py", "s_per_step") : NAN;
  if (std::isnan(torch)) std::printf("PyTorch       (not run: pip install torch; CPU or CUDA)\n");
  else
    std::printf("PyTorch       %.4f s/step (eager, %d threads)\nratio         %.2fx PyTorch's time (target <= %s)\n", torch, cpu_threads(),
                ours / torch, dev == "CPU" ? "1.5x" : "1x");
  double peer = peer_value("tinygrad_train_peer.py", "s_per_step");
  if (std::isnan(peer)) { std::printf("tinygrad      (not run: pip install tinygrad numpy)\n"); return 0; }
  std::printf("tinygrad      %.3f s/step (jitted, CPU backend)\nratio         %.2fx faster than tinygrad (target >= 1x, goal 2x)\n", peer,
              peer / ours);
}
