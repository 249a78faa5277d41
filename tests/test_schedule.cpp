// Kernel counts (tinygrad's test_schedule): the number of kernels one realize runs, measured as the
// delta of run_stats().kernels_run around a realize whose inputs are freshly uploaded buffers, so
// nothing but the graph under test is scheduled. Results are checked too: a count is only meaningful
// for a schedule that computes the right thing. Then the schedule cache.
#include <catch2/catch.hpp>
#include <set>
#include <tinygrad.hpp>

#include "one_kernel.hpp"

#include <cmath>
#include <random>

using tinygrad::Shape;
using tinygrad::Tensor;

namespace {
// a realized input tensor of random values (a fresh buffer: no kernel behind it)
Tensor input(const Shape& s, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(size_t(tinygrad::detail::prod(s)));
  for (auto& x : v) x = d(g);
  Tensor t(v, s);
  REQUIRE(t.is_realized());
  return t;
}
// kernels run by realizing t
int64_t kernels_to_realize(Tensor& t) {
  int64_t before = tinygrad::run_stats().kernels_run;
  t.realize();
  return tinygrad::run_stats().kernels_run - before;
}
std::vector<float> host(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

TEST_CASE("schedule: a chain of 10+ elementwise ops is 1 kernel", "[schedule]") {
  Tensor a = input({16, 33}, 1), b = input({16, 33}, 2), c = input({33}, 3);
  Tensor x = a * 1.5;       // 1
  x = x + b;                // 2
  x = x.exp();              // 3
  x = x - 0.5;              // 4
  x = x.maximum(c);         // 5 (broadcast input)
  x = x * b.flip(0);        // 6 (a view of an input)
  x = x.abs().sqrt();       // 7, 8
  x = x / 3;                // 9
  x = x.sigmoid();          // 10
  x = -x;                   // 11
  CHECK(kernels_to_realize(x) == 1);
  auto va = host(a), vb = host(b), vc = host(c), got = host(x);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 33; j++) {
      double v = std::exp(va[size_t(i * 33 + j)] * 1.5 + vb[size_t(i * 33 + j)]) - 0.5;
      v = std::max(v, double(vc[size_t(j)])) * vb[size_t((15 - i) * 33 + j)];
      v = -1 / (1 + std::exp(-std::sqrt(std::abs(v)) / 3));
      INFO(i << "," << j);
      REQUIRE(got[size_t(i * 33 + j)] == Approx(v).epsilon(1e-5).margin(1e-6));
    }
  // realizing again runs nothing
  CHECK(kernels_to_realize(x) == 0);
}

TEST_CASE("schedule: matmul is 1 kernel, with bias and relu still 1", "[schedule]") {
  Tensor a = input({16, 32}, 11), w = input({32, 8}, 12), bias = input({8}, 13);
  Tensor m = a.matmul(w);
  CHECK(kernels_to_realize(m) == 1);
  Tensor y = (a.matmul(w) + bias).relu();
  CHECK(kernels_to_realize(y) == 1);
  auto vm = host(m), vb = host(bias), vy = host(y);
  for (size_t i = 0; i < vy.size(); i++) REQUIRE(vy[i] == Approx(std::max(0.f, vm[i] + vb[i % 8])).margin(1e-6));
  Tensor batched = input({4, 5, 6}, 14).matmul(input({4, 6, 3}, 15));
  CHECK(kernels_to_realize(batched) == 1);
  Tensor mv = input({7, 9}, 16).matmul(input({9}, 17));
  CHECK(kernels_to_realize(mv) == 1);
}

TEST_CASE("schedule: a reduce of an elementwise chain is 1 kernel", "[schedule]") {
  Tensor a = input({64, 48}, 21), b = input({48}, 22);
  Tensor s = ((a * 2 + b).exp() * a.T().T()).sum();
  CHECK(kernels_to_realize(s) == 1);
  Tensor s1 = ((a - b).abs() + 1).log().sum(1);
  CHECK(kernels_to_realize(s1) == 1);
  Tensor mx = (a * b).max(0, true);
  CHECK(kernels_to_realize(mx) == 1);
  auto va = host(a), vb = host(b);
  double want = 0;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 48; j++) { double x = va[size_t(i * 48 + j)]; want += std::exp(x * 2 + vb[size_t(j)]) * x; }
  CHECK(s.item<float>() == Approx(want).epsilon(1e-4));
}

TEST_CASE("schedule: an embedding over a long vocabulary is one kernel reading its rows (a one-hot sum is not split)", "[schedule]") {
  // a float sum of 40000 terms an output would be split for accuracy; a one-hot select has one term, and its fold reads
  // one row an index (it was split, and then summed every row for every token: 1.3 s an LLM prompt chunk)
  int64_t vocab = 40000, dim = 8;
  Tensor w = input({vocab, dim}, 7);
  Tensor idx = Tensor(std::vector<int32_t>{3, 39999, 0, 1234}, {4});
  Tensor e = tinygrad::nn::embedding(idx, w);
  CHECK(kernels_to_realize(e) == 1);
  auto got = host(e), all = host(w);
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < size_t(dim); j++) CHECK(got[i * size_t(dim) + j] == all[size_t(std::vector<int>{3, 39999, 0, 1234}[i]) * size_t(dim) + j]);
}

