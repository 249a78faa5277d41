// Variables (tensor/variable.hpp) on DEV (default CPU), from empty kernel caches (a fresh CACHEDIR):
//   1. a decode-style loop over a cache of POS positions (default 256; POS=2048 for the figure) of width 64:
//      step p writes row p and attends over rows 0..p (scores, softmax, weighted sum). Jitted with a variable, the
//      cache shrunk to a symbolic pos+1 rows (one capture, loops over p+1 rows), and jitted over the whole cache with
//      the rows past p masked, against the same steps at concrete lengths (the cache shrunk to p+1 rows: new kernels
//      for every length, as without variables). Total seconds.
//   2. a kernel over a symbolic dim at value N against the same kernel compiled for N (elementwise, a reduce over it,
//      matmuls with it as the outer and as the inner dim, N from 512 to MM_MAX (default 1024; the bound); eager and in a
//      TinyJit each), and a kernel with a variable value against the constant's: the symbolic kernel's speed as a
//      fraction of the concrete one's.
//   3. a static encoder block (attention, residual, layer norm) over a shuffled sweep of sequence lengths: the lengths
//      as variables of the static plans (a plan per power-of-two bucket) against a plan per length.
//   4. the static Fashion-MNIST CNN (examples/static_fashion_mnist.cpp, eval mode) over batches 1..64: the plans built
//      and kernels compiled by the sweep after batch 1 (the dyn batch is a variable: none), and the sweep's time.
#include <tinygrad.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

using namespace tinygrad;

namespace {
void sync(const std::string& dev) { runtime(dev).synchronize(); }
template <class F>
double best_of(const std::string& dev, int reps, F f) {
  f();
  sync(dev);
  double best = 1e30, start = detail::now_s();  // at least `reps` runs, more up to 0.3 s (short kernels vary run to run)
  for (int r = 0; r < reps || (r < 200 && detail::now_s() - start < 0.3); r++) {
    double t0 = detail::now_s();
    f();
    sync(dev);
    best = std::min(best, detail::now_s() - t0);
  }
  return best;
}
constexpr int64_t D = 64;
// attention of query row q over the rows of keys (n x D): softmax(keys q / 8) keys, rows where `valid` is false skipped
Tensor attend(const Tensor& keys, const Tensor& q, const std::optional<Tensor>& valid) {
  Tensor s = keys.matmul(q.reshape({D, 1})).reshape({keys.shape()[0]}) * 0.125;
  if (valid) s = valid->where(s, -1e30);
  return s.softmax(0).reshape({1, keys.shape()[0]}).matmul(keys).reshape({D});
}
}  // namespace

