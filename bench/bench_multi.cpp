// BERT-base on several devices, GPUS (2) of DEV's kind against one. On CUDA (DEV=CUDA) CUDA:0.. and NCCL; on the CPU
// CPU:0.. with collectives through the host: a check of the logic, not a speed figure (the CPU devices share the cores).
// 1. Tensor parallel: models::Bert<768, 12, 3072, 12> (random weights: the time does not depend on them) forward at
//    batch TP_BS (1) x SEQ (128) tokens, TinyJit-replayed, on one device, then with the weights split the Megatron way
//    (Bert::shard: each device runs its heads and its part of the feed-forward layer, two all-reduces a layer); float16
//    on CUDA. Prints the medians, the speed-up and the largest difference of the two outputs.
// 2. Data parallel: a BERT-base-sized encoder (12 post-LN layers, 768 wide, 12 heads, 3072 feed-forward, float32)
//    trained with Adam on DP_BS (8) sequences of SEQ tokens per device (loss: the mean square of the output), a jitted
//    step on one device and on GPUS, the scaling efficiency, and PyTorch DDP's step (nn.TransformerEncoderLayer, the
//    same sizes and loss, one process per GPU: bench/torch_ddp_peer.py MODEL=encoder) on the same GPUs in the same run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tinygrad/models/bert.hpp>
#include "peer.hpp"

using namespace tinygrad;

namespace {
template <class T>
void tensor_parallel(const std::string& dev) {
  using Base = models::Bert<768, 12, 3072, 12, T>;
  const int64_t B = detail::getenv_int("TP_BS", 1), S = detail::getenv_int("SEQ", 128), warm = detail::getenv_int("WARM", 3),
                iters = detail::getenv_int("ITERS", 20), n = detail::getenv_int("GPUS", 2);
  std::string kind = detail::device_base(dev) == "CUDA" ? "CUDA:" : "CPU:";
  std::vector<std::string> one{kind + "0"}, many;
  for (int64_t i = 0; i < n; i++) many.push_back(kind + std::to_string(i));

  std::vector<int32_t> ids(size_t(B * S)), mask(size_t(B * S), 1);
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t((i * 7919 + 101) % 30522);
  // the median replay of a jitted forward on `devs` (one: the model moved there; several: split over them)
  auto run = [&](Base& model, const std::vector<std::string>& devs, Tensor& out) {
    Tensor ti(ids, {B, S}), tm(mask, {B, S});
    ti = devs.size() > 1 ? ti.to(devs) : ti.to(devs[0]), tm = devs.size() > 1 ? tm.to(devs) : tm.to(devs[0]);
    ti.realize(), tm.realize();
    TinyJit jit([&](const Tensor& i, const Tensor& m) { return model(typename Base::ids_t(i), typename Base::ids_t(m)).tensor(); }, "bert_tp");
    auto sync = [&] { for (auto& d : devs) synchronize(d); };
    for (int64_t i = 0; i < warm; i++) jit(ti, tm).realize();
    sync();
    std::vector<double> t;
    for (int64_t i = 0; i < iters; i++) {
      double t0 = detail::now_s();
      out = jit(ti, tm).realize();
      sync();
      t.push_back(detail::now_s() - t0);
    }
    std::sort(t.begin(), t.end());
    return std::pair{t[t.size() / 2], jit.kernel_count()};
  };
  Base model, split;
  for (auto& [name, t] : nn::get_state_dict(model)) t.requires_grad_(false);
  nn::load_state_dict(split, nn::get_state_dict(model));
  model.shard(one);  // one device: the model moves there
  split.shard(many);

  Tensor y1, yn;
  auto [t1, k1] = run(model, one, y1);
  auto [tn, kn] = run(split, many, yn);
  auto a = y1.cast(DType::Float32).to_vector<float>(), b = yn.cast(DType::Float32).to_vector<float>();
  double diff = 0;
  for (size_t i = 0; i < a.size(); i++) diff = std::max(diff, double(std::abs(a[i] - b[i])));
  std::printf("bench_multi: tensor parallel, BERT-base forward (random weights), batch %lld x %lld tokens, %s, TinyJit, "
              "median of %lld after %lld warm-up\n",
              (long long)B, (long long)S, std::is_same_v<T, half_t> ? "float16" : "float32", (long long)iters, (long long)warm);
  std::printf("  1 device  (%s)            %8.3f ms  (%zu kernels)\n", one[0].c_str(), t1 * 1e3, k1);
  std::printf("  %lld devices, tensor parallel %8.3f ms  (%zu kernels and collectives)\n", (long long)n, tn * 1e3, kn);
  std::printf("  speed-up                   %8.2fx one device's time  (largest difference of the outputs %.2e)\n", t1 / tn, diff);
}

}  // namespace

