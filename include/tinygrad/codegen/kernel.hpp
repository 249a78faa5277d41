#pragma once
// What each opt does, as one row per OptOp of the opt table: its name, its check (against a Kernel and its device:
// an illegal opt throws KernelOptError with the reason) and its apply (the graph rewrite of the kernel AST). The
// Kernel holds an AST, the opts applied so far and the graph they produced; the heuristics, BEAM and tests drive it.
//
// UPCAST duplicates an output axis into registers, VECTOR turns one into vector lanes, UNROLL duplicates a reduce axis,
// THREAD splits an axis over CPU cores, LOCAL puts part of an output axis on a GPU workgroup's threads, GROUP part of a
// reduce axis (the threads combine their partial results through workgroup memory: codegen.hpp's group_reduces pass),
// GROUPTOP the same with the group taking the outer part (each thread a contiguous chunk). PADTO rounds an axis up to a
// multiple (past the real size loads read 0 and stores are skipped; on a device without workgroups a padded loop axis
// recomputes its last index there instead, its stores skipped), SWAP exchanges the order of two loop axes, NOLOCALS
// promises no LOCAL/GROUP opts (a GPU kernel with workgroups of one thread). KBLOCK blocks a reduce axis for the caches
// (a CPU opt): its outer part becomes a loop outside all others, the stores keep the partial results in the output and
// each block adds to them, so a block of the reused operand stays in L1/L2 while every output tile passes over it
// (GotoBLAS's K blocking). TC multiplies on tensor cores, TILE stages a float32 GEMM's tiles in workgroup memory
// (gemm.hpp), MERGE joins two axes of one kind into one (an implicit GEMM's rows or K, for TC and TILE).
#include "gemm.hpp"

