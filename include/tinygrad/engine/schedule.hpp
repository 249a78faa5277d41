#pragma once
// schedule: rewrite the tensor graph for the device (split_reduceop), decide which nodes become buffers, then lower
// each kernel to an AST (SINK of STOREs over RANGEs). Movement ops turn into index arithmetic here; nothing copies.
//
// Fusion rules: everything fuses into its consumer's kernel except
//   - explicit CONTIGUOUS / COPY nodes and the realized roots,
//   - a REDUCE whose result is broadcast again (an EXPAND on the way to the consumer) or that sits
//     inside another REDUCE: recomputing it per output element would multiply its cost.
#include <map>
#include <unordered_set>
#include "../codegen/codegen.hpp"
#include "../uop/spec.hpp"
#include "../uop/upat.hpp"

namespace tinygrad::detail {

struct KernelAST {
  UOpRef ast;              // SINK(STORE...)
  std::vector<int> slots;  // DEFINE_GLOBAL i reads/writes slot slots[i]; slot of the output is slots[0]
};

struct ScheduleSpec {
  std::vector<KernelAST> kernels;   // in execution order
  int n_inputs = 0;                 // slots [0, n_inputs) are the graph's existing buffers
  std::vector<std::pair<DType, int64_t>> new_slots;  // slots n_inputs.. : buffers this schedule allocates
  // per new slot: where only its first dim is symbolic, that dim's extent (its variables unbound): the buffer holds
  // extent x (size / bound) elements for the values a run binds (its layout is the bound's, whose prefix it is)
  std::vector<UOpRef> slot_outer;
  std::vector<int> root_slots;      // where each root ends up
  std::vector<RewriteStage> stages;  // VIZ=1: the tensor-graph rewrites that formed the kernels
};

// a kernel's bounds (tinygrad's MAX_KERNEL_BUFFERS): the buffers it reads and writes, and its size, counted as the
// nodes of the tensor graph it fuses (a DAG's shared nodes once per use). A kernel past them gets some of its
// sources realized first by kernels of their own; one of 10^6 ops or 1000 inputs would take minutes to compile.
// Writable at run time; part of the schedule cache's key.
struct KernelLimits {
  int64_t max_buffers = getenv_int("MAX_KERNEL_BUFFERS", 32);
  int64_t max_ops = getenv_int("MAX_KERNEL_OPS", 1000);
};
inline KernelLimits& kernel_limits() { static KernelLimits l; return l; }

inline bool expands(const UOp* u) {
  const Shape& in = u->src[0]->shape;
  for (size_t i = 0; i < in.size(); i++) if (in[i] != u->shape[i]) return true;
  return false;
}
// every node below the roots once, sources first; descend(u) false: u's sources are not visited
template <class F>
std::vector<UOpRef> toposort_all(const std::vector<UOpRef>& roots, F&& descend) {
  auto sink = make_uop(Ops::SINK, DType::Bool, roots);
  auto topo = toposort(sink, [&](const UOp* u) { return u == sink.get() || descend(u); });
  topo.pop_back();
  return topo;
}

// the graphs of roots with each CPU layout (UOp::is_cpu_layout) replaced by its source, for a device of workgroups;
// realized values stay as they are
inline std::vector<UOpRef> drop_cpu_layouts(const std::vector<UOpRef>& roots) {
  auto sink = make_uop(Ops::SINK, DType::Bool, roots);
  auto leaf = [](const UOp* u) { return is_leaf(u); };
  std::unordered_map<const UOp*, UOpRef> sub;
  for (auto& u : toposort(sink, [&](const UOp* u) { return !leaf(u); }))
    if (u->is_cpu_layout() && !leaf(u.get())) sub[u.get()] = u->src[0];
  return sub.empty() ? roots : substitute(sink, sub, leaf)->src;
}

class Scheduler {
 public:
  Scheduler(const std::vector<UOpRef>& roots_in, const std::unordered_map<const UOp*, int>& input_slots, int n_inputs, bool exact_sizes,
            bool rows = false)
      : slot_(input_slots), n_inputs_(n_inputs), exact_sizes_(exact_sizes), rows_(rows) {
    spec_.n_inputs = n_inputs;
    const std::vector<UOpRef> roots = rows ? drop_cpu_layouts(roots_in) : roots_in;  // (see UOp::is_cpu_layout)
    // plan again until the plan is stable: a reduce that two kernels would both fuse is computed once, in its own
    // kernel; a kernel past its limits gets sources of its own
    const auto inputs = slot_;
    while (true) {
      for (auto& r : roots) {
        if (auto it = slot_.find(r.get()); it != slot_.end()) spec_.root_slots.push_back(it->second);
        else spec_.root_slots.push_back(make_root(r));
      }
      owner_.clear();
      size_t shared = shared_.size(), forced = forced_.size();
      for (size_t i = 0; i < kroots_.size(); i++) { UOpRef k = kroots_[i]; analyze(k); }  // kroots_ grows while we walk
      if (shared_.size() == shared) limit_kernels(roots);
      if (shared_.size() == shared && forced_.size() == forced) break;
      slot_ = inputs; spec_.new_slots.clear(); spec_.slot_outer.clear(); spec_.root_slots.clear(); kroots_.clear(); by_ptr_.clear(); deps_.clear();
    }
    // kernels in dependency order: a kernel after the kernels it reads
    std::unordered_set<const UOp*> done;
    for (auto& k0 : kroots_) {
      std::vector<std::pair<const UOp*, size_t>> stack{{k0.get(), 0}};
      if (!done.insert(k0.get()).second) continue;
      while (!stack.empty()) {
        auto& [k, i] = stack.back();
        auto& ds = deps_[k];
        if (i < ds.size()) { const UOp* d = ds[i++]; if (done.insert(d).second) stack.push_back({d, 0}); continue; }
        const UOpRef& kr = by_ptr_.at(k);
        stack.pop_back();
        if (prod(kr->shape) > 0) spec_.kernels.push_back(lower_kernel(kr));
        if (prod(kr->shape) > 0) reduces_.push_back(lowered_reduce_);
      }
    }
    merge_kernels();
    // NOTE: after the merges, which match kernels by their ranges. Not on a device of workgroups: there the GEMM tiles
    // take a split output as two axes no tile matches (H200 SmolLM2 prefill, attention @ V: 23.4k -> 19.5k tok/s)
    if (!rows_) for (auto& k : spec_.kernels) k.ast = split_ranges(k.ast);
  }
  ScheduleSpec spec() { return std::move(spec_); }

 private:
  int make_root(const UOpRef& u) {
    if (auto it = slot_.find(u.get()); it != slot_.end()) return it->second;
    if (u->op == Ops::ASSIGN) {  // writes the buffer below its view: that buffer's slot
      const UOp* b = u->src[0].get();
      while (!is_leaf(b)) b = b->src[0].get();
      int s = slot_[u.get()] = slot_.at(b);
      kroots_.push_back(u);
      by_ptr_[u.get()] = u;
      return s;
    }
    int s = n_inputs_ + int(spec_.new_slots.size());
    spec_.new_slots.emplace_back(u->dtype, prod(u->shape));
    bool outer = !u->dyn.empty() && u->dyn[0] && std::none_of(u->dyn.begin() + 1, u->dyn.end(), [](const UOpRef& d) { return bool(d); });
    spec_.slot_outer.push_back(outer ? unbind(u->dyn[0], DType::Int64) : nullptr);
    slot_[u.get()] = s;
    kroots_.push_back(u);
    by_ptr_[u.get()] = u;
    return s;
  }
  bool is_kroot(const UOp* u) const { return by_ptr_.count(u) > 0; }

