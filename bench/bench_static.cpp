// Host overhead of evaluating a cached static expression (plan cache: bind buffers, launch) against the
// dynamic Tensor path (build the graph, schedule-cache lookup, launch), small tensors, kernel time
// subtracted. Compile time of the static vs dynamic example: bench/static_compile_time.sh. Runs on DEV, default CPU.
#include <tinygrad.hpp>
#include <algorithm>
#include <cstdio>
#include "peer.hpp"

using namespace tinygrad;

namespace {
template <class F>
double per_call_us(F&& f, int iters) {
  for (int i = 0; i < 20; i++) f();  // warm: compile, fill caches
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = detail::now_s();
    for (int i = 0; i < iters; i++) f();
    best = std::min(best, (detail::now_s() - t0) / iters * 1e6);
  }
  return best;
}
}  // namespace

int main() {
  std::string dev = pin_device("CPU");
  using X = static_tensor<float, dyn, 16>;
  auto a = X::uniform(1.0, 4);
  auto b = static_tensor<float, 16>::uniform(1.0);
  auto expr = [&] { return ((a * b + 1.0f).relu().sum<1>() * (1.0f / 16)).sqrt(); };
  using E = decltype(expr());
  Tensor A = a, B = b;
  const int iters = 2000;

  // static: build the expression node, look up the plan, bind, launch
  double t_static = per_call_us([&] { static_tensor<float, dyn> r = expr(); }, iters);
  // dynamic: the same ops on Tensor, realized through the engine's schedule cache
  double t_dyn = per_call_us([&] { Tensor r = ((A * B + 1.0).relu().sum(1) * (1.0 / 16)).sqrt(); r.realize(); }, iters);

  // kernel time alone: the plan's programs called on fixed buffers
  auto& cache = detail::st::plans_of<E>();
  auto& p = *cache.entries.at(0).p->prog;  // a program as TinyJit replays it: inputs, fixed, pool, fresh buffers
  // inputs: the leaves, then a buffer per C++ number; the dyn extent (4) is the plan's variable
  std::vector<std::shared_ptr<Buffer>> slots{detail::st::leaf_buffer(a.tensor()), detail::st::leaf_buffer(b.tensor())};
  while (slots.size() < p.n_in) slots.push_back(std::make_shared<Buffer>(dev, DType::Float32, 1));
  slots.insert(slots.end(), p.fixed.begin(), p.fixed.end());
  slots.insert(slots.end(), p.pool.begin(), p.pool.end());
  for (auto& f : p.fresh) slots.push_back(std::make_shared<Buffer>(f.device, f.dtype, f.outer ? 4 * f.inner : f.size));
  std::vector<std::vector<void*>> ptrs;
  std::vector<std::vector<int64_t>> vals;
  for (auto& st : p.steps) {
    ptrs.emplace_back();
    for (int s : st.slots) ptrs.back().push_back(slots[size_t(s)]->ptr());
    vals.emplace_back(st.k->spec.vars.size(), 4);
  }
  double t_kernel = per_call_us([&] { for (size_t k = 0; k < p.steps.size(); k++) p.steps[k].k->prg->call(ptrs[k], vals[k], false); }, iters);

  double o_static = t_static - t_kernel, o_dyn = t_dyn - t_kernel;
  std::printf("static expression on %s, %zu kernel(s), shape (4, 16) -> (4)\n", dev.c_str(), p.steps.size());
  std::printf("  kernel time             %8.2f us\n", t_kernel);
  std::printf("  static (plan cache)     %8.2f us/eval, host overhead %8.2f us\n", t_static, o_static);
  std::printf("  dynamic Tensor          %8.2f us/eval, host overhead %8.2f us\n", t_dyn, o_dyn);
  std::printf("  overhead ratio dynamic/static: %.1fx (target >= 5x; static target <= 5 us)\n", o_dyn / std::max(o_static, 1e-3));
  double tg = peer_value("tinygrad_jit_peer.py", "jit_call_us");
  if (std::isnan(tg)) std::printf("  tinygrad TinyJit call    (not run: pip install tinygrad numpy)\n");
  else std::printf("  tinygrad TinyJit call   %8.2f us/eval (kernel included): static is %.1fx faster per eval\n", tg, tg / t_static);
}