TEST_CASE("schedule: a long reduce into few outputs is split over two kernels, same values", "[schedule]") {
  // split when in/out >= 32768 and the outputs alone cannot keep the device busy (CPU: fewer than its cores); a float sum
  // splits whatever the outputs, in stages of at most kSumTerms terms an output (a GPU's 2^17 = 512 x 256: 2 kernels;
  // 2^20: 3; a CPU's partials sum contiguous chunks of up to 1024: 2^20 in 2)
  Tensor a = input({3, 1 << 17}, 31), v = input({1 << 20}, 32, 0, 1);
  auto va = host(a), vv = host(v);
  std::vector<double> sum(3, 0), mx(3, -1e30);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < (1 << 17); j++) { double x = va[size_t(i * (1 << 17) + j)]; sum[size_t(i)] += x; mx[size_t(i)] = std::max(mx[size_t(i)], x); }
  double total = 0, sq = 0;
  for (double x : vv) { total += x; sq += x * x; }
  Tensor s = a.sum(1), m = a.max(1, true), t = v.sum(), mean = v.mean();
  CHECK(kernels_to_realize(s) == 2);
  CHECK(kernels_to_realize(t) == (tinygrad::runtime(v.device()).parallelism < 4096 ? 2 : 3));
  bool busy = tinygrad::runtime(a.device()).parallelism <= 3;  // 3 outputs already keep the device busy
  CHECK(kernels_to_realize(m) == (busy ? 1 : 2));
  auto hs = host(s), hm = host(m);
  for (int i = 0; i < 3; i++) {
    CHECK(hs[size_t(i)] == Approx(sum[size_t(i)]).epsilon(1e-5));
    CHECK(hm[size_t(i)] == float(mx[size_t(i)]));
    CHECK(m.shape() == Shape{3, 1});
  }
  CHECK(t.item<float>() == Approx(total).epsilon(1e-5));
  CHECK(mean.item<float>() == Approx(total / (1 << 20)).epsilon(1e-5));
  CHECK((v * v).sum().item<float>() == Approx(sq).epsilon(1e-5));
  // the gradient flows through both stages
  Tensor w = Tensor(vv, {1 << 20}).requires_grad_();
  (w * w).sum().backward();
  auto g = host(*w.grad());
  double err = 0;
  for (size_t i = 0; i < vv.size(); i++) err = std::max(err, std::abs(g[i] - 2.0 * vv[i]));
  CHECK(err < 1e-6);
  // a prime length (no chunk divides it): on a CPU zeros pad it to chunks (one stage of 10^6 terms was 1% off)
  Tensor p = Tensor::full({1000003}, 0.1);
  if (tinygrad::runtime(p.device()).parallelism < 4096) CHECK(p.sum().item<double>() == Approx(double(0.1f) * 1000003).epsilon(1e-4));
  // a float sum over several axes (BatchNorm's statistics): every stage adds few terms (split over the batch axis
  // alone, the first kernel summed 147456 terms an output: 1.6e-4 off)
  CHECK(Tensor::full({512, 32, 24, 24}, 0.1).sum({0, 2, 3}).to_vector<float>()[0] == Approx(double(0.1f) * 512 * 576).epsilon(1e-5));
  // a reduce of a long broadcast axis splits too, and stays right
  Tensor e = input({1}, 33).expand({1 << 20}).sum();
  CHECK(e.item<float>() == Approx(double(host(input({1}, 33))[0]) * (1 << 20)).epsilon(1e-3));  // fp32 sums of 4096 equal terms
}

TEST_CASE("schedule: a load below a pad is indexed where the pad's gate holds: a per-channel read through a pool has no div/mod",
          "[schedule]") {
  // the pad shifts the pool's index, negative where its gate is false: simplified over every value, the bias's index
  // kept the pool's reshape as divisions and modulos (a training step's max-pool gradient: 57 -> 17 ms on 2 cores)
  Tensor x = input({2, 3, 8, 8}, 140), c = input({3}, 141);
  Tensor y = (x + c.reshape({1, 3, 1, 1})).relu().max_pool2d({2, 2}).pad({{0, 0}, {0, 0}, {2, 2}, {2, 2}});
  auto ks = kernels_of(y, "CPU");
  REQUIRE(ks.size() == 1);
  std::string src = tinygrad::detail::to_program(ks[0].ast, *tinygrad::detail::get_device("CPU").renderer, std::vector<tinygrad::Opt>{}).src;
  CHECK(src.find('%') == std::string::npos);
  auto vx = host(x), vc = host(c), got = host(y);
  for (int b = 0; b < 2; b++)
    for (int ch = 0; ch < 3; ch++)
      for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
          float want = 0;
          if (i >= 2 && i < 6 && j >= 2 && j < 6) {
            want = -1e30f;
            for (int u = 0; u < 2; u++)
              for (int v = 0; v < 2; v++)
                want = std::max(want, std::max(0.0f, vx[size_t(((b * 3 + ch) * 8 + (i - 2) * 2 + u) * 8 + (j - 2) * 2 + v)] + vc[size_t(ch)]));
          }
          CHECK(got[size_t(((b * 3 + ch) * 8 + i) * 8 + j)] == want);
        }
}