  // broadcasting this would recompute transcendental math or a long chain per output element (or, through_reduces,
  // a reduce's loop)
  bool expensive(const UOpRef& root, bool through_reduces = true) {
    int n = 0;
    std::unordered_set<const UOp*> seen;
    std::vector<const UOp*> stack{root.get()};
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      if (is_leaf(u) || is_kroot(u) || !seen.insert(u).second || (u->op == Ops::REDUCE_AXIS && !through_reduces)) continue;
      if (is_expensive(u->op)) return true;
      if (is_alu(u->op) && ++n > 16) return true;
      for (auto& s : u->src) stack.push_back(s.get());
    }
    return false;
  }

  // on a device of workgroups, transcendental math read through a broadcast of at most 2^20 elements (at a symbolic
  // dim's bound) is computed again for each read: less than a launch (a decode step's softmax exp under its values'
  // product, 9 x 65 x keys, and its division under the output projection, 576 x 576). The reduces below it are
  // realized as ever; a value whose only cost is a reduce (a mean) is stored with the reduce, as before
  bool cheap_to_repeat(const UOpRef& expand) {
    return rows_ && prod(expand->shape) <= (int64_t(1) << 20) && expensive(expand->src[0], false);
  }

  // walk the nodes kernel k fuses (stopping at buffers and other kernels) and decide which become kernels of their own
  void analyze(const UOpRef& k) {
    // (node, below an expand, below a reduce), each combination once
    std::unordered_set<uintptr_t> seen;
    std::vector<const UOp*> fused;  // the reduces k computes
    struct Visit { const UOpRef* u; bool expanded, in_reduce; };
    std::vector<Visit> stack{{&k, false, false}};
    while (!stack.empty()) {
      auto [up, expanded, in_reduce] = stack.back();
      stack.pop_back();
      const UOpRef& u = *up;  // NOTE: a source of a node (or k), alive while k is
      if (u != k && (is_leaf(u.get()) || is_kroot(u.get()))) { if (is_kroot(u.get())) deps_[k.get()].push_back(u.get()); continue; }
      if (!seen.insert(reinterpret_cast<uintptr_t>(u.get()) | uintptr_t(expanded) | uintptr_t(in_reduce) << 1).second) continue;
      auto visit = [&](const UOpRef& s, bool e, bool r) { stack.push_back({&s, e, r}); };
      bool realize_here = u != k && (u->op == Ops::CONTIGUOUS || u->op == Ops::COPY || shared_.count(u.get()) || forced_.count(u.get()) ||
                                     (u->op == Ops::REDUCE_AXIS && (expanded || in_reduce)));
      if (realize_here) { make_root(u); deps_[k.get()].push_back(u.get()); continue; }
      if (u->op == Ops::REDUCE_AXIS) {
        if (auto [it, fresh] = owner_.try_emplace(u.get(), k.get()); !fresh && it->second != k.get()) shared_.insert(u.get());
        fused.push_back(u.get());
        visit(u->src[0], expanded, true);
        continue;
      }
      if (u->op == Ops::GRAD_RULE) { visit(u->src[0], expanded, in_reduce); continue; }  // src[1:] only serve autograd
      if (u->op == Ops::EXPAND && expands(u.get()) && expensive(u->src[0]) && !cheap_to_repeat(u)) {
        // realize below the movement ops: a window view of the value can be far larger than the value
        const UOpRef* b = &u->src[0];
        while (is_movement((*b)->op) && !is_leaf(b->get()) && !is_kroot(b->get())) b = &(*b)->src[0];
        if (is_leaf(b->get())) { visit(u->src[0], true, in_reduce); continue; }
        make_root(*b);
        deps_[k.get()].push_back(b->get());
        if (*b != u->src[0]) visit(u->src[0], true, in_reduce);
        continue;
      }
      if (u->op == Ops::EXPAND) { visit(u->src[0], expanded || expands(u.get()), in_reduce); continue; }
      // NOTE: pushed in reverse, so sources are walked in order (the order kernels and buffers get numbered)
      for (size_t i = u->src.size(); i-- > 0;) visit(u->src[i], expanded, in_reduce);
    }
    // side by side, reduces of different lengths get kernels of their own but the longest: one kernel's opts would
    // have to serve every loop (a conv's input gradient, 576 terms an output, divided by the max-pool's 4-term count
    // of maxima, lost its GEMM tile: 399 us on an H100)
    auto terms = [](const UOp* r) { int64_t t = 1; for (auto a : r->reduce_axes()) t *= r->src[0]->shape[size_t(a)]; return t; };
    int64_t longest = 0;
    for (auto* r : fused) longest = std::max(longest, terms(r));
    for (auto* r : fused) if (terms(r) < longest) shared_.insert(r);
  }

  // bound every kernel's size and buffer count: bottom-up, a node that would fuse more than the limits allow gets its
  // largest fused sources realized first (below their movement ops). Cut from the inputs up, the pieces of a long
  // chain are alike: they lower to one kernel AST, compiled once and launched many times.
  void limit_kernels(const std::vector<UOpRef>& roots) {
    const KernelLimits lim = kernel_limits();
    // size and buffers (sorted, distinct) of the fused expression rooted at a node; a movement op only points at its
    // base below the movement ops, which may be cut after the movement op was measured. The size is the sum over
    // the distinct nodes it fuses of each node's own cost: 1, its movement sources' hops and what it reads through
    // them (once per view: another view is other code). NOTE: distinct, not once per use: a polynomial's shared
    // terms (erf's, gelu's) counted per use had cut one gelu into 22 kernels
    using Node = std::pair<const UOp*, int64_t>;  // a node and its own cost
    struct Cost { int64_t size = 0; std::vector<const UOp*> bufs; const UOp* base = nullptr; int64_t hops = 0; std::vector<Node> nodes; };
    std::unordered_map<const UOp*, Cost> cost;
    std::unordered_map<const UOp*, int> left;  // consumers yet to measure a node: its node list is dropped after the last
    auto cut = [&](const UOp* s) { return is_leaf(s) || is_kroot(s) || forced_.count(s); };
    auto fused_srcs = [](const UOp* u) { return u->op == Ops::GRAD_RULE ? size_t(1) : u->src.size(); };  // GRAD_RULE's src[1:] serve autograd only
    auto topo = toposort_all(roots, [](const UOp* x) { return !is_leaf(x); });
    for (auto& up : topo)
      if (!is_leaf(up.get()) && !is_movement(up->op))
        for (size_t i = 0; i < fused_srcs(up.get()); i++) left[up->src[i].get()]++;
    auto measure = [&](const UOp* u) {
      Cost c;
      int64_t own = u->op == Ops::CONST || u->op == Ops::DEVICE ? 0 : 1;
      for (size_t i = 0; i < fused_srcs(u); i++) {
        const UOp* s = u->src[i].get();
        bool view = !cut(s) && is_movement(s->op);
        if (view) { own += cost.at(s).hops; s = cost.at(s).base; }
        if (cut(s)) { c.bufs.push_back(s); continue; }
        const Cost& cs = cost.at(s);
        if (view) own = std::min<int64_t>(own + cs.size, int64_t(1) << 40);
        else c.nodes.insert(c.nodes.end(), cs.nodes.begin(), cs.nodes.end());
        c.bufs.insert(c.bufs.end(), cs.bufs.begin(), cs.bufs.end());
      }
      c.nodes.push_back({u, own});
      std::sort(c.nodes.begin(), c.nodes.end());
      c.nodes.erase(std::unique(c.nodes.begin(), c.nodes.end(), [](auto& a, auto& b) { return a.first == b.first; }), c.nodes.end());
      for (auto& [n, o] : c.nodes) c.size = std::min<int64_t>(c.size + o, int64_t(1) << 40);
      std::sort(c.bufs.begin(), c.bufs.end());
      c.bufs.erase(std::unique(c.bufs.begin(), c.bufs.end()), c.bufs.end());
      return c;
    };
    for (auto& up : topo) {
      const UOp* u = up.get();
      if (is_leaf(u)) continue;
      if (is_movement(u->op)) {
        const UOp* s = u->src[0].get();
        bool chain = !cut(s) && is_movement(s->op);
        cost[u] = Cost{0, {}, chain ? cost.at(s).base : s, chain ? cost.at(s).hops + 1 : 1, {}};
        continue;
      }
      Cost c = measure(u);
      // NOTE: one buffer is the kernel's output
      while (c.size > lim.max_ops || int64_t(c.bufs.size()) > lim.max_buffers - 1) {
        bool by_bufs = int64_t(c.bufs.size()) > lim.max_buffers - 1;
        const UOp* best = nullptr;
        std::pair<int64_t, int64_t> best_key{0, 0};
        for (size_t i = 0; i < fused_srcs(u); i++) {
          const UOp* b = u->src[i].get();
          if (!cut(b) && is_movement(b->op)) b = cost.at(b).base;
          if (cut(b) || b->op == Ops::CONST || b->op == Ops::DEVICE) continue;
          const Cost& cb = cost.at(b);
          std::pair<int64_t, int64_t> key = by_bufs ? std::pair{int64_t(cb.bufs.size()), cb.size} : std::pair{cb.size, int64_t(cb.bufs.size())};
          if (key > best_key) { best = b; best_key = key; }
        }
        if (!best) break;  // nothing left to split off
        if (flags().debug >= 3)
          std::fprintf(stderr, "kernel limits: a %s of %lld nodes and %zu buffers gets a kernel of its own\n", op_name(best->op),
                       (long long)cost.at(best).size, cost.at(best).bufs.size());
        forced_.insert(best);
        c = measure(u);
      }
      cost[u] = std::move(c);
      for (size_t i = 0; i < fused_srcs(u); i++)
        if (auto it = cost.find(u->src[i].get()); it != cost.end() && --left[u->src[i].get()] == 0) it->second.nodes = {};
    }
  }

