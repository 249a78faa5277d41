#pragma once
// The plan cache: per expression type one schedule and its compiled programs, for every value of the expression's
// C++ numbers (read from buffers) and of its dyn extents: those become variables (tensor/variable.hpp), the buffers
// hold their values' elements. Where only first dims are dyn, one bound serves every value (STATIC_DYN_MAX, default
// 4096; a larger value takes a plan with the next power of two): one plan for every batch size. Where a dyn extent is
// another dim (a sequence length), each variable's bound is the power of two at or above its value (at least 16): a
// plan per bucket, whose intermediates are at most twice a dim's size; a leaf and the result are viewed in the order
// of their extents (a flat symbolic dim reshaped); such an expression first takes plans for its extents' values (the
// fastest kernels: a model run at a few fixed shapes), max_value_plans of them, then the symbolic ones. A plan is
// keyed by which dyn extents are equal (one variable each), which are 1, and the bounds. An op that takes no symbolic
// dims keeps a plan per extent value; the table keeps at most max_plans_per_expression plans (the oldest goes first).
// The first evaluation lowers the expression over placeholder buffers and schedules it with the engine; every later
// one binds the leaves' buffers and launches.
#include <atomic>
#include <bit>
#include "expr.hpp"

namespace tinygrad {

// counts of the static evaluator (the engine's are in run_stats())
struct StaticStats { std::atomic<int64_t> graphs_built{0}, plan_hits{0}, lazy{0}; };
TINYGRAD_API StaticStats& static_stats() TINYGRAD_DEF({ static StaticStats s; return s; })

namespace detail::st {

struct plan;  // one schedule and its programs (defined with build_plan, where the library is compiled)
struct plan_table;  // the plans of one expression type

inline size_t max_plans_per_expression = 64;  // plans of one expression type (buckets, or extent values)
TINYGRAD_API plan_table* new_plan_table();
TINYGRAD_API std::shared_ptr<plan> find_plan(plan_table& t, const std::string& dev, const int64_t* key, size_t n_key);
TINYGRAD_API void add_plan(plan_table& t, const std::string& dev, const int64_t* key, size_t n_key, std::shared_ptr<plan> p);
TINYGRAD_API bool& values_only(plan_table& t);  // the expression's ops refused symbolic dims: plans per extent value
// plans built for the values of dyn extents that could be variables (some after the first dim): past max_value_plans,
// new values take symbolic plans
TINYGRAD_API std::atomic<size_t>& value_plans(plan_table& t);
inline size_t max_value_plans = 4;
template <class E>
plan_table& plans_of() { static plan_table* t = new_plan_table(); return *t; }  // NOTE: leaked on purpose

// the dyn extents of one evaluation: the values, and per value its variable's class (the first equal extent's index;
// -1: a 1 among other extents, concrete); whether all are first dims
struct dyn_values {
  // NOTE: small inline storage (an evaluation allocates nothing for its extents): past 16 extents or leaves, the
  // expression evaluates lazily (overflow)
  static constexpr size_t cap = 16;
  struct list {
    std::array<int64_t, cap> v{};
    size_t n = 0;
    bool push_back(int64_t x) { if (n == cap) return false; v[n++] = x; return true; }
    int64_t operator[](size_t i) const { return v[i]; }
    int64_t& operator[](size_t i) { return v[i]; }
    size_t size() const { return n; }
    bool empty() const { return n == 0; }
    const int64_t* begin() const { return v.data(); }
    const int64_t* end() const { return v.data() + n; }
  };
  // per leaf: the index of its first dyn extent in value (-1: static), and which of its dims are dyn (bits)
  list value, cls, leaf_start, leaf_mask;
  bool first_dims = true, overflow = false;
  void add(int64_t v, bool first) {
    int64_t c = int64_t(value.size());
    for (size_t j = 0; j < value.size(); j++) if (value[j] == v) { c = cls[j]; break; }
    overflow |= !value.push_back(v) || !cls.push_back(c);
    first_dims &= first;
  }
  // where the extents differ, a 1 is concrete (it broadcasts against the others); all equal, 1 is a value like any
  void ones_concrete() {
    if (std::any_of(value.begin(), value.end(), [&](int64_t v) { return v != value[0]; }))
      for (size_t j = 0; j < value.size(); j++) if (value[j] == 1) cls[j] = -1;
  }
};
// placeholders for the leaves (fresh buffers of their dtypes and shapes, a first dim a variable where vars names one)
// and the numbers (0-d buffers) to lower an expression over: ph[i] views in[i]
TINYGRAD_API void placeholders(const Tensor* const* leaves, size_t n, const std::string& dev, const dyn_values* dv, const std::vector<UOpRef>& vars,
                               Tensor* ph, UOpRef* in);
TINYGRAD_API void number_placeholders(const DType* dts, size_t n, const std::string& dev, std::vector<Tensor>& ph, std::vector<UOpRef>& in);
// the variables of a symbolic plan: one per class of dv (null for a concrete 1), up to the bound of extent j
TINYGRAD_API int64_t dyn_bound(const dyn_values& dv, size_t j);
TINYGRAD_API std::vector<UOpRef> plan_vars(const dyn_values& dv);
// static_stats(): an evaluation planned (a hit, or built when built) or lazy
TINYGRAD_API void count_static(bool planned, bool built);
TINYGRAD_API std::shared_ptr<Buffer> leaf_buffer(const Tensor& t);
// a result with a symbolic dim after its first as one flat symbolic dim, in the order of its extents (its buffer then
// holds the values' elements, as a leaf's does); any other as it is
TINYGRAD_API Tensor values_layout(const Tensor& t);
#if TINYGRAD_WITH_INTERNALS
// a plan is a program as TinyJit replays it (engine/jit.hpp): the leaves and numbers are its inputs, the realized
// constants the lowering reused its fixed buffers, the root its output; intermediates are allocated on each run
struct plan {
  std::shared_ptr<JitProgram> prog;
  std::vector<UOpRef> vars;  // per dyn extent, its variable (null: concrete); empty: the plan is for the values
  // the numbers' buffers and the values they hold; a run writes the ones that changed and replays under mu
  std::mutex mu;
  std::vector<std::shared_ptr<Buffer>> numbers;
  std::vector<double> held;
};
struct plan_table {
  struct entry { std::string device; std::vector<int64_t> key; std::shared_ptr<plan> p; };
  std::mutex mu;
  std::vector<entry> entries;
  bool values_only = false;
  std::atomic<size_t> value_plans{0};
};
#endif

template <class E>
Tensor lower_root(const E& e, const Tensor* const* leaves, const std::string& dev, const Tensor* numbers = nullptr) {
  lower_ctx cx{leaves, 0, &dev, numbers, 0};
  Tensor t = e.lower(cx);
  return t.dtype() == E::dtype ? t : t.cast(E::dtype);
}

// the plan of root over the placeholder buffers `inputs` (slots 0..n_in-1); run it with the leaves' buffers
// vars: a symbolic plan's variables (plan_vars; empty: a plan for the values)
TINYGRAD_API std::shared_ptr<plan> build_plan(const Tensor& root, const UOpRef* inputs, size_t n_in, const std::string& dev,
                                              const std::vector<UOpRef>& vars);
TINYGRAD_API Tensor run_plan(const plan& p, const Tensor* const* leaves, size_t n_leaves, const double* numbers, const DType* number_dts,
                             size_t n_numbers, const dyn_values& dv, const std::string& dev, DType dt, const Shape& shape);

// e as a lazy Tensor graph over its leaves' tensors (no plan: autograd sees everything)
template <class E>
Tensor lazy(const E& e) {
  std::array<const Tensor*, E::n_leaves> leaves{};
  size_t li = 0;
  auto leaf = [&](const auto& l) { leaves[li++] = &l.tensor(); };
  auto scalar = [](double, DType) {};
  e.visit(leaf, scalar);
  return lower_root(e, leaves.data(), E::n_leaves ? leaves[0]->device() : default_device());
}

// which dims of S are dyn (bits; a rank past 62 never plans: overflow)
template <class S> constexpr int64_t dyn_mask() {
  int64_t m = S::rank >= 63 ? -1 : 0;
  for (size_t i = 0; i < S::rank && i < 63; i++) if (S::value[i] == dyn) m |= int64_t(1) << i;
  return m;
}
template <class S> constexpr bool only_first_dyn() { for (size_t i = 1; i < S::rank; i++) if (S::value[i] == dyn) return false; return true; }

// evaluate e: through the plan cache when every leaf is realized and none requires grad (else the lazy
// graph, so autograd sees it); the result is realized in the first case, lazy in the second
template <class E>
Tensor evaluate(const E& e, bool realize_lazy) {
  constexpr size_t NL = E::n_leaves;
  std::array<const Tensor*, NL> leaves{};
  std::array<double, E::n_key> numbers{};
  std::array<DType, E::n_key> number_dts{};
  size_t n_numbers = 0;
  dyn_values dv;
  size_t li = 0;
  bool plannable = NL > 0;
  auto leaf = [&](const auto& l) {
    leaves[li++] = &l.tensor();
    using S = typename std::remove_cvref_t<decltype(l)>::shape_type;
    constexpr int64_t mask = dyn_mask<S>();
    dv.overflow |= !dv.leaf_start.push_back(mask ? int64_t(dv.value.size()) : -1) || !dv.leaf_mask.push_back(mask) || mask < 0;
    for (auto d : l.dyn_dims) dv.add(d, only_first_dyn<S>());
    plannable &= l.tensor().is_realized() && !l.tensor().requires_grad();
  };
  auto scalar = [&](double v, DType dt) { numbers[n_numbers] = v; number_dts[n_numbers++] = dt; };
  e.visit(leaf, scalar);
  dv.ones_concrete();
  const std::string& dev = NL ? leaves[0]->device() : default_device();
  for (auto* l : leaves) plannable &= l->device() == dev;
  plannable &= dev.find(',') == std::string::npos;  // a tensor of several devices runs lazily: realize lowers it per device
  if (!plannable || dv.overflow) {
    count_static(false, false);
    Tensor t = lower_root(e, leaves.data(), dev);
    return realize_lazy ? t.realize() : t;
  }
  plan_table& table = plans_of<E>();
  auto rs = e.rt_shape();
  Shape shape(rs.begin(), rs.end());
  // the key: which extents are equal and which are 1 (and the bounds) for a symbolic plan, else the extents
  dv.first_dims &= only_first_dyn<typename E::shape_type>();
  bool sym_ok = !dv.value.empty() && !values_only(table), symbolic = sym_ok && dv.first_dims;
  std::array<int64_t, 2 * E::n_key + 2> key;  // NOTE: not cleared (its first nk are the key)
  size_t nk = 0;
  auto make_key = [&] {
    nk = 0;
    key[nk++] = symbolic;
    for (size_t j = 0; j < dv.value.size(); j++) key[nk++] = symbolic ? dv.cls[j] : dv.value[j];
    // (first dims only: one bound for all)
    if (symbolic) for (size_t j = 0; j < (dv.first_dims ? 1 : dv.value.size()); j++) key[nk++] = dyn_bound(dv, j);
    return find_plan(table, dev, key.data(), nk);
  };
  std::shared_ptr<plan> p = make_key();
  // dyn extents after the first dim: plans for the values first (their kernels are the fastest), then, once the
  // expression has met max_value_plans tuples of extents, a symbolic plan per bucket (sizes that keep moving)
  if (!p && sym_ok && !dv.first_dims && value_plans(table) >= max_value_plans) symbolic = true, p = make_key();
  if (p) count_static(true, false);
  else {
    std::vector<UOpRef> vars = symbolic ? plan_vars(dv) : std::vector<UOpRef>{};
    std::array<Tensor, NL> ph;
    std::array<const Tensor*, NL> php;
    std::array<UOpRef, NL> in;
    std::vector<Tensor> nph;
    std::vector<UOpRef> nin;
    auto build = [&] {
      placeholders(leaves.data(), NL, dev, symbolic ? &dv : nullptr, vars, ph.data(), in.data());
      number_placeholders(number_dts.data(), n_numbers, dev, nph, nin);
      for (size_t i = 0; i < NL; i++) php[i] = &ph[i];
      std::vector<UOpRef> inputs(in.begin(), in.end());
      inputs.insert(inputs.end(), nin.begin(), nin.end());
      return build_plan(values_layout(lower_root(e, php.data(), dev, nph.data())), inputs.data(), inputs.size(), dev, vars);
    };
    try { p = build(); }
    catch (const Error& err) {
      if (!symbolic) throw;
      if (flags().debug >= 1) std::fprintf(stderr, "tinygrad: a static plan keeps a plan per extent value: %s\n", err.what());
      // an op that takes no symbolic dims: this expression keeps a plan per extent value
      values_only(table) = true;
      return evaluate(e, realize_lazy);
    }
    add_plan(table, dev, key.data(), nk, p);
    if (sym_ok && !symbolic) value_plans(table)++;
  }
  return run_plan(*p, leaves.data(), NL, numbers.data(), number_dts.data(), n_numbers, dv, dev, E::dtype, shape);
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
TINYGRAD_API bool& values_only(plan_table& t) { return t.values_only; }
TINYGRAD_API std::atomic<size_t>& value_plans(plan_table& t) { return t.value_plans; }
TINYGRAD_API int64_t dyn_bound(const dyn_values& dv, size_t j) {
  static const int64_t base = std::max<int64_t>(getenv_int("STATIC_DYN_MAX", 4096), 1);
  int64_t mx = 1, bound = base;
  if (dv.first_dims) for (auto v : dv.value) mx = std::max(mx, v);
  else bound = 16, mx = dv.value[j];  // (equal extents are one class: one value, one bound)
  while (bound < mx) bound *= 2;
  return bound;
}
TINYGRAD_API std::vector<UOpRef> plan_vars(const dyn_values& dv) {
  std::vector<UOpRef> vars;
  for (size_t j = 0; j < dv.value.size(); j++)
    vars.push_back(dv.cls[j] < 0 ? nullptr : Variable(detail::cat("dyn", dv.cls[j]), 1, dyn_bound(dv, j)).uop());
  return vars;
}
// the element count of a tensor of bounds s whose dims dyn names are symbolic: the product of its extents
inline UOpRef flat_extent(const Shape& s, const std::vector<UOpRef>& dyn) {
  UOpRef f;
  for (size_t d = 0; d < s.size(); d++) {
    UOpRef e = dyn[d] ? dyn[d] : size_const(s[d]);
    f = f ? f * e : e;
  }
  return f;
}
TINYGRAD_API void placeholders(const Tensor* const* leaves, size_t n, const std::string& dev, const dyn_values* dv, const std::vector<UOpRef>& vars,
                               Tensor* ph, UOpRef* in) {
  for (size_t i = 0; i < n; i++) {
    Shape s = leaves[i]->shape();
    // a symbolic plan: a leaf's dyn dims are variables, its buffer at their bounds
    std::vector<SInt> ext(s.begin(), s.end());
    int64_t mask = dv ? dv->leaf_mask[i] : 0, vmask = 0;
    for (size_t d = 0, j = size_t(dv && dv->leaf_start[i] >= 0 ? dv->leaf_start[i] : 0); d < s.size(); d++) {
      if (!(mask >> d & 1)) continue;
      if (const UOpRef& var = vars[j++]) {
        s[d] = var->vmax;
        ext[d] = SInt(Variable(var_name(*var), var->vmin, var->vmax));
        vmask |= int64_t(1) << d;
      }
    }
    in[i] = make_uop(Ops::BUFFER, leaves[i]->dtype(), {}, std::make_shared<Buffer>(dev, leaves[i]->dtype(), prod(s)));
    ph[i] = Tensor(in[i], dev).reshape(s);
    if (!vmask) continue;
    if (vmask == 1) {  // the first dim only: the rows of the values are the first rows of the bound's
      std::vector<std::pair<SInt, SInt>> r;
      for (size_t d = 0; d < s.size(); d++) r.push_back({0, ext[d]});
      ph[i] = ph[i].shrink(r);
      continue;
    }
    // dyn dims after the first: the buffer holds the values' elements in the order of the extents (a flat symbolic
    // dim reshaped to them)
    std::vector<UOpRef> dyn;
    for (auto& e : ext) dyn.push_back(e.is_int() ? nullptr : sym_node(e, dev));
    UOpRef f = sym_movement(Ops::RESHAPE, in[i], {prod(s)}, {flat_extent(s, dyn)});
    ph[i] = Tensor(sym_movement(Ops::RESHAPE, f, s, dyn), dev);
  }
}
TINYGRAD_API void number_placeholders(const DType* dts, size_t n, const std::string& dev, std::vector<Tensor>& ph, std::vector<UOpRef>& in) {
  for (size_t i = 0; i < n; i++) {
    DType dt = dts[i];
    in.push_back(make_uop(Ops::BUFFER, dt, {}, std::make_shared<Buffer>(dev, dt, 1)));
    ph.push_back(Tensor(in.back(), dev).reshape({}));
  }
}
TINYGRAD_API void count_static(bool planned, bool built) {
  if (built) static_stats().graphs_built++;
  else if (planned) static_stats().plan_hits++;
  else static_stats().lazy++;
}
TINYGRAD_API Tensor values_layout(const Tensor& t) {
  const UOp& u = *t.uop();
  if (u.dyn.size() < 2 || std::none_of(u.dyn.begin() + 1, u.dyn.end(), [](auto& d) { return d != nullptr; })) return t;
  return Tensor(sym_movement(Ops::RESHAPE, t.uop(), {prod(u.shape)}, {flat_extent(u.shape, u.dyn)}), t.device()).contiguous();
}
TINYGRAD_API std::shared_ptr<Buffer> leaf_buffer(const Tensor& t) {
  const UOp* u = t.uop().get();
  if (u->op == Ops::RESHAPE && is_leaf(u->src[0].get())) u = u->src[0].get();  // Tensor::is_realized()
  return u->leaf_buffer();
}


TINYGRAD_API std::shared_ptr<plan> build_plan(const Tensor& root, const UOpRef* inputs, size_t n_in, const std::string& dev,
                                              const std::vector<UOpRef>& vars) {
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
  ScheduleSpec spec = create_schedule({root.uop()}, slot, int(n_in + consts.size()), dev, !vars.empty());
  auto p = std::make_shared<plan>();
  p->prog = schedule_program(spec, get_programs(get_device(dev), spec.kernels), in, consts, dev);
  p->vars = vars;
  count_static(true, true);
  return p;
}

TINYGRAD_API Tensor run_plan(const plan& p, const Tensor* const* leaves, size_t n_leaves, const double* numbers, const DType* number_dts,
                             size_t n_numbers, const dyn_values& dv, const std::string& dev, DType dt, const Shape& shape) {
  std::vector<std::shared_ptr<Buffer>> in;
  in.reserve(n_leaves + n_numbers);
  for (size_t i = 0; i < n_leaves; i++) in.push_back(leaf_buffer(*leaves[i]));
  auto& q = const_cast<plan&>(p);  // NOTE: its number buffers change under its lock; the rest is read only
  std::lock_guard lk(q.mu);
  for (size_t i = 0; i < n_numbers; i++) {
    if (i == q.numbers.size()) { q.numbers.push_back(std::make_shared<Buffer>(dev, number_dts[i], 1)); q.held.push_back(NAN); }
    if (std::bit_cast<uint64_t>(q.held[i]) != std::bit_cast<uint64_t>(numbers[i])) {
      char v[8];
      store_from_double(v, number_dts[i], 0, numbers[i]);
      q.numbers[i]->copyin(v);
      q.held[i] = numbers[i];
    }
    in.push_back(q.numbers[i]);
  }
  VarVals vals;  // NOTE: allocates only for a plan with variables
  for (size_t j = 0; j < p.vars.size(); j++)
    if (p.vars[j] && std::none_of(vals.begin(), vals.end(), [&](auto& x) { return x.first == p.vars[j].get(); }))
      vals.push_back({p.vars[j].get(), dv.value[j]});
  Tensor r(make_uop(Ops::BUFFER, dt, {}, jit_replay(*p.prog, in, vals)[0]), dev);
  return shape.size() == 1 ? r : r.reshape(shape);
}
#endif

}  // namespace detail::st
}  // namespace tinygrad