TEST_CASE("schedule: an output read as div/mod of one index gets a range per dim on the CPU (and its vector lanes)", "[schedule]") {
  // a decode step's attention: probabilities (kv, g, 1, t) @ values (kv, 1, t, d), its heads written as one row of
  // kv * g * d: the row's range read as (r / 192, r / 64 % 3, r % 64) was one scalar loop (576 outputs, no opts)
  const int64_t T = 37;
  Tensor p = input({3, 3, 1, T}, 150), v = input({3, 1, T, 64}, 151);
  Tensor y = p.matmul(v).reshape({9, 1, 64}).permute({1, 0, 2}).reshape({1, 576}).contiguous();
  auto ks = kernels_of(y, "CPU");
  REQUIRE(ks.size() == 1);
  std::vector<int64_t> loops;
  for (auto& r : tinygrad::detail::ranges_of(ks[0].ast))
    if (tinygrad::detail::axis_type(r) == tinygrad::detail::AxisType::LOOP) loops.push_back(r->range_end());
  CHECK(loops == std::vector<int64_t>{3, 3, 64});
  const auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  std::string src = tinygrad::detail::to_program(ks[0].ast, ren, std::vector<tinygrad::Opt>{}).src;
  CHECK(src.find('%') == std::string::npos);
  if (ren.vector_lanes(tinygrad::DType::Float32) > 1) {
    auto opts = tinygrad::detail::hand_coded_optimizations(ks[0].ast, ren);
    CHECK(std::any_of(opts.begin(), opts.end(), [](const tinygrad::Opt& o) { return o.op == tinygrad::OptOp::VECTOR; }));
  }
  auto vp = host(p), vv = host(v), got = host(y);
  for (int h = 0; h < 9; h++)
    for (int d = 0; d < 64; d++) {
      double want = 0;
      for (int t = 0; t < T; t++) want += double(vp[size_t(h * T + t)]) * vv[size_t(((h / 3) * T + t) * 64 + d)];
      CHECK(std::abs(got[size_t(h * 64 + d)] - want) < 1e-5);
    }
}

TEST_CASE("schedule: index math is 64-bit only in a kernel whose indices can pass 2^31", "[schedule]") {
  using tinygrad::DType;
  auto index_dtypes = [](const Tensor& t) {
    std::unordered_map<const tinygrad::UOp*, int> slots;
    int n = 0;
    for (auto& u : tinygrad::detail::toposort(t.uop())) if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
    std::set<DType> dts;
    for (auto& k : tinygrad::detail::create_schedule({t.uop()}, slots, n).kernels)
      for (auto& u : tinygrad::detail::toposort(k.ast)) if (u->op == tinygrad::Ops::RANGE) dts.insert(u->dtype);
    return dts;
  };
  const int64_t big = int64_t(1) << 32;
  Tensor x = input({64}, 1);
  // a view of 2^32 elements (a reshape of a broadcast, as a conv's window view), of which 100 are read: 32-bit
  Tensor small = x.reshape({64, 1}).expand({64, big / 64}).reshape({big}).shrink({{0, 100}}) + 1;
  CHECK(index_dtypes(small) == std::set<DType>{DType::Int32});
  auto got = host(small), hx = host(x);
  for (size_t i = 0; i < 100; i++) CHECK(got[i] == hx[0] + 1);
  // its other end: element 2^32 - 100 on, of x's last value; the simplified index stays small there too
  Tensor end = x.reshape({64, 1}).expand({64, big / 64}).reshape({big}).shrink({{big - 100, big}}) + 1;
  CHECK(index_dtypes(end) == std::set<DType>{DType::Int32});
  CHECK(host(end)[99] == hx[63] + 1);
  // an output of more than 2^31 elements: 64-bit (scheduled, not run)
  Tensor huge = Tensor::empty({(int64_t(1) << 31) + 2}) + 1;
  CHECK(index_dtypes(huge) == std::set<DType>{DType::Int64});
  // the same small view of int64 data: the loads and stores of 64-bit values keep the kernel 64-bit
  Tensor i64 = Tensor::empty({64}, DType::Int64).reshape({64, 1}).expand({64, big / 64}).reshape({big}).shrink({{0, 100}}) + 1;
  CHECK(index_dtypes(i64) == std::set<DType>{DType::Int64});
}

TEST_CASE("schedule: conv2d + relu is 1 kernel (and the CPU's copy of the weight with its output channels innermost)", "[schedule]") {
  Tensor x = input({2, 3, 10, 10}, 31), w = input({4, 3, 3, 3}, 32), b = input({4}, 33);
  int64_t copy = tinygrad::detail::get_device(x.device()).renderer->has_local ? 0 : 1;
  Tensor y = x.conv2d(w).relu();
  CHECK(kernels_to_realize(y) == 1 + copy);
  Tensor yb = x.conv2d(w, b, 2, 1).relu();
  CHECK(kernels_to_realize(yb) == 1 + copy);
  // a weight kept in that layout (a permuted view of it) is read as it is
  Tensor wl = w.permute({1, 2, 3, 0}).contiguous().realize().permute({3, 0, 1, 2});
  Tensor yl = x.conv2d(wl).relu(), ybl = x.conv2d(wl, b, 2, 1).relu();
  CHECK(kernels_to_realize(yl) == 1);
  CHECK(kernels_to_realize(ybl) == 1);
  CHECK(yb.shape() == Shape{2, 4, 5, 5});
  // spot-check one output against a direct sum
  auto vx = host(x), vw = host(w), vy = host(y);
  double s = 0;
  for (int ci = 0; ci < 3; ci++) for (int ky = 0; ky < 3; ky++) for (int kx = 0; kx < 3; kx++)
    s += vx[size_t(((1 * 3 + ci) * 10 + 2 + ky) * 10 + 5 + kx)] * vw[size_t(((3 * 3 + ci) * 3 + ky) * 3 + kx)];
  CHECK(vy[size_t(((1 * 4 + 3) * 8 + 2) * 8 + 5)] == Approx(std::max(s, 0.0)).margin(1e-5));
}