  // ---- lowering one kernel ----
  struct KCtx {
    const UOp* root;
    std::vector<int> slots;
    std::unordered_map<int, int> param_of_slot;
    int64_t next_range;
  };

  UOpRef flat_index(const std::vector<UOpRef>& idx, const Shape& shape) {
    Shape st = strides_for(shape);
    UOpRef a = const_int(idx_dt_, 0);
    for (size_t i = 0; i < idx.size(); i++) if (shape[i] != 1) a = a + idx[i] * st[i];
    return a;
  }

  UOpRef load(KCtx& c, const UOp* u, const std::vector<UOpRef>& idx, const UOpRef& gate) {
    int s = slot_.at(u);
    auto [it, fresh] = c.param_of_slot.try_emplace(s, int(c.slots.size()));
    if (fresh) c.slots.push_back(s);
    auto g = make_uop(Ops::DEFINE_GLOBAL, u->dtype, {}, int64_t(it->second));
    Shape shape = u->op == Ops::BUFFER ? Shape{u->buffer()->size} : u->shape;
    std::vector<UOpRef> isrc{g, flat_index(idx, shape)};
    // NOTE: a gate that only masks values (the index stays in the buffer anyway) is dropped: a PAD's value is a WHERE
    // above the load, and a symbolic dim's elements past its extent are never used (the stores are gated, the reduces
    // masked); it stays where it guards memory, which a symbolic dim's does where buffers hold only their values' elements
    // (either way the index is simplified where the gate holds: a max-pool's gradient below a pad has per-channel loads
    // whose div/mod chains fold to the channel; ungated, the simplified index is taken only where it stays in the buffer)
    if (!gate->is_const(1)) {
      UOpRef plain = simplify(isrc[1]), given = simplify_given(plain, gate);
      auto inside = [&](const UOpRef& i) { return i->vmin >= 0 && i->vmax < prod(shape); };
      bool sym = false;
      if (exact_sizes_) for (auto& x : toposort(gate)) sym |= x->op == Ops::DEFINE_VAR;
      if (!sym && (inside(given) || inside(plain))) isrc[1] = inside(given) ? given : plain;
      else { isrc[1] = given; isrc.push_back(gate); }
    }
    return make_uop(Ops::LOAD, u->dtype, {make_uop(Ops::INDEX, u->dtype, isrc)});
  }