namespace tinygrad::detail {

// the range an opt names: the range, its size, kind and dtype
struct OptAxis { UOpRef r; int64_t n; AxisType t; DType dt; };
// the amounts VECTOR takes on a device of `lanes` lanes: a whole register, half of one, and a quarter down to 4 lanes
// (AVX-512's 16 floats on a 20-wide conv output: 4)
inline std::vector<int64_t> vector_amounts(int64_t lanes) {
  std::vector<int64_t> a;
  for (int64_t l = lanes; l > 1 && (l * 2 >= lanes || l >= 4); l /= 2) a.push_back(l);
  return a;
}
inline OptAxis opt_axis(const UOpRef& sink, int64_t id) {
  UOpRef r = find_range(sink, id);
  return {r, r->range_end(), axis_type(r), r->dtype};
}

// KBLOCK's precondition: every store's value holds exactly one REDUCE, over r (its own, as after UPCAST), of the
// store's dtype, and no load reads a stored buffer. Returns the reduce of each store, or why it cannot be blocked.
inline std::variant<std::vector<UOpRef>, std::string> kblock_reduces(const UOpRef& sink, const UOpRef& r) {
  std::vector<UOpRef> reds;
  std::unordered_set<const UOp*> outs, seen;
  for (auto& st : sink->src) outs.insert(st->src[0]->src[0].get());
  for (auto& u : toposort(sink))
    if (u->op == Ops::LOAD && outs.count(u->src[0]->src[0].get())) return std::string("a load reads a buffer the kernel writes");
  for (auto& st : sink->src) {
    UOpRef red;
    for (auto& x : toposort(st->src[1]))
      if (x->op == Ops::REDUCE) {
        if (red) return std::string("a store's value holds two reduces");
        red = x;
      }
    if (!red || std::find(red->src.begin() + 1, red->src.end(), r) == red->src.end()) return std::string("a store does not reduce over the axis");
    if (red->dtype != st->src[1]->dtype || red->vcount != 1)
      return std::string("a store's dtype differs from its reduce's (partial results are kept in the output)");
    if (!seen.insert(red.get()).second) return std::string("two stores share one reduce");
    reds.push_back(red);
  }
  return reds;
}

// ---- apply: one opt's rewrite of a kernel AST (a SINK of STOREs). clamp_loops: PADTO's loop axes clamp (a device
// without workgroups). Each checks what its rewrite needs (apply_opt may run without a Kernel's check)

inline UOpRef apply_nolocals(const UOpRef& sink, const Opt&, bool) { return sink; }  // a promise Kernel::check keeps

// the two ranges exchange ids: loops open (and gpudims assigns dims) in id order
inline UOpRef apply_swap(const UOpRef& sink, const Opt& o, bool) {
  auto [r, n, t, dt] = opt_axis(sink, o.axis);
  UOpRef r2 = find_range(sink, o.amt);
  if (r2 == r || t != AxisType::LOOP || axis_type(r2) != AxisType::LOOP) throw KernelOptError(o.str() + ": needs two loop axes");
  auto tight = [](const UOpRef& x) { return x->src.empty() ? nullptr : x->src[0]; };  // a symbolic dim's loop keeps its end
  return substitute(sink, {{r.get(), make_range(n, o.amt, t, dt, tight(r))}, {r2.get(), make_range(r2->range_end(), o.axis, t, dt, tight(r2))}});
}

// the two ranges become one of their sizes' product (the first's id): r = R / n2, r2 = R % n2; a reduce over both
// runs over R
inline UOpRef apply_merge(const UOpRef& sink, const Opt& o, bool) {
  auto [r, n, t, dt] = opt_axis(sink, o.axis);
  UOpRef r2 = find_range(sink, o.amt);
  if (r2 == r || t != axis_type(r2) || (t != AxisType::LOOP && t != AxisType::REDUCE))
    throw KernelOptError(o.str() + ": needs two loop or two reduce axes");
  int64_t n2 = r2->range_end();
  // r a symbolic dim's (its extent e), r2 a concrete one: the merged loop keeps a tight end, e * n2
  auto R = r->src.empty() || !r2->src.empty() ? make_range(n * n2, o.axis, t, dt) : make_range(n * n2, o.axis, t, dt, r->src[0] * n2);
  std::unordered_map<const UOp*, UOpRef> m{{r.get(), idiv(R, n2)}, {r2.get(), mod(R, n2)}};
  for (auto& u : toposort(sink)) {
    if (m.count(u.get())) continue;
    std::vector<UOpRef> src;
    for (size_t i = 0; i < u->src.size(); i++) {
      const UOpRef& x = u->src[i];
      bool closes = u->op == Ops::REDUCE && i > 0;  // a reduce's ranges
      if (closes && x == r2) continue;
      src.push_back(closes && x == r ? R : m.at(x.get()));
    }
    m[u.get()] = src == u->src ? u : make_uop(u->op, u->dtype, std::move(src), u->arg, u->vcount);
  }
  return m.at(sink.get());
}

// an INDEX's sources with `valid` added to its mask
inline std::vector<UOpRef> masked(std::vector<UOpRef> isrc, const UOpRef& valid) {
  if (isrc.size() > 2) isrc[2] = logical_and(isrc[2], valid);
  else isrc.push_back(valid);
  return isrc;
}
// PADTO on a CPU's loop axis: the axis computes its last index again past the end, and only its stores are masked:
// each load reads an address the kernel reads anyway, with no mask in an inner loop (a masked load of A per row of a
// matmul's register tile ran 1.9x slower), and every value is one the kernel computes (no overflow or division by
// zero of its own). Its loads then walk the axis with no fixed stride (no VECTOR on it)
inline UOpRef pad_clamped(const UOpRef& sink, const UOpRef& r, const UOpRef& nr, const UOpRef& valid) {
  int64_t n = r->range_end();
  UOpRef clamped = sub_range(sink, r, alu(Ops::WHERE, {valid, nr, const_int(r->dtype, n - 1)}));
  auto dep = depends_on(sink, r);
  std::vector<UOpRef> stores;
  for (size_t i = 0; i < sink->src.size(); i++) {
    const UOpRef &st = sink->src[i], &cst = clamped->src[i];
    if (!dep.count(st.get())) { stores.push_back(cst); continue; }
    std::vector<UOpRef> src = cst->src;
    src[0] = make_uop(Ops::INDEX, st->src[0]->dtype, masked(sub_range(st->src[0], r, nr)->src, valid), st->src[0]->arg, st->src[0]->vcount);
    stores.push_back(make_uop(st->op, st->dtype, std::move(src), st->arg, st->vcount));
  }
  return make_uop(Ops::SINK, sink->dtype, std::move(stores), sink->arg, sink->vcount);
}
// PADTO elsewhere: every load whose index depends on the grown range reads 0 past the real size, every store that
// depends on it is skipped there (the gate also keeps the address of any access from being dereferenced), and a
// reduce over it adds its identity there (a GPU's TC stages its tiles from the masks)
inline UOpRef pad_masked(const UOpRef& sink, const UOpRef& r, const UOpRef& nr, const UOpRef& valid) {
  UOpRef grown = sub_range(sink, r, nr);
  auto dep = depends_on(grown, nr);
  std::unordered_set<const UOp*> gate;
  for (auto& u : toposort(grown))
    if ((u->op == Ops::LOAD && dep.count(u->src[0].get())) || (u->op == Ops::STORE && dep.count(u.get()))) gate.insert(u->src[0].get());
  std::unordered_map<const UOp*, UOpRef> m;
  for (auto& u : toposort(grown)) {
    std::vector<UOpRef> src;
    for (auto& x : u->src) src.push_back(m.at(x.get()));
    if (gate.count(u.get())) src = masked(std::move(src), valid);
    // a reduce over the padded range adds its identity there, whatever its terms are (0 * inf of a term would not)
    if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), nr) != u->src.end()) {
      src[0] = alu(Ops::WHERE, {valid, src[0], const_uop(u->dtype, reduce_identity(u->reduce_op(), u->dtype))});
    }
    m[u.get()] = src == u->src ? u : make_uop(u->op, u->dtype, std::move(src), u->arg, u->vcount);
  }
  return m.at(grown.get());
}
inline UOpRef apply_padto(const UOpRef& sink, const Opt& o, bool clamp_loops) {
  auto [r, n, t, dt] = opt_axis(sink, o.axis);
  if (t != AxisType::LOOP && t != AxisType::REDUCE) throw KernelOptError(o.str() + ": needs a loop or reduce axis");
  if (o.amt <= 1 || o.amt - n >= n) throw KernelOptError(o.str() + ": the amount must be at least 2 and under twice the axis");
  auto nr = make_range((n + o.amt - 1) / o.amt * o.amt, o.axis, t, dt);
  UOpRef valid = lt(nr, n);
  return clamp_loops && t == AxisType::LOOP ? pad_clamped(sink, r, nr, valid) : pad_masked(sink, r, nr, valid);
}