TEST_CASE("schedule: BatchNorm, ReLU and a max-pool before a conv are computed once, forward and backward, not per output channel",
          "[schedule]") {
  // a training step's kernels do the FLOPs of the same step with the pool's output realized by hand (.contiguous()): the
  // scheduler never fuses the normalisation, ReLU and pool into the conv (16 output channels x 9 taps would compute
  // them 144 times), and the by-hand kernel is no extra kernel
  struct Step { size_t kernels = 0; double flops = 0; std::vector<float> dw; };
  auto step = [](bool by_hand) {
    Tensor x = input({8, 4, 12, 12}, 51);
    Tensor::manual_seed(52);  // the same conv weights in both
    tinygrad::nn::BatchNorm bn(4);
    tinygrad::nn::Conv2d conv(4, 16, 3);
    tinygrad::TrainingScope train;
    Tensor h = bn(x).relu().max_pool2d();
    if (by_hand) h = h.contiguous();
    Tensor loss = conv(h).square().sum();
    loss.backward();
    Step s;
    for (auto& k : kernels_of({loss, *conv.weight.grad(), *bn.weight->grad(), *bn.bias->grad()}))
      s.kernels++, s.flops += tinygrad::detail::estimate_flops(k.ast);
    s.dw = host(*conv.weight.grad());
    return s;
  };
  Step fused = step(false), by_hand = step(true);
  INFO(fused.kernels << " kernels, " << fused.flops << " FLOPs; with .contiguous(): " << by_hand.kernels << ", " << by_hand.flops);
  CHECK(fused.flops > 0);
  CHECK(fused.flops <= 1.05 * by_hand.flops);
  CHECK(fused.kernels == by_hand.kernels);
  REQUIRE(fused.dw.size() == by_hand.dw.size());
  for (size_t i = 0; i < fused.dw.size(); i++) CHECK(fused.dw[i] == Approx(by_hand.dw[i]).epsilon(1e-4).margin(1e-4));
}

TEST_CASE("schedule: a large realized B of a matmul is read from panels of a vector's width on the CPU (a copy), as it is on a GPU",
          "[schedule]") {
  // 256 x 1024 @ 1024 x 1024: B is 4 MB, past a core's L2; the CPU's kernel reads it from a copy in panels of its columns
  const auto& rt = tinygrad::runtime(tinygrad::default_device());
  const bool panels = !rt.workgroups && rt.vector_bytes >= 16;
  Tensor a = input({256, 1024}, 61), b = input({1024, 1024}, 62);
  Tensor c = a.matmul(b);
  CHECK(kernels_to_realize(c) == (panels ? 2 : 1));
  // a Linear layer's x @ W.T: W's transpose copied into the panels; small B (1 MB) or few rows: no copy
  Tensor bs = input({512, 512}, 63), few = input({64, 1024}, 64);
  Tensor c2 = input({256, 512}, 65).matmul(bs), c3 = few.matmul(b), c4 = a.matmul(b.transpose());
  CHECK(kernels_to_realize(c2) == 1);
  CHECK(kernels_to_realize(c3) == 1);
  CHECK(kernels_to_realize(c4) == (panels ? 2 : 1));
  auto va = host(a), vb = host(b), vc = host(c), v3 = host(c3), vf = host(few), v4 = host(c4);
  std::mt19937 g(66);
  for (int t = 0; t < 64; t++) {
    size_t i = g() % 256, j = g() % 1024;
    double s = 0, s3 = 0, s4 = 0;
    for (size_t k = 0; k < 1024; k++) {
      s += double(va[i * 1024 + k]) * vb[k * 1024 + j];
      s4 += double(va[i * 1024 + k]) * vb[j * 1024 + k];
      if (i < 64) s3 += double(vf[i * 1024 + k]) * vb[k * 1024 + j];
    }
    CHECK(vc[i * 1024 + j] == Approx(s).margin(1e-3));
    CHECK(v4[i * 1024 + j] == Approx(s4).margin(1e-3));
    if (i < 64) CHECK(v3[i * 1024 + j] == Approx(s3).margin(1e-3));
  }
  // the gradient flows through the copy: d(sum(a @ b))/db[k][j] = sum_i a[i][k], and through W.T's: dW[j][k] the same
  Tensor bw = input({1024, 1024}, 67).requires_grad_(), ww = input({1024, 1024}, 68).requires_grad_();
  (a.matmul(bw).sum() + a.matmul(ww.transpose()).sum()).backward();
  auto gb = host(*bw.grad()), gw = host(*ww.grad());
  for (size_t k : {0u, 511u, 1023u}) {
    double col = 0;
    for (size_t i = 0; i < 256; i++) col += va[i * 1024 + k];
    CHECK(gb[k * 1024 + 7] == Approx(col).margin(1e-3));
    CHECK(gw[7 * 1024 + k] == Approx(col).margin(1e-3));
  }
}