  // ---- rangeify: a kernel's tensor graph -> its kernel graph, one graph_rewrite ----
  // A marker INDEX(u, gate, idx...) is tensor node u's value at index idx (one per dim of u), read only where gate
  // holds. Each rule moves a marker one node down the tensor graph: movement ops become index math on their source's
  // marker, a REDUCE_AXIS a REDUCE over fresh ranges, buffers and other kernels' outputs LOADs. graph_rewrite's memo
  // lowers each (u, gate, idx) once; it walks sources in order, so buffers and ranges are numbered as they are met.
  struct RCtx { Scheduler& s; KCtx& c; };
  static UOpRef marker(const UOpRef& u, std::vector<UOpRef> idx, const UOpRef& gate) {
    idx.insert(idx.begin(), {u, gate});
    return make_uop(Ops::INDEX, u->dtype, std::move(idx));
  }
  static std::vector<UOpRef> idx_of(const UOpRef& m) { return {m->src.begin() + 2, m->src.end()}; }
  // a symbolic size of the tensor graph in a kernel: its variables unbound (the kernel takes their values as arguments),
  // in the kernel's index dtype
  static UOpRef unbind(const UOpRef& e, DType dt) {
    std::unordered_map<const UOp*, UOpRef> sub;
    for (auto& x : toposort(e)) if (x->op == Ops::BIND) sub[x.get()] = x->src[0];
    return cast_uop(sub.empty() ? e : substitute(e, sub), dt);
  }
  // the range over dim i of u, id `id`: a symbolic dim's runs to its bound with its extent as src[0] (the loop's end where
  // the range stays whole; the gate `inside` keeps it correct where an opt splits it)
  static UOpRef dim_range(const UOp& u, size_t i, int64_t id, AxisType t, DType dt) {
    return make_range(u.shape[i], id, t, dt, !u.dyn.empty() && u.dyn[i] ? unbind(u.dyn[i], dt) : nullptr);
  }
  // index i of a symbolic dim is inside its extent (bool true for a concrete dim)
  static UOpRef inside(const UOp& u, size_t i, const UOpRef& idx) {
    if (u.dyn.empty() || !u.dyn[i]) return const_uop(DType::Bool, 1);
    return alu(Ops::CMPLT, {idx, unbind(u.dyn[i], idx->dtype)});
  }
  // the marked node's source at a new index, under the marker's gate
  static UOpRef to_src(const Match& m, std::vector<UOpRef> idx) { return marker(m["u"]->src[0], std::move(idx), m["m"]->src[1]); }
  static const PatternMatcher& pm_rangeify() {
    // the marker of a node of one of these ops (none: any op)
    auto at = [](std::vector<Ops> ops) { UPat p = UPat::op(Ops::INDEX, {UPat::ops_of(std::move(ops), "u")}, "m"); p.src_prefix = true; return p; };
    using M = const Match&;
    static const PatternMatcher pm{
        // a buffer, or a node another kernel computes: a load (the kernel's own root is lowered)
        {at({}), [](M m) -> UOpRef {
           auto& x = m.context<RCtx>();
           const UOp* u = m["u"].get();
           if (u == x.c.root || !(is_leaf(u) || x.s.is_kroot(u))) return nullptr;
           return x.s.load(x.c, u, idx_of(m["m"]), m["m"]->src[1]);
         }},
        {at({Ops::CONST}), [](M m) -> UOpRef { return make_uop(Ops::CONST, m["u"]->dtype, {}, m["u"]->arg); }},
        // a bound variable: the kernel takes its value as an argument (realize passes it), so any value runs one kernel
        {at({Ops::BIND}), [](M m) -> UOpRef { return m["u"]->src[0]; }},
        {at({Ops::DEFINE_VAR}), [](M m) -> UOpRef { return m["u"]; }},  // unbound: a static plan's, bound on each run
        {at({Ops::IOTA}), [](M m) -> UOpRef { return cast_uop(m["m"]->src[2], m["u"]->dtype); }},
        {at({Ops::CONTIGUOUS, Ops::DETACH, Ops::GRAD_RULE}), [](M m) -> UOpRef { return to_src(m, idx_of(m["m"])); }},
        // reshape = div/mod of the flat index; NOTE: a valid index is inside the tensor, so the outermost dim needs no modulo
        {at({Ops::RESHAPE}), [](M m) -> UOpRef {
           auto& x = m.context<RCtx>();
           const UOpRef& u = m["u"];
           const Shape& in = u->src[0]->shape;
           if (in == u->shape) return to_src(m, idx_of(m["m"]));
           // a flat symbolic dim to dims of which some are symbolic, or back (a static plan's leaf or result of several
           // dyn extents): the elements in the order of the extents, not of the bounds (the flat dim holds the values')
           const UOp& su = *u->src[0];
           auto sym = [](const UOp& v) { return std::any_of(v.dyn.begin(), v.dyn.end(), [](auto& d) { return d != nullptr; }); };
           if ((in.size() == 1 || u->shape.size() == 1) && sym(su) && sym(*u)) {
             DType dt = x.s.idx_dt_;
             auto ext = [&](const UOp& v, size_t i) { return v.dyn.empty() || !v.dyn[i] ? const_int(dt, v.shape[i]) : unbind(v.dyn[i], dt); };
             auto idx = idx_of(m["m"]);
             UOpRef flat = const_int(dt, 0), stride = const_int(dt, 1);
             for (size_t i = idx.size(); i-- > 0;) if (u->shape[i] != 1) { flat = flat + idx[i] * stride; stride = stride * ext(*u, i); }
             std::vector<UOpRef> ni(in.size());
             stride = const_int(dt, 1);
             for (size_t j = in.size(); j-- > 0;) {
               UOpRef q = alu(Ops::IDIV, {flat, stride});
               ni[j] = in[j] == 1 ? const_int(dt, 0) : simplify(j == 0 ? q : alu(Ops::MOD, {q, ext(su, j)}));
               if (in[j] != 1) stride = stride * ext(su, j);
             }
             return to_src(m, std::move(ni));
           }
           UOpRef flat = x.s.flat_index(idx_of(m["m"]), u->shape);
           Shape st = strides_for(in);
           std::vector<UOpRef> ni;
           for (size_t j = 0; j < in.size(); j++)
             ni.push_back(in[j] == 1 ? const_int(x.s.idx_dt_, 0) : simplify(j == 0 ? idiv(flat, st[j]) : mod(idiv(flat, st[j]), in[j])));
           return to_src(m, std::move(ni));
         }},
        // permute = reorder
        {at({Ops::PERMUTE}), [](M m) -> UOpRef {
           auto idx = idx_of(m["m"]);
           std::vector<UOpRef> ni(idx.size());
           for (size_t i = 0; i < idx.size(); i++) ni[size_t(m["u"]->varg()[i])] = idx[i];
           return to_src(m, std::move(ni));
         }},
        // expand = drop (index 0 of a broadcast dim)
        {at({Ops::EXPAND}), [](M m) -> UOpRef {
           auto idx = idx_of(m["m"]);
           const Shape& in = m["u"]->src[0]->shape;
           for (size_t i = 0; i < in.size(); i++) if (in[i] == 1) idx[i] = const_int(m.context<RCtx>().s.idx_dt_, 0);
           return to_src(m, std::move(idx));
         }},
        // shrink = offset
        {at({Ops::SHRINK}), [](M m) -> UOpRef {
           const UOpRef& u = m["u"];
           auto idx = idx_of(m["m"]);
           for (size_t i = 0; i < idx.size(); i++)  // a symbolic shrink's begins are src[1..n]
             idx[i] = u->src.size() > 1 ? idx[i] + unbind(u->src[1 + i], idx[i]->dtype) : idx[i] + u->varg()[2 * i];
           return to_src(m, std::move(idx));
         }},
        // flip = n-1-i (a symbolic dim's n its extent: past it the index leaves the buffer, where the gate of its extent holds)
        {at({Ops::FLIP}), [](M m) -> UOpRef {
           auto idx = idx_of(m["m"]);
           const UOp& in = *m["u"]->src[0];
           DType dt = m.context<RCtx>().s.idx_dt_;
           for (size_t i = 0; i < in.shape.size(); i++)
             if (m["u"]->varg()[i]) idx[i] = (in.dyn.empty() || !in.dyn[i] ? const_int(dt, in.shape[i] - 1) : unbind(in.dyn[i], dt) - 1) - idx[i];
           return to_src(m, std::move(idx));
         }},
        // pad = validity gate: the source where the index is inside it, else 0
        {at({Ops::PAD}), [](M m) -> UOpRef {
           const UOpRef& u = m["u"];
           auto idx = idx_of(m["m"]);
           const UOp& src = *u->src[0];
           const Shape& in = src.shape;
           size_t n = in.size();
           UOpRef valid = const_uop(DType::Bool, 1);
           for (size_t i = 0; i < n; i++) {
             UOpRef ext = src.dyn.empty() || !src.dyn[i] ? nullptr : src.dyn[i];
             if (u->src.size() > 1) {
               // a symbolic pad (src[1..n] the pads before, src[n+1..2n] the extents): inside the source's extent, not its bound
               const UOpRef& b = u->src[1 + i];
               if (b->is_const(0) && u->src[1 + n + i] == (ext ? ext : size_const(in[i]))) continue;
               UOpRef j = idx[i] - unbind(b, idx[i]->dtype);
               UOpRef end = ext ? unbind(ext, j->dtype) : const_int(j->dtype, in[i]);
               valid = logical_and(valid, logical_and(ge(j, 0), alu(Ops::CMPLT, {j, end})));
               idx[i] = j;
               continue;
             }
             int64_t b = u->varg()[2 * i];
             if (b == 0 && u->varg()[2 * i + 1] == 0) continue;
             valid = logical_and(valid, logical_and(ge(idx[i], b), lt(idx[i], b + in[i])));
             idx[i] = idx[i] - b;
           }
           valid = simplify(valid);
           UOpRef v = marker(u->src[0], std::move(idx), simplify(logical_and(m["m"]->src[1], valid)));
           return alu(Ops::WHERE, {valid, v, const_uop(u->dtype, 0)});
         }},
        // a reduce: its axes (those longer than 1) become fresh REDUCE ranges
        {at({Ops::REDUCE_AXIS}), [](M m) -> UOpRef {
           auto& x = m.context<RCtx>();
           const UOpRef& u = m["u"];
           x.s.lowered_reduce_ = true;
           auto idx = idx_of(m["m"]);
           const Shape& in = u->src[0]->shape;
           std::vector<UOpRef> src{nullptr};
           UOpRef valid = const_uop(DType::Bool, 1);  // over a symbolic dim: the terms inside its extent
           for (auto a : u->reduce_axes()) {
             if (in[size_t(a)] == 1) { idx[size_t(a)] = const_int(x.s.idx_dt_, 0); continue; }
             src.push_back(idx[size_t(a)] = dim_range(*u->src[0], size_t(a), x.c.next_range++, AxisType::REDUCE, x.s.idx_dt_));
             valid = logical_and(valid, inside(*u->src[0], size_t(a), idx[size_t(a)]));
           }
           valid = simplify(valid);
           if (valid->is_const(1)) src[0] = to_src(m, std::move(idx));
           else
             src[0] = alu(Ops::WHERE, {valid, marker(u->src[0], std::move(idx), simplify(logical_and(m["m"]->src[1], valid))),
                                       const_uop(u->dtype, reduce_identity(Ops(u->varg()[0]), u->dtype))});
           return src.size() == 1 ? src[0] : make_uop(Ops::REDUCE, u->dtype, src, std::vector<int64_t>{u->varg()[0]});
         }},
        // elementwise: each source at the same index (a kernel's own INDEX, of a DEFINE_GLOBAL, is no marker)
        {at({}), [](M m) -> UOpRef {
           const UOpRef& u = m["u"];
           if (u->op == Ops::DEFINE_GLOBAL) return nullptr;
           if (!is_alu(u->op) && u->op != Ops::CAST && u->op != Ops::BITCAST)
             throw Error(std::string("tinygrad: the scheduler cannot lower ") + op_name(u->op));
           std::vector<UOpRef> src;
           for (auto& s : u->src) src.push_back(marker(s, idx_of(m["m"]), m["m"]->src[1]));
           return make_uop(u->op, u->dtype, std::move(src), u->arg);
         }},
    };
    return pm;
  }

