// Concurrency (DESIGN.md): tensors are built, realized and backpropagated from several threads at once.
// Each case runs 8 threads that start together and compares with the same work done on one thread.
// CI also builds this file alone with -fsanitize=thread (test tsan_threads), where a data race fails it.
// NOTE: Catch2's CHECK is not thread-safe: threads only record results; the main thread checks them.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <chrono>
#include <exception>
#include <latch>
#include <thread>
#include <unistd.h>

using namespace tinygrad;

namespace {
constexpr int kThreads = 8;

// f(i) on kThreads threads released at once; the first exception is rethrown here
template <class F>
void on_threads(F f) {
  std::latch go(kThreads);
  std::vector<std::exception_ptr> errs(kThreads);
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; i++)
    ts.emplace_back([&, i] {
      go.arrive_and_wait();
      try { f(i); } catch (...) { errs[size_t(i)] = std::current_exception(); }
    });
  for (auto& t : ts) t.join();
  for (auto& e : errs) if (e) std::rethrow_exception(e);
}

std::vector<float> values(int n, int seed) {
  std::vector<float> v;
  for (int k = 0; k < n; k++) v.push_back(float((k * 7 + seed * 13) % 17) / 8.0f - 1.0f);
  return v;
}

// a small training-style step on the thread's own tensors: loss and the gradients of both parameters
struct StepResult { std::vector<float> loss, gw, gb; };
StepResult mlp_step(int seed) {
  Tensor x(values(12, seed), {3, 4});
  Tensor w = Tensor(values(20, seed + 1), {4, 5}).requires_grad_();
  Tensor b = Tensor(values(5, seed + 2), {5}).requires_grad_();
  Tensor loss = ((x.matmul(w) + b).relu().log_softmax(1) * float(seed % 3 + 1)).mean();
  loss.backward();
  return {loss.to_vector<float>(), w.grad()->to_vector<float>(), b.grad()->to_vector<float>()};
}

void same(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); i++) CHECK(a[i] == Approx(b[i]).margin(1e-6));
}
}  // namespace

TEST_CASE("threads: independent graphs build, realize and backpropagate on 8 threads", "[threads]") {
  std::vector<StepResult> serial, par(kThreads);
  for (int i = 0; i < kThreads; i++) serial.push_back(mlp_step(i));
  on_threads([&](int i) {
    for (int rep = 0; rep < 3; rep++) par[size_t(i)] = mlp_step(i);  // the later reps hit the schedule cache
  });
  for (size_t i = 0; i < size_t(kThreads); i++) {
    same(par[i].loss, serial[i].loss);
    same(par[i].gw, serial[i].gw);
    same(par[i].gb, serial[i].gb);
  }
}

TEST_CASE("threads: graphs over one shared realized tensor (shared weights, per-thread input)", "[threads]") {
  Tensor w = Tensor(values(30, 5), {6, 5}).realize();
  auto run = [&](int i) { return (Tensor(values(12, i), {2, 6}).matmul(w).softmax(1) + float(i)).sum(0).to_vector<float>(); };
  std::vector<std::vector<float>> serial, par(kThreads);
  for (int i = 0; i < kThreads; i++) serial.push_back(run(i));
  on_threads([&](int i) { par[size_t(i)] = run(i); });
  for (size_t i = 0; i < size_t(kThreads); i++) same(par[i], serial[i]);
}

TEST_CASE("threads: the first compile of one kernel on 8 threads at once, then schedule cache hits", "[threads]") {
  // a constant no earlier run used: the kernel is not in the disk cache either
  double c = 1.0 +
      double((uint64_t(::getpid()) * 1000003u + uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())) % 65536) / 131072.0;
  auto run = [&](int i) { return ((Tensor(values(16, i), {4, 4}) * c + 0.5).exp2().sum(1)).to_vector<float>(); };
  std::vector<std::vector<float>> par(kThreads);
  int64_t compiled = run_stats().kernels_compiled, hits = run_stats().schedule_cache_hits;
  on_threads([&](int i) { par[size_t(i)] = run(i); });
  CHECK(run_stats().kernels_compiled == compiled + 1);  // one compile, shared by all threads
  CHECK(run_stats().schedule_cache_hits >= hits + kThreads - 1);
  for (size_t i = 0; i < size_t(kThreads); i++) same(par[i], run(int(i)));
}