TEST_CASE("schedule: softmax is at most 3 kernels", "[schedule]") {
  Tensor x = input({32, 100}, 41, -5, 5);
  Tensor y = x.softmax();
  int64_t k = kernels_to_realize(y);
  INFO("softmax ran " << k << " kernels");
  CHECK(k >= 1);
  CHECK(k <= 3);
  Tensor ls = x.log_softmax(0);
  int64_t k2 = kernels_to_realize(ls);
  INFO("log_softmax ran " << k2 << " kernels");
  CHECK(k2 <= 3);
  for (float r : y.sum(1).to_vector<float>()) CHECK(r == Approx(1).margin(1e-5));
}

TEST_CASE("schedule: a 2-layer MLP forward is at most 3 kernels", "[schedule]") {
  Tensor x = input({8, 20}, 51), w1 = input({20, 32}, 52), b1 = input({32}, 53), w2 = input({32, 10}, 54), b2 = input({10}, 55);
  Tensor y = (x.matmul(w1) + b1).relu().matmul(w2) + b2;
  int64_t k = kernels_to_realize(y);
  INFO("MLP ran " << k << " kernels");
  CHECK(k >= 1);
  CHECK(k <= 3);
  // against the same math split into realized steps
  Tensor h = (x.matmul(w1) + b1).relu().realize();
  auto want = host(h.matmul(w2) + b2), got = host(y);
  for (size_t i = 0; i < got.size(); i++) REQUIRE(got[i] == Approx(want[i]).margin(1e-5));
}

TEST_CASE("schedule: zero-size outputs run no kernel", "[schedule]") {
  Tensor e = Tensor::zeros({0, 4}) + input({4}, 61);
  CHECK(kernels_to_realize(e) == 0);
  CHECK(e.shape() == Shape{0, 4});
}

// multi-output kernels: reduces of one input over the same axes share a kernel (several stores in its SINK)
namespace {
int64_t kernels_to_realize_all(std::vector<Tensor> ts) {
  int64_t before = tinygrad::run_stats().kernels_run;
  Tensor::realize_all(ts);
  return tinygrad::run_stats().kernels_run - before;
}
// a (rows, cols) view of a 2-d tensor's values, reduced along cols: sum, max, mean, biased variance (two passes)
struct RowStats { std::vector<double> sum, max, mean, var; };
RowStats row_stats(const std::vector<float>& v, int64_t rows, int64_t cols) {
  RowStats r;
  for (int64_t i = 0; i < rows; i++) {
    double s = 0, m = -INFINITY, q = 0;
    for (int64_t j = 0; j < cols; j++) { s += v[size_t(i * cols + j)]; m = std::max(m, double(v[size_t(i * cols + j)])); }
    double mean = s / double(cols);
    for (int64_t j = 0; j < cols; j++) q += (v[size_t(i * cols + j)] - mean) * (v[size_t(i * cols + j)] - mean);
    r.sum.push_back(s); r.max.push_back(m); r.mean.push_back(mean); r.var.push_back(q / double(cols));
  }
  return r;
}
}  // namespace

TEST_CASE("schedule: sum and max of one input over the same axes are 1 kernel", "[schedule]") {
  // (shape, axis): size-1 dims on either side, a size-1 reduce, a reduce over the outer dim
  struct Case { Shape shape; int64_t axis; };
  for (auto [shape, axis] : std::vector<Case>{{{16, 33}, 1},
                                              {{16, 33}, 0},
                                              {{1, 7}, 1},
                                              {{5, 1}, 1},
                                              {{3, 1, 4}, 2},
                                              {{1, 1}, 0},
                                              {{64, 256}, 1},
                                              {{256, 1024}, 0},
                                              {{1024, 256}, 1}}) {  // the last two: big enough for vector lanes and CPU threads
    INFO(tinygrad::to_string(shape) << " axis " << axis);
    Tensor x = input(shape, 101);
    Tensor s = x.sum(axis), m = x.max(axis);
    CHECK(kernels_to_realize_all({s, m}) == 1);
    // the same values as a plain loop, with the reduced axis last
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < int64_t(shape.size()); d++) if (d != axis) perm.push_back(d);
    perm.push_back(axis);
    int64_t cols = shape[size_t(axis)], rows = tinygrad::detail::prod(shape) / cols;
    RowStats want = row_stats(host(x.permute(perm).contiguous()), rows, cols);
    auto gs = host(s), gm = host(m);
    REQUIRE(gs.size() == size_t(rows));
    for (size_t i = 0; i < size_t(rows); i++) {
      REQUIRE(gs[i] == Approx(want.sum[i]).margin(1e-3));
      REQUIRE(gm[i] == float(want.max[i]));
    }
  }
}