  // u's value at idx as a kernel graph
  UOpRef lower(KCtx& c, const UOpRef& u, std::vector<UOpRef> idx, const UOpRef& gate) {
    // the tensor nodes the kernel fuses: a marker's source, kept as it is (the rules read it)
    std::unordered_set<const UOp*> fused{u.get()};
    for (auto& x : toposort(u, [&](const UOp* y) { return y == u.get() || !(is_leaf(y) || is_kroot(y)); })) fused.insert(x.get());
    RCtx x{*this, c};
    return graph_rewrite(marker(u, std::move(idx), gate), pm_rangeify(), &x, [&](const UOp* y) { return fused.count(y) > 0; });
  }

  // 64-bit indices only in a kernel where a flattened index can pass 2^31: its output, the buffers it reads and the
  // reshapes within it, not broadcast views (a matmul's N*M*K view is never flattened). NOTE: per kernel: int64 index
  // math is slow on GPUs, and one large reshape anywhere in a training step had made every kernel of it 64-bit
  DType index_dtype(const UOpRef& k) const {
    int64_t maxn = prod(k->shape);
    std::vector<const UOp*> stack{k.get()};
    std::unordered_set<const UOp*> seen{k.get()};
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      if (u != k.get() && (is_leaf(u) || is_kroot(u))) {  // an input: a buffer lowering indexes as a whole
        maxn = std::max(maxn, u->op == Ops::BUFFER ? u->buffer()->size : prod(u->shape));
        continue;
      }
      if (u->op == Ops::RESHAPE) maxn = std::max({maxn, prod(u->shape), prod(u->src[0]->shape)});
      for (auto& x : u->src) if (seen.insert(x.get()).second) stack.push_back(x.get());
    }
    return maxn > INT32_MAX ? DType::Int64 : DType::Int32;
  }

  // a kernel lowered with 64-bit indices whose simplified index math never leaves int32's range (the exact value
  // ranges say so: a conv's window view is far larger than what its kernel indexes) runs in 32 bits; not where 64-bit
  // integers are data (loaded, stored)
  static UOpRef narrow_index(const UOpRef& sink) {
    auto topo = toposort(sink);
    for (auto& u : topo) {
      if (u->dtype == DType::Int64 && (u->vmin < INT32_MIN || u->vmax > INT32_MAX || u->op == Ops::DEFINE_GLOBAL || u->op == Ops::LOAD)) return sink;
      if (u->op == Ops::STORE && u->src[1]->dtype == DType::Int64) return sink;
    }
    std::unordered_map<const UOp*, UOpRef> m;
    for (auto& u : topo) {
      std::vector<UOpRef> src;
      for (auto& x : u->src) src.push_back(m.at(x.get()));
      DType dt = u->dtype == DType::Int64 ? DType::Int32 : u->dtype;
      m[u.get()] = src == u->src && dt == u->dtype ? u : make_uop(u->op, dt, std::move(src), u->arg, u->vcount);
    }
    return m.at(sink.get());
  }

  KernelAST lower_kernel(const UOpRef& k) {
    idx_dt_ = index_dtype(k);
    KCtx c{k.get(), {}, {}, int64_t(k->shape.size())};
    lowered_reduce_ = false;
    int out = slot_.at(k.get());
    c.slots.push_back(out);
    c.param_of_slot[out] = 0;
    std::vector<UOpRef> idx;
    UOpRef valid = const_uop(DType::Bool, 1);  // a symbolic output: the elements inside its extents (the buffer is at its bounds)
    for (size_t i = 0; i < k->shape.size(); i++) {
      idx.push_back(k->shape[i] == 1 ? const_int(idx_dt_, 0) : dim_range(*k, i, int64_t(i), AxisType::LOOP, idx_dt_));
      valid = logical_and(valid, inside(*k, i, idx.back()));
    }
    valid = simplify(valid);
    auto g = make_uop(Ops::DEFINE_GLOBAL, k->dtype, {}, int64_t(0));
    std::vector<UOpRef> isrc{g, flat_index(idx, k->shape)};
    UOpRef v;
    if (k->op == Ops::ASSIGN) {
      // the address: the view lowered as a load of its buffer (the kernel's output, param 0) at idx
      UOpRef at = lower(c, k->src[0], idx, valid);
      if (at->op != Ops::LOAD || at->src[0]->src[0] != g) throw Error("tinygrad::assign: the view cannot be written through (a padded view?)");
      isrc[1] = at->src[0]->src[1];
      v = lower(c, k->src[1], idx, valid);
    } else {
      v = lower(c, k, idx, valid);
    }
    if (!valid->is_const(1)) isrc.push_back(valid);
    auto st = make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, k->dtype, std::move(isrc)), v});
    // NOTE: the pieces of a long chain lower to one AST: simplify it once
    auto sink = make_uop(Ops::SINK, DType::Bool, {st});
    auto [it, fresh] = simplified_.try_emplace(sink.get(), sink, nullptr);
    if (fresh) it->second.second = idx_dt_ == DType::Int64 ? narrow_index(simplify(sink)) : simplify(sink);
    return {it->second.second, c.slots};
  }

  // ---- multi-output kernels ----
  // A kernel joins an earlier reduce kernel over the same output ranges (one SINK, several STOREs) when both reduce
  // the same input (x.sum(1) and x.max(1): one loop, each element loaded once), or when it reads the earlier kernel's
  // output exactly at the element that kernel stores there (a sum, then the mean, then the variance around it: the
  // value is used where it was computed, no buffer round trip; two reduces run as two loops in one kernel), if their
  // reduces are as long.
  // NOTE: a variance keeps its two passes, sum((x - mean)^2) after the mean, rather than one pass of sum and sum of
  // squares: the numerics of two kernels exactly, and no cancellation when the mean is large against the spread.
  struct KInfo {
    std::vector<int> writes;
    std::unordered_set<int> reads, reduce_reads;  // slots loaded anywhere / walked by a reduce
    const UOp* store_idx = nullptr;               // the address every store writes (null: they differ)
    bool reduce = false;                          // its graph reduces
    int64_t terms = 1;                            // the longest reduce's terms an output
  };
  static int slot_of(const KernelAST& k, const UOpRef& index) { return k.slots[size_t(index->src[0]->iarg())]; }
  static KInfo kernel_info(const KernelAST& k, bool reduces) {
    KInfo r;
    r.reduce = reduces;
    for (auto& st : k.ast->src) {
      r.writes.push_back(slot_of(k, st->src[0]));
      r.store_idx = st == k.ast->src[0] || r.store_idx == st->src[0]->src[1].get() ? st->src[0]->src[1].get() : nullptr;
    }
    for (auto& u : toposort(k.ast)) {
      if (u->op == Ops::LOAD) r.reads.insert(slot_of(k, u->src[0]));
      if (u->op != Ops::REDUCE) continue;
      int64_t terms = 1;
      for (size_t i = 1; i < u->src.size(); i++) terms *= u->src[i]->range_end();
      r.terms = std::max(r.terms, terms);
      // NOTE: a load the reduce walks (its address depends on the reduce's ranges), not a broadcast scalar
      for (auto& x : toposort(u->src[0])) {
        if (x->op != Ops::LOAD) continue;
        auto addr = toposort(x->src[0]->src[1]);
        if (std::any_of(addr.begin(), addr.end(), [&](auto& a) { return std::find(u->src.begin() + 1, u->src.end(), a) != u->src.end(); }))
          r.reduce_reads.insert(slot_of(k, x->src[0]));
      }
    }
    if (r.reduce_reads.empty() && reduces) r.reduce_reads = r.reads;  // reduces over size-1 dims only: plain loads
    return r;
  }
  // the RANGEs a node depends on, less the ones in `skip`
  static std::vector<const UOp*> ranges_below(const UOpRef& u, const std::vector<UOpRef>& skip) {
    std::vector<const UOp*> r;
    for (auto& x : toposort(u)) if (x->op == Ops::RANGE && std::find(skip.begin(), skip.end(), x) == skip.end()) r.push_back(x.get());
    std::sort(r.begin(), r.end());
    return r;
  }

  // kernel j (later) folded into kernel g (earlier), or nothing when that is not legal or gains nothing
  std::optional<KernelAST> merge_pair(const KernelAST& g, const KInfo& gi, const KernelAST& j, const KInfo& ji) {
    if (!gi.reduce || !gi.store_idx || !ji.store_idx) return std::nullopt;
    // reduces of different lengths stay apart: one kernel's opts would have to serve both loops (a conv's input
    // gradient, 576 terms, joined to the max-pool's 4-term count of maxima, lost its GEMM tile: 399 us on an H100)
    if (ji.reduce && ji.terms != gi.terms) return std::nullopt;
    // NOTE: sharing means one reduce walks nothing the other does not (either way round: LAMB's norms of a parameter
    // and of its update): q, k and v of one input each walk their own weight, and side by side in one kernel the three
    // loops lost the opts each gets alone (a quantized matvec's block unroll)
    // a's reduce reads some of b's and nothing b does not read (or, written_by_b, write: b runs first)
    auto within = [](const KInfo& a, const KInfo& b, bool written_by_b) {
      return std::any_of(a.reduce_reads.begin(), a.reduce_reads.end(), [&](int s) { return b.reduce_reads.count(s) > 0; }) &&
             std::all_of(a.reduce_reads.begin(), a.reduce_reads.end(), [&](int s) {
               return b.reduce_reads.count(s) > 0 || (written_by_b && std::find(b.writes.begin(), b.writes.end(), s) != b.writes.end());
             });
    };
    bool share = ji.reduce && (within(ji, gi, true) || within(gi, ji, false));
    bool reads_g = std::any_of(gi.writes.begin(), gi.writes.end(), [&](int s) { return ji.reads.count(s) > 0; });
    if (!share && !reads_g) return std::nullopt;
    // j's loop ranges renamed to g's (a loop's id is its dim: outputs of shape (1,C,1,1) and (C,) run the same loop)
    auto loops = [](const UOpRef& k) { auto r = ranges_of(k); std::erase_if(r, [](auto& x) { return axis_type(x) != AxisType::LOOP; }); return r; };
    auto gl = loops(g.ast), jl = loops(j.ast);
    std::unordered_map<int, UOpRef> stored;  // g's output slots -> the values it stores there
    for (auto& st : g.ast->src) stored[slot_of(g, st->src[0])] = st->src[1];
    // a row kernel: j elementwise over g's loops and inner ones (a LayerNorm's output over the rows of its statistics)
    // reads g's outputs at its rows; on a device of workgroups, a workgroup a row (group reduces, then the row's
    // elements: one read of the row from memory, not two; codegen's gpu_rows). Its rows are the loops j's reads of g
    // walk, at least 256 of them (fewer would leave the GPU idle: two kernels spread them), over one inner loop of 64
    // elements or more, with the row_threads that gpu_rows gives a workgroup
    bool row = rows_ && !ji.reduce && reads_g && gl.size() < jl.size() && !gl.empty() && ji.store_idx;
    if (row) {
      UOpRef at;
      for (auto& u : toposort(j.ast)) if (u->op == Ops::LOAD && stored.count(slot_of(j, u->src[0]))) { at = u->src[0]->src[1]; break; }
      auto walked = ranges_below(at, {});
      std::vector<UOpRef> rows, inner;
      for (auto& r : jl) (std::find(walked.begin(), walked.end(), r.get()) != walked.end() ? rows : inner).push_back(r);
      int64_t nrows = 1, len = 1;
      for (auto& r : rows) nrows *= r->range_end();
      for (auto& r : inner) len *= r->range_end();
      // NOTE: symbolic (a decode step's keys, a prefill's rows) keeps the two kernels
      auto sym = [](const UOpRef& r) { return !r->src.empty(); };
      bool fixed = std::none_of(jl.begin(), jl.end(), sym);
      std::vector<int64_t> terms;
      for (auto& u : toposort(g.ast))
        if (u->op == Ops::REDUCE) {
          terms.push_back(u->src.size() == 2 ? u->src[1]->range_end() : 1);
          fixed &= std::none_of(u->src.begin() + 1, u->src.end(), sym);
        }
      row = fixed && rows.size() == gl.size() && inner.size() == 1 && inner[0]->range_id() > rows.back()->range_id() && nrows >= 256 && len >= 64 &&
            row_threads(len, terms) > 0;
      if (row) jl = rows;
    }
    if (gl.size() != jl.size()) return std::nullopt;
    std::unordered_map<const UOp*, UOpRef> loop;
    // NOTE: as long also where symbolic: a loop to a variable's extent (src[0]) is not one to its bound
    auto same_len = [](const UOpRef& a, const UOpRef& b) { return a->range_end() == b->range_end() && a->src == b->src; };
    for (size_t i = 0; i < gl.size(); i++) {
      if (!same_len(gl[i], jl[i])) return std::nullopt;
      if (gl[i] != jl[i]) loop[jl[i].get()] = gl[i];
    }
    auto renamed = [&](const UOpRef& x) { return loop.empty() ? x : substitute(x, loop); };
    if (!row && renamed(j.ast->src[0]->src[0]->src[1]).get() != gi.store_idx) return std::nullopt;
    KernelAST m{nullptr, g.slots};
    std::unordered_map<int, int> param;
    for (size_t p = 0; p < g.slots.size(); p++) param[g.slots[p]] = int(p);
    // j's params renumbered into g's, its reads of g's outputs replaced by the values, its reduce ranges made fresh
    std::unordered_map<const UOp*, UOpRef> sub = loop;
    int64_t next_id = next_range_id(g.ast);
    for (auto& u : toposort(j.ast)) {
      if (u->op == Ops::DEFINE_GLOBAL) {
        int s = j.slots[size_t(u->iarg())];
        if (stored.count(s)) continue;  // only reached through the loads replaced below
        auto [it, fresh] = param.try_emplace(s, int(m.slots.size()));
        if (fresh) m.slots.push_back(s);
        sub[u.get()] = make_uop(Ops::DEFINE_GLOBAL, u->dtype, {}, int64_t(it->second));
      } else if (u->op == Ops::LOAD) {
        auto it = stored.find(slot_of(j, u->src[0]));
        if (it == stored.end()) continue;
        // another element of g's output (a thread of its own may write it): not within one kernel
        if (u->src[0]->src.size() != 2 || renamed(u->src[0]->src[1]).get() != gi.store_idx || it->second->dtype != u->dtype) return std::nullopt;
        sub[u.get()] = it->second;
      }
    }
    // NOTE: fresh ids in the order of the old ones: ids order the loops (the batch outermost, the contiguous axis inside);
    // a row kernel's inner loops after g's ranges (the linearizer runs g's reduces before them)
    for (auto& r : ranges_of(j.ast))
      if (axis_type(r) == AxisType::REDUCE || (row && !loop.count(r.get()) && std::find(jl.begin(), jl.end(), r) == jl.end()))
        sub[r.get()] = make_range(r->range_end(), next_id++, axis_type(r), r->dtype, r->src.empty() ? nullptr : r->src[0]);
    if (int64_t(m.slots.size()) > kernel_limits().max_buffers) return std::nullopt;
    UOpRef jn = substitute(j.ast, sub);
    // a reduce of j that reads what a reduce of g reads, over ranges of the same sizes inside the same loops, takes
    // g's ranges: the linearizer runs both in one loop, and their common loads load once. Never one that reads a
    // reduce of g (it runs after g's loop).
    struct GReduce { UOpRef u; std::vector<UOpRef> ranges; std::vector<const UOp*> outer; std::unordered_set<const UOp*> loads; };
    std::vector<GReduce> greds;
    for (auto& u : toposort(g.ast)) {
      if (u->op != Ops::REDUCE) continue;
      GReduce gr{u, reduce_ranges(u), {}, {}};
      gr.outer = ranges_below(u->src[0], gr.ranges);
      for (auto& x : toposort(u->src[0])) if (x->op == Ops::LOAD) gr.loads.insert(x.get());
      greds.push_back(std::move(gr));
    }
    std::unordered_map<const UOp*, UOpRef> unify;
    for (auto& r : toposort(jn)) {
      if (r->op != Ops::REDUCE || std::any_of(greds.begin(), greds.end(), [&](auto& gr) { return gr.u == r; })) continue;  // j's own reduces
      auto below = toposort(r->src[0]);
      if (std::any_of(below.begin(), below.end(), [](auto& x) { return x->op == Ops::REDUCE; })) continue;
      auto rr = reduce_ranges(r);
      for (auto& gr : greds) {
        auto& gg = gr.ranges;
        if (gg.size() != rr.size() || !std::equal(gg.begin(), gg.end(), rr.begin(), same_len))
          continue;
        std::unordered_map<const UOp*, UOpRef> rm;
        for (size_t i = 0; i < rr.size(); i++) rm[rr[i].get()] = gg[i];
        UOpRef cand = substitute(r->src[0], rm);
        if (ranges_below(cand, gg) != gr.outer) continue;
        auto cl = toposort(cand);
        if (std::none_of(cl.begin(), cl.end(), [&](auto& x) { return x->op == Ops::LOAD && gr.loads.count(x.get()); })) continue;
        unify.insert(rm.begin(), rm.end());
        break;
      }
    }
    if (!unify.empty()) jn = substitute(jn, unify);
    std::vector<UOpRef> stores(g.ast->src.begin(), g.ast->src.end());
    stores.insert(stores.end(), jn->src.begin(), jn->src.end());
    m.ast = make_uop(Ops::SINK, DType::Bool, stores);
    return m;
  }

  // fold kernels into earlier ones where merge_pair allows; a merged kernel runs where its first part ran, so a
  // kernel only joins one that no kernel it reads from runs after (looking back 32 kernels at most)
  void merge_kernels() {
    std::vector<KernelAST> out;
    std::vector<KInfo> infos;
    for (size_t i = 0; i < spec_.kernels.size(); i++) {
      KernelAST& k = spec_.kernels[i];
      KInfo ki = kernel_info(k, reduces_[i]);
      bool merged = false;
      for (size_t g = out.size(), tries = 0; ki.store_idx && g-- > 0 && tries++ < 32;) {
        if (auto m = merge_pair(out[g], infos[g], k, ki)) { out[g] = std::move(*m); infos[g] = kernel_info(out[g], true); merged = true; break; }
        if (std::any_of(infos[g].writes.begin(), infos[g].writes.end(), [&](int s) { return ki.reads.count(s) > 0; })) break;
      }
      if (!merged) { out.push_back(std::move(k)); infos.push_back(std::move(ki)); }
    }
    spec_.kernels = std::move(out);
  }

  std::unordered_map<const UOp*, int> slot_;
  int n_inputs_;
  std::vector<bool> reduces_;   // per kernel of spec_: its graph has a REDUCE_AXIS (over size-1 dims it lowers to none)
  bool lowered_reduce_ = false;
  std::vector<UOpRef> kroots_;
  std::unordered_map<const UOp*, UOpRef> by_ptr_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps_;
  std::unordered_map<const UOp*, const UOp*> owner_;  // reduce -> the first kernel that fused it
  std::unordered_set<const UOp*> shared_;             // reduces that get their own kernel
  std::unordered_set<const UOp*> forced_;             // nodes realized to keep kernels within kernel_limits()
  std::unordered_map<const UOp*, std::pair<UOpRef, UOpRef>> simplified_;  // lowered AST -> simplified (holding the key)
  ScheduleSpec spec_;
  DType idx_dt_ = DType::Int32;
  bool exact_sizes_ = false;  // a symbolic buffer holds only its values' elements (static plans), not its bound's
  bool rows_ = false;         // the device runs workgroups: a reduce's rows join the elementwise kernel that reads them
};

