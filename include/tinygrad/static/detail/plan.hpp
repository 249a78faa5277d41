#pragma once
// The plan cache: per (expression type, device, dyn extents and scalar values) one schedule and its
// compiled programs. The first evaluation lowers the expression over placeholder buffers and schedules
// it with the engine; every later one binds the leaves' buffers and launches.
#include <atomic>
#include <bit>
#include "expr.hpp"

namespace tinygrad {

// counts of the static evaluator (the engine's are in run_stats())
struct StaticStats { std::atomic<int64_t> graphs_built{0}, plan_hits{0}, lazy{0}; };
TINYGRAD_API StaticStats& static_stats() TINYGRAD_DEF({ static StaticStats s; return s; })

namespace detail::st {

struct plan;  // one schedule and its programs (defined with build_plan, where the library is compiled)
struct plan_table;  // the plans of one expression type (each device, dyn extents and scalar values)

// NOTE: bounded (the key holds scalar values: a learning rate that changes every step would add a plan, and its
// programs, per step); the oldest plan goes first
inline size_t max_plans_per_expression = 64;
TINYGRAD_API plan_table* new_plan_table();
TINYGRAD_API std::shared_ptr<plan> find_plan(plan_table& t, const std::string& dev, const int64_t* key, size_t n_key);
TINYGRAD_API void add_plan(plan_table& t, const std::string& dev, const int64_t* key, size_t n_key, std::shared_ptr<plan> p);
template <class E>
plan_table& plans_of() { static plan_table* t = new_plan_table(); return *t; }  // NOTE: leaked on purpose

// placeholders for the leaves (fresh buffers of their dtypes and shapes) to lower an expression over: ph[i] views in[i]
TINYGRAD_API void placeholders(const Tensor* const* leaves, size_t n, const std::string& dev, Tensor* ph, UOpRef* in);
// static_stats(): an evaluation planned (a hit, or built when built) or lazy
TINYGRAD_API void count_static(bool planned, bool built);
TINYGRAD_API std::shared_ptr<Buffer> leaf_buffer(const Tensor& t);
#if TINYGRAD_WITH_INTERNALS
// a plan is a program as TinyJit replays it (engine/jit.hpp): the leaves are its inputs, the realized constants the
// lowering reused its fixed buffers, the root its output; intermediates are allocated on each run
struct plan {
  std::shared_ptr<JitProgram> prog;
};
struct plan_table {
  struct entry { std::string device; std::vector<int64_t> key; std::shared_ptr<plan> p; };
  std::mutex mu;
  std::vector<entry> entries;
};
#endif

template <class E>
Tensor lower_root(const E& e, const Tensor* const* leaves, const std::string& dev) {
  lower_ctx cx{leaves, 0, &dev};
  Tensor t = e.lower(cx);
  return t.dtype() == E::dtype ? t : t.cast(E::dtype);
}

// the plan of root over the placeholder buffers `inputs` (slots 0..n_in-1); run it with the leaves' buffers
TINYGRAD_API std::shared_ptr<plan> build_plan(const Tensor& root, const UOpRef* inputs, size_t n_in, const std::string& dev);
TINYGRAD_API Tensor run_plan(const plan& p, const Tensor* const* leaves, size_t n_in, const std::string& dev, DType dt, const Shape& shape);

// e as a lazy Tensor graph over its leaves' tensors (no plan: autograd sees everything)
template <class E>
Tensor lazy(const E& e) {
  std::array<const Tensor*, E::n_leaves> leaves{};
  size_t li = 0;
  auto leaf = [&](const auto& l) { leaves[li++] = &l.tensor(); };
  auto scalar = [](double) {};
  e.visit(leaf, scalar);
  return lower_root(e, leaves.data(), E::n_leaves ? leaves[0]->device() : default_device());
}

// evaluate e: through the plan cache when every leaf is realized and none requires grad (else the lazy
// graph, so autograd sees it); the result is realized in the first case, lazy in the second
template <class E>
Tensor evaluate(const E& e, bool realize_lazy) {
  constexpr size_t NL = E::n_leaves;
  std::array<const Tensor*, NL> leaves{};
  std::array<int64_t, E::n_key> key{};
  size_t li = 0, ki = 0;
  bool plannable = NL > 0;
  auto leaf = [&](const auto& l) {
    leaves[li++] = &l.tensor();
    for (auto d : l.dyn_dims) key[ki++] = d;
    plannable &= l.tensor().is_realized() && !l.tensor().requires_grad();
  };
  auto scalar = [&](double v) { key[ki++] = std::bit_cast<int64_t>(v); };
  e.visit(leaf, scalar);
  const std::string& dev = NL ? leaves[0]->device() : default_device();
  for (auto* l : leaves) plannable &= l->device() == dev;
  if (!plannable) {
    count_static(false, false);
    Tensor t = lower_root(e, leaves.data(), dev);
    return realize_lazy ? t.realize() : t;
  }
  plan_table& table = plans_of<E>();
  std::shared_ptr<plan> p = find_plan(table, dev, key.data(), key.size());
  auto rs = e.rt_shape();
  Shape shape(rs.begin(), rs.end());
  if (p) count_static(true, false);
  else {
    std::array<Tensor, NL> ph;
    std::array<const Tensor*, NL> php;
    std::array<UOpRef, NL> in;
    placeholders(leaves.data(), NL, dev, ph.data(), in.data());
    for (size_t i = 0; i < NL; i++) php[i] = &ph[i];
    p = build_plan(lower_root(e, php.data(), dev), in.data(), NL, dev);
    add_plan(table, dev, key.data(), key.size(), p);
  }
  return run_plan(*p, leaves.data(), NL, dev, E::dtype, shape);
}

#if TINYGRAD_DEFINE_API
TINYGRAD_API plan_table* new_plan_table() { return new plan_table(); }
TINYGRAD_API std::shared_ptr<plan> find_plan(plan_table& t, const std::string& dev, const int64_t* key, size_t n_key) {
  std::lock_guard lk(t.mu);
  for (auto& en : t.entries)
    if (en.device == dev && std::equal(en.key.begin(), en.key.end(), key, key + n_key)) return en.p;
  return nullptr;
}
TINYGRAD_API void add_plan(plan_table& t, const std::string& dev, const int64_t* key, size_t n_key, std::shared_ptr<plan> p) {
  std::lock_guard lk(t.mu);
  if (t.entries.size() >= max_plans_per_expression) t.entries.erase(t.entries.begin());
  t.entries.push_back({dev, std::vector<int64_t>(key, key + n_key), std::move(p)});
}
TINYGRAD_API void placeholders(const Tensor* const* leaves, size_t n, const std::string& dev, Tensor* ph, UOpRef* in) {
  for (size_t i = 0; i < n; i++) {
    in[i] = make_uop(Ops::BUFFER, leaves[i]->dtype(), {}, std::make_shared<Buffer>(dev, leaves[i]->dtype(), leaves[i]->numel()));
    ph[i] = Tensor(in[i], dev).reshape(leaves[i]->shape());
  }
}
TINYGRAD_API void count_static(bool planned, bool built) {
  if (built) static_stats().graphs_built++;
  else if (planned) static_stats().plan_hits++;
  else static_stats().lazy++;
}
TINYGRAD_API std::shared_ptr<Buffer> leaf_buffer(const Tensor& t) {
  const UOp* u = t.uop().get();
  if (u->op == Ops::RESHAPE && is_leaf(u->src[0].get())) u = u->src[0].get();  // Tensor::is_realized()
  return u->leaf_buffer();
}


TINYGRAD_API std::shared_ptr<plan> build_plan(const Tensor& root, const UOpRef* inputs, size_t n_in, const std::string& dev) {
  std::unordered_map<const UOp*, int> slot;
  std::vector<std::shared_ptr<Buffer>> in, consts;
  for (size_t i = 0; i < n_in; i++) { slot[inputs[i].get()] = int(i); in.push_back(inputs[i]->leaf_buffer()); }
  // any other leaf (a realized constant the lowering reused) becomes an input the plan keeps
  std::vector<const UOp*> stack{root.uop().get()};
  std::unordered_map<const UOp*, bool> seen;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (seen[u]) continue;
    seen[u] = true;
    if (is_leaf(u)) {
      if (!slot.count(u)) { slot[u] = int(n_in + consts.size()); consts.push_back(u->leaf_buffer()); }
      continue;
    }
    for (auto& s : u->src) stack.push_back(s.get());
  }
  auto& es = EngineState::get();
  std::lock_guard lk(es.mu);
  ScheduleSpec spec = create_schedule({root.uop()}, slot, int(n_in + consts.size()), dev);
  auto p = std::make_shared<plan>();
  p->prog = schedule_program(spec, get_programs(get_device(dev), spec.kernels), in, consts, dev);
  count_static(true, true);
  return p;
}

TINYGRAD_API Tensor run_plan(const plan& p, const Tensor* const* leaves, size_t n_in, const std::string& dev, DType dt, const Shape& shape) {
  std::vector<std::shared_ptr<Buffer>> in;
  in.reserve(n_in);
  for (size_t i = 0; i < n_in; i++) in.push_back(leaf_buffer(*leaves[i]));
  Tensor r(make_uop(Ops::BUFFER, dt, {}, jit_replay(*p.prog, in)[0]), dev);
  return shape.size() == 1 ? r : r.reshape(shape);
}
#endif

}  // namespace detail::st
}  // namespace tinygrad