TEST_CASE("schedule: multi-output reduces of a transposed and of a broadcast input", "[schedule]") {
  Tensor a = input({33, 16}, 102);
  Tensor x = a.transpose(0, 1);  // (16, 33), not contiguous
  Tensor s = x.sum(1), m = x.max(1), mn = x.min(1), me = x.mean(1);
  CHECK(kernels_to_realize_all({s, m, mn, me}) == 1);
  RowStats want = row_stats(host(x.contiguous()), 16, 33);
  for (size_t i = 0; i < 16; i++) {
    REQUIRE(host(s)[i] == Approx(want.sum[i]).margin(1e-4));
    REQUIRE(host(m)[i] == float(want.max[i]));
    REQUIRE(host(me)[i] == Approx(want.mean[i]).margin(1e-5));
  }
  auto va = host(a), gmn = host(mn);
  for (size_t i = 0; i < 16; i++) {
    float lo = INFINITY;
    for (size_t j = 0; j < 33; j++) lo = std::min(lo, va[j * 16 + i]);
    REQUIRE(gmn[i] == lo);
  }
  // an input broadcast along rows plus one that varies: (8, 1) + (1, 20) -> (8, 20)
  Tensor r = input({8, 1}, 103), c = input({1, 20}, 104);
  Tensor y = r + c;
  Tensor ys = y.sum(1), ym = y.max(1);
  CHECK(kernels_to_realize_all({ys, ym}) == 1);
  auto vr = host(r), vc = host(c);
  for (size_t i = 0; i < 8; i++) {
    double sum = 0, mx = -INFINITY;
    for (size_t j = 0; j < 20; j++) { sum += double(vr[i]) + vc[j]; mx = std::max(mx, double(vr[i] + vc[j])); }
    REQUIRE(host(ys)[i] == Approx(sum).margin(1e-4));
    REQUIRE(host(ym)[i] == float(mx));
  }
}

TEST_CASE("schedule: mean and variance are 1 kernel, two passes (the numerics of two kernels)", "[schedule]") {
  for (Shape shape : {Shape{16, 33}, Shape{1, 9}, Shape{7, 1}, Shape{4, 300}}) {
    INFO(tinygrad::to_string(shape));
    // a large mean against a small spread: one pass of sum and sum of squares would cancel
    Tensor x = input(shape, 105, 1000, 1001);
    Tensor me = x.mean(1), v = x.var(1, false, 0);
    CHECK(kernels_to_realize_all({me, v}) == 1);
    RowStats want = row_stats(host(x), shape[0], shape[1]);
    auto gm = host(me), gv = host(v);
    for (size_t i = 0; i < size_t(shape[0]); i++) {
      REQUIRE(gm[i] == Approx(want.mean[i]).epsilon(1e-6));
      REQUIRE(gv[i] == Approx(want.var[i]).epsilon(1e-3).margin(1e-4));
    }
  }
  // the variance of a transpose, with the standard deviation from it
  Tensor x = input({12, 10}, 106).transpose(0, 1);
  Tensor me = x.mean(1), sd = x.std(1, false, 0);
  CHECK(kernels_to_realize_all({me, sd}) == 1);
  RowStats want = row_stats(host(x.contiguous()), 10, 12);
  for (size_t i = 0; i < 10; i++) REQUIRE(host(sd)[i] == Approx(std::sqrt(want.var[i])).epsilon(1e-4));
}

TEST_CASE("schedule: BatchNorm and LayerNorm in training: the statistics are 1 kernel", "[schedule]") {
  const int64_t N = 4, C = 3, H = 5, W = 5;
  Tensor x = input({N, C, H, W}, 107, -1, 3);
  tinygrad::nn::BatchNorm2d bn(C);
  Tensor::realize_all({bn.running_mean, bn.running_var, bn.num_batches_tracked, *bn.weight, *bn.bias});
  Tensor y;
  {
    tinygrad::TrainingScope train;
    y = bn(x);
  }
  // one kernel for mean, variance, invstd and both running statistics; one for the output
  CHECK(kernels_to_realize_all({y, bn.running_mean, bn.running_var}) == 2);
  auto vx = host(x), vy = host(y), rm = host(bn.running_mean), rv = host(bn.running_var);
  const double n = double(N * H * W);
  for (int64_t c = 0; c < C; c++) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < N; i++) for (int64_t j = 0; j < H * W; j++) s += vx[size_t((i * C + c) * H * W + j)];
    double mean = s / n;
    for (int64_t i = 0; i < N; i++) for (int64_t j = 0; j < H * W; j++) q += std::pow(vx[size_t((i * C + c) * H * W + j)] - mean, 2);
    double var = q / n;
    REQUIRE(rm[size_t(c)] == Approx(0.1 * mean).margin(1e-5));
    REQUIRE(rv[size_t(c)] == Approx(0.9 + 0.1 * q / (n - 1)).margin(1e-5));
    for (int64_t i = 0; i < N; i++)
      for (int64_t j = 0; j < H * W; j++) {
        size_t at = size_t((i * C + c) * H * W + j);
        REQUIRE(vy[at] == Approx((vx[at] - mean) / std::sqrt(var + 1e-5)).margin(1e-4));
      }
  }

  Tensor xl = input({4, 6, 8}, 108);
  Tensor l = xl.layernorm();
  CHECK(kernels_to_realize(l) == 2);  // mean and variance, then the output
  RowStats want = row_stats(host(xl), 24, 8);
  auto vl = host(xl), gl = host(l);
  for (size_t i = 0; i < 24; i++)
    for (size_t j = 0; j < 8; j++) REQUIRE(gl[i * 8 + j] == Approx((vl[i * 8 + j] - want.mean[i]) / std::sqrt(want.var[i] + 1e-5)).margin(1e-4));
}