// split_reduceop (tinygrad's): a long reduce (32768 terms an output, 8192 on a GPU) into fewer outputs than keep the
// device busy (`busy`: its parallelism) would run on few cores / SMs, so it becomes two kernels: axis a of size n
// becomes (n/d, d), the first kernel reduces the n/d part into d partials per output (neighbouring partials read
// neighbouring addresses), the second reduces the d partials. The first reduce is split again where it still
// qualifies (graph_rewrite rewrites what a rule returns).
// A long float sum splits whatever the outputs, and again (`chain`) until every stage adds at most kSumTerms terms an
// output: a float accumulator's error grows with the terms it adds (1e7 x 0.1 in 250 partials of 40000 terms was 1e-4
// low, 1e10 ones in 256 partials gave 2^32: each stuck at 2^24). Then the error grows with the stages, log(n).
inline constexpr int64_t kSumTerms = 1024;
// a sum of where(a == b, x, 0) (a one-hot select: an embedding's rows, a gather): lowering folds it into one read an
// output (fold_onehot_reduce), which a split would undo (an embedding of 49152 rows then read all of them per token)
inline bool onehot_select(const UOpRef& r) {
  auto bare = [](UOpRef u) {
    while (u->op == Ops::RESHAPE || u->op == Ops::EXPAND || u->op == Ops::CAST) u = u->src[0];
    return u;
  };
  UOpRef v = bare(r->src[0]);
  if (r->reduce_op() != Ops::ADD || v->op != Ops::WHERE) return false;
  UOpRef c = bare(v->src[0]);
  bool eq = c->op == Ops::CMPEQ;
  return (eq || c->op == Ops::CMPNE) && bare(v->src[eq ? 2 : 1])->is_const(0);
}
inline UOpRef split_reduceop(const UOpRef& r, int64_t busy, bool chain = false) {
  const UOpRef& x = r->src[0];
  if (!x->dyn.empty()) return nullptr;  // NOTE: a symbolic dim cannot be split (its extent varies)
  const Shape& sh = x->shape;
  std::vector<int64_t> ax = r->reduce_axes();
  int64_t in = prod(sh), outs = in;
  for (auto a : ax) outs /= std::max<int64_t>(sh[size_t(a)], 1);
  // NOTE: a GPU (thousands of outputs to be busy) splits from 8192 on: BatchNorm's statistics over 512x6x6 pixels into 64
  // channels ran as one workgroup (674 us on an H100), a conv's weight gradient over them as 18 tile blocks (1667 us)
  int64_t threshold = busy >= 4096 ? 8192 : 32768;
  if (outs == 0 || in / outs < (chain ? kSumTerms + 1 : threshold) || onehot_select(r)) return nullptr;
  if (!chain) {
    chain = is_float(r->dtype) && r->reduce_op() == Ops::ADD;
    if (!chain && outs >= busy) return nullptr;
  }
  // NOTE: on a CPU (busy < 4096) each partial sums a contiguous chunk instead: a core streams one range of addresses
  // (strided partials read 25 streams 16 MB apart: a sum of 1e8 floats at 27 GB/s on one core, Eigen's 40); the
  // chunk is at most kSumTerms and a multiple of 64 (16-float vectors unrolled 4) where one divides the axis. Over one
  // axis only: with more (BatchNorm's statistics over batch and pixels) the chunk of one would join the others' terms
  // in the first kernel (147456 of them an output: 70x the error of the strided split)
  const bool chunks = busy < 4096 && ax.size() == 1;
  // a float sum's long stage split again (strided: the first kernel's terms; chunked: the partials)
  auto again = [&](const UOpRef& u) { auto more = chain ? split_reduceop(u, busy, true) : nullptr; return more ? more : u; };
  auto split = [&](const UOpRef& src, int64_t a, int64_t d) -> UOpRef {  // axis a into (n/d, d): the first kernel reduces one part
    Shape s = src->shape;
    s[size_t(a)] /= d;
    s.insert(s.begin() + a + 1, d);
    std::vector<int64_t> first{int64_t(r->reduce_op())};
    for (auto b : ax) first.push_back(b == a && chunks ? a + 1 : b <= a ? b : b + 1);
    auto red = make_uop(Ops::REDUCE_AXIS, r->dtype, {make_uop(Ops::RESHAPE, x->dtype, {src}, s)}, first);
    auto part = make_uop(Ops::CONTIGUOUS, r->dtype, {chunks ? red : again(red)});
    if (is_leaf(part.get())) return nullptr;  // NOTE: realized by someone before: not an input this schedule knows
    auto second = make_uop(Ops::REDUCE_AXIS, r->dtype, {part}, std::vector<int64_t>{int64_t(r->reduce_op()), chunks ? a : a + 1});
    return make_uop(Ops::RESHAPE, r->dtype, {chunks ? again(second) : second}, std::vector<int64_t>(r->shape));
  };
  for (auto a : ax) {
    int64_t n = sh[size_t(a)];
    if (chunks) {
      for (int pass = 0; pass < 2; pass++)
        for (int64_t d = std::min<int64_t>(kSumTerms, n / 2); d >= 8; d--)
          if (n % d == 0 && (pass == 1 || d % 64 == 0)) return split(x, a, d);
      if (!chain || n <= kSumTerms) continue;
      // no divisor (a prime length): zeros past the end, a sum's identity, make chunks of kSumTerms (in one stage, a
      // sum of 1000003 floats of 0.1 was 1% off)
      std::vector<int64_t> pads(2 * sh.size(), 0);
      pads[size_t(2 * a + 1)] = (n + kSumTerms - 1) / kSumTerms * kSumTerms - n;
      return split(make_uop(Ops::PAD, x->dtype, {x}, pads), a, kSumTerms);
    }
    for (int64_t d = std::min<int64_t>(256, (int64_t(1) << 22) / outs); d >= 8; d--)
      if (n % d == 0 && n / d >= 2) return split(x, a, d);
  }
  return nullptr;
}
inline const PatternMatcher& pm_split_reduceop() {
  static const PatternMatcher pm{
      {UPat::op(Ops::REDUCE_AXIS, {UPat::any()}, "r"), [](const Match& m) { return split_reduceop(m["r"], m.context<const int64_t>()); }},
  };
  return pm;
}
// the device a graph's nodes name (buffers, DEVICE), or "" when none does
inline std::string graph_device(const std::vector<UOpRef>& roots) {
  for (auto& u : toposort_all(roots, [](const UOp* x) { return !is_leaf(x); })) {
    if (u->op == Ops::BUFFER) return u->buffer()->device;
    if (u->realized) return u->realized->device;
    if (u->op == Ops::DEVICE) return std::get<std::string>(u->arg);
  }
  return "";
}