namespace encoder {
// a BERT layer: self-attention and the feed-forward layer, each added to its input and normalized (post-LN)
struct EncoderLayer {
  nn::Linear qkv{768, 3 * 768}, out{768, 768}, up{768, 3072}, down{3072, 768};
  nn::LayerNorm ln1{{768}}, ln2{{768}};
  Tensor operator()(const Tensor& x) const {
    int64_t b = x.shape(0), s = x.shape(1);
    auto heads = [&](const Tensor& t) { return t.reshape({b, s, 12, 64}).permute({0, 2, 1, 3}); };
    auto q = qkv(x).chunk(3, -1);
    Tensor a = heads(q[0]).scaled_dot_product_attention(heads(q[1]), heads(q[2])).permute({0, 2, 1, 3}).reshape({b, s, 768});
    Tensor h = ln1(x + out(a));
    return ln2(h + down(up(h).gelu()));
  }
};
struct Encoder {
  std::vector<EncoderLayer> layers = std::vector<EncoderLayer>(12);
  Tensor operator()(Tensor x) const { for (auto& l : layers) x = l(x); return x; }
};
}  // namespace encoder
TINYGRAD_STATE(encoder::EncoderLayer, qkv, out, up, down, ln1, ln2);
TINYGRAD_STATE(encoder::Encoder, layers);

namespace {

// the median seconds of a jitted training step at bs sequences per device over devs (one: that device)
std::pair<double, size_t> dp_step(const std::vector<std::string>& devs, int64_t bs, int64_t S, int64_t warm, int64_t iters) {
  encoder::Encoder model;
  for (auto& [name, t] : nn::get_state_dict(model)) t.replace(devs.size() > 1 ? t.to(devs) : t.to(devs[0]));
  nn::optim::Adam opt(nn::get_parameters(model), 1e-4);
  Tensor x = Tensor::randn({bs * int64_t(devs.size()), S, 768});
  x = (devs.size() > 1 ? x.shard(devs, 0) : x.to(devs[0])).realize();
  TinyJit step([&](const Tensor& xs) {
    opt.zero_grad();
    Tensor loss = model(xs).square().mean();
    loss.backward();
    opt.step({loss});
    return loss;
  }, "bert_dp_step");
  std::vector<double> t;
  for (int64_t i = 0; i < warm + iters; i++) {
    double t0 = detail::now_s();
    step(x).item<float>();
    if (i >= warm) t.push_back(detail::now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return std::pair{t[t.size() / 2], step.kernel_count()};
}

void data_parallel(const std::string& dev) {
  const int64_t bs = detail::getenv_int("DP_BS", 8), S = detail::getenv_int("SEQ", 128), warm = detail::getenv_int("WARM", 3),
                iters = detail::getenv_int("ITERS", 20) / 2 + 1, n = detail::getenv_int("GPUS", 2);
  std::string kind = detail::device_base(dev) == "CUDA" ? "CUDA:" : "CPU:";
  std::vector<std::string> many;
  for (int64_t i = 0; i < n; i++) many.push_back(kind + std::to_string(i));
  auto [one, k1] = dp_step({kind + "0"}, bs, S, warm, iters);
  auto [all, kn] = dp_step(many, bs, S, warm, iters);
  std::printf("data parallel: BERT-base-sized encoder training step (Adam, float32), %lld x %lld tokens per device, median of %lld\n",
              (long long)bs, (long long)S, (long long)iters);
  std::printf("  1 device                    %8.2f ms  (%zu kernels)\n  %lld devices                   %8.2f ms  (%zu kernels and collectives)\n"
              "  scaling efficiency          %8.1f%%  (one device's time / theirs at the same batch per device; target >= 90%% on 2, 85%% on 4)\n",
              one * 1e3, k1, (long long)n, all * 1e3, kn, 100 * one / all);
  ::setenv("GPUS", std::to_string(n).c_str(), 1);
  ::setenv("BS", std::to_string(bs).c_str(), 1);
  ::setenv("SEQ", std::to_string(S).c_str(), 1);
  ::setenv("STEPS", std::to_string(iters).c_str(), 1);
  ::setenv("MODEL", "encoder", 1);
  double ddp = detail::device_base(dev) == "CUDA" ? peer_value("torch_ddp_peer.py", "s_per_step") : NAN;
  if (std::isnan(ddp)) std::printf("  PyTorch DDP                 (not run: CUDA devices and pip install torch)\n");
  else std::printf("  PyTorch DDP, %lld GPUs        %8.2f ms  (one process each, NCCL)\n"
                   "  ratio                       %8.2fx DDP's time (target <= 1x)\n",
                   (long long)n, ddp * 1e3, all / ddp);
}
}  // namespace

int main() {
  std::string dev = pin_device("CPU");
  std::string what = detail::getenv_str("PART");  // "tp" or "dp": only that part
  if (what != "dp") {
    if (detail::device_base(dev) == "CUDA" && detail::getenv_int("HALF", 1) == 1) tensor_parallel<half_t>(dev);
    else tensor_parallel<float>(dev);
  }
  if (what != "tp") data_parallel(dev);
}
