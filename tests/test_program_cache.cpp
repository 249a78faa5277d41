// The program and schedule caches are bounded LRUs: a long run (a test suite, a server seeing many shapes)
// keeps a bounded number of programs loaded, and an evicted program is released only when its last owner
// (a cached schedule, a static plan) drops it, so nothing that still runs it loses it.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <fstream>
#include <set>

using namespace tinygrad;

namespace {
// restores the default limits however the test ends
struct Limits {
  size_t programs = detail::EngineState::get().max_programs, schedules = detail::EngineState::get().schedule_cache.cap;
  Limits(size_t p, size_t s) { set_cache_limits(p, s); }
  ~Limits() { set_cache_limits(programs, schedules); }
};
// a graph whose kernel no other test builds: the constant is part of the kernel
Tensor distinct(const Tensor& x, int i) { return (x * (1.0 + i / 1024.0) + 0.3125).relu(); }
std::vector<float> expected(const std::vector<float>& x, int i) {
  std::vector<float> r;
  for (float v : x) r.push_back(std::max(0.0f, float(v * (1.0 + i / 1024.0) + 0.3125)));
  return r;
}
// shared objects of the kernel cache that this process has mapped
std::set<std::string> mapped_kernels() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> r;
  std::string dir = detail::cache_dir().string(), line;
  while (std::getline(maps, line))
    if (auto p = line.find(dir); p != std::string::npos) r.insert(line.substr(p));
  return r;
}
}  // namespace

TEST_CASE("program cache: at most the limit stays loaded, evicted programs are released", "[cache]") {
  auto& st = detail::EngineState::get();
  Tensor x({-1.0f, 0.5f, 2.0f, -0.25f});
  std::string dev = x.device();
  Limits lim(3, 2);
  std::vector<std::weak_ptr<detail::CompiledKernel>> loaded;
  for (int i = 0; i < 12; i++) {
    Tensor y = distinct(x, 400 + i);
    CHECK(y.to_vector<float>() == expected(x.to_vector<float>(), 400 + i));
    std::lock_guard lk(st.mu);
    loaded.push_back(st.programs.at(dev).order.front()->second.v.second);
    CHECK(st.programs.at(dev).size() <= 3);
    CHECK(st.schedule_cache.size() <= 2);
  }
  // the oldest are gone (neither the program cache nor a cached schedule holds them); the newest are loaded
  for (int i = 0; i < 6; i++) CHECK(loaded[size_t(i)].expired());
  CHECK_FALSE(loaded.back().expired());
  // an evicted kernel loads again (from the disk cache) and computes the same
  int64_t compiled = run_stats().kernels_compiled;
  CHECK(distinct(x, 400).to_vector<float>() == expected(x.to_vector<float>(), 400));
  CHECK(run_stats().kernels_compiled == compiled + 1);
}

TEST_CASE("program cache: a program evicted from the caches keeps running for the static plan that holds it", "[cache]") {
  auto a = static_tensor<float, 8>::uniform(2.0);
  auto f = [](const auto& v) { return (v * 0.71875f + 1.0f).relu(); };
  static_tensor<float, 8> first = f(a);
  std::vector<float> want = first.to_vector<float>();
  {
    Limits lim(1, 1);
    Tensor x({1.0f, 2.0f});
    for (int i = 0; i < 4; i++) distinct(x, 500 + i).realize();  // evicts everything else
    int64_t compiled = run_stats().kernels_compiled;
    static_tensor<float, 8> again = f(a);  // the plan's program: evicted from the cache, alive in the plan
    CHECK(run_stats().kernels_compiled == compiled);
    CHECK(again.to_vector<float>() == want);
  }
}

TEST_CASE("program cache: evicted CPU kernels are unmapped (dlclose)", "[cache][cpu]") {
  Tensor x = Tensor({0.5f, -3.0f, 1.5f}).to("CPU");
  Limits lim(2, 1);
  distinct(x, 600).realize();
  size_t before = mapped_kernels().size();
  for (int i = 1; i < 10; i++) CHECK(distinct(x, 600 + i).to_vector<float>() == expected(x.to_vector<float>(), 600 + i));
  // NOTE: a kernel .so may hold a few kernels of one schedule; 9 new kernels must not leave 9 new mappings
  CHECK(mapped_kernels().size() <= before + 2);
}

TEST_CASE("program cache: a static plan serves every number and first-dim extent, other dyn extents keep a bounded number",
          "[cache][static]") {
  auto a = static_tensor<float, 4>::uniform(1.0);
  auto f = [&](float s) { return a * s + 0.40625f; };
  using E = decltype(f(1.0f));
  auto& plans = detail::st::plans_of<E>();
  for (int i = 0; i < 6; i++) {
    float s = 1.0f + float(i) / 64.0f;  // a number is read from a buffer: no part of the plan's key
    auto want = (Tensor(a) * s + 0.40625).to_vector<float>();
    CHECK(f(s).to_vector<float>() == want);
    CHECK(plans.entries.size() == 1);
  }
  // a dyn extent that is not a first dim: a plan per value, the oldest dropped past max_plans_per_expression
  auto g = [](const static_tensor<float, 4, dyn>& x) { return x * 2.0f; };
  using G = decltype(g(static_tensor<float, 4, dyn>::uniform(1.0, 1)));
  auto& gplans = detail::st::plans_of<G>();
  size_t saved = detail::st::max_plans_per_expression;
  detail::st::max_plans_per_expression = 3;
  for (int64_t i = 1; i <= 5; i++) {
    auto x = static_tensor<float, 4, dyn>::uniform(1.0, i);
    CHECK(static_tensor<float, 4, dyn>(g(x)).to_vector<float>() == (Tensor(x) * 2.0).to_vector<float>());
    CHECK(gplans.entries.size() == size_t(std::min<int64_t>(i, 3)));
  }
  detail::st::max_plans_per_expression = saved;
}