TEST_CASE("schedule: kernels that must not share a kernel stay apart", "[schedule]") {
  Tensor x = input({16, 33}, 109);
  // different output shapes: two kernels
  Tensor s1 = x.sum(1), s0 = x.sum(0);
  CHECK(kernels_to_realize_all({s1, s0}) == 2);
  // a reduce that reads another output element than the one this thread stores (a flip): values stay right
  Tensor m = x.max(1, true);
  Tensor z = (x - m.flip(0)).exp().sum(1);
  Tensor::realize_all({m, z});
  auto vx = host(x), vm = host(m), vz = host(z);
  for (size_t i = 0; i < 16; i++) {
    double s = 0;
    for (size_t j = 0; j < 33; j++) s += std::exp(double(vx[i * 33 + j]) - vm[15 - i]);
    REQUIRE(vz[i] == Approx(s).epsilon(1e-5));
  }
  // the softmax's max and sum share a kernel; its values are right
  Tensor sm = input({32, 100}, 110, -5, 5).softmax();
  CHECK(kernels_to_realize(sm) == 2);
  for (float r : sm.sum(1).to_vector<float>()) CHECK(r == Approx(1).margin(1e-5));
}

TEST_CASE("schedule cache: a multi-output kernel's schedule is reused over new buffers", "[schedule][cache]") {
  auto& st = tinygrad::run_stats();
  auto build = [](const Tensor& x) { return std::vector<Tensor>{x.sum(1) * 0.6875, x.max(1), x.var(1, false, 0)}; };
  std::vector<Tensor> r1 = build(input({9, 13}, 111));
  Tensor::realize_all(r1);
  int64_t hits = st.schedule_cache_hits, compiled = st.kernels_compiled;
  Tensor x2 = input({9, 13}, 112);
  std::vector<Tensor> r2 = build(x2);
  CHECK(kernels_to_realize_all(r2) == 1);
  CHECK(st.schedule_cache_hits == hits + 1);
  CHECK(st.kernels_compiled == compiled);
  RowStats want = row_stats(host(x2), 9, 13);
  for (size_t i = 0; i < 9; i++) {
    REQUIRE(host(r2[0])[i] == Approx(want.sum[i] * 0.6875).margin(1e-5));
    REQUIRE(host(r2[1])[i] == float(want.max[i]));
    REQUIRE(host(r2[2])[i] == Approx(want.var[i]).margin(1e-5));
  }
}

TEST_CASE("schedule cache: the same graph structure over new buffers reuses the schedule", "[schedule][cache]") {
  auto& st = tinygrad::run_stats();
  // a structure no other test builds (the 0.8125 and 3.25 constants are part of the key)
  auto build = [](const Tensor& a, const Tensor& b) { return ((a * b + 0.8125).relu().sum(1) * 3.25).exp2(); };
  Tensor a1 = input({6, 7}, 71), b1 = input({6, 7}, 72);
  Tensor r1 = build(a1, b1);
  r1.realize();

  int64_t hits = st.schedule_cache_hits, compiled = st.kernels_compiled, built = st.schedules_built, run = st.kernels_run;
  Tensor a2 = input({6, 7}, 73), b2 = input({6, 7}, 74);
  Tensor r2 = build(a2, b2);
  r2.realize();
  CHECK(st.schedule_cache_hits == hits + 1);
  CHECK(st.kernels_compiled == compiled);
  CHECK(st.schedules_built == built);
  CHECK(st.kernels_run > run);
  // the cached plan ran on the new buffers, not the old ones
  auto va = host(a2), vb = host(b2), got = host(r2);
  REQUIRE(got.size() == 6);
  for (int i = 0; i < 6; i++) {
    double s = 0;
    for (int j = 0; j < 7; j++) s += std::max(0.0, double(va[size_t(i * 7 + j)]) * vb[size_t(i * 7 + j)] + 0.8125);
    CHECK(got[size_t(i)] == Approx(std::exp2(s * 3.25)).epsilon(1e-5));
  }
  CHECK(host(r1) != got);

  SECTION("a different shape is a new schedule") {
    int64_t h = st.schedule_cache_hits, b = st.schedules_built;
    Tensor r3 = build(input({5, 7}, 75), input({5, 7}, 76));
    r3.realize();
    CHECK(st.schedule_cache_hits == h);
    CHECK(st.schedules_built == b + 1);
  }
  SECTION("a different constant is a new schedule") {
    int64_t h = st.schedule_cache_hits, b = st.schedules_built;
    Tensor r3 = (input({6, 7}, 77) * input({6, 7}, 78) + 0.8126).relu().sum(1);
    r3.realize();
    CHECK(st.schedule_cache_hits == h);
    CHECK(st.schedules_built == b + 1);
  }
  SECTION("SCACHE=0 turns the cache off") {
    int saved = tinygrad::flags().scache;
    tinygrad::flags().scache = 0;
    int64_t h = st.schedule_cache_hits, b = st.schedules_built, c = st.kernels_compiled;
    Tensor r3 = build(input({6, 7}, 79), input({6, 7}, 80));
    r3.realize();
    tinygrad::flags().scache = saved;
    CHECK(st.schedule_cache_hits == h);
    CHECK(st.schedules_built == b + 1);
    CHECK(st.kernels_compiled == c);  // the programs are still cached by AST
  }
}

