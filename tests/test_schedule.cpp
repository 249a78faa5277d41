// Kernel counts (tinygrad's test_schedule): the number of kernels one realize runs, measured as the
// delta of run_stats().kernels_run around a realize whose inputs are freshly uploaded buffers, so
// nothing but the graph under test is scheduled. Results are checked too: a count is only meaningful
// for a schedule that computes the right thing. Then the schedule cache.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <random>

using tinygrad::Shape;
using tinygrad::Tensor;

namespace {
// a realized input tensor of random values (a fresh buffer: no kernel behind it)
Tensor input(const Shape& s, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(size_t(tinygrad::prod(s)));
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

TEST_CASE("schedule: a long reduce into few outputs is split over two kernels, same values", "[schedule]") {
  // split when in/out >= 32768 and the outputs alone cannot keep the device busy (CPU: fewer than its cores)
  Tensor a = input({3, 1 << 17}, 31), v = input({1 << 20}, 32, 0, 1);
  auto va = host(a), vv = host(v);
  std::vector<double> sum(3, 0), mx(3, -1e30);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < (1 << 17); j++) { double x = va[size_t(i * (1 << 17) + j)]; sum[size_t(i)] += x; mx[size_t(i)] = std::max(mx[size_t(i)], x); }
  double total = 0, sq = 0;
  for (double x : vv) { total += x; sq += x * x; }
  Tensor s = a.sum(1), m = a.max(1, true), t = v.sum(), mean = v.mean();
  bool busy = a.device() == "CPU" && tinygrad::cpu_threads() <= 3;  // 3 outputs already feed every core
  CHECK(kernels_to_realize(s) == (busy ? 1 : 2));
  CHECK(kernels_to_realize(t) == (v.device() == "CPU" && tinygrad::cpu_threads() == 1 ? 1 : 2));
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
  // a reduce of a long broadcast axis splits too, and stays right
  Tensor e = input({1}, 33).expand({1 << 20}).sum();
  CHECK(e.item<float>() == Approx(double(host(input({1}, 33))[0]) * (1 << 20)).epsilon(1e-3));  // fp32 sums of 4096 equal terms
}

TEST_CASE("schedule: conv2d + relu is 1 kernel", "[schedule]") {
  Tensor x = input({2, 3, 10, 10}, 31), w = input({4, 3, 3, 3}, 32), b = input({4}, 33);
  Tensor y = x.conv2d(w).relu();
  CHECK(kernels_to_realize(y) == 1);
  Tensor yb = x.conv2d(w, b, 1, {2}, {1}, {1}).relu();
  CHECK(kernels_to_realize(yb) == 1);
  CHECK(yb.shape() == Shape{2, 4, 5, 5});
  // spot-check one output against a direct sum
  auto vx = host(x), vw = host(w), vy = host(y);
  double s = 0;
  for (int ci = 0; ci < 3; ci++) for (int ky = 0; ky < 3; ky++) for (int kx = 0; kx < 3; kx++)
    s += vx[size_t(((1 * 3 + ci) * 10 + 2 + ky) * 10 + 5 + kx)] * vw[size_t(((3 * 3 + ci) * 3 + ky) * 3 + kx)];
  CHECK(vy[size_t(((1 * 4 + 3) * 8 + 2) * 8 + 5)] == Approx(std::max(s, 0.0)).margin(1e-5));
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
