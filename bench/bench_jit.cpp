// TinyJit on DEV (default CPU; DEV=CUDA on a GPU machine), next to PyTorch and tinygrad in the same run:
//   1. replay of 1,000 tiny dependent kernels (x = (x + 1).contiguous(), 1024 floats): time per kernel, vs our eager
//      realize, PyTorch eager, PyTorch's CUDA graph (GPU), tinygrad's TinyJit;
//   2. a training step of an MLP 784-512-512-10 (batch 256, Adam), float32: jitted vs eager, vs PyTorch eager, PyTorch
//      CUDA graph (GPU), tinygrad's TinyJit; and with bfloat16 weights (activations, gradients and Adam's state in
//      bfloat16 too, as PyTorch has them with a .bfloat16() model): jitted vs eager, vs PyTorch eager.
// Peers: bench/torch_jit_peer.py, bench/tinygrad_jit_steps_peer.py (skipped when not installed).
#include <tinygrad.hpp>
#include <algorithm>
#include "peer.hpp"

using namespace tinygrad;

namespace {
void sync(const std::string& dev) { runtime(dev).synchronize(); }
// median seconds of f over `reps` runs of `inner` calls each, after `warm` calls
template <class F>
double timed(const std::string& dev, int warm, int reps, int inner, F f) {
  for (int i = 0; i < warm; i++) f();
  sync(dev);
  std::vector<double> t;
  for (int r = 0; r < reps; r++) {
    double t0 = detail::now_s();
    for (int i = 0; i < inner; i++) f();
    sync(dev);
    t.push_back((detail::now_s() - t0) / inner);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
struct MlpStep { double eager, jitted; size_t kernels; float loss; };
// the MLP's training step with its weights (and so its activations) in dt: seconds per step, eager and jitted
MlpStep mlp_step(const std::string& dev, DType dt) {
  const int64_t B = 256;
  Tensor::manual_seed(1);
  nn::Linear l1{784, 512}, l2{512, 512}, l3{512, 10};
  std::vector<Tensor*> ps{&l1.weight, &*l1.bias, &l2.weight, &*l2.bias, &l3.weight, &*l3.bias};
  if (dt != DType::Float32)
    for (Tensor* p : ps) *p = p->detach().cast(dt).contiguous().realize().requires_grad_();
  std::vector<Tensor> params;
  for (Tensor* p : ps) params.push_back(*p);
  nn::optim::Adam opt(params, 1e-3);
  auto step = [&](const Tensor& x, const Tensor& y) {
    TrainingScope t;
    opt.zero_grad();
    Tensor loss = l3(l2(l1(x).relu()).relu()).sparse_categorical_crossentropy(y);
    loss.backward();
    opt.step({loss});
    return loss;
  };
  TinyJit jit(step, "mlp_step " + to_string(dt));
  Tensor x = Tensor::rand({B, 784}).cast(dt).realize(), y = (Tensor::rand({B}) * 10).cast(DType::Int32).realize();
  double eager = timed(dev, 3, 5, 4, [&] { step(x, y); });
  double jitted = timed(dev, 3, 5, 10, [&] { jit(x, y); });
  float loss = jit(x, y).cast(DType::Float32).item<float>();
  return {eager, jitted, jit.kernel_count(), loss};
}
void row(const char* what, double ours_us, double peer_us, const char* peer, const char* target) {
  if (std::isnan(peer_us)) std::printf("  %-44s %9.2f us | %-22s %9s    | %s\n", what, ours_us, peer, "not run", target);
  else std::printf("  %-44s %9.2f us | %-22s %9.2f us | %.2fx its time  %s\n", what, ours_us, peer, peer_us, ours_us / peer_us, target);
}
}  // namespace

int main() {
  std::string dev = pin_device("CPU");
  bool gpu = dev.rfind("CUDA", 0) == 0;
  ::setenv("THREADS", std::to_string(cpu_threads()).c_str(), 1);
  ::setenv("DEV", dev.c_str(), 1);
  std::printf("bench_jit on %s (%d CPU threads)\n", dev.c_str(), cpu_threads());
  auto torch = [&](const char* key) { return peer_value("torch_jit_peer.py", key); };
  auto tg = [&](const char* key) { return peer_value("tinygrad_jit_steps_peer.py", key); };

  // ---- 1. 1,000 tiny dependent kernels ----
  {
    const int N = 1000;
    auto chain = [&](const Tensor& x) {
      Tensor h = x;
      for (int i = 0; i < N; i++) h = (h + 1).contiguous();
      return h;
    };
    Tensor x = Tensor::zeros({1024}).contiguous().realize();
    TinyJit jit(chain, "chain");
    double replay = timed(dev, 3, 5, 3, [&] { jit(x); }) / N;
    if (jit.kernel_count() != size_t(N)) std::printf("  (captured %zu kernels, expected %d)\n", jit.kernel_count(), N);
    double eager = timed(dev, 1, 3, 1, [&] { chain(x).realize(); }) / N;
    float last = jit(x).to_vector<float>()[0];
    std::printf("1. %d tiny dependent kernels (x = (x + 1).contiguous(), 1024 floats), per kernel; result %g (expected %d)\n", N, double(last), N);
    row("TinyJit replay", replay * 1e6, gpu ? torch("chain_graph_us") : NAN, gpu ? "PyTorch CUDA graph" : "(no CUDA graph)",
        gpu ? "(target <= 1.2x, stretch 1.0x)" : "(target <= 1 us)");
    row("TinyJit replay", replay * 1e6, torch("chain_eager_us"), "PyTorch eager", "");
    row("TinyJit replay", replay * 1e6, tg("chain_jit_us"), "tinygrad TinyJit", "(target: faster)");
    row("eager realize (schedule cache)", eager * 1e6, replay * 1e6, "TinyJit replay", "");
  }

  // ---- 2. MLP training step, float32 and with bfloat16 weights ----
  {
    MlpStep f = mlp_step(dev, DType::Float32);
    std::printf("2. MLP 784-512-512-10 training step, batch 256, Adam, float32 (%zu kernels; loss %.4f)\n", f.kernels, double(f.loss));
    row("TinyJit step", f.jitted * 1e6, torch("mlp_eager_us"), "PyTorch eager", "(target <= 1.0x)");
    if (gpu) row("TinyJit step", f.jitted * 1e6, torch("mlp_graph_us"), "PyTorch CUDA graph", "(stretch <= 1.0x)");
    row("TinyJit step", f.jitted * 1e6, tg("mlp_jit_us"), "tinygrad TinyJit", "(target: faster)");
    row("eager step", f.eager * 1e6, f.jitted * 1e6, "TinyJit step", "");
    MlpStep h = mlp_step(dev, DType::BFloat16);
    std::printf("   the same with bfloat16 weights and activations (%zu kernels; loss %.4f)\n", h.kernels, double(h.loss));
    row("TinyJit step, bfloat16", h.jitted * 1e6, torch("mlp_bf16_eager_us"), "PyTorch eager bfloat16", "(target <= 1.0x)");
    row("TinyJit step, bfloat16", h.jitted * 1e6, f.jitted * 1e6, "TinyJit step float32", "");
    row("eager step, bfloat16", h.eager * 1e6, h.jitted * 1e6, "TinyJit step bfloat16", "");
  }
}