inline UOpRef apply_tile(const UOpRef& sink, const Opt& o, bool) {
  UOpRef r = find_range(sink, o.axis);
  auto found = tc_match(sink, r, false, true);
  if (auto* why = std::get_if<std::string>(&found)) throw KernelOptError(o.str() + ": " + *why);
  return simt_stage(sink, r, std::get<TcMatch>(found), simt_tiles[o.amt]);
}
inline UOpRef apply_tc(const UOpRef& sink, const Opt& o, bool) {
  UOpRef r = find_range(sink, o.axis);
  auto found = tc_match(sink, r);
  if (auto* why = std::get_if<std::string>(&found)) throw KernelOptError(o.str() + ": " + *why);
  auto& tm = std::get<TcMatch>(found);
  return o.amt > 0 ? tc_stage(sink, r, tm, tc_tiles[o.amt]) : tc_warp(sink, r, tm);
}

// the split opts (UPCAST, VECTOR, UNROLL, THREAD, LOCAL, GROUP, GROUPTOP, KBLOCK): the amount divides the axis
inline OptAxis split_axis(const UOpRef& sink, const Opt& o) {
  OptAxis a = opt_axis(sink, o.axis);
  if (o.amt <= 1 || a.n % o.amt != 0) throw KernelOptError(cat(o.str(), " does not divide axis of size ", a.n));
  return a;
}
// ... and (all but KBLOCK) the axis is of the opt's kind
inline OptAxis split_kind_axis(const UOpRef& sink, const Opt& o) {
  OptAxis a = split_axis(sink, o);
  bool on_reduce = o.op == OptOp::UNROLL || o.op == OptOp::GROUP || o.op == OptOp::GROUPTOP;
  if (o.op != OptOp::VECTOR && on_reduce != (a.t == AxisType::REDUCE)) throw KernelOptError(o.str() + ": wrong axis kind");
  if ((o.op == OptOp::THREAD || o.op == OptOp::LOCAL) && a.t != AxisType::LOOP) throw KernelOptError(o.str() + ": needs a loop axis");
  return a;
}
// a symbolic dim's range r split so that its inner part p is a loop with an end of its own (THREAD's chunks, KBLOCK's
// blocks): the gate r < e of its values (the store's, the reduce's mask) becomes p < p's end, which says the same (p's
// end is what is left of e) and is a tight loop's gate, dropped where p stays whole (tight_loops)
inline UOpRef regate(const UOpRef& g, const UOpRef& r, const UOpRef& p) {
  return substitute(g, {{alu(Ops::CMPLT, {r, r->src[0]}).get(), alu(Ops::CMPLT, {p, p->src[0]})}});
}
inline UOpRef min_of(const UOpRef& a, const UOpRef& b) { return -alu(Ops::MAX, {-a, -b}); }
// the outer part of a split axis (it keeps the range's id), or 0 where the split takes the whole axis. A symbolic dim's
// range (its extent e in src[0]) keeps a tight loop: the outer part ends at ceil(e / amt), the lanes past e gated
inline UOpRef outer_part(const OptAxis& a, const Opt& o) {
  if (a.n / o.amt == 1) return const_int(a.dt, 0);
  if (a.r->src.empty()) return make_range(a.n / o.amt, o.axis, a.t, a.dt);
  return make_range(a.n / o.amt, o.axis, a.t, a.dt, ceil_div(a.r->src[0], o.amt));
}