TEST_CASE("schedule cache: a repeated training-style step compiles nothing after the first", "[schedule][cache]") {
  auto& st = tinygrad::run_stats();
  Tensor w = input({12, 5}, 91);
  auto step = [&](uint32_t seed) {
    Tensor x = input({4, 12}, seed);
    Tensor y = x.matmul(w).log_softmax();
    y.realize();
    return y;
  };
  step(92);
  int64_t compiled = st.kernels_compiled, hits = st.schedule_cache_hits;
  for (uint32_t s = 93; s < 98; s++) step(s);
  CHECK(st.kernels_compiled == compiled);
  CHECK(st.schedule_cache_hits == hits + 5);
}

TEST_CASE("schedule: a one-hot sum folds into one read per output: an embedding and a gather have no reduce loop", "[schedule]") {
  // NOTE: the ids are computed (a sum of two buffers), so the IndexError comes at the first read (the device's check);
  // out-of-range ones read zeros, the memory-safety net below the check
  Tensor w = Tensor::rand({1000, 16}).realize();
  Tensor idx = Tensor(std::vector<int32_t>{3, 999, -2, 1000, 0}).realize() + Tensor(std::vector<int32_t>(5, 0));
  auto no_reduce = [](const Tensor& t) {
    std::unordered_map<const tinygrad::UOp*, int> slots;
    int n = 0;
    for (auto& u : tinygrad::detail::toposort(t.uop())) if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
    for (auto& k : tinygrad::detail::create_schedule({t.uop()}, slots, n).kernels)
      for (auto& u : tinygrad::detail::toposort(k.ast)) if (u->op == tinygrad::Ops::REDUCE) return false;
    return true;
  };
  Tensor e = tinygrad::nn::embedding(idx, w);
  CHECK(no_reduce(e));
  CHECK_THROWS_AS(e.to_vector<float>(), tinygrad::IndexError);
  auto ev = e.to_vector<float>(), wv = w.to_vector<float>();
  int ids[] = {3, 999, -2, 1000, 0};
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < 16; k++) CHECK(ev[size_t(i * 16 + k)] == (ids[i] >= 0 && ids[i] < 1000 ? wv[size_t(ids[i] * 16 + k)] : 0.0f));
  Tensor g = w.gather(0, Tensor(std::vector<int32_t>{7, 0, 999, 5}).reshape({2, 2}));
  CHECK_THROWS_AS(tinygrad::nn::embedding(Tensor(std::vector<int32_t>{3, 1000}), w).sum().item<float>(), tinygrad::IndexError);
  CHECK(no_reduce(g));
  auto gv = g.to_vector<float>();
  CHECK(gv == std::vector<float>{wv[7 * 16], wv[1], wv[999 * 16 + 0], wv[5 * 16 + 1]});
}

TEST_CASE("schedule: reduces of different lengths side by side get kernels of their own (the longest stays fused)", "[schedule]") {
  // a conv's input gradient (3 x 3 x 4 = 36 terms an output) divided by the max-pool's count of maxima (4 terms): the
  // conv's reduce is the only one in its kernel, so a GEMM tile can take it; the values are the gradient's
  Tensor x = input({2, 3, 8, 8}, 120), w = input({4, 3, 3, 3}, 121), g = input({2, 4, 2, 2}, 122);
  x.requires_grad_();
  Tensor y = x.max_pool2d({2, 2}).conv2d(w);
  Tensor dx = tinygrad::gradient((y * g).sum(), {x})[0];
  std::unordered_map<const tinygrad::UOp*, int> slots;
  int n = 0;
  for (auto& u : tinygrad::detail::toposort(dx.uop()))
    if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
  for (auto& k : tinygrad::detail::create_schedule({dx.uop()}, slots, n).kernels) {
    std::set<int64_t> lengths;
    for (auto& u : tinygrad::detail::toposort(k.ast))
      if (u->op == tinygrad::Ops::REDUCE) {
        int64_t t = 1;
        for (size_t i = 1; i < u->src.size(); i++) t *= u->src[i]->range_end();
        lengths.insert(t);
      }
    CHECK(lengths.size() <= 1);
  }
  // the gradient against loops: each pooled value's gradient (the conv's transpose) goes to its window's maxima, split
  // evenly between ties
  auto vx = host(x), vw = host(w), vg = host(g), got = host(dx);
  for (int b = 0; b < 2; b++)
    for (int c = 0; c < 3; c++)
      for (int py = 0; py < 4; py++)
        for (int px = 0; px < 4; px++) {
          double gp = 0;  // d loss / d pooled[b, c, py, px]
          for (int o = 0; o < 4; o++)
            for (int oy = 0; oy < 2; oy++)
              for (int ox = 0; ox < 2; ox++)
                if (py - oy >= 0 && py - oy < 3 && px - ox >= 0 && px - ox < 3)
                  gp += vg[size_t(((b * 4 + o) * 2 + oy) * 2 + ox)] * vw[size_t(((o * 3 + c) * 3 + py - oy) * 3 + px - ox)];
          auto at = [&](int i, int j) { return size_t(((b * 3 + c) * 8 + 2 * py + i) * 8 + 2 * px + j); };
          float mx = std::max(std::max(vx[at(0, 0)], vx[at(0, 1)]), std::max(vx[at(1, 0)], vx[at(1, 1)]));
          int ties = 0;
          for (int i = 0; i < 2; i++) for (int j = 0; j < 2; j++) ties += vx[at(i, j)] == mx;
          for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) CHECK(got[at(i, j)] == Approx(vx[at(i, j)] == mx ? gp / ties : 0.0).margin(1e-5));
        }
}