TEST_CASE("threads: static expressions evaluated on 8 threads share one plan", "[threads][static]") {
  using F = static_tensor<float, 4, 4>;
  std::vector<F> in;
  for (int i = 0; i < kThreads; i++) in.push_back(F(Tensor(values(16, 40 + i), {4, 4})));
  auto f = [](const F& a) { return ((a * 0.59375f + 2.0f).relu().sqrt().template sum<1>()); };
  std::vector<std::vector<float>> par(kThreads);
  on_threads([&](int i) {
    for (int rep = 0; rep < 3; rep++) par[size_t(i)] = static_tensor<float, 4>(f(in[size_t(i)])).to_vector<float>();
  });
  for (size_t i = 0; i < size_t(kThreads); i++) same(par[i], ((Tensor(in[i]) * 0.59375 + 2.0).relu().sqrt().sum(1)).to_vector<float>());
}

TEST_CASE("threads: training loops (backward + Adam steps) on 8 threads", "[threads]") {
  auto train = [](int seed) {
    Tensor x(values(12, seed), {3, 4}), y(values(6, seed + 3), {3, 2});
    Tensor w = Tensor(values(8, seed + 1), {4, 2}).requires_grad_();
    Tensor b = Tensor(values(2, seed + 2), {2}).requires_grad_();
    nn::optim::Adam opt({w, b}, 0.05);
    std::vector<float> losses;
    for (int step = 0; step < 3; step++) {
      opt.zero_grad();
      Tensor loss = ((x.matmul(w) + b - y) * (x.matmul(w) + b - y)).mean();
      loss.backward();
      opt.step({loss});
      losses.push_back(loss.item<float>());
    }
    for (float v : w.to_vector<float>()) losses.push_back(v);
    return losses;
  };
  std::vector<std::vector<float>> serial, par(kThreads);
  for (int i = 0; i < kThreads; i++) serial.push_back(train(i));
  on_threads([&](int i) { par[size_t(i)] = train(i); });
  for (size_t i = 0; i < size_t(kThreads); i++) same(par[i], serial[i]);
}

TEST_CASE("threads: rand on 8 threads draws from disjoint counters", "[threads][random]") {
  std::vector<std::vector<float>> par(kThreads);
  on_threads([&](int i) { par[size_t(i)] = Tensor::rand({64}).to_vector<float>(); });
  for (size_t i = 0; i < size_t(kThreads); i++)
    for (size_t j = 0; j < i; j++) CHECK(par[i] != par[j]);
}

TEST_CASE("threads: the CPU pool runs every index of each region once, and no worker outlives its region", "[threads]") {
  // regions of varying sizes back to back, as BEAM times candidates with THREAD opts: each index exactly once, and a
  // region's task is never called after run() returned (it had been, with a worker's stale count: a SIGSEGV)
  detail::ThreadPool pool(8);
  std::vector<std::atomic<int>> hits(64);
  std::atomic<int> late{0};
  for (int round = 0; round < 4000; round++) {
    int n = 2 + round % 31;
    for (int i = 0; i < n; i++) hits[size_t(i)].store(0);
    auto alive = std::make_shared<std::atomic<bool>>(true);
    {
      std::function<void(int)> f = [&, alive](int i) {
        if (!alive->load()) late++;
        hits[size_t(i)]++;
      };
      pool.run(n, f);
      alive->store(false);
    }
    for (int i = 0; i < n; i++)
      if (hits[size_t(i)].load() != 1) FAIL("round " << round << ": index " << i << " ran " << hits[size_t(i)].load() << " times");
  }
  CHECK(late.load() == 0);
}

TEST_CASE("threads: one TinyJit called from 8 threads at once (the calls take turns), with a state it assigns", "[threads][jit]") {
  Tensor w = Tensor(values(16, 1), {4, 4}).realize();
  Tensor count = Tensor::zeros({1}).contiguous().realize();
  TinyJit f([&](const Tensor& x) {
    count.assign(count + 1);
    return (x.matmul(w) + 1).relu().sum(1);
  }, "shared");
  constexpr int kCalls = 6;
  std::vector<std::vector<std::vector<float>>> got(kThreads);
  on_threads([&](int t) {
    for (int c = 0; c < kCalls; c++) got[size_t(t)].push_back(f(Tensor(values(8, t * 31 + c), {2, 4})).to_vector<float>());
  });
  for (int t = 0; t < kThreads; t++)
    for (int c = 0; c < kCalls; c++) {
      Tensor x = Tensor(values(8, t * 31 + c), {2, 4});
      auto want = (x.matmul(w) + 1).relu().sum(1).to_vector<float>();
      REQUIRE(got[size_t(t)][size_t(c)].size() == want.size());
      for (size_t i = 0; i < want.size(); i++) CHECK(std::abs(got[size_t(t)][size_t(c)][i] - want[i]) < 1e-5);
    }
  CHECK(f.calls() == kThreads * kCalls);
  CHECK(f.captured());
  CHECK(count.item<float>() == float(kThreads * kCalls));  // no lost update
}