// the outer part becomes the core id; the inner keeps the range's id
inline UOpRef apply_thread(const UOpRef& sink, const Opt& o, bool) {
  auto [r, n, t, dt] = split_kind_axis(sink, o);
  auto core = make_uop(Ops::SPECIAL, dt, {}, std::vector<int64_t>{o.amt, 0});
  if (r->src.empty()) return sub_range(sink, r, core * (n / o.amt) + make_range(n / o.amt, o.axis, t, dt));
  // a symbolic dim: its extent e in chunks of ceil(e / cores), each core's loop to the end of its chunk or of e
  UOpRef e = r->src[0], chunk = ceil_div(e, o.amt);
  UOpRef in = make_range(n / o.amt, o.axis, t, dt, alu(Ops::MAX, {min_of(e - core * chunk, chunk), const_int(dt, 0)}));
  return sub_range(regate(sink, r, in), r, core * chunk + in);
}
// the inner part becomes a workgroup axis (codegen's gpudims maps it to a local id)
inline UOpRef apply_local(const UOpRef& sink, const Opt& o, bool) {
  OptAxis a = split_kind_axis(sink, o);
  return sub_range(sink, a.r, outer_part(a, o) * o.amt + make_range(o.amt, next_range_id(sink), AxisType::LOCAL, a.dt));
}
inline UOpRef apply_upcast(const UOpRef& sink, const Opt& o, bool) {
  OptAxis a = split_kind_axis(sink, o);
  auto outer = outer_part(a, o);
  std::vector<UOpRef> stores;
  for (auto& st : sink->src)
    for (int64_t u = 0; u < o.amt; u++) stores.push_back(sub_range(st, a.r, outer * o.amt + u));
  return make_uop(Ops::SINK, DType::Bool, stores);
}
// a reduce axis split: UNROLL: each REDUCE over r becomes a REDUCE over the outer range of the combined copies;
// GROUP: a REDUCE over the outer range and the group range (inner, so neighbouring threads read neighbours);
// GROUPTOP: the group range is the outer part (each thread reduces a contiguous chunk of n / amt);
// VECTOR on a reduce axis: a REDUCE over the outer range and the lane (the expander keeps one accumulator lane per
// lane and combines the lanes after the loop: vector loads of every operand that walks the reduce contiguously)
inline UOpRef split_reduce(const UOpRef& sink, const Opt& o, const OptAxis& a) {
  int64_t nid = next_range_id(sink), n = a.n;
  bool group_op = o.op == OptOp::GROUP || o.op == OptOp::GROUPTOP, lanes_op = o.op == OptOp::VECTOR;
  auto outer = outer_part(a, o), lane = make_uop(Ops::LANE, a.dt, {}, std::vector<int64_t>{o.amt, nid});
  auto group = make_range(o.amt, nid, AxisType::GROUP, a.dt);
  std::unordered_map<const UOp*, UOpRef> sub;
  for (auto& u : toposort(sink)) {
    if (u->op != Ops::REDUCE || std::find(u->src.begin() + 1, u->src.end(), a.r) == u->src.end()) continue;
    UOpRef acc;
    if (o.op == OptOp::GROUP) acc = sub_range(u->src[0], a.r, outer * o.amt + group);
    else if (lanes_op) acc = sub_range(u->src[0], a.r, outer * o.amt + lane);
    else if (o.op == OptOp::GROUPTOP) acc = sub_range(u->src[0], a.r, group * (n / o.amt) + outer);
    else for (int64_t k = 0; k < o.amt; k++) {
      auto v = sub_range(u->src[0], a.r, outer * o.amt + k);
      acc = acc ? alu(u->reduce_op(), {acc, v}) : v;
    }
    std::vector<UOpRef> src{acc};
    for (size_t i = 1; i < u->src.size(); i++) if (u->src[i] != a.r) src.push_back(u->src[i]);
    if (outer->op == Ops::RANGE) src.push_back(outer);
    if (group_op) src.push_back(group);
    if (lanes_op) src.push_back(lane);
    sub[u.get()] = src.size() == 1 ? acc : make_uop(Ops::REDUCE, u->dtype, src, u->arg, u->vcount);
  }
  return substitute(sink, sub);
}
inline UOpRef apply_reduce_split(const UOpRef& sink, const Opt& o, bool) { return split_reduce(sink, o, split_kind_axis(sink, o)); }
// VECTOR on an output axis: its inner part becomes the lanes of one vector value
inline UOpRef apply_vector(const UOpRef& sink, const Opt& o, bool) {
  OptAxis a = split_kind_axis(sink, o);
  if (a.t == AxisType::REDUCE) return split_reduce(sink, o, a);
  auto lane = make_uop(Ops::LANE, a.dt, {}, std::vector<int64_t>{o.amt, next_range_id(sink)});
  return sub_range(sink, a.r, outer_part(a, o) * o.amt + lane);
}
// r -> blk * amt + r' (r' keeps the id); each store's reduce s over r becomes, at block blk:
//   part = blk == 0 ? s' : out[idx] op s'        (s' reduces the block; out[idx] is read only past block 0)
// and the store writes part, or its value with part for s in the last block (a bias, an activation)
inline UOpRef apply_kblock(const UOpRef& sink, const Opt& o, bool) {
  auto [r, n, t, dt] = split_axis(sink, o);
  if (t != AxisType::REDUCE) throw KernelOptError(o.str() + ": needs a reduce axis");
  auto found = kblock_reduces(sink, r);
  if (auto* why = std::get_if<std::string>(&found)) throw KernelOptError(o.str() + ": " + *why);
  auto& reds = std::get<std::vector<UOpRef>>(found);
  // a symbolic dim (its extent e in src[0]): ceil(e / amt) blocks, the last one the block of e - 1
  bool sym = !r->src.empty();
  UOpRef nblk = sym ? ceil_div(r->src[0], o.amt) : const_int(dt, n / o.amt);
  auto blk = make_range(n / o.amt, next_range_id(sink), AxisType::KBLOCK, dt, sym ? nblk : nullptr);
  auto inner = make_range(o.amt, o.axis, t, dt, sym ? min_of(r->src[0] - blk * o.amt, const_int(dt, o.amt)) : nullptr);  // the last block's rest
  auto first = alu(Ops::CMPEQ, {blk, const_int(dt, 0)}), later = alu(Ops::CMPNE, {blk, const_int(dt, 0)});
  auto last = alu(Ops::CMPEQ, {blk, nblk - 1});
  std::vector<UOpRef> stores;
  for (size_t i = 0; i < reds.size(); i++) {
    const UOpRef &st = sink->src[i], &red = reds[i], &idx = st->src[0];
    std::vector<UOpRef> src{sub_range(sym ? regate(red->src[0], r, inner) : red->src[0], r, blk * o.amt + inner)};
    for (size_t j = 1; j < red->src.size(); j++) src.push_back(red->src[j] == r ? inner : red->src[j]);
    auto part = make_uop(Ops::REDUCE, red->dtype, src, red->arg);
    auto prev = make_uop(Ops::LOAD, st->src[1]->dtype, {make_uop(Ops::INDEX, idx->dtype, masked(idx->src, later), idx->arg)});
    // the gated load reads 0 in block 0: a sum needs no select there
    part = red->reduce_op() == Ops::ADD ? prev + part : alu(Ops::WHERE, {first, part, alu(red->reduce_op(), {prev, part})});
    auto value = substitute(st->src[1], {{red.get(), part}});
    stores.push_back(make_uop(Ops::STORE, DType::Bool, {idx, value == part ? part : alu(Ops::WHERE, {last, value, part})}));
  }
  return make_uop(Ops::SINK, DType::Bool, stores);
}
struct OptCheck;

