#pragma once
// kernel opts, the vocabulary: OptOp, Opt, KernelOptError, and the facts about a kernel AST's RANGEs every opt and
// heuristic reads (its ranges by id, their kinds, how an index walks a range). What each opt does: kernel.hpp.
#include <set>
#include "../renderer/cstyle.hpp"
#include "../uop/symbolic.hpp"

namespace tinygrad::detail {

// NOTE: the values are stored in BEAM's disk cache: append, never reorder
enum class OptOp { UPCAST, VECTOR, UNROLL, THREAD, LOCAL, GROUP, GROUPTOP, PADTO, SWAP, NOLOCALS, KBLOCK, TC, TILE, MERGE };
inline constexpr OptOp last_optop = OptOp::MERGE;
struct Opt {
  OptOp op; int64_t axis; int64_t amt;  // axis: range id (NOLOCALS: none, -1); amt: SWAP's and MERGE's other range id, NOLOCALS 0
  std::string str() const;  // Opt(UPCAST, 1, 4): the name is the op's row of the opt table (kernel.hpp)
  bool operator==(const Opt&) const = default;
};
struct KernelOptError : Error { using Error::Error; };

// ranges in id order (one sort for every caller: each comparator lambda would be its own std::sort instance)
inline std::vector<UOpRef> by_range_id(std::vector<UOpRef> r) {
  std::sort(r.begin(), r.end(), [](const UOpRef& a, const UOpRef& b) { return a->range_id() < b->range_id(); });
  return r;
}
// a REDUCE's ranges, in id order
inline std::vector<UOpRef> reduce_ranges(const UOpRef& red) { return by_range_id({red->src.begin() + 1, red->src.end()}); }
inline std::vector<UOpRef> ranges_of(const UOpRef& sink) {
  std::vector<UOpRef> r;
  for (auto& u : toposort(sink)) if (u->op == Ops::RANGE) r.push_back(u);
  return by_range_id(std::move(r));
}
inline UOpRef find_range(const UOpRef& sink, int64_t id) {
  for (auto& r : ranges_of(sink)) if (r->range_id() == id) return r;
  throw KernelOptError(cat("no range with id ", id));
}
// tight (a symbolic dim's range): the loop's end, an expression of variables at most `end`
inline UOpRef make_range(int64_t end, int64_t id, AxisType t, DType dt, const UOpRef& tight = nullptr) {
  return make_uop(Ops::RANGE, dt, tight ? std::vector<UOpRef>{tight} : std::vector<UOpRef>{}, std::vector<int64_t>{end, id, int64_t(t)});
}
inline UOpRef ceil_div(const UOpRef& e, int64_t d) { return idiv(e + (d - 1), d); }
inline AxisType axis_type(const UOp* r) { return AxisType(r->varg()[2]); }
inline AxisType axis_type(const UOpRef& r) { return axis_type(r.get()); }
inline int64_t next_range_id(const UOpRef& sink) { int64_t m = -1; for (auto& r : ranges_of(sink)) m = std::max(m, r->range_id()); return m + 1; }

// NOTE: a multi-output kernel (several stores) takes the heuristics' opts when every store writes the same address:
// then stores[0] stands for all of them
inline bool one_address(const std::vector<UOpRef>& stores) {
  return !stores.empty() && std::all_of(stores.begin(), stores.end(), [&](auto& s) { return s->src[1] == stores[0]->src[1]; });
}

// each reduce loop of a kernel (REDUCEs over the same ranges run as one loop): its range ids, ascending -> the
// innermost of its ranges. NOTE: keyed by ids, not addresses: the heuristics walk the loops in this order
inline std::map<std::vector<int64_t>, UOpRef> reduce_loops(const std::vector<UOpRef>& topo) {
  std::map<std::vector<int64_t>, UOpRef> loops;
  for (auto& u : topo) {
    if (u->op != Ops::REDUCE) continue;
    std::vector<int64_t> ids;
    UOpRef inner = u->src.back();
    for (size_t i = 1; i < u->src.size(); i++) {
      ids.push_back(u->src[i]->range_id());
      if (u->src[i]->range_id() > inner->range_id()) inner = u->src[i];
    }
    std::sort(ids.begin(), ids.end());
    loops[ids] = inner;
  }
  return loops;
}

// replace range r by new_expr in every node below sink; stores are duplicated per value of an unrolled index
inline UOpRef sub_range(const UOpRef& x, const UOpRef& r, const UOpRef& e) { return substitute(x, {{r.get(), e}}); }

// A concrete output range R of size n that the kernel reads as R / c or R % c (c dividing n: a (3, 3, 64) view of 576
// contiguous outputs) becomes two ranges, R1 * c + R2 (R1 over n / c, R2 over c; the smallest such c first, then again
// on what is left), so the opts see each dim as an axis of its own (VECTOR, THREAD) rather than div/mod of one: the
// attention's probabilities @ V of one decode step was one scalar loop of 576 outputs on the CPU. The ids after R's move
// up by one (R1 takes R's, R2 the next): the order of the loops stays the dims' order. A kernel that loads narrow ints
// (ggml's quantized bytes) keeps its ranges: the CPU heuristic finds a block's scales from the div/mod (quant_block), and
// split, a Q4_1 weight dequantized into floats lost its vector lanes (3-4x slower on the Xeon)
inline UOpRef split_ranges(UOpRef sink) {
  auto topo = toposort(sink);
  if (std::any_of(topo.begin(), topo.end(), [](auto& u) { return u->op == Ops::LOAD && is_int(u->dtype) && itemsize(u->dtype) < 4; })) return sink;
  for (int round = 0; round < 8; round++, topo = toposort(sink)) {
    UOpRef r;
    int64_t c = 0;
    for (auto& u : topo) {
      if ((u->op != Ops::IDIV && u->op != Ops::MOD) || u->src[0]->op != Ops::RANGE || u->src[1]->op != Ops::CONST) continue;
      const UOpRef& x = u->src[0];
      auto d = int64_t(u->src[1]->const_value());
      if (axis_type(x) == AxisType::LOOP && x->src.empty() && d > 1 && d < x->range_end() && x->range_end() % d == 0 && (!r || d < c)) r = x, c = d;
    }
    if (!r) return sink;
    std::unordered_map<const UOp*, UOpRef> sub;
    auto moved = [](const UOpRef& x, int64_t end, int64_t id) {
      return make_range(end, id, axis_type(x), x->dtype, x->src.empty() ? nullptr : x->src[0]);
    };
    for (auto& x : ranges_of(sink)) if (x->range_id() > r->range_id()) sub[x.get()] = moved(x, x->range_end(), x->range_id() + 1);
    sub[r.get()] = moved(r, r->range_end() / c, r->range_id()) * c + moved(r, c, r->range_id() + 1);
    sink = simplify(substitute(sink, sub));
  }
  return sink;
}

// how an index depends on a range: 0 independent, 1 contiguous (stride 1), 2 anything else
inline int stride_class(const UOpRef& idx, const UOpRef& r) {
  auto d = step_of(idx, r);
  if (d->op == Ops::CONST) { double v = d->const_value(); return v == 0 ? 0 : v == 1 ? 1 : 2; }
  return 2;
}
// the nodes below sink whose value depends on range x (a REDUCE over x closes it: its result does not)
inline std::unordered_set<const UOp*> depends_on(const UOpRef& sink, const UOpRef& x) {
  std::unordered_set<const UOp*> dep;
  for (auto& u : toposort(sink)) {
    if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), x) != u->src.end()) continue;
    if (u == x || std::any_of(u->src.begin(), u->src.end(), [&](auto& s) { return dep.count(s.get()); })) dep.insert(u.get());
  }
  return dep;
}
// an access (INDEX) inside a reduce's loop: its address or gate runs over a reduce range (else once per output)
inline bool in_reduce_loop(const UOpRef& idx) {
  auto t = toposort(idx);
  return std::any_of(t.begin(), t.end(), [](auto& u) { return u->op == Ops::RANGE && axis_type(u) == AxisType::REDUCE; });
}
// a range that runs on a thread id of the workgroup
inline bool is_thread(AxisType t) { return t == AxisType::LOCAL || t == AxisType::GROUP || t == AxisType::WARP; }
// the workgroup's thread ranges (LOCAL, GROUP; WARP never shares) as classes that run on one thread id: ranges of one
// size of which no node depends on two at once (a REDUCE binds its GROUP range) share one. A row of a LayerNorm in one
// workgroup: the mean's group, the variance's group and the output's local are one thread index, not a cube of them.
// Each class in id order, its first range standing for all
inline std::vector<std::vector<UOpRef>> thread_classes(const UOpRef& sink) {
  std::vector<UOpRef> thr;
  bool warp = false;
  for (auto& r : ranges_of(sink)) {
    warp |= axis_type(r) == AxisType::WARP;
    if (is_thread(axis_type(r))) thr.push_back(r);
  }
  std::vector<std::vector<UOpRef>> cls;
  std::set<int64_t> sizes;
  for (auto& r : thr) sizes.insert(r->range_end());
  if (warp || sizes.size() == thr.size() || thr.size() > 64) {
    for (auto& r : thr) cls.push_back({r});
    return cls;
  }
  // the thread ranges each node depends on (a bit each), and each range's pairs
  std::unordered_map<const UOp*, uint64_t> dep;
  std::vector<uint64_t> with(thr.size(), 0);
  for (auto& u : toposort(sink)) {
    uint64_t m = 0;
    for (auto& s : u->src) m |= dep[s.get()];
    if (u->op == Ops::RANGE)
      for (size_t i = 0; i < thr.size(); i++) if (thr[i] == u) m |= uint64_t(1) << i;
    if (u->op == Ops::REDUCE)
      for (size_t j = 1; j < u->src.size(); j++)
        for (size_t i = 0; i < thr.size(); i++) if (thr[i] == u->src[j]) m &= ~(uint64_t(1) << i);
    dep[u.get()] = m;
    for (size_t i = 0; i < thr.size(); i++) if (m >> i & 1) with[i] |= m;
  }
  std::vector<uint64_t> members;
  for (size_t i = 0; i < thr.size(); i++) {
    size_t c = 0;
    for (; c < cls.size(); c++) if (cls[c][0]->range_end() == thr[i]->range_end() && !(with[i] & members[c])) break;
    if (c == cls.size()) { cls.emplace_back(); members.push_back(0); }
    cls[c].push_back(thr[i]);
    members[c] |= uint64_t(1) << i;
  }
  return cls;
}
}  // namespace tinygrad::detail