int main() {
  namespace fs = std::filesystem;
  fs::path cache = fs::temp_directory_path() / ("tg_bench_variable_" + std::to_string(::getpid()));
  setenv("CACHEDIR", cache.c_str(), 1);  // NOTE: before the first compile: both paths start from empty caches
  const std::string dev = default_device();
  const int64_t L = detail::getenv_int("POS", 256);
  std::vector<Tensor> rows;
  for (int64_t p = 0; p < L; p++) rows.push_back(Tensor::rand({D}).contiguous().realize());

  // 1a. jitted, one variable: the attention over a symbolic prefix of the cache, or over all of it with a mask
  Variable pos("pos", 0, L - 1);
  auto jitted = [&](bool symbolic, double& secs, int64_t& compiled) {
    Tensor kv = Tensor::zeros({L, D}).contiguous().realize();
    TinyJit step([&](const Tensor& row, const BoundVariable& p) {
      Tensor at = Tensor::arange(L).reshape({L, 1});
      kv.assign((at == Tensor(p)).where(row.reshape({1, D}).expand({L, D}), kv));
      if (!symbolic) return attend(kv, row, (Tensor::arange(L) <= Tensor(p)));
      Tensor keys = kv.shrink({{0, SInt(p) + 1}, {0, D}});
      Tensor sc = keys.matmul(row.reshape({D, 1})).reshape({SInt(p) + 1}) * 0.125;
      return sc.softmax(0).reshape({SInt(1), SInt(p) + 1}).matmul(keys).reshape({D});
    }, symbolic ? "decode_symbolic" : "decode_masked");
    int64_t c0 = run_stats().kernels_compiled;
    double t0 = detail::now_s();
    std::vector<float> last;
    for (int64_t p = 0; p < L; p++) {
      Tensor o = step(rows[size_t(p)], pos.bind(p));
      if (p == L - 1) last = o.to_vector<float>();
    }
    sync(dev);
    secs = detail::now_s() - t0;
    compiled = run_stats().kernels_compiled - c0;
    return last;
  };
  double t_var = 0, t_mask = 0;
  int64_t comp_var = 0, comp_mask = 0;
  std::vector<float> last_var = jitted(true, t_var, comp_var), last_mask = jitted(false, t_mask, comp_mask);

  // 1b. concrete lengths: the cache shrunk to p+1 rows, new kernels per length
  Tensor kc = Tensor::zeros({L, D}).contiguous().realize();
  int64_t c0 = run_stats().kernels_compiled;
  double t0 = detail::now_s();
  std::vector<float> last_con;
  for (int64_t p = 0; p < L; p++) {
    Tensor at = Tensor::arange(L).reshape({L, 1});
    kc.assign((at == double(p)).where(rows[size_t(p)].reshape({1, D}).expand({L, D}), kc)).realize();
    Tensor o = attend(kc.shrink({{0, p + 1}, {0, D}}), rows[size_t(p)], std::nullopt).realize();
    if (p == L - 1) last_con = o.to_vector<float>();
  }
  sync(dev);
  double t_con = detail::now_s() - t0;
  int64_t comp_con = run_stats().kernels_compiled - c0;
  double err = 0;
  for (size_t i = 0; i < last_var.size(); i++)
    err = std::max({err, double(std::abs(last_var[i] - last_con[i])), double(std::abs(last_mask[i] - last_con[i]))});

  std::printf("| bench_variable on %s | ours, variable | concrete lengths | ratio |\n| --- | --- | --- | --- |\n", dev.c_str());
  std::printf("| decode-style loop, %lld positions x %lld, symbolic prefix, total s (kernels compiled) | %.3f (%lld) | %.3f (%lld) | %.1fx |\n",
              (long long)L, (long long)D, t_var, (long long)comp_var, t_con, (long long)comp_con, t_con / t_var);
  std::printf("| the same, whole cache masked | %.3f (%lld) | | %.1fx faster |\n", t_mask, (long long)comp_mask, t_con / t_mask);
  std::printf("| last step's outputs, max abs difference | %.2e | | |\n", err);

  // 2a. a symbolic dim at value N against the same kernel compiled for N
  const int64_t MM = detail::getenv_int("MM_MAX", 1024);
  Variable sn("sn", 1, MM);
  Tensor big = Tensor::rand({MM, MM}).contiguous().realize(), w = Tensor::rand({MM, MM}).contiguous().realize();
  struct SymRow { const char* what; std::function<Tensor(const Tensor&, const SInt&)> f; };
  std::vector<SymRow> sym_rows{
      {"elementwise x*2+1 over (N, MM)", [&](const Tensor& x, const SInt& k) { return x.shrink({{0, k}, {0, MM}}) * 2 + 1; }},
      {"sum over the symbolic dim of (N, MM)", [&](const Tensor& x, const SInt& k) { return x.shrink({{0, k}, {0, MM}}).sum(0); }},
      {"matmul (N, MM) @ (MM, MM)", [&](const Tensor& x, const SInt& k) { return x.shrink({{0, k}, {0, MM}}).matmul(w); }},
      {"matmul (MM, N) @ (N, MM)", [&](const Tensor& x, const SInt& k) { return x.shrink({{0, MM}, {0, k}}).matmul(w.shrink({{0, k}, {0, MM}})); }}};
  // eager (each call builds, schedules and launches: the host's share is larger for a symbolic graph) and jitted (the
  // kernels alone: one capture for every N against one for this N)
  for (auto& r : sym_rows)
    for (int64_t N = 512; N <= MM; N *= 2) {
      double ts = best_of(dev, 3, [&] { r.f(big, sn.bind(N)).realize(); });
      double tc = best_of(dev, 3, [&] { r.f(big, N).realize(); });
      TinyJit js([&](const Tensor& x, const BoundVariable& v) { return r.f(x, v); }, "symbolic_row");
      TinyJit jc([&](const Tensor& x) { return r.f(x, N); }, "concrete_row");
      double tjs = best_of(dev, 3, [&] { js(big, sn.bind(N)); });
      double tjc = best_of(dev, 3, [&] { jc(big); });
      std::printf("| %s, N = %lld (bound %lld), ms eager / jitted: symbolic / compiled for N | %.3f / %.3f | %.3f / %.3f | "
                  "%.2fx / %.2fx its speed |\n",
                  r.what, (long long)N, (long long)MM, ts * 1e3, tjs * 1e3, tc * 1e3, tjc * 1e3, tc / ts, tjc / tjs);
    }

  // 2b. the same kernel with a variable and with the constant
  Variable n("n", 0, 1 << 20);
  const int64_t N = 12345;
  Tensor x = Tensor::rand({16 << 20}).contiguous().realize();
  Tensor m = Tensor::rand({4096, 4096}).contiguous().realize();
  Tensor a = Tensor::rand({512, 512}).contiguous().realize(), b = Tensor::rand({512, 512}).contiguous().realize();
  auto ew = [&](const Tensor& v) { return (x * v.cast(DType::Float32) + 1).realize(); };
  auto red = [&](const Tensor& v) { return (Tensor::arange(4096).reshape({1, 4096}) < v).where(m, 0.0).sum(1).realize(); };
  auto mm = [&](const Tensor& v) { return (Tensor::arange(512).reshape({512, 1}) < v / 40).where(a, 0.0).matmul(b).realize(); };
  struct Row { const char* what; std::function<Tensor(const Tensor&)> f; };
  for (auto& r : {Row{"elementwise x*n+1, 16M f32", ew}, Row{"masked row sum 4096x4096", red}, Row{"masked matmul 512", mm}}) {
    double tv = best_of(dev, 5, [&] { r.f(Tensor(n.bind(N))); });
    double tc = best_of(dev, 5, [&] { r.f(Tensor(std::vector<int32_t>{int32_t(N)}, {}).realize()); });
    double tk = best_of(dev, 5, [&] { r.f(Tensor::full({}, double(N), DType::Int32)); });
    std::printf("| %s, ms: variable / buffer / constant | %.3f | %.3f / %.3f | %.2fx the constant's speed |\n", r.what, tv * 1e3, tc * 1e3,
                tk * 1e3, tk / tv);
  }
  // 3. a static encoder block over a sweep of sequence lengths (F<dyn, dyn, 64>: self-attention of 4 heads, a residual
  // and a layer norm), batch 4, lengths 2..LEN_MAX (default 128) in a shuffled order: every length's first call, then a
  // second pass (plans cached); the lengths as variables (a plan per power-of-two bucket) against a plan per length
  const int64_t LM = detail::getenv_int("LEN_MAX", 128);
  static_tensor<float, 64> lw((Tensor::rand({64}) + 0.5).realize()), lb(Tensor::rand({64}).realize());
  auto block = [&](const static_tensor<float, dyn, dyn, 64>& h) {
    auto q = h.unflatten<2, 4, 16>().permute<0, 2, 1, 3>();
    return layer_norm(scaled_dot_product_attention(q, q, q).permute<0, 2, 1, 3>().flatten<2>() + h, lw, lb, 1e-5);
  };
  std::vector<int64_t> lens;
  for (int64_t l = 2; l <= LM; l++) lens.push_back(l);
  std::mt19937 rng(7);
  std::shuffle(lens.begin(), lens.end(), rng);
  std::vector<static_tensor<float, dyn, dyn, 64>> ins;
  for (auto l : lens) ins.emplace_back(Tensor::rand({4, l, 64}).contiguous().realize());
  auto& max_value_plans = detail::st::max_value_plans;
  auto& max_plans = detail::st::max_plans_per_expression;
  size_t keep_values = max_value_plans, keep_plans = max_plans;
  max_plans = 4096;
  struct Sweep { double first = 0, second = 0; int64_t plans = 0, compiled = 0; float last = 0; };
  auto sweep = [&](bool symbolic) {
    Sweep r;
    max_value_plans = symbolic ? 0 : 4096;
    int64_t g0 = static_stats().graphs_built, k0 = run_stats().kernels_compiled;
    for (int pass = 0; pass < 2; pass++) {
      double t0 = detail::now_s();
      for (auto& h : ins) {
        // (the two modes are two expression types: a plan table each)
        auto y = [&]() -> static_tensor<float, dyn, dyn, 64> {
          if (symbolic) return block(h);
          return block(h) * 1.0f;
        }();
        if (&h == &ins.back()) r.last = Tensor(y).sum().item<float>();
      }
      sync(dev);
      (pass ? r.second : r.first) = detail::now_s() - t0;
    }
    r.plans = static_stats().graphs_built - g0;
    r.compiled = run_stats().kernels_compiled - k0;
    return r;
  };
  Sweep sym = sweep(true), per = sweep(false);
  max_value_plans = keep_values, max_plans = keep_plans;
  std::printf("| static encoder block, batch 4, lengths 2..%lld shuffled: first calls, total s (plans, kernels compiled) | %.3f (%lld, %lld) | "
              "%.3f (%lld, %lld) | %.1fx |\n",
              (long long)LM, sym.first, (long long)sym.plans, (long long)sym.compiled, per.first, (long long)per.plans, (long long)per.compiled,
              per.first / sym.first);
  std::printf("| the same lengths again (plans cached), total s | %.3f | %.3f | %.2fx |\n", sym.second, per.second, per.second / sym.second);
  std::printf("| last output's sum: variables / per length | %.6g | %.6g | |\n", double(sym.last), double(per.last));

  // 4. the static MNIST model over batches 1..64: plans and kernels of batch 1, then what batches 2..64 add
  namespace snn = static_nn;
  auto model = snn::seq(snn::Conv2d<1, 8, 5>{}, snn::relu, snn::Conv2d<8, 8, 5>{}, snn::relu, snn::BatchNorm<8>{}, snn::MaxPool2d<2>{},
                        snn::Conv2d<8, 16, 3>{}, snn::relu, snn::Conv2d<16, 16, 3>{}, snn::relu, snn::BatchNorm<16>{}, snn::MaxPool2d<2>{},
                        snn::Flatten<1>{}, snn::Linear<144, 10>{});
  for (auto& p : model.parameters()) p.requires_grad_(false);  // inference: the layers evaluate through plans
  Tensor images = Tensor::rand({64, 1, 28, 28}).contiguous().realize();
  int64_t counts[2][2] = {};  // [batch 1, batches 2..64][plans, kernels]
  double t_sweep = 0;
  for (int64_t b = 1; b <= 64; b++) {
    static_tensor<float, dyn, 1, 28, 28> x(images.shrink({{0, b}, {0, 1}, {0, 28}, {0, 28}}).contiguous().realize());
    int64_t g0 = static_stats().graphs_built, k0 = run_stats().kernels_compiled;
    double t1 = detail::now_s();
    static_tensor<float, dyn, 10> y = model(x);
    sync(dev);
    if (b > 1) t_sweep += detail::now_s() - t1;
    counts[b > 1][0] += static_stats().graphs_built - g0;
    counts[b > 1][1] += run_stats().kernels_compiled - k0;
  }
  std::printf("| static MNIST CNN, batches 2..64 after batch 1: plans built, kernels compiled (sweep s) | %lld, %lld (%.3f) | "
              "batch 1: %lld, %lld | |\n",
              (long long)counts[1][0], (long long)counts[1][1], t_sweep, (long long)counts[0][0], (long long)counts[0][1]);
  std::error_code ec;
  fs::remove_all(cache, ec);
  return 0;
}