// One kernel as a point in the space of opts: its AST, the opts applied so far and the graph they produced.
// apply() checks an opt against the kernel and the device (an illegal one throws KernelOptError with the reason
// and leaves the kernel as it was); valid_opts() lists every legal next opt. The heuristics and BEAM drive this.
class Kernel {
 public:
  // NOTE: register expansion (UPCAST x UNROLL x VECTOR) is capped: past it, code size grows faster than speed
  static constexpr int64_t max_expand = 256;
  static constexpr int64_t max_amount = int64_t(1) << 48;  // any opt's amount (an axis size, an id, a tile shape)

  Kernel(UOpRef ast, const Renderer& ren) : ast_(ast), sink_(std::move(ast)), ren_(&ren) {}
  const UOpRef& ast() const { return ast_; }
  const UOpRef& sink() const { return sink_; }
  const std::vector<Opt>& applied() const { return opts_; }
  const Renderer& renderer() const { return *ren_; }
  // the ranges left, by id, with their kinds (upcast and unrolled parts are no ranges: see applied())
  std::vector<UOpRef> ranges() const { return detail::ranges_of(sink_); }
  // 0: the index of every load/store does not depend on range r, 1: walks it contiguously, 2: strided
  std::vector<int> stride_classes(const UOpRef& r) const {
    std::vector<int> c;
    for (auto& u : toposort(sink_)) if (u->op == Ops::LOAD || u->op == Ops::STORE) c.push_back(detail::stride_class(u->src[0]->src[1], r));
    return c;
  }
  int64_t expand() const {
    int64_t e = 1;
    for (auto& o : opts_)
      if (o.op == OptOp::UPCAST || o.op == OptOp::UNROLL || o.op == OptOp::VECTOR) e *= o.amt;
    return e;
  }
  // the threads of a workgroup: thread ranges that share one id (thread_classes) count once
  int64_t workgroup() const { return workgroup(sink_, opts_); }
  static int64_t workgroup(const UOpRef& sink, const std::vector<Opt>& opts) {
    int64_t w = 1, locals = 0;
    for (auto& o : opts) {
      if (uses_locals(o.op)) w *= o.amt, locals++;
      else if (o.op == OptOp::TC) w *= 32 * (o.amt ? detail::tc_tiles[o.amt].wm * detail::tc_tiles[o.amt].wn : 1);
      else if (o.op == OptOp::TILE) w *= detail::simt_tiles[o.amt].ty * detail::simt_tiles[o.amt].tx;
    }
    if (locals > 1)
      for (auto& c : detail::thread_classes(sink)) for (size_t i = 1; i < c.size(); i++) w /= c[i]->range_end();
    return w;
  }
  static bool uses_locals(OptOp op) { return op == OptOp::LOCAL || op == OptOp::GROUP || op == OptOp::GROUPTOP; }

  Kernel& apply(const Opt& o);
  // every opt that apply() accepts now; amounts tried: the device's vector widths, tile and workgroup sizes
  std::vector<Opt> valid_opts() const {
    std::vector<Opt> cand;
    auto add = [&](OptOp op, int64_t axis, std::initializer_list<int64_t> amts) { for (auto a : amts) cand.push_back({op, axis, a}); };
    DType out_dt = sink_->src.empty() ? DType::Float32 : sink_->src[0]->src[1]->dtype;
    int64_t lanes = ren_->vector_lanes(out_dt);
    auto rs = ranges();
    for (auto& r : rs) {
      int64_t id = r->range_id();
      auto t = detail::axis_type(r);
      if (t == AxisType::REDUCE) {
        add(OptOp::UNROLL, id, {2, 3, 4, 8});
        for (int64_t a : detail::vector_amounts(lanes)) cand.push_back({OptOp::VECTOR, id, a});
        if (ren_->has_local) add(OptOp::GROUP, id, {8, 16, 32, 64, 128, 256});
        if (ren_->has_local) add(OptOp::GROUPTOP, id, {8, 16, 32, 64, 128, 256});
        if (ren_->tensor_cores) for (int64_t a = 0; a < int64_t(std::size(detail::tc_tiles)); a++) cand.push_back({OptOp::TC, id, a});
        if (ren_->tensor_cores) for (int64_t a = 1; a < int64_t(std::size(detail::simt_tiles)); a++) cand.push_back({OptOp::TILE, id, a});
        else add(OptOp::KBLOCK, id, {64, 128, 256, 512});
      } else if (t == AxisType::LOOP) {
        add(OptOp::UPCAST, id, {2, 3, 4, 5, 8});
        for (int64_t a : detail::vector_amounts(lanes)) cand.push_back({OptOp::VECTOR, id, a});
        if (ren_->has_local) add(OptOp::LOCAL, id, {2, 4, 8, 16, 32});
        else if (ren_->threads > 1) add(OptOp::THREAD, id, {ren_->threads});
        for (auto& r2 : rs) if (r2->range_id() > id) cand.push_back({OptOp::SWAP, id, r2->range_id()});
      }
      // the next axis of the same type, merged into this one (an implicit GEMM's rows or K: TILE and TC take one of each)
      if (t == AxisType::LOOP || t == AxisType::REDUCE)
        for (auto& r2 : rs) if (r2->range_id() > id && detail::axis_type(r2) == t) { cand.push_back({OptOp::MERGE, id, r2->range_id()}); break; }
      // odd sizes: round up to full vectors, tiles or workgroups (check() drops sizes that are already multiples)
      if (t == AxisType::LOOP || t == AxisType::REDUCE) add(OptOp::PADTO, id, {4, 8, 16, 32, lanes});
    }
    if (ren_->has_local) cand.push_back({OptOp::NOLOCALS, -1, 0});
    std::vector<Opt> ok;
    const int64_t wg = workgroup();
    for (auto& o : cand) {
      if (std::find(ok.begin(), ok.end(), o) != ok.end()) continue;
      try {
        check(o);
        if (uses_locals(o.op) && wg * o.amt > ren_->max_threads) Kernel(*this).apply(o);  // a shared thread id
        ok.push_back(o);
      } catch (const KernelOptError&) {}
    }
    return ok;
  }

