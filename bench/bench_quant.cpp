// Matvecs on quantized weights (nn/quant.hpp) on DEV (default CPU): y = x W^T with x float32 {1, K} and W {N, K}
// dequantized inside the matvec's one kernel from Q4_1, Q8_0 and Q4_K blocks, against the same matvec on a float32 W.
// Prints the best of REPS runs (default 5) as the weight's bytes read per second: quantized GB/s counts the packed
// bytes (5 bits per weight for Q4_1, 8.5 for Q8_0, 4.5 for Q4_K), float32 GB/s 32 bits per weight; "Mw/s" is millions
// of weights per second, the figure that compares them.
#include <tinygrad.hpp>
#include <tinygrad/nn/quant.hpp>
#include <algorithm>
#include <cstdio>
#include <random>

using namespace tinygrad;
using nn::GGMLType;

namespace {
template <class F>
double best_of(const std::string& dev, int reps, F f) {
  f();
  runtime(dev).synchronize();
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = detail::now_s();
    f();
    runtime(dev).synchronize();
    best = std::min(best, detail::now_s() - t0);
  }
  return best;
}
}  // namespace

int main() {
  const std::string dev = default_device();
  const int reps = int(detail::getenv_int("REPS", 5));
  std::printf("device %s, best of %d\n%6s %6s", dev.c_str(), reps, "K", "N");
  for (const char* t : {"Q4_1 ms", "Q8_0 ms", "Q4_K ms", "F32 ms"}) std::printf(" | %-10s %8s %8s", t, "GB/s", "Mw/s");
  std::printf("\n");
  std::mt19937 g(1);
  std::normal_distribution<float> nd(0, 1);
  for (auto [k, n] : {std::pair<int64_t, int64_t>{576, 1536}, {576, 49152}, {1536, 576}, {1536, 1536}, {1536, 8192}}) {
    std::vector<float> w(static_cast<size_t>(n * k)), xv(static_cast<size_t>(k));
    for (auto& v : w) v = nd(g);
    for (auto& v : xv) v = nd(g);
    Tensor x = Tensor(xv, {1, k}).realize();
    std::printf("%6lld %6lld", (long long)k, (long long)n);
    for (GGMLType t : {GGMLType::Q4_1, GGMLType::Q8_0, GGMLType::Q4_K, GGMLType::F32}) {
      if (k % nn::ggml_type_info(t).block != 0) {  // 576 is no multiple of 256 (llama.cpp stores such rows in other types)
        std::printf(" | %10s %8s %8s", "-", "-", "-");
        continue;
      }
      auto raw = nn::quantize(w, t);
      Tensor r = Tensor(raw, {int64_t(raw.size())}).realize();
      Tensor wt = t == GGMLType::F32 ? Tensor(w, {n, k}).realize() : nn::dequantize(r, t, {n, k});
      double s = best_of(dev, reps, [&] { x.matmul(wt.transpose()).realize(); });
      std::printf(" | %10.3f %8.2f %8.0f", s * 1e3, double(raw.size()) / s / 1e9, double(n * k) / s / 1e6);
    }
    std::printf("\n");
  }
}