// roots -> kernels on `device` (default: the device the graph names, else the default device); input_slots numbers
// the graph's existing buffers
// exact_sizes: the run allocates a buffer whose only symbolic dim is its first at its values' size (static plans)
inline ScheduleSpec create_schedule(const std::vector<UOpRef>& roots, const std::unordered_map<const UOp*, int>& input_slots, int n_inputs,
                                    std::string device = "", bool exact_sizes = false) {
  if (device.empty()) device = detail::graph_device(roots);
  if (device.empty()) device = default_device();
  // tensor-graph rewrites before kernels are formed; realized values and what is below them stay as they are
  int64_t busy = runtime(device).parallelism;
  const bool spec = spec_enabled();
  auto sink = make_uop(Ops::SINK, DType::Bool, roots);
  if (spec) verify_graph(sink, Stage::TENSOR, "frontend");
  const bool viz = !flags().viz.empty();
  int64_t r0 = viz ? rewrites_done() : 0;
  sink = graph_rewrite(sink, detail::pm_split_reduceop(), &busy, [](const UOp* u) { return detail::is_leaf(u); });
  if (spec) verify_graph(sink, Stage::TENSOR, "split_reduceop");
  int64_t r1 = viz ? rewrites_done() : 0;
  ScheduleSpec s = detail::Scheduler(sink->src, input_slots, n_inputs, exact_sizes, runtime(device).workgroups).spec();
  if (viz) {
    size_t nodes = 0;
    for (auto& k : s.kernels) nodes += toposort(k.ast).size();
    s.stages = {{"split_reduceop", r1 - r0, toposort(sink).size()}, {"rangeify", rewrites_done() - r1, nodes}};
  }
  if (spec) for (auto& k : s.kernels) verify_graph(k.ast, Stage::KERNEL, "schedule");
  return s;
}

}  // namespace tinygrad::detail