 private:
  void check(const Opt& o) const;
  UOpRef ast_, sink_;
  const Renderer* ren_;
  std::vector<Opt> opts_;
};

// ---- check: whether an opt is legal on a kernel and its device; fail() throws the reason

// what a check reads: the kernel, the opt, the kernel's ranges
struct OptCheck {
  const Kernel& k;
  const Opt& o;
  std::vector<UOpRef> rs;
  [[noreturn]] void fail(const std::string& why) const {
    std::string s;
    for (auto& r : rs) s += cat(s.empty() ? "" : " ", r->range_id(), ":", r->range_end(), axis_type(r) == AxisType::REDUCE ? "r" : "");
    throw KernelOptError(cat("tinygrad::Kernel: ", o.str(), " on [", s, "]: ", why));
  }
  int count(OptOp op) const { return int(std::count_if(k.applied().begin(), k.applied().end(), [&](auto& p) { return p.op == op; })); }
  UOpRef range(int64_t id) const { for (auto& x : rs) if (x->range_id() == id) return x; return UOpRef(); }
  UOpRef axis() const { if (UOpRef r = range(o.axis)) return r; fail("no such axis"); }
};

inline void check_nolocals(const OptCheck& c) {
  if (!c.k.renderer().has_local) c.fail("the device has no workgroups");
  if (c.count(OptOp::NOLOCALS)) c.fail("NOLOCALS is already applied");
  if (std::any_of(c.k.applied().begin(), c.k.applied().end(), [](auto& p) { return Kernel::uses_locals(p.op); }))
    c.fail("the kernel already uses LOCAL or GROUP opts");
}
inline void check_swap(const OptCheck& c) {
  UOpRef r = c.axis(), r2 = c.range(c.o.amt);
  if (!r2) c.fail("no axis to swap with");
  if (r2 == r) c.fail("SWAP needs two different axes");
  if (axis_type(r) != AxisType::LOOP || axis_type(r2) != AxisType::LOOP) c.fail("SWAP needs two loop axes");
}
inline void check_merge(const OptCheck& c) {
  UOpRef r = c.axis(), r2 = c.range(c.o.amt);
  AxisType t = axis_type(r);
  if (!r2) c.fail("no axis to merge with");
  if (r2 == r) c.fail("MERGE needs two different axes");
  if (std::any_of(c.k.applied().begin(), c.k.applied().end(), [](auto& p) { return p.op != OptOp::MERGE; }))
    c.fail("MERGE comes first (after MERGE only)");
  if (t != axis_type(r2) || (t != AxisType::LOOP && t != AxisType::REDUCE)) c.fail("MERGE needs two loop axes or two reduce axes");
  int64_t size = r->range_end() * r2->range_end();
  if (r->dtype == DType::Int32 && size > (int64_t(1) << 31) - 1) c.fail(cat("the merged axis's size ", size, " is over int32's range"));
  for (auto& u : toposort(c.k.sink()))
    if (u->op == Ops::REDUCE &&
        (std::find(u->src.begin() + 1, u->src.end(), r) == u->src.end()) != (std::find(u->src.begin() + 1, u->src.end(), r2) == u->src.end()))
      c.fail("a reduce runs over one of the two axes only");
}
inline void check_padto(const OptCheck& c) {
  UOpRef r = c.axis();
  int64_t n = r->range_end(), amt = c.o.amt;
  if (axis_type(r) != AxisType::LOOP && axis_type(r) != AxisType::REDUCE) c.fail("PADTO needs a loop or reduce axis");
  // (a split's last group is gated already; padded, a symbolic dim's loop would run to its bound, not its extent)
  if (!r->src.empty()) c.fail("PADTO does not take a symbolic dim's axis");
  if (amt <= 1) c.fail("the amount must be at least 2");
  if (amt - n >= n) c.fail(cat("padding ", n, " to a multiple of ", amt, " would more than double the axis"));
  if (n % amt == 0) c.fail(cat("the axis's size ", n, " is already a multiple"));
  int64_t padded = (n + amt - 1) / amt * amt;
  if (padded >= 2 * n) c.fail(cat("padding ", n, " to ", padded, " would more than double the axis"));
}
// TC's and TILE's common preconditions: the device, the opt first (after MERGE and PADTO only), a reduce axis
inline UOpRef gemm_axis(const OptCheck& c) {
  bool tile = c.o.op == OptOp::TILE;
  const char* name = tile ? "TILE" : "TC";
  // NOTE: TILE's copies are cp.async, as the staged TC tiles': NVIDIA sm_80 on, as tensor cores here
  if (!c.k.renderer().tensor_cores) c.fail(tile ? "TILE needs asynchronous copies (CUDA sm_80 on)" : "the device has no tensor cores");
  if (std::any_of(c.k.applied().begin(), c.k.applied().end(), [](auto& p) { return p.op != OptOp::PADTO && p.op != OptOp::MERGE; }))
    c.fail(cat(name, " comes first (after MERGE and PADTO only)"));
  UOpRef r = c.range(c.o.axis);
  if (!r || axis_type(r) != AxisType::REDUCE) c.fail(cat(name, " needs a reduce axis"));
  return r;
}
inline void check_tile(const OptCheck& c) {
  UOpRef r = gemm_axis(c);
  if (c.o.amt < 1 || c.o.amt >= int64_t(std::size(simt_tiles))) c.fail(cat("TILE's amount is a tile shape, 1 to ", std::size(simt_tiles) - 1));
  auto found = tc_match(c.k.sink(), r, false, true);
  if (auto* why = std::get_if<std::string>(&found)) c.fail(*why);
  if (auto why = simt_tile_fits(std::get<TcMatch>(found), r, simt_tiles[c.o.amt]); !why.empty()) c.fail(why);
}
inline void check_tc(const OptCheck& c) {
  UOpRef r = gemm_axis(c);
  if (c.o.amt < 0 || c.o.amt >= int64_t(std::size(tc_tiles))) c.fail(cat("TC's amount is a tile shape, 0 to ", std::size(tc_tiles) - 1));
  auto found = tc_match(c.k.sink(), r);
  if (auto* why = std::get_if<std::string>(&found)) c.fail(*why);
  if (c.o.amt == 0) return;
  if (tc_tiles[c.o.amt].wg && !c.k.renderer().wgmma) c.fail("a wgmma tile needs Hopper's warpgroup MMA (CUDA sm_90a)");
  if (auto why = tc_tile_fits(std::get<TcMatch>(found), r, tc_tiles[c.o.amt]); !why.empty()) c.fail(why);
}
// the split opts: the amount divides the axis
inline UOpRef split_check(const OptCheck& c) {
  UOpRef r = c.axis();
  if (c.o.amt <= 1 || r->range_end() % c.o.amt != 0) c.fail(cat("the amount does not divide the axis's size ", r->range_end()));
  return r;
}
// ... and (all but KBLOCK) the axis is of the opt's kind
inline UOpRef split_kind_check(const OptCheck& c) {
  UOpRef r = split_check(c);
  bool reduce = axis_type(r) == AxisType::REDUCE, on_reduce = c.o.op == OptOp::UNROLL || c.o.op == OptOp::GROUP || c.o.op == OptOp::GROUPTOP;
  if (c.o.op != OptOp::VECTOR && on_reduce != reduce)
    c.fail(reduce ? "a reduce axis takes UNROLL, VECTOR or GROUP (or GROUPTOP)" : "UNROLL and GROUP need a reduce axis");
  if (!reduce && axis_type(r) != AxisType::LOOP) c.fail("the axis is no longer a loop");
  return r;
}
inline void check_expand(const OptCheck& c) {
  if (c.k.expand() * c.o.amt > Kernel::max_expand) c.fail(cat("the register expansion ", c.k.expand() * c.o.amt, " is over ", Kernel::max_expand));
}
inline void check_upcast(const OptCheck& c) { split_kind_check(c), check_expand(c); }  // UPCAST and UNROLL
inline void check_thread(const OptCheck& c) {
  split_kind_check(c);
  const Renderer& ren = c.k.renderer();
  if (ren.has_local || ren.threads <= 1) c.fail("the device has no CPU threads");
  if (c.o.amt > ren.threads) c.fail(cat("more threads than the device's ", ren.threads));
  if (c.count(OptOp::THREAD)) c.fail("the kernel is already split over threads");
}
inline void check_locals(const OptCheck& c) {  // LOCAL, GROUP and GROUPTOP
  split_kind_check(c);
  const Renderer& ren = c.k.renderer();
  if (!ren.has_local) c.fail("the device has no workgroups");
  if (c.count(OptOp::NOLOCALS)) c.fail("NOLOCALS was applied: the kernel uses no workgroups");
  // NOTE: where the new range may share a thread id with one of its size, Kernel::apply counts after the split
  auto rs = c.k.ranges();
  bool may_share = std::any_of(rs.begin(), rs.end(), [&](auto& r) {
    return (axis_type(r) == AxisType::LOCAL || axis_type(r) == AxisType::GROUP) && r->range_end() == c.o.amt;
  });
  if (int64_t w = c.k.workgroup() * c.o.amt; w > ren.max_threads && !may_share)
    c.fail(cat("a workgroup of ", w, " threads is over the device's ", ren.max_threads));
}
// the lanes hold outputs (a store walks the axis) or, on a reduce axis, accumulators (CPU only: a GPU thread's GROUP
// shares would need a slot per lane)
inline void check_vector(const OptCheck& c) {
  UOpRef r = split_kind_check(c);
  if (c.count(OptOp::VECTOR)) c.fail("the kernel already has vector lanes");
  const UOpRef& sink = c.k.sink();
  DType dt = sink->src[0]->src[1]->dtype;
  auto over_r = [&](const UOpRef& u) { return u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), r) != u->src.end(); };
  if (axis_type(r) == AxisType::REDUCE) {
    if (c.k.renderer().has_local) c.fail("a GPU kernel takes vector lanes on an output axis");
    auto topo = toposort(sink);
    auto red = std::find_if(topo.begin(), topo.end(), over_r);
    if (red == topo.end()) c.fail("no reduce runs over the axis");
    dt = (*red)->dtype;
    for (auto& u : topo) if (over_r(u) && u->dtype != dt) c.fail("the reduces over the axis have different dtypes");
  } else {
    for (auto& st : sink->src) {
      if (st->src[1]->dtype != dt) c.fail("the stores have different dtypes");
      // (on the CPU a store may: one per lane, after a reduce's loop)
      if (stride_class(st->src[0]->src[1], r) != 1 && c.k.renderer().has_local) c.fail("a store does not walk the axis contiguously");
    }
  }
  int64_t lanes = c.k.renderer().vector_lanes(dt);
  if (auto a = vector_amounts(lanes); std::find(a.begin(), a.end(), c.o.amt) == a.end())
    c.fail(cat("the device's vectors of ", to_string(dt), " have ", lanes, " lanes"));
  // NOTE: on the CPU, narrower integer loads (a quantized weight's bytes) may be gathered per lane, and loads outside
  // the reduce's loop (a conv's epilogue), once per output
  bool cpu = !c.k.renderer().has_local;
  for (auto& u : toposort(sink))
    if (u->op == Ops::LOAD && (stride_class(u->src[0]->src[1], r) == 2 || itemsize(u->src[0]->dtype) != itemsize(dt)) &&
        !(cpu && is_int(u->src[0]->dtype) && itemsize(u->src[0]->dtype) < itemsize(dt)) && !(cpu && !in_reduce_loop(u->src[0])))
      c.fail("a load walks the axis with a stride, or has another element size");
  check_expand(c);
}
inline void check_kblock(const OptCheck& c) {
  UOpRef r = split_check(c);
  if (c.k.renderer().has_local) c.fail("KBLOCK blocks for CPU caches; a GPU kernel uses GROUP");
  if (axis_type(r) != AxisType::REDUCE) c.fail("KBLOCK needs a reduce axis");
  if (c.o.amt == r->range_end()) c.fail("the block is the whole axis");
  if (c.count(OptOp::KBLOCK)) c.fail("the kernel already has a KBLOCK");
  auto found = kblock_reduces(c.k.sink(), r);
  if (auto* why = std::get_if<std::string>(&found)) c.fail(*why);
}

// ---- the opt table: one row per OptOp, in the enum's order. A new OptOp is a row here (and its tests)
struct OptRow {
  OptOp op;
  const char* name;
  void (*check)(const OptCheck&);
  UOpRef (*apply)(const UOpRef& sink, const Opt&, bool clamp_loops);
};
inline constexpr OptRow opt_table[] = {
    {OptOp::UPCAST, "UPCAST", check_upcast, apply_upcast},
    {OptOp::VECTOR, "VECTOR", check_vector, apply_vector},
    {OptOp::UNROLL, "UNROLL", check_upcast, apply_reduce_split},
    {OptOp::THREAD, "THREAD", check_thread, apply_thread},
    {OptOp::LOCAL, "LOCAL", check_locals, apply_local},
    {OptOp::GROUP, "GROUP", check_locals, apply_reduce_split},
    {OptOp::GROUPTOP, "GROUPTOP", check_locals, apply_reduce_split},
    {OptOp::PADTO, "PADTO", check_padto, apply_padto},
    {OptOp::SWAP, "SWAP", check_swap, apply_swap},
    {OptOp::NOLOCALS, "NOLOCALS", check_nolocals, apply_nolocals},
    {OptOp::KBLOCK, "KBLOCK", check_kblock, apply_kblock},
    {OptOp::TC, "TC", check_tc, apply_tc},
    {OptOp::TILE, "TILE", check_tile, apply_tile},
    {OptOp::MERGE, "MERGE", check_merge, apply_merge},
};
constexpr bool opt_table_complete() {
  if (std::size(opt_table) != size_t(last_optop) + 1) return false;
  for (size_t i = 0; i < std::size(opt_table); i++) if (opt_table[i].op != OptOp(i)) return false;
  return true;
}
static_assert(opt_table_complete(), "the opt table needs one row per OptOp, in the enum's order");

inline std::string Opt::str() const { return cat("Opt(", detail::opt_table[size_t(op)].name, ", ", axis, ", ", amt, ")"); }

// apply one opt to a kernel AST (a SINK of STOREs); clamp_loops: PADTO's loop axes clamp (a device without workgroups)
inline UOpRef apply_opt(const UOpRef& sink, const Opt& o, bool clamp_loops = false) {
  return detail::opt_table[size_t(o.op)].apply(sink, o, clamp_loops);
}

inline void Kernel::check(const Opt& o) const {
  detail::OptCheck c{*this, o, ranges()};
  // NOTE: amounts come from files too (BEAM's cache): bounded before any arithmetic on them
  if (o.amt < 0 || o.amt > max_amount) c.fail(cat("the amount is not in [0, ", max_amount, "]"));
  if (c.count(OptOp::TC) && o.op != OptOp::UPCAST && o.op != OptOp::LOCAL && o.op != OptOp::SWAP)
    c.fail("after TC a kernel takes only UPCAST, LOCAL and SWAP (the warp's tile layout is fixed)");
  if (o.op != OptOp::SWAP && std::any_of(opts_.begin(), opts_.end(), [](auto& p) { return p.op == OptOp::TILE || (p.op == OptOp::TC && p.amt > 0); }))
    c.fail("after TILE or a staged TC (amount > 0) a kernel takes only SWAP (the tile shapes the block)");
  detail::opt_table[size_t(o.op)].check(c);
}
inline Kernel& Kernel::apply(const Opt& o) {
  check(o);
  UOpRef s = apply_opt(sink_, o, !ren_->has_local);
  if (uses_locals(o.op)) {
    auto opts = opts_;
    opts.push_back(o);
    if (int64_t w = workgroup(s, opts); w > ren_->max_threads)
      throw KernelOptError(cat(o.str(), ": a workgroup of ", w, " threads is over the device's ", ren_->max_threads));
  }
  sink_ = std::move(s);
  opts_.push_back(o);
  return *this;
}

}  // namespace tinygrad::detail
