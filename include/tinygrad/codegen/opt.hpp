#pragma once
// kernel opts: reshape the RANGEs of a kernel AST. UPCAST duplicates an output axis into registers,
// VECTOR turns one into vector lanes, UNROLL duplicates a reduce axis, THREAD splits an axis over CPU cores,
// LOCAL puts part of an output axis on a GPU workgroup's threads, GROUP part of a reduce axis (the threads
// combine their partial results through shared memory: codegen's lower_group_reduces), GROUPTOP the same with the
// group taking the outer part (each thread a contiguous chunk). PADTO rounds an axis up to a multiple (the indexes
// past the real size are masked: loads read 0, stores are skipped; on a device without workgroups a padded loop axis
// recomputes its last index there instead, its stores skipped), SWAP exchanges the order of two loop axes,
// NOLOCALS promises no LOCAL/GROUP opts (a GPU kernel with workgroups of one thread). KBLOCK blocks a reduce axis for
// the caches (a CPU opt): its outer part becomes a loop outside all others, the stores keep the partial results in
// the output and each block adds to them, so a block of the reused operand stays in L1/L2 while every output tile
// passes over it (GotoBLAS's K blocking: a 2048 matmul reads B from L2, not from L3 or memory).
#include "../renderer/cstyle.hpp"
#include "../uop/symbolic.hpp"

namespace tinygrad {

// NOTE: the values are stored in BEAM's disk cache: append, never reorder
enum class OptOp { UPCAST, VECTOR, UNROLL, THREAD, LOCAL, GROUP, GROUPTOP, PADTO, SWAP, NOLOCALS, KBLOCK, TC, TILE, MERGE };
inline constexpr OptOp last_optop = OptOp::MERGE;
struct Opt {
  OptOp op; int64_t axis; int64_t amt;  // axis: range id (NOLOCALS: none, -1); amt: SWAP's and MERGE's other range id, NOLOCALS 0
  std::string str() const {
    static const char* n[] = {"UPCAST", "VECTOR", "UNROLL", "THREAD", "LOCAL", "GROUP", "GROUPTOP", "PADTO", "SWAP", "NOLOCALS", "KBLOCK", "TC", "TILE", "MERGE"};
    static_assert(sizeof(n) / sizeof(n[0]) == size_t(last_optop) + 1, "every OptOp needs a name");
    return cat("Opt(", n[int(op)], ", ", axis, ", ", amt, ")");
  }
  bool operator==(const Opt&) const = default;
};
struct KernelOptError : Error { using Error::Error; };

namespace detail {
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
inline UOpRef make_range(int64_t end, int64_t id, AxisType t, DType dt) { return make_uop(Ops::RANGE, dt, {}, std::vector<int64_t>{end, id, int64_t(t)}); }
inline AxisType axis_type(const UOp* r) { return AxisType(r->varg()[2]); }
inline AxisType axis_type(const UOpRef& r) { return axis_type(r.get()); }
inline int64_t next_range_id(const UOpRef& sink) { int64_t m = -1; for (auto& r : ranges_of(sink)) m = std::max(m, r->range_id()); return m + 1; }

// NOTE: a multi-output kernel (several stores) takes the heuristics' opts when every store writes the same address:
// then stores[0] stands for all of them
inline bool one_address(const std::vector<UOpRef>& stores) {
  return !stores.empty() && std::all_of(stores.begin(), stores.end(), [&](auto& s) { return s->src[1] == stores[0]->src[1]; });
}

// each reduce loop of a kernel (REDUCEs over the same ranges run as one loop): its ranges -> the innermost of them
inline std::map<std::vector<const UOp*>, UOpRef> reduce_loops(const std::vector<UOpRef>& topo) {
  std::map<std::vector<const UOp*>, UOpRef> loops;
  for (auto& u : topo) {
    if (u->op != Ops::REDUCE) continue;
    std::vector<const UOp*> rs;
    UOpRef inner = u->src.back();
    for (size_t i = 1; i < u->src.size(); i++) {
      rs.push_back(u->src[i].get());
      if (u->src[i]->range_id() > inner->range_id()) inner = u->src[i];
    }
    std::sort(rs.begin(), rs.end());
    loops[rs] = inner;
  }
  return loops;
}

// replace range r by new_expr in every node below sink; stores are duplicated per value of an unrolled index
inline UOpRef sub_range(const UOpRef& x, const UOpRef& r, const UOpRef& e) { return substitute(x, {{r.get(), e}}); }

// how an index depends on a range: 0 independent, 1 contiguous (stride 1), 2 anything else
inline int stride_class(const UOpRef& idx, const UOpRef& r) {
  auto d = simplify(sub_range(idx, r, r + 1) - idx);
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
    if (red->dtype != st->src[1]->dtype || red->vcount != 1) return std::string("a store's dtype differs from its reduce's (partial results are kept in the output)");
    if (!seen.insert(red.get()).second) return std::string("two stores share one reduce");
    reds.push_back(red);
  }
  return reds;
}
// TC's precondition: the kernel's one REDUCE is a float32 sum over r of a * b, a and b float16 (or both bfloat16,
// cast up or not), a depending on an output axis m that b does not, b on an axis n that a does not; m a multiple of
// 16, n of 8, r of 16 (PADTO first where not). Returns the match, or why there is none.
struct TcMatch { UOpRef red, a, b, m, n; DType dt; };
inline int64_t tc_k(DType dt) { return dt == DType::Float32 ? 8 : 16; }  // m16n8k16 for half types, m16n8k8 for TF32
// (simt: TILE's match, float32 operands; tiles: the sizes are checked)
inline std::variant<TcMatch, std::string> tc_match(const UOpRef& sink, const UOpRef& r, bool tiles = true, bool simt = false) {
  using R = std::variant<TcMatch, std::string>;
  TcMatch t;
  for (auto& u : toposort(sink))
    if (u->op == Ops::REDUCE) {
      if (t.red) return R(std::string("the kernel has more than one reduce"));
      t.red = u;
    }
  if (!t.red || t.red->src.size() != 2 || t.red->src[1] != r) return R(std::string("no reduce runs over this axis alone"));
  if (t.red->reduce_op() != Ops::ADD || t.red->dtype != DType::Float32 || t.red->vcount != 1) return R(std::string("the reduce is no float32 sum"));
  auto peel = [](UOpRef x) { return x->op == Ops::CAST && (x->src[0]->dtype == DType::Float16 || x->src[0]->dtype == DType::BFloat16) ? x->src[0] : x; };
  // a reduce axis padded by PADTO adds where(valid, term, 0): the operands become 0 past the end instead (0 * 0)
  UOpRef p = t.red->src[0], valid;
  if (p->op == Ops::WHERE && p->src[2]->is_const(0)) valid = p->src[0], p = p->src[1];
  if (p->op == Ops::CAST) p = p->src[0];
  if (p->op != Ops::MUL) return R(std::string("the reduce's terms are no product"));
  t.a = peel(p->src[0]), t.b = peel(p->src[1]), t.dt = t.a->dtype;
  bool tf32 = t.dt == DType::Float32 && (flags().tf32 || simt);
  if (simt && t.dt != DType::Float32) return R(std::string("TILE multiplies float32 operands (float16 and bfloat16 take TC)"));
  if ((t.dt != DType::Float16 && t.dt != DType::BFloat16 && !tf32) || t.b->dtype != t.dt)
    return R(std::string("the product's operands are not both float16 or both bfloat16 (float32: only with TF32=1 / flags().tf32)"));
  if (valid) for (UOpRef* x : {&t.a, &t.b}) *x = alu(Ops::WHERE, {valid, *x, const_uop(t.dt, 0)});
  for (auto& x : ranges_of(sink)) {
    if (axis_type(x) != AxisType::LOOP) continue;
    bool in_a = depends_on(t.a, x).count(t.a.get()), in_b = depends_on(t.b, x).count(t.b.get());
    if (in_a && !in_b && (!tiles || x->range_end() % 16 == 0)) t.m = x;
    if (in_b && !in_a && (!tiles || x->range_end() % 8 == 0)) t.n = x;
  }
  if (!t.m || !t.n) return R(std::string("no output axis of a multiple of 16 rows of A and one of 8 columns of B"));
  if (tiles && r->range_end() % tc_k(t.dt) != 0) return R(cat("the reduce's size ", r->range_end(), " is no multiple of ", tc_k(t.dt)));
  return R(t);
}

// MERGEs of ranges rs[1..] into rs[0] (ids ascending: outer first), one axis of all their sizes
inline std::vector<Opt> merges_into_first(const std::vector<UOpRef>& rs) {
  std::vector<Opt> ms;
  for (size_t i = 1; i < rs.size(); i++) ms.push_back({OptOp::MERGE, rs[0]->range_id(), rs[i]->range_id()});
  return ms;
}
// an implicit GEMM (a conv's forward and gradients): the kernel's one reduce of a product runs over several ranges
// (channels and kernel taps), and several output axes index only one operand (batch and pixels). MERGEs of those
// into one reduce axis, one axis of A and one of B (in id order, outer first) give TILE and TC their matmul. Empty
// where nothing is to merge or the kernel is no such product
inline std::vector<Opt> gemm_merges(const UOpRef& sink) {
  UOpRef red;
  for (auto& u : toposort(sink))
    if (u->op == Ops::REDUCE) {
      if (red) return {};
      red = u;
    }
  if (!red || red->reduce_op() != Ops::ADD) return {};
  UOpRef p = red->src[0]->op == Ops::CAST ? red->src[0]->src[0] : red->src[0];
  if (p->op != Ops::MUL) return {};
  std::vector<UOpRef> k = reduce_ranges(red), a_only, b_only;
  for (auto& x : ranges_of(sink)) {
    if (axis_type(x) != AxisType::LOOP) continue;
    bool in_a = depends_on(p->src[0], x).count(p->src[0].get()), in_b = depends_on(p->src[1], x).count(p->src[1].get());
    if (in_a != in_b) (in_a ? a_only : b_only).push_back(x);
  }
  if (a_only.empty() || b_only.empty()) return {};
  std::vector<Opt> merges;
  for (auto* rs : {&k, &a_only, &b_only}) {
    auto ms = merges_into_first(*rs);
    merges.insert(merges.end(), ms.begin(), ms.end());
  }
  return merges;
}

// TC's tile shapes (the opt's amount). 0: each warp loads its fragments from memory, and LOCAL and UPCAST after TC
// shape the block. The others stage the block's tiles of A and B in workgroup memory: wm x wn warps of tm x tn mma
// tiles each, bk of K a step, `stages` steps' tiles held at once (cp.async copies, ldmatrix fragment loads). The
// largest takes 96 KB of workgroup memory: every GPU with tensor cores (sm_80 on) gives a block 99 KB or more.
// wg: Hopper's warpgroup MMA (wgmma, sm_90a): each 4 warps of the wm (a warpgroup) multiply a 64-row slice of A by the
// whole tile of B straight from workgroup memory, 64 of K a step; a warp's rows are 16 of the slice, its tn mma tiles
// of 16 x 8 the n of the block (the accumulator layout of wgmma's m64nNk16 is that of tn m16n8 tiles side by side)
struct TcTile { int64_t wm, wn, tm, tn, bk, stages; bool wg = false; };
inline constexpr TcTile tc_tiles[] = {{0, 0, 0, 0, 0, 0},   {2, 2, 4, 8, 32, 3}, {2, 2, 4, 4, 32, 3}, {2, 2, 2, 8, 32, 3},
                                      {2, 2, 2, 4, 32, 3},  {2, 4, 4, 4, 32, 3}, {4, 2, 2, 8, 32, 3}, {2, 2, 2, 4, 64, 3},
                                      {2, 4, 4, 8, 32, 3},  {4, 2, 4, 8, 32, 3}, {2, 2, 4, 8, 32, 4}, {2, 4, 4, 8, 32, 4},
                                      {2, 2, 4, 8, 64, 3},  {2, 2, 4, 8, 32, 5}, {8, 1, 1, 16, 64, 3, true}, {8, 1, 1, 32, 64, 3, true},
                                      {4, 1, 1, 32, 64, 4, true}, {8, 1, 1, 16, 64, 4, true}};
inline std::string tc_tile_fits(const TcMatch& tm, int64_t k, const TcTile& t) {  // "" where tile t fits the match
  int64_t bm = t.wm * t.tm * 16, bn = t.wn * t.tn * 8;
  if (tm.dt == DType::Float32) return "a staged tile takes float16 or bfloat16 operands (TF32 uses TC 0)";
  if (t.wg && (t.wm % 4 || t.wn != 1 || t.tm != 1 || t.bk != 64)) return "a wgmma tile is warpgroups of 4 warps along m, 64 of K a step";
  if (tm.m->range_end() % bm || tm.n->range_end() % bn || k % t.bk) return cat("the tile ", bm, "x", bn, "x", t.bk, " does not divide ", tm.m->range_end(), "x", tm.n->range_end(), "x", k);
  return "";
}
// element o of a stage tile with rows of rl 2-byte elements: its 16-byte chunk is XORed, within its 128-byte line,
// with the row (rows of 64 or more) or the line: 8 rows read at one chunk column (ldmatrix), or 8 threads writing a
// line, hit 8 different groups of banks
inline UOpRef tc_swizzle(const UOpRef& o, int64_t rl) {
  auto key = mod(idiv(o, rl >= 64 ? rl : 64), 8);
  return idiv(o, 64) * 64 + alu(Ops::XOR, {mod(idiv(o, 8), 8), key}) * 8 + mod(o, 8);
}
// the copy of a chunk of values (v: the chunk's values, neighbours in the workgroup buffer) as one asynchronous copy
// of its bytes: loads of neighbouring elements of one buffer, aligned to the chunk's size, under one gate (a copy is
// 4, 8 or 16 bytes). Returns the source address (an INDEX of v.size() elements), or null: copy value by value
inline UOpRef async_source(const std::vector<UOpRef>& v) {
  auto plain = [&](const UOpRef& x) { return x->op == Ops::LOAD && x->src[0]->src[0]->op == Ops::DEFINE_GLOBAL && x->src[0]->vcount == 1; };
  int64_t n = int64_t(v.size()), bytes = n * itemsize(v[0]->dtype);
  if (!plain(v[0]) || (bytes != 4 && bytes != 8 && bytes != 16)) return nullptr;
  const UOpRef& i0 = v[0]->src[0];
  for (int64_t e = 1; e < n; e++) {
    if (!plain(v[size_t(e)])) return nullptr;
    const UOpRef& ie = v[size_t(e)]->src[0];
    if (ie->src[0] != i0->src[0] || ie->src.size() != i0->src.size() || (ie->src.size() > 2 && ie->src[2] != i0->src[2])) return nullptr;
    if (!simplify(ie->src[1] - i0->src[1])->is_const(double(e))) return nullptr;
  }
  if (n > 1 && !simplify(mod(i0->src[1], n))->is_const(0)) return nullptr;
  return make_uop(Ops::INDEX, i0->dtype, i0->src, i0->arg, int(n));
}
// one operand of a staged GEMM: its value x (over its output axis and the reduce axis r), the block's first row or
// column (block), the tile's rows (bm or bn), its layout in the workgroup buffer, and the buffer
struct StagedSide {
  UOpRef x, axis, block;
  int64_t rows;
  bool kmajor;        // the buffer holds rows of k (else rows of m or n)
  int64_t pitch;      // elements from one row of the buffer to the next
  bool swizzle;       // 2-byte tiles for ldmatrix: chunks XORed (tc_swizzle), else padded rows
  int64_t stage = 0;  // elements a stage
  UOpRef buf;
  int64_t lines = 0;  // wgmma's m- or n-major layout: blocks of 64 rows (this many elements each), a row of 64 a k
  UOpRef at(const UOpRef& i, const UOpRef& k) const {  // element (i, k) within a stage
    UOpRef o = kmajor ? i * pitch + k : lines ? idiv(i, 64) * lines + k * 64 + mod(i, 64) : k * pitch + i;
    return swizzle ? tc_swizzle(o, lines ? 64 : pitch) : o;
  }
};
// the block's stores of step `step` of a side into stage `stage` (gate: null, or whether the copies happen), by T
// threads (tid): 16-byte chunks along the buffer's rows where the operand is contiguous there, else one value at a time,
// neighbouring threads taking neighbouring elements of the operand's memory (along k where it walks K contiguously)
inline std::vector<UOpRef> staged_copies(const StagedSide& sd, const UOpRef& r, int64_t bk, int64_t T, const UOpRef& tid, const UOpRef& step,
                                         const UOpRef& stage, const UOpRef& gate) {
  DType dt = tid->dtype;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  auto value = [&](const UOpRef& i, const UOpRef& k) { return simplify(substitute(sd.x, {{sd.axis.get(), sd.block * sd.rows + i}, {r.get(), step * bk + k}})); };
  auto dst = [&](const UOpRef& i, const UOpRef& k, int vc) {
    std::vector<UOpRef> src{sd.buf, simplify(stage * sd.stage + sd.at(i, k))};
    if (gate) src.push_back(gate);
    return make_uop(Ops::INDEX, sd.x->dtype, src, {}, vc);
  };
  std::vector<UOpRef> out;
  int64_t E = 16 / itemsize(sd.x->dtype), rl = sd.kmajor ? bk : sd.rows;  // a chunk's elements, a row's
  bool along_k = sd.x->op == Ops::LOAD && stride_class(sd.x->src[0]->src[1], r) == 1;
  if (sd.kmajor == along_k || sd.swizzle) {
    for (int64_t j = 0; j < sd.rows * bk / E / T; j++) {
      auto chunk = tid + c(j * T), row = idiv(chunk, rl / E), col = mod(chunk, rl / E) * E;
      std::vector<UOpRef> v;
      for (int64_t e = 0; e < E; e++) v.push_back(sd.kmajor ? value(row, col + c(e)) : value(col + c(e), row));
      auto i = sd.kmajor ? row : col, k = sd.kmajor ? col : row;
      if (auto from = async_source(v)) {
        out.push_back(make_uop(Ops::STORE, DType::Bool, {dst(i, k, int(E)), from}));
        continue;
      }
      // not one chunk (an implicit GEMM's gather, a fused expression): a 4-byte copy per value where it is a plain
      // load of 4 bytes, else the value itself (a conv's copies of x had stalled every step as plain loads)
      for (int64_t e = 0; e < E; e++) {
        auto from = async_source({v[size_t(e)]});
        out.push_back(make_uop(Ops::STORE, DType::Bool, {sd.kmajor ? dst(i, k + c(e), 1) : dst(i + c(e), k, 1), from ? from : v[size_t(e)]}));
      }
    }
    return out;
  }
  for (int64_t j = 0; j < sd.rows * bk / T; j++) {  // the buffer's rows cross the operand's memory: one value a copy
    auto el = tid + c(j * T), i = along_k ? idiv(el, bk) : mod(el, sd.rows), k = along_k ? mod(el, bk) : idiv(el, sd.rows);
    auto v = value(i, k);
    auto from = async_source({v});
    out.push_back(make_uop(Ops::STORE, DType::Bool, {dst(i, k, 1), from ? from : v}));
  }
  return out;
}
// the copies of both sides' tiles for a staged GEMM's K steps kc (nk of them, bk of r each; T threads, tid) into S
// stages, P = S - 2 steps ahead of the compute: steps 0 to P - 1 before the loop (a copy group each), step kc + P in
// step kc. Returns the barrier after which stage kc % S holds step kc's tiles. One barrier a step is enough: the stage
// written in step kc was last read in step kc - 2.
inline UOpRef staged_pipeline(const StagedSide (&sides)[2], const UOpRef& r, int64_t bk, int64_t T, const UOpRef& tid, const UOpRef& kc, int64_t nk, int64_t S) {
  DType dt = kc->dtype;
  auto copies = [&](const UOpRef& step, const UOpRef& stage, const UOpRef& gate) {
    auto v = staged_copies(sides[0], r, bk, T, tid, step, stage, gate), w = staged_copies(sides[1], r, bk, T, tid, step, stage, gate);
    v.insert(v.end(), w.begin(), w.end());
    return v;
  };
  int64_t P = S - 2, Q = std::min(P, nk);  // Q: the copy groups issued after step kc's by the time step kc waits
  // BARRIER's arg: the copy groups that may stay in flight (cp.async.wait_group) before the workgroup syncs
  auto barrier = [&](std::vector<UOpRef> src) { return make_uop(Ops::BARRIER, DType::Bool, std::move(src), Q); };
  UOpRef before;
  for (int64_t j = 0; j < Q; j++) {
    std::vector<UOpRef> first = copies(const_int(dt, j), const_int(dt, j), UOpRef());
    if (before) first.push_back(before);
    before = barrier(first);
  }
  auto next = kc + P, clamped = alu(Ops::WHERE, {lt(next, nk), next, const_int(dt, nk - 1)});  // the last P steps copy nothing
  std::vector<UOpRef> step = copies(clamped, mod(next, S), lt(next, nk));
  step.push_back(before);
  return barrier(step);
}
// the blocks of a staged GEMM as one loop axis (the m axis's id): blocks next to each other take up to 8 row tiles
// of one column tile, so the blocks running at once share A's rows and B's columns in L2 (an 8192 GEMM's B is larger
// than an H100's L2). Returns the block's row tile and column tile
inline std::pair<UOpRef, UOpRef> block_tiles(const TcMatch& tm, int64_t bm, int64_t bn, DType dt) {
  int64_t mb = tm.m->range_end() / bm, nb = tm.n->range_end() / bn, g8 = 8;
  while (mb % g8) g8 /= 2;
  auto blk = make_range(mb * nb, tm.m->range_id(), AxisType::LOOP, dt), in_group = mod(blk, g8 * nb);
  return {idiv(blk, g8 * nb) * g8 + mod(in_group, g8), idiv(in_group, g8)};
}
// TC with a staged tile: per block, tiles of A (bm x bk) and B (bn x bk) of each K step pass through workgroup memory
// (staged_pipeline); each warp multiplies its tm x tn mma tiles with fragments from ldmatrix. A buffer holds its
// operand k-major where the operand is contiguous along K, else m- or n-major (ldmatrix .trans).
inline UOpRef tc_stage(const UOpRef& sink, const UOpRef& r, const TcMatch& tm, const TcTile& t) {
  DType dt = r->dtype;
  const int64_t S = t.stages, bm = t.wm * t.tm * 16, bn = t.wn * t.tn * 8, nk = r->range_end() / t.bk, id = next_range_id(sink), T = t.wm * t.wn * 32;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  auto [gm, gn] = block_tiles(tm, bm, bn, dt);
  auto wm = make_range(t.wm, id, AxisType::LOCAL, dt), wn = make_range(t.wn, id + 1, AxisType::LOCAL, dt), lane = make_range(32, id + 2, AxisType::WARP, dt);
  auto kc = make_range(nk, r->range_id(), AxisType::REDUCE, dt);
  auto tid = (wm * t.wn + wn) * 32 + lane;
  StagedSide sides[2] = {{tm.a, tm.m, gm, bm, true, 0, true, 0, nullptr, 0}, {tm.b, tm.n, gn, bn, true, 0, true, 0, nullptr, 0}};
  for (int i = 0; i < 2; i++) {
    StagedSide& sd = sides[i];
    if (sd.x->op == Ops::LOAD) sd.kmajor = stride_class(sd.x->src[0]->src[1], r) == 1 || stride_class(sd.x->src[0]->src[1], sd.axis) != 1;
    sd.pitch = sd.kmajor ? t.bk : sd.rows;
    sd.stage = sd.rows * t.bk;
    if (t.wg && !sd.kmajor) sd.lines = 64 * t.bk;
    sd.buf = make_uop(Ops::DEFINE_LOCAL, sd.x->dtype, {}, std::vector<int64_t>{i, S * sd.stage, 1});
  }
  auto ready = staged_pipeline(sides, r, t.bk, T, tid, kc, nk, S);
  auto rarg = tm.red->varg();
  rarg[0] = int64_t(Ops::WMMA);
  auto g = idiv(lane, 4), q2 = mod(lane, 4) * 2;
  std::vector<UOpRef> stores;
  if (t.wg) {
    // one wgmma a K step for each warpgroup (wm / 4): its 64 rows of A by the block's bn columns of B, both from the
    // stage's tiles (the start of each; the arg: the dtype, and at bits 17 and 18 whether A and B are m- and n-major).
    // The REDUCE holds the warp's bn / 2 accumulators: mma tile j's four at 4j to 4j + 3, as for TC's staged tiles
    auto start = [&](const StagedSide& sd, const UOpRef& row) {
      return make_uop(Ops::INDEX, sd.x->dtype, {sd.buf, simplify(mod(kc, S) * sd.stage + (sd.lines ? idiv(row, 64) * sd.lines : row * sd.pitch))});
    };
    auto& A = sides[0];
    auto& B = sides[1];
    auto w = make_uop(Ops::WMMA, DType::Float32, {start(A, idiv(wm, 4) * 64), start(B, c(0)), ready}, int64_t(tm.dt) | int64_t(!A.kmajor) << 17 | int64_t(!B.kmajor) << 18, int(bn / 2));
    auto acc = make_uop(Ops::REDUCE, DType::Float32, {w, kc}, rarg, int(bn / 2));
    for (int64_t e = 0; e < bn / 2; e++) {
      std::unordered_map<const UOp*, UOpRef> at{{tm.red.get(), make_uop(Ops::GEP, DType::Float32, {acc}, e)},
                                                {tm.m.get(), gm * bm + wm * 16 + c(8 * (e % 4 >> 1)) + g},
                                                {tm.n.get(), gn * bn + c(e / 4 * 8 + (e & 1)) + q2}};
      for (auto& st : sink->src) stores.push_back(substitute(st, at));
    }
    return make_uop(Ops::SINK, DType::Bool, stores);
  }
  auto ks = make_range(t.bk / 16, id + 3, AxisType::REDUCE, dt);  // the mma steps within a K step
  // fragments: A's 16x16 tile (ldmatrix .x4, 8 halves a lane), B's two 8x16 tiles (.x4; one: .x2); the arg: 1, or 2 for .trans
  auto frag = [&](StagedSide& sd, const UOpRef& i, const UOpRef& k, int vc) {
    auto idx = make_uop(Ops::INDEX, sd.x->dtype, {sd.buf, simplify(mod(kc, S) * sd.stage + sd.at(i, k))});
    return make_uop(Ops::LOAD, sd.x->dtype, {idx, ready}, int64_t(sd.kmajor ? 1 : 2), vc);
  };
  auto& A = sides[0];
  auto& B = sides[1];
  std::vector<UOpRef> fa, fb;
  for (int64_t u = 0; u < t.tm; u++) {
    auto base = wm * (t.tm * 16) + c(u * 16);
    fa.push_back(A.kmajor ? frag(A, base + mod(lane, 16), ks * 16 + idiv(lane, 16) * 8, 8)
                          : frag(A, base + mod(idiv(lane, 8), 2) * 8, ks * 16 + mod(lane, 8) + idiv(lane, 16) * 8, 8));
  }
  for (int64_t u = 0; u < t.tn; u += 2) {  // lanes 16-31 address the second tile
    auto base = wn * (t.tn * 8) + c(u * 8), second = t.tn - u > 1 ? idiv(lane, 16) * 8 : c(0);
    int vc = t.tn - u > 1 ? 8 : 4;
    fb.push_back(B.kmajor ? frag(B, base + second + mod(lane, 8), ks * 16 + mod(idiv(lane, 8), 2) * 8, vc)
                          : frag(B, base + second, ks * 16 + mod(lane, 8) + mod(idiv(lane, 8), 2) * 8, vc));
  }
  for (int64_t um = 0; um < t.tm; um++)
    for (int64_t un = 0; un < t.tn; un++) {
      // the arg: the dtype, and at bit 16 whether B's registers are the second half of its fragment load
      auto w = make_uop(Ops::WMMA, DType::Float32, {fa[size_t(um)], fb[size_t(un / 2)]}, int64_t(tm.dt) | (un % 2) << 16, 4);
      auto acc = make_uop(Ops::REDUCE, DType::Float32, {w, kc, ks}, rarg, 4);
      for (int64_t e = 0; e < 4; e++) {
        std::unordered_map<const UOp*, UOpRef> at{{tm.red.get(), make_uop(Ops::GEP, DType::Float32, {acc}, e)},
                                                  {tm.m.get(), gm * bm + wm * (t.tm * 16) + c(um * 16 + 8 * (e >> 1)) + g},
                                                  {tm.n.get(), gn * bn + wn * (t.tn * 8) + c(un * 8 + (e & 1)) + q2}};
        for (auto& st : sink->src) stores.push_back(substitute(st, at));
      }
    }
  return make_uop(Ops::SINK, DType::Bool, stores);
}
// TILE's shapes (the opt's amount): a float32 GEMM without tensor cores, ty x tx threads a block, each a tm x tn
// register tile (groups of 4 neighbouring rows and columns: vector reads of workgroup memory), bk of K a step,
// `stages` steps held at once
struct SimtTile { int64_t ty, tx, tm, tn, bk, stages; };
inline constexpr SimtTile simt_tiles[] = {{0, 0, 0, 0, 0, 0},  {16, 16, 8, 8, 8, 3},  {16, 16, 8, 8, 16, 3}, {8, 16, 8, 8, 8, 3},
                                          {16, 8, 8, 8, 8, 3}, {8, 8, 8, 8, 16, 3},   {16, 16, 4, 4, 16, 3}, {16, 16, 8, 8, 8, 4},
                                          {16, 8, 8, 4, 16, 3}, {8, 8, 8, 4, 16, 3},  {32, 4, 8, 8, 16, 3}, {16, 4, 8, 8, 16, 3}};
inline std::string simt_tile_fits(const TcMatch& tm, int64_t k, const SimtTile& t) {
  int64_t bm = t.ty * t.tm, bn = t.tx * t.tn;
  if (tm.m->range_end() % bm || tm.n->range_end() % bn || k % t.bk) return cat("the tile ", bm, "x", bn, "x", t.bk, " does not divide ", tm.m->range_end(), "x", tm.n->range_end(), "x", k);
  return "";
}
// TILE: per block, tiles of A (bm x bk) and B (bn x bk) pass through workgroup memory as in TC's staged tiles, both
// held m- or n-major (rows padded by 4 elements: a row of k copied value by value hits 8 different banks); thread
// (y, x) owns rows y * 4 + g * bm / (tm / 4) + i and columns x * 4 + g * bn / (tn / 4) + j: every K step, tm / 4 and
// tn / 4 vector reads of 4 elements feed tm x tn multiply-adds
inline UOpRef simt_stage(const UOpRef& sink, const UOpRef& r, const TcMatch& tm, const SimtTile& t) {
  DType dt = r->dtype;
  const int64_t S = t.stages, bm = t.ty * t.tm, bn = t.tx * t.tn, nk = r->range_end() / t.bk, id = next_range_id(sink), T = t.ty * t.tx;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  auto [gm, gn] = block_tiles(tm, bm, bn, dt);
  auto ty = make_range(t.ty, id, AxisType::LOCAL, dt), tx = make_range(t.tx, id + 1, AxisType::LOCAL, dt);
  auto kc = make_range(nk, r->range_id(), AxisType::REDUCE, dt), ks = make_range(t.bk, id + 2, AxisType::REDUCE, dt);
  auto tid = ty * t.tx + tx;
  StagedSide sides[2] = {{tm.a, tm.m, gm, bm, false, bm + 4, false, (bm + 4) * t.bk, nullptr}, {tm.b, tm.n, gn, bn, false, bn + 4, false, (bn + 4) * t.bk, nullptr}};
  for (int i = 0; i < 2; i++) sides[i].buf = make_uop(Ops::DEFINE_LOCAL, sides[i].x->dtype, {}, std::vector<int64_t>{i, S * sides[i].stage, 1});
  auto ready = staged_pipeline(sides, r, t.bk, T, tid, kc, nk, S);
  // a thread's 4 neighbouring rows (columns) of group g at step ks: one vector read of workgroup memory
  auto quad = [&](StagedSide& sd, const UOpRef& own, int64_t g, int64_t groups) {
    auto idx = make_uop(Ops::INDEX, sd.x->dtype, {sd.buf, simplify(mod(kc, S) * sd.stage + ks * sd.pitch + own * 4 + c(g * (sd.rows / groups)))}, {}, 4);
    return make_uop(Ops::LOAD, sd.x->dtype, {idx, ready}, {}, 4);
  };
  std::vector<UOpRef> qa, qb;
  for (int64_t g = 0; g < t.tm / 4; g++) qa.push_back(quad(sides[0], ty, g, t.tm / 4));
  for (int64_t g = 0; g < t.tn / 4; g++) qb.push_back(quad(sides[1], tx, g, t.tn / 4));
  std::vector<UOpRef> stores;
  for (int64_t i = 0; i < t.tm; i++)
    for (int64_t j = 0; j < t.tn; j++) {
      auto a = make_uop(Ops::GEP, tm.a->dtype, {qa[size_t(i / 4)]}, i % 4), b = make_uop(Ops::GEP, tm.b->dtype, {qb[size_t(j / 4)]}, j % 4);
      auto acc = make_uop(Ops::REDUCE, tm.red->dtype, {a * b, kc, ks}, tm.red->arg);
      std::unordered_map<const UOp*, UOpRef> at{{tm.red.get(), acc},
                                                {tm.m.get(), gm * bm + ty * 4 + c(i / 4 * (bm / (t.tm / 4)) + i % 4)},
                                                {tm.n.get(), gn * bn + tx * 4 + c(j / 4 * (bn / (t.tn / 4)) + j % 4)}};
      for (auto& st : sink->src) stores.push_back(substitute(st, at));
    }
  return make_uop(Ops::SINK, DType::Bool, stores);
}
}  // namespace detail

// apply one opt to a kernel AST (a SINK of STOREs); clamp_loops: PADTO's loop axes clamp (a device without workgroups)
inline UOpRef apply_opt(const UOpRef& sink, const Opt& o, bool clamp_loops = false) {
  using namespace detail;
  if (o.op == OptOp::NOLOCALS) return sink;  // a promise Kernel::check keeps; the graph is the same
  UOpRef r = find_range(sink, o.axis);
  int64_t n = r->range_end();
  AxisType t = axis_type(r);
  DType dt = r->dtype;
  if (o.op == OptOp::SWAP) {
    // the two ranges exchange ids: loops open (and gpudims assigns dims) in id order
    UOpRef r2 = find_range(sink, o.amt);
    if (r2 == r || t != AxisType::LOOP || axis_type(r2) != AxisType::LOOP) throw KernelOptError(o.str() + ": needs two loop axes");
    return substitute(sink, {{r.get(), make_range(n, o.amt, t, dt)}, {r2.get(), make_range(r2->range_end(), o.axis, t, dt)}});
  }
  if (o.op == OptOp::MERGE) {
    // the two ranges become one of their sizes' product (the first's id): r = R / n2, r2 = R % n2; a reduce over both
    // runs over R
    UOpRef r2 = find_range(sink, o.amt);
    if (r2 == r || t != axis_type(r2) || (t != AxisType::LOOP && t != AxisType::REDUCE)) throw KernelOptError(o.str() + ": needs two loop or two reduce axes");
    int64_t n2 = r2->range_end();
    auto R = make_range(n * n2, o.axis, t, dt);
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
  if (o.op == OptOp::PADTO) {
    if (t != AxisType::LOOP && t != AxisType::REDUCE) throw KernelOptError(o.str() + ": needs a loop or reduce axis");
    if (o.amt <= 1 || o.amt - n >= n) throw KernelOptError(o.str() + ": the amount must be at least 2 and under twice the axis");
    // the range grows; every load whose index depends on it reads 0 past the real size, every store that
    // depends on it is skipped there (the gate also keeps the address of any access from being dereferenced)
    auto nr = make_range((n + o.amt - 1) / o.amt * o.amt, o.axis, t, dt);
    UOpRef valid = lt(nr, n);
    auto masked = [&](std::vector<UOpRef> isrc) {  // an INDEX's sources with `valid` added to its mask
      if (isrc.size() > 2) isrc[2] = logical_and(isrc[2], valid);
      else isrc.push_back(valid);
      return isrc;
    };
    // NOTE: on a CPU, a padded loop axis computes its last index again past the end, and only its stores are
    // masked: each load reads an address the kernel reads anyway, with no mask in an inner loop (a 1024 matmul's
    // 6-row register tile: a masked load of A per row and step ran 1.9x slower), and every value is one the kernel
    // computes (no overflow or division by zero of its own). Its loads then walk the axis with no fixed stride (no
    // VECTOR on it). Elsewhere loads are masked: a padded reduce adds its identity, and a GPU's TC stages its tiles
    // from the masks
    if (clamp_loops && t == AxisType::LOOP) {
      UOpRef clamped = sub_range(sink, r, alu(Ops::WHERE, {valid, nr, const_int(dt, n - 1)}));
      auto dep = depends_on(sink, r);
      std::vector<UOpRef> stores;
      for (size_t i = 0; i < sink->src.size(); i++) {
        const UOpRef &st = sink->src[i], &cst = clamped->src[i];
        if (!dep.count(st.get())) { stores.push_back(cst); continue; }
        std::vector<UOpRef> src = cst->src;
        src[0] = make_uop(Ops::INDEX, st->src[0]->dtype, masked(sub_range(st->src[0], r, nr)->src), st->src[0]->arg, st->src[0]->vcount);
        stores.push_back(make_uop(st->op, st->dtype, std::move(src), st->arg, st->vcount));
      }
      return make_uop(Ops::SINK, sink->dtype, std::move(stores), sink->arg, sink->vcount);
    }
    UOpRef grown = sub_range(sink, r, nr);
    auto dep = depends_on(grown, nr);
    std::unordered_set<const UOp*> gate;
    for (auto& u : toposort(grown))
      if ((u->op == Ops::LOAD && dep.count(u->src[0].get())) || (u->op == Ops::STORE && dep.count(u.get()))) gate.insert(u->src[0].get());
    std::unordered_map<const UOp*, UOpRef> m;
    for (auto& u : toposort(grown)) {
      std::vector<UOpRef> src;
      for (auto& x : u->src) src.push_back(m.at(x.get()));
      if (gate.count(u.get())) src = masked(std::move(src));
      // a reduce over the padded range adds its identity there, whatever its terms are (0 * inf of a term would not)
      if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), nr) != u->src.end()) {
        src[0] = alu(Ops::WHERE, {valid, src[0], const_uop(u->dtype, reduce_identity(u->reduce_op(), u->dtype))});
      }
      m[u.get()] = src == u->src ? u : make_uop(u->op, u->dtype, std::move(src), u->arg, u->vcount);
    }
    return m.at(grown.get());
  }
  if (o.op == OptOp::TILE) {
    auto found = tc_match(sink, r, false, true);
    if (auto* why = std::get_if<std::string>(&found)) throw KernelOptError(o.str() + ": " + *why);
    return simt_stage(sink, r, std::get<TcMatch>(found), simt_tiles[o.amt]);
  }
  if (o.op == OptOp::TC) {
    // one warp computes a 16x8 tile of m x n with one mma.sync m16n8k16 per 16 steps of r. Lane t of the warp (a WARP
    // axis of 32) holds A's rows g, g + 8 (g = t / 4) at columns 2q, 2q + 1, 2q + 8, 2q + 9 (q = t % 4), B's column g at
    // rows 2q, 2q + 1, 2q + 8, 2q + 9, and C's rows g, g + 8 at columns 2q, 2q + 1 (PTX ISA, the m16n8k16 fragments).
    // TF32 (m16n8k8, 8 steps of r): A's rows g, g + 8 at columns q, q + 4; B's column g at rows q, q + 4; C the same
    auto found = tc_match(sink, r);
    if (auto* why = std::get_if<std::string>(&found)) throw KernelOptError(o.str() + ": " + *why);
    auto& tm = std::get<TcMatch>(found);
    if (o.amt > 0) return tc_stage(sink, r, tm, tc_tiles[o.amt]);
    auto mo = make_range(tm.m->range_end() / 16, tm.m->range_id(), AxisType::LOOP, dt), no = make_range(tm.n->range_end() / 8, tm.n->range_id(), AxisType::LOOP, dt);
    int64_t kt = tc_k(tm.dt);
    auto ko = make_range(n / kt, o.axis, AxisType::REDUCE, dt), lane = make_range(32, next_range_id(sink), AxisType::WARP, dt);
    auto g = idiv(lane, 4), q = mod(lane, 4), q2 = q * 2;
    auto c = [&](int64_t v) { return const_int(dt, v); };
    std::vector<UOpRef> frag;
    auto at_a = [&](const UOpRef& row, const UOpRef& col) { frag.push_back(substitute(tm.a, {{tm.m.get(), mo * 16 + row}, {r.get(), ko * kt + col}})); };
    auto at_b = [&](const UOpRef& k) { frag.push_back(substitute(tm.b, {{r.get(), ko * kt + k}, {tm.n.get(), no * 8 + g}})); };
    if (kt == 8) {
      for (int64_t e = 0; e < 4; e++) at_a(g + c(8 * (e & 1)), q + c(4 * (e >> 1)));
      for (int64_t e = 0; e < 2; e++) at_b(q + c(4 * e));
    } else {
      for (int64_t e = 0; e < 8; e++) at_a(g + c(8 * ((e >> 1) & 1)), q2 + c((e & 1) + 8 * (e >> 2)));
      for (int64_t e = 0; e < 4; e++) at_b(q2 + c((e & 1) + 8 * (e >> 1)));
    }
    // a pair of neighbouring values that are loads of neighbouring, 4-byte aligned elements is one 32-bit load of
    // the packed register (bit p of the arg's mask, above the dtype's byte), else the renderer packs them with a cvt
    int64_t mask = 0;
    for (int64_t p = 0; p < 6 && kt == 16; p++) {
      const UOpRef &lo = frag[size_t(2 * p)], &hi = frag[size_t(2 * p + 1)];
      auto plain = [&](const UOpRef& x) { return x->op == Ops::LOAD && x->dtype == tm.dt && x->src[0]->src.size() == 2; };
      if (!plain(lo) || !plain(hi) || lo->src[0]->src[0] != hi->src[0]->src[0]) continue;
      const UOpRef &alo = lo->src[0]->src[1], &ahi = hi->src[0]->src[1];
      if (simplify(ahi - alo)->is_const(1) && simplify(mod(alo, 2))->is_const(0)) mask |= int64_t(1) << p;
    }
    auto w = make_uop(Ops::WMMA, DType::Float32, frag, int64_t(tm.dt) | mask << 8, 4);
    auto rarg = tm.red->varg();
    rarg[0] = int64_t(Ops::WMMA);
    auto acc = make_uop(Ops::REDUCE, DType::Float32, {w, ko}, rarg, 4);
    std::vector<UOpRef> stores;
    for (int64_t e = 0; e < 4; e++) {
      std::unordered_map<const UOp*, UOpRef> at{{tm.red.get(), make_uop(Ops::GEP, DType::Float32, {acc}, e)},
                                                {tm.m.get(), mo * 16 + g + c(8 * (e >> 1))}, {tm.n.get(), no * 8 + q2 + c(e & 1)}};
      for (auto& st : sink->src) stores.push_back(substitute(st, at));
    }
    return make_uop(Ops::SINK, DType::Bool, stores);
  }
  if (o.amt <= 1 || n % o.amt != 0) throw KernelOptError(cat(o.str(), " does not divide axis of size ", n));
  if (o.op == OptOp::KBLOCK) {
    // r -> blk * amt + r' (r' keeps the id); each store's reduce s over r becomes, at block blk:
    //   part = blk == 0 ? s' : out[idx] op s'        (s' reduces the block; out[idx] is read only past block 0)
    // and the store writes part, or its value with part for s in the last block (a bias, an activation)
    if (t != AxisType::REDUCE) throw KernelOptError(o.str() + ": needs a reduce axis");
    auto found = kblock_reduces(sink, r);
    if (auto* why = std::get_if<std::string>(&found)) throw KernelOptError(o.str() + ": " + *why);
    auto& reds = std::get<std::vector<UOpRef>>(found);
    auto blk = make_range(n / o.amt, next_range_id(sink), AxisType::KBLOCK, dt), inner = make_range(o.amt, o.axis, t, dt);
    auto first = alu(Ops::CMPEQ, {blk, const_int(dt, 0)}), later = alu(Ops::CMPNE, {blk, const_int(dt, 0)});
    auto last = alu(Ops::CMPEQ, {blk, const_int(dt, n / o.amt - 1)});
    std::vector<UOpRef> stores;
    for (size_t i = 0; i < reds.size(); i++) {
      const UOpRef &st = sink->src[i], &red = reds[i], &idx = st->src[0];
      std::vector<UOpRef> src{sub_range(red->src[0], r, blk * o.amt + inner)};
      for (size_t j = 1; j < red->src.size(); j++) src.push_back(red->src[j] == r ? inner : red->src[j]);
      auto part = make_uop(Ops::REDUCE, red->dtype, src, red->arg);
      std::vector<UOpRef> isrc(idx->src);
      if (isrc.size() > 2) isrc[2] = logical_and(isrc[2], later);
      else isrc.push_back(later);
      auto prev = make_uop(Ops::LOAD, st->src[1]->dtype, {make_uop(Ops::INDEX, idx->dtype, isrc, idx->arg)});
      // the gated load reads 0 in block 0: a sum needs no select there
      part = red->reduce_op() == Ops::ADD ? prev + part : alu(Ops::WHERE, {first, part, alu(red->reduce_op(), {prev, part})});
      auto value = substitute(st->src[1], {{red.get(), part}});
      stores.push_back(make_uop(Ops::STORE, DType::Bool, {idx, value == part ? part : alu(Ops::WHERE, {last, value, part})}));
    }
    return make_uop(Ops::SINK, DType::Bool, stores);
  }
  bool is_reduce = t == AxisType::REDUCE;
  bool group_op = o.op == OptOp::GROUP || o.op == OptOp::GROUPTOP, lanes_op = o.op == OptOp::VECTOR;
  if (!lanes_op && (o.op == OptOp::UNROLL || group_op) != is_reduce) throw KernelOptError(o.str() + ": wrong axis kind");
  if ((o.op == OptOp::THREAD || o.op == OptOp::LOCAL) && t != AxisType::LOOP) throw KernelOptError(o.str() + ": needs a loop axis");
  int64_t nid = next_range_id(sink);
  if (o.op == OptOp::THREAD) {
    // the outer part becomes the core id; the inner keeps the range's id
    auto core = make_uop(Ops::SPECIAL, dt, {}, std::vector<int64_t>{o.amt, 0});
    auto inner = make_range(n / o.amt, o.axis, t, dt);
    return sub_range(sink, r, core * (n / o.amt) + inner);
  }
  auto outer = n / o.amt == 1 ? const_int(dt, 0) : make_range(n / o.amt, o.axis, t, dt);
  // LOCAL: the inner part becomes a workgroup axis (codegen's gpudims maps it to a local id)
  if (o.op == OptOp::LOCAL) return sub_range(sink, r, outer * o.amt + make_range(o.amt, nid, AxisType::LOCAL, dt));
  auto lane = make_uop(Ops::LANE, dt, {}, std::vector<int64_t>{o.amt, nid});
  if (o.op == OptOp::VECTOR && !is_reduce) return sub_range(sink, r, outer * o.amt + lane);
  if (o.op == OptOp::UPCAST) {
    std::vector<UOpRef> stores;
    for (auto& st : sink->src)
      for (int64_t u = 0; u < o.amt; u++) stores.push_back(sub_range(st, r, outer * o.amt + u));
    return make_uop(Ops::SINK, DType::Bool, stores);
  }
  // UNROLL: each REDUCE over r becomes a REDUCE over the outer range of the combined copies;
  // GROUP: a REDUCE over the outer range and the group range (inner, so neighbouring threads read neighbours);
  // GROUPTOP: the group range is the outer part (each thread reduces a contiguous chunk of n / amt);
  // VECTOR on a reduce axis: a REDUCE over the outer range and the lane (the expander keeps one accumulator lane per
  // lane and combines the lanes after the loop: vector loads of every operand that walks the reduce contiguously)
  auto group = make_range(o.amt, nid, AxisType::GROUP, dt);
  std::unordered_map<const UOp*, UOpRef> sub;
  for (auto& u : toposort(sink)) {
    if (u->op != Ops::REDUCE || std::find(u->src.begin() + 1, u->src.end(), r) == u->src.end()) continue;
    UOpRef acc;
    if (o.op == OptOp::GROUP) acc = sub_range(u->src[0], r, outer * o.amt + group);
    else if (lanes_op) acc = sub_range(u->src[0], r, outer * o.amt + lane);
    else if (o.op == OptOp::GROUPTOP) acc = sub_range(u->src[0], r, group * (n / o.amt) + outer);
    else for (int64_t k = 0; k < o.amt; k++) {
      auto v = sub_range(u->src[0], r, outer * o.amt + k);
      acc = acc ? alu(u->reduce_op(), {acc, v}) : v;
    }
    std::vector<UOpRef> src{acc};
    for (size_t i = 1; i < u->src.size(); i++) if (u->src[i] != r) src.push_back(u->src[i]);
    if (outer->op == Ops::RANGE) src.push_back(outer);
    if (group_op) src.push_back(group);
    if (lanes_op) src.push_back(lane);
    sub[u.get()] = src.size() == 1 ? acc : make_uop(Ops::REDUCE, u->dtype, src, u->arg, u->vcount);
  }
  return substitute(sink, sub);
}

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
  int64_t expand() const { int64_t e = 1; for (auto& o : opts_) if (o.op == OptOp::UPCAST || o.op == OptOp::UNROLL || o.op == OptOp::VECTOR) e *= o.amt; return e; }
  int64_t workgroup() const {
    int64_t w = 1;
    for (auto& o : opts_) {
      if (uses_locals(o.op)) w *= o.amt;
      else if (o.op == OptOp::TC) w *= 32 * (o.amt ? detail::tc_tiles[o.amt].wm * detail::tc_tiles[o.amt].wn : 1);
      else if (o.op == OptOp::TILE) w *= detail::simt_tiles[o.amt].ty * detail::simt_tiles[o.amt].tx;
    }
    return w;
  }
  static bool uses_locals(OptOp op) { return op == OptOp::LOCAL || op == OptOp::GROUP || op == OptOp::GROUPTOP; }

  Kernel& apply(const Opt& o) {
    check(o);
    sink_ = apply_opt(sink_, o, !ren_->has_local);
    opts_.push_back(o);
    return *this;
  }
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
        if (lanes > 1) add(OptOp::VECTOR, id, {lanes, lanes / 2});
        if (ren_->has_local) add(OptOp::GROUP, id, {8, 16, 32, 64, 128, 256});
        if (ren_->has_local) add(OptOp::GROUPTOP, id, {8, 16, 32, 64, 128, 256});
        if (ren_->tensor_cores) for (int64_t a = 0; a < int64_t(std::size(detail::tc_tiles)); a++) cand.push_back({OptOp::TC, id, a});
        if (ren_->tensor_cores) for (int64_t a = 1; a < int64_t(std::size(detail::simt_tiles)); a++) cand.push_back({OptOp::TILE, id, a});
        else add(OptOp::KBLOCK, id, {64, 128, 256, 512});
      } else if (t == AxisType::LOOP) {
        add(OptOp::UPCAST, id, {2, 3, 4, 5, 8});
        if (lanes > 1) add(OptOp::VECTOR, id, {lanes, lanes / 2});
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
    for (auto& o : cand) {
      if (std::find(ok.begin(), ok.end(), o) != ok.end()) continue;
      try { check(o); ok.push_back(o); } catch (const KernelOptError&) {}
    }
    return ok;
  }

 private:
  void check(const Opt& o) const {
    using namespace detail;
    auto fail = [&](const std::string& why) { throw KernelOptError(cat("tinygrad::Kernel: ", o.str(), " on ", kernel_ranges(), ": ", why)); };
    // NOTE: amounts come from files too (BEAM's cache): bounded before any arithmetic on them
    if (o.amt < 0 || o.amt > max_amount) fail(cat("the amount is not in [0, ", max_amount, "]"));
    int count_thread = 0, count_vector = 0, count_locals = 0, nolocals = 0;
    for (auto& p : opts_) {
      count_thread += p.op == OptOp::THREAD;
      count_vector += p.op == OptOp::VECTOR;
      count_locals += uses_locals(p.op);
      nolocals += p.op == OptOp::NOLOCALS;
    }
    bool tc = std::any_of(opts_.begin(), opts_.end(), [](auto& p) { return p.op == OptOp::TC; });
    if (tc && o.op != OptOp::UPCAST && o.op != OptOp::LOCAL && o.op != OptOp::SWAP) fail("after TC a kernel takes only UPCAST, LOCAL and SWAP (the warp's tile layout is fixed)");
    if (o.op != OptOp::SWAP && std::any_of(opts_.begin(), opts_.end(), [](auto& p) { return p.op == OptOp::TILE || (p.op == OptOp::TC && p.amt > 0); }))
      fail("after TILE or a staged TC (amount > 0) a kernel takes only SWAP (the tile shapes the block)");
    if (o.op == OptOp::TC || o.op == OptOp::TILE) {
      bool tile = o.op == OptOp::TILE;
      // NOTE: TILE's copies are cp.async, as the staged TC tiles': NVIDIA sm_80 on, as tensor cores here
      if (!ren_->tensor_cores) fail(tile ? "TILE needs asynchronous copies (CUDA sm_80 on)" : "the device has no tensor cores");
      if (std::any_of(opts_.begin(), opts_.end(), [](auto& p) { return p.op != OptOp::PADTO && p.op != OptOp::MERGE; }))
        fail(cat(tile ? "TILE" : "TC", " comes first (after MERGE and PADTO only)"));
      auto rs = ranges();
      auto it = std::find_if(rs.begin(), rs.end(), [&](auto& x) { return x->range_id() == o.axis; });
      if (it == rs.end() || axis_type(*it) != AxisType::REDUCE) fail(cat(tile ? "TILE" : "TC", " needs a reduce axis"));
      if (tile) {
        if (o.amt < 1 || o.amt >= int64_t(std::size(simt_tiles))) fail(cat("TILE's amount is a tile shape, 1 to ", std::size(simt_tiles) - 1));
        auto found = tc_match(sink_, *it, false, true);
        if (auto* why = std::get_if<std::string>(&found)) fail(*why);
        if (auto why = simt_tile_fits(std::get<TcMatch>(found), (*it)->range_end(), simt_tiles[o.amt]); !why.empty()) fail(why);
        return;
      }
      if (o.amt < 0 || o.amt >= int64_t(std::size(tc_tiles))) fail(cat("TC's amount is a tile shape, 0 to ", std::size(tc_tiles) - 1));
      auto found = tc_match(sink_, *it);
      if (auto* why = std::get_if<std::string>(&found)) fail(*why);
      if (o.amt > 0 && tc_tiles[o.amt].wg && !ren_->wgmma) fail("a wgmma tile needs Hopper's warpgroup MMA (CUDA sm_90a)");
      if (o.amt > 0)
        if (auto why = tc_tile_fits(std::get<TcMatch>(found), (*it)->range_end(), tc_tiles[o.amt]); !why.empty()) fail(why);
      return;
    }
    if (o.op == OptOp::NOLOCALS) {
      if (!ren_->has_local) fail("the device has no workgroups");
      if (nolocals) fail("NOLOCALS is already applied");
      if (count_locals) fail("the kernel already uses LOCAL or GROUP opts");
      return;
    }
    auto rs = ranges();
    auto find = [&](int64_t id) { for (auto& x : rs) if (x->range_id() == id) return x; return UOpRef(); };
    UOpRef r = find(o.axis);
    if (!r) fail("no such axis");
    int64_t n = r->range_end();
    AxisType t = axis_type(r);
    bool reduce = t == AxisType::REDUCE;
    if (o.op == OptOp::SWAP) {
      UOpRef r2 = find(o.amt);
      if (!r2) fail("no axis to swap with");
      if (r2 == r) fail("SWAP needs two different axes");
      if (t != AxisType::LOOP || axis_type(r2) != AxisType::LOOP) fail("SWAP needs two loop axes");
      return;
    }
    if (o.op == OptOp::MERGE) {
      UOpRef r2 = find(o.amt);
      if (!r2) fail("no axis to merge with");
      if (r2 == r) fail("MERGE needs two different axes");
      if (std::any_of(opts_.begin(), opts_.end(), [](auto& p) { return p.op != OptOp::MERGE; })) fail("MERGE comes first (after MERGE only)");
      if (t != axis_type(r2) || (t != AxisType::LOOP && !reduce)) fail("MERGE needs two loop axes or two reduce axes");
      if (r->dtype == DType::Int32 && n * r2->range_end() > (int64_t(1) << 31) - 1) fail(cat("the merged axis's size ", n * r2->range_end(), " is over int32's range"));
      for (auto& u : toposort(sink_))
        if (u->op == Ops::REDUCE && (std::find(u->src.begin() + 1, u->src.end(), r) == u->src.end()) != (std::find(u->src.begin() + 1, u->src.end(), r2) == u->src.end()))
          fail("a reduce runs over one of the two axes only");
      return;
    }
    if (o.op == OptOp::PADTO) {
      if (t != AxisType::LOOP && !reduce) fail("PADTO needs a loop or reduce axis");
      if (o.amt <= 1) fail("the amount must be at least 2");
      if (o.amt - n >= n) fail(cat("padding ", n, " to a multiple of ", o.amt, " would more than double the axis"));
      if (n % o.amt == 0) fail(cat("the axis's size ", n, " is already a multiple"));
      int64_t padded = (n + o.amt - 1) / o.amt * o.amt;
      if (padded >= 2 * n) fail(cat("padding ", n, " to ", padded, " would more than double the axis"));
      return;
    }
    if (o.amt <= 1 || n % o.amt != 0) fail(cat("the amount does not divide the axis's size ", n));
    if (o.op == OptOp::KBLOCK) {
      if (ren_->has_local) fail("KBLOCK blocks for CPU caches; a GPU kernel uses GROUP");
      if (!reduce) fail("KBLOCK needs a reduce axis");
      if (o.amt == n) fail("the block is the whole axis");
      if (std::any_of(opts_.begin(), opts_.end(), [](auto& p) { return p.op == OptOp::KBLOCK; })) fail("the kernel already has a KBLOCK");
      auto found = kblock_reduces(sink_, r);
      if (auto* why = std::get_if<std::string>(&found)) fail(*why);
      return;
    }
    bool group_op = o.op == OptOp::GROUP || o.op == OptOp::GROUPTOP;
    if (o.op != OptOp::VECTOR && (o.op == OptOp::UNROLL || group_op) != reduce) fail(reduce ? "a reduce axis takes UNROLL, VECTOR or GROUP (or GROUPTOP)" : "UNROLL and GROUP need a reduce axis");
    if (!reduce && t != AxisType::LOOP) fail("the axis is no longer a loop");
    switch (o.op) {
      case OptOp::THREAD:
        if (ren_->has_local || ren_->threads <= 1) fail("the device has no CPU threads");
        if (o.amt > ren_->threads) fail(cat("more threads than the device's ", ren_->threads));
        if (count_thread) fail("the kernel is already split over threads");
        break;
      case OptOp::LOCAL: case OptOp::GROUP: case OptOp::GROUPTOP: {
        if (!ren_->has_local) fail("the device has no workgroups");
        if (nolocals) fail("NOLOCALS was applied: the kernel uses no workgroups");
        if (workgroup() * o.amt > ren_->max_threads) fail(cat("a workgroup of ", workgroup() * o.amt, " threads is over the device's ", ren_->max_threads));
        break;
      }
      case OptOp::VECTOR: {
        if (count_vector) fail("the kernel already has vector lanes");
        // the lanes hold outputs (a store walks the axis) or, on a reduce axis, accumulators (CPU only: a GPU
        // thread's GROUP shares would need a slot per lane)
        DType dt = sink_->src[0]->src[1]->dtype;
        if (reduce) {
          if (ren_->has_local) fail("a GPU kernel takes vector lanes on an output axis");
          auto topo = toposort(sink_);
          auto red = std::find_if(topo.begin(), topo.end(), [&](auto& u) { return u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), r) != u->src.end(); });
          if (red == topo.end()) fail("no reduce runs over the axis");
          dt = (*red)->dtype;
          for (auto& u : topo)
            if (u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), r) != u->src.end() && u->dtype != dt) fail("the reduces over the axis have different dtypes");
        } else {
          for (auto& st : sink_->src) {
            if (st->src[1]->dtype != dt) fail("the stores have different dtypes");
            if (stride_class(st->src[0]->src[1], r) != 1) fail("a store does not walk the axis contiguously");
          }
        }
        int64_t lanes = ren_->vector_lanes(dt);
        if (lanes <= 1 || (o.amt != lanes && o.amt * 2 != lanes)) fail(cat("the device's vectors of ", to_string(dt), " have ", lanes, " lanes"));
        for (auto& u : toposort(sink_))
          if (u->op == Ops::LOAD && (stride_class(u->src[0]->src[1], r) == 2 || itemsize(u->src[0]->dtype) != itemsize(dt)))
            fail("a load walks the axis with a stride, or has another element size");
        [[fallthrough]];
      }
      case OptOp::UPCAST: case OptOp::UNROLL:
        if (expand() * o.amt > max_expand) fail(cat("the register expansion ", expand() * o.amt, " is over ", max_expand));
        break;
      default: break;
    }
  }
  std::string kernel_ranges() const {
    std::string s;
    for (auto& r : ranges()) s += cat(s.empty() ? "" : " ", r->range_id(), ":", r->range_end(), detail::axis_type(r) == AxisType::REDUCE ? "r" : "");
    return "[" + s + "]";
  }
  UOpRef ast_, sink_;
  const Renderer* ren_;
  std::vector<Opt> opts_;
};

// the hand-written heuristic for GPUs: the store's contiguous axis on local x (coalesced), an 8x32 workgroup
// of 8x4 register tiles for reduces whose loads are reused (matmul, conv: 27 TFLOP/s at 4096 on an H100)
inline std::vector<Opt> gpu_optimizations(const UOpRef& sink, const Renderer& ren) {
  using namespace detail;
  std::vector<Opt> opts;
  std::vector<UOpRef> loads, stores, out_rngs, red_rngs;
  int64_t reduce_size = 1, total = 1;
  auto topo = toposort(sink);
  for (auto& u : topo) {
    if (u->op == Ops::LOAD) loads.push_back(u->src[0]);
    if (u->op == Ops::STORE) stores.push_back(u->src[0]);
  }
  int64_t n_reduces = int64_t(reduce_loops(topo).size());  // reduces over the same ranges (a multi-output kernel's) run as one
  for (auto& r : ranges_of(sink)) {
    if (axis_type(r) == AxisType::REDUCE) { reduce_size *= r->range_end(); red_rngs.push_back(r); }
    else { total *= r->range_end(); out_rngs.push_back(r); }
  }
  if (!one_address(stores)) return opts;
  // tensor cores: a float16/bfloat16 matmul-shaped reduce; 2 x 2 warps a block (they share A's and B's tiles through
  // L1), each warp a tile of up to 4 x 4 mma tiles (64 x 32 outputs: A's fragments serve 4 column tiles, B's 4 rows)
  // (sizes that are not tile multiples are padded first: PADTO m to 16, n to 8, K to 16, where that does not double them)
  // float32 GEMMs (TF32 not allowed) on a device with cp.async: a block tile staged in workgroup memory (TILE) where
  // one divides the sizes (m and n padded to 64, K to 16, where that does not double them) and leaves 16 blocks or
  // more. 64 x 64 (8 x 8 threads, 16 of K a step) was the fastest on an H100 at 1024 (23.5 TFLOP/s) and 4096 (43.2),
  // next to 128 x 128 with 16 of K (15.8, 43.6)
  // implicit GEMMs (convs) have their reduce ranges and their rows merged first (gemm_merges): TILE and TC below see one
  // reduce axis, one axis of A and one of B; where neither applies, the kernel is optimized unmerged
  Kernel base(sink, ren);
  if (ren.tensor_cores) try { for (auto& o : gemm_merges(sink)) base.apply(o); } catch (const KernelOptError&) { base = Kernel(sink, ren); }
  UOpRef gsink = base.sink();
  std::vector<UOpRef> gred;
  for (auto& r : ranges_of(gsink)) if (axis_type(r) == AxisType::REDUCE) gred.push_back(r);
  // the blocks a tile of bm x bn leaves: the other loop axes (a batch) multiply them
  auto blocks_of = [&](const Kernel& k, const TcMatch& f, int64_t bm, int64_t bn) {
    int64_t b = f.m->range_end() / bm * (f.n->range_end() / bn);
    for (auto& r : ranges_of(k.sink())) if (axis_type(r) == AxisType::LOOP && r != f.m && r != f.n) b *= r->range_end();
    return b;
  };
  if (ren.tensor_cores && gred.size() == 1 && flags().tile != 0 && !flags().tf32) {
    Kernel k = base;
    auto loose = tc_match(gsink, gred[0], false, true);
    if (auto* l = std::get_if<TcMatch>(&loose)) {
      for (auto [r, tile] : {std::pair{l->m, int64_t(64)}, std::pair{l->n, int64_t(64)}, std::pair{gred[0], int64_t(16)}})
        if (r->range_end() % tile) try { k.apply({OptOp::PADTO, r->range_id(), tile}); } catch (const KernelOptError&) {}
      UOpRef rr = find_range(k.sink(), gred[0]->range_id());
      auto found = tc_match(k.sink(), rr, false, true);
      // NOTE: 256 x 32, 128 x 32 and 64 x 32 for 32 columns (a conv's 32 channels): padding them to 64 would double
      // them. 256 x 32 gives each thread 8 x 8 outputs, as 64 x 64 does: on an H100 a 32 -> 32 5x5 conv's forward
      // (batch 512) took 396 us, its input gradient 516 us, against 416 and 596 with 128 x 32's 8 x 4
      if (auto* f = std::get_if<TcMatch>(&found))
        for (int64_t a : flags().tile > 0 ? std::vector<int64_t>{flags().tile} : std::vector<int64_t>{5, 2, 10, 8, 9}) {
          if (a >= int64_t(std::size(simt_tiles))) break;
          const SimtTile& t = simt_tiles[a];
          if (simt_tile_fits(*f, rr->range_end(), t).empty() && (blocks_of(k, *f, t.ty * t.tm, t.tx * t.tn) >= 16 || flags().tile > 0))
            return k.apply({OptOp::TILE, rr->range_id(), a}).applied();
        }
    }
  }
  if (ren.tensor_cores && gred.size() == 1) {
    Kernel k = base;
    try {
      auto loose = tc_match(gsink, gred[0], false);
      int stage = flags().tc_stage;
      // staged tiles want m and n in multiples of 64 and K of 32; the warp tile m of 16, n of 8, K of 16 (8 for TF32)
      if (auto* l = std::get_if<TcMatch>(&loose)) {
        bool staged = stage != 0 && l->dt != DType::Float32;
        for (auto [r, small, big] : {std::tuple{l->m, int64_t(16), int64_t(64)}, std::tuple{l->n, int64_t(8), int64_t(64)}, std::tuple{gred[0], tc_k(l->dt), int64_t(32)}})
          for (int64_t tile : {staged ? big : small, small})
            if (r->range_end() % tile != 0) try { k.apply({OptOp::PADTO, r->range_id(), tile}); break; } catch (const KernelOptError&) {}
      }
      UOpRef rr = find_range(k.sink(), gred[0]->range_id()), pre = k.sink();
      // a tile staged in workgroup memory where one divides the sizes and leaves 32 blocks or more, the largest first:
      // on Hopper the wgmma tiles, 128 x 256 (one block an SM) where that leaves 1024 blocks, else 128 x 128 (two an SM);
      // H100, float16 GEMM 4096: 441 TFLOP/s with 128 x 128 (405 with 128 x 256), 8192: 521 with 128 x 256 (510).
      // Else 128 x 128 in 4 warps of 64 x 64, 4 stages, was the fastest mma.sync tile (4096: 326 TFLOP/s, 8192: 385)
      auto found = tc_match(pre, rr);
      if (auto* f = std::get_if<TcMatch>(&found); f && stage != 0)
        for (int64_t a : stage > 0 ? std::vector<int64_t>{stage} : std::vector<int64_t>{15, 14, 10, 2, 3, 4}) {
          if (a >= int64_t(std::size(tc_tiles))) break;
          const TcTile& t = tc_tiles[a];
          if (t.wg && !ren.wgmma) continue;
          int64_t enough = t.wg && t.tn == 32 ? 1024 : 32;
          if (tc_tile_fits(*f, rr->range_end(), t).empty() && (blocks_of(k, *f, t.wm * t.tm * 16, t.wn * t.tn * 8) >= enough || a == 4 || stage > 0))
            return k.apply({OptOp::TC, rr->range_id(), a}).applied();
        }
      k.apply({OptOp::TC, rr->range_id(), 0});
      auto tm = std::get<TcMatch>(tc_match(pre, rr));
      std::pair<int64_t, int64_t> axes[] = {{tm.m->range_id(), tm.m->range_end() / 16}, {tm.n->range_id(), tm.n->range_end() / 8}};
      auto& [m, ms] = axes[0];
      auto& [n, ns] = axes[1];
      for (auto& [ax, size] : axes) if (size % 2 == 0 && size >= 8) { k.apply({OptOp::LOCAL, ax, 2}); size /= 2; }
      for (auto& [ax, size] : axes)
        for (int64_t a : {4, 2}) if (size % a == 0) { k.apply({OptOp::UPCAST, ax, a}); size /= a; break; }
      // BEAM=2's pick for a 4096 float16 GEMM on an H100 (67 -> 110 TFLOP/s): 8 column tiles a warp, 4 x 2 warps
      if (ns % 2 == 0) { k.apply({OptOp::UPCAST, n, 2}); ns /= 2; }
      if (ms % 2 == 0 && ms >= 8) k.apply({OptOp::LOCAL, m, 2});
      return k.applied();
    } catch (const KernelOptError&) {}
  }
  // few outputs, each a long reduce: the threads of a workgroup share one output's reduce (GROUP), on the innermost
  // reduce axis that a group size divides, else on all reduce axes merged into one (MERGE, first): a conv's bias
  // gradient over 2x24x24 pixels a partial ran as 8192 threads, each reading its 1152 values alone (315 us on an H100)
  std::vector<Opt> group, merged;
  if (n_reduces == 1 && total <= 16384 && reduce_size >= 256) {
    for (auto it = red_rngs.rbegin(); it != red_rngs.rend() && group.empty(); ++it)
      for (int64_t a : {64, 32, 16}) if ((*it)->range_end() % a == 0) { group.push_back({OptOp::GROUP, (*it)->range_id(), a}); break; }
    if (group.empty() && red_rngs.size() > 1)
      for (int64_t a : {64, 32, 16})
        if (reduce_size % a == 0) {
          merged = merges_into_first(red_rngs);
          group.push_back({OptOp::GROUP, red_rngs[0]->range_id(), a});
          break;
        }
  }
  if (out_rngs.empty()) {
    merged.insert(merged.end(), group.begin(), group.end());
    return merged;
  }
  std::unordered_map<int64_t, int64_t> left;
  for (auto& r : out_rngs) left[r->range_id()] = r->range_end();
  auto try_opt = [&](OptOp op, const UOpRef& r, std::initializer_list<int64_t> amts) {
    for (int64_t a : amts) if (left[r->range_id()] % a == 0) { opts.push_back({op, r->range_id(), a}); left[r->range_id()] /= a; return a; }
    return int64_t(1);
  };
  // x: the innermost output axis the store walks contiguously, else the innermost
  UOpRef x = out_rngs.back();
  for (auto it = out_rngs.rbegin(); it != out_rngs.rend(); ++it) if (stride_class(stores[0]->src[1], *it) == 1) { x = *it; break; }
  // y: another output axis that some load does not depend on (register tiles reuse its data). Only loads that vary
  // with some output axis count (a bias read along the reduce is the same for every output, no operand to reuse),
  // and only where the tiles (8 x 32 threads of 4 x 4 outputs) leave at least 32 workgroups: a LayerNorm's mean over
  // 4096 tokens had run as one workgroup of 256 threads (3.8 ms; MiniLM on an H100 spent 90% of its time there)
  auto operand = [&](const UOpRef& idx) { return std::any_of(out_rngs.begin(), out_rngs.end(), [&](auto& r) { return stride_class(idx->src[1], r) != 0; }); };
  UOpRef y;
  bool reuse_x = false;
  for (auto& l : loads) reuse_x |= operand(l) && stride_class(l->src[1], x) == 0;
  if (reduce_size >= 16 && reuse_x && total >= 32 * 4096)
    for (auto it = out_rngs.rbegin(); it != out_rngs.rend() && !y; ++it)
      for (auto& l : loads) if (*it != x && operand(l) && stride_class(l->src[1], *it) == 0 && (*it)->range_end() >= 16) { y = *it; break; }
  if (y) {
    // NOTE: LOCAL first, then UPCAST of the outer part: neighbouring threads keep neighbouring addresses
    try_opt(OptOp::LOCAL, y, {8, 4, 2});
    try_opt(OptOp::LOCAL, x, {32, 16, 8, 4, 2});
    try_opt(OptOp::UPCAST, y, {8, 4, 2});
    try_opt(OptOp::UPCAST, x, {4, 2});
    return opts;
  }
  // a sliding window (a conv's input gradient into one channel): a load reads x + j for an output axis x and a short
  // reduce axis j (moving one along x reads what moving one along j does). j unrolled and 4 neighbouring x a thread
  // (2 along a second such pair) share their loads: 8 reads for 4 outputs of a 5-tap row, not 20. The conv of the
  // Fashion-MNIST example's 1-channel input gradient: 362 us on an H100, one output a thread
  std::vector<Opt> window;
  if (n_reduces == 1 && reduce_size > 1) {
    int64_t expand = 1;
    std::unordered_set<const UOp*> used;
    for (auto& l : loads)
      for (auto it = out_rngs.rbegin(); it != out_rngs.rend(); ++it) {
        const UOpRef& r = *it;
        int64_t up = window.empty() ? 4 : 2;
        for (auto& t : red_rngs) {
          if (used.count(r.get()) || used.count(t.get()) || t->range_end() > 8 || left[r->range_id()] % up || expand * up * t->range_end() > Kernel::max_expand) continue;
          if (stride_class(l->src[1], r) == 0 || !simplify(sub_range(l->src[1], r, r + 1) - sub_range(l->src[1], t, t + 1))->is_const(0)) continue;
          window.push_back({OptOp::UNROLL, t->range_id(), t->range_end()});
          window.push_back({OptOp::UPCAST, r->range_id(), up});
          used.insert(r.get()), used.insert(t.get());
          expand *= up * t->range_end();
          left[r->range_id()] /= up;
        }
      }
  }
  // a big elementwise kernel whose contiguous axis is short (a padded 28 x 28 image): a warp would write a few pixels
  // of each of several rows. The outer axes the stores walk contiguously are merged into it (MERGE) until 256 threads
  // fit along it (a conv gradient's padded input, 512x32x28x28)
  auto pow2 = [](int64_t v) { return v & -v; };
  if (reduce_size == 1 && total >= (1 << 16) && x == out_rngs.back() && pow2(x->range_end()) < 256) {
    Kernel k(sink, ren);
    int64_t inner = x->range_id(), size = x->range_end();
    for (auto it = out_rngs.rbegin() + 1; it != out_rngs.rend() && pow2(size) < 256; ++it) {
      Kernel t = k;
      try { t.apply({OptOp::MERGE, (*it)->range_id(), inner}); } catch (const KernelOptError&) { break; }
      UOpRef joined = find_range(t.sink(), (*it)->range_id());
      if (!std::all_of(t.sink()->src.begin(), t.sink()->src.end(), [&](auto& st) { return stride_class(st->src[0]->src[1], joined) == 1; })) break;
      k = t, inner = joined->range_id(), size = joined->range_end();
    }
    if (!k.applied().empty()) {
      std::vector<Opt> merges = k.applied(), rest = gpu_optimizations(k.sink(), ren);
      merges.insert(merges.end(), rest.begin(), rest.end());
      return merges;
    }
  }
  // elementwise and plain reduces: up to 256 threads a workgroup, x's local created last (local dim 0)
  int64_t budget = std::min<int64_t>(256, ren.max_threads);
  for (auto& g : group) budget /= g.amt;
  // elementwise: 4 contiguous elements a thread as one vector load/store when every load is contiguous or
  // constant along x, else 4 elements 256 apart (UPCAST): both coalesced (1.0x memcpy on an H100, 0.79x with 1)
  DType out_dt = sink->src[0]->src[1]->dtype;
  bool big = reduce_size == 1 && total >= (1 << 16);
  bool vec = big && left[x->range_id()] % 4 == 0 && ren.vector_lanes(out_dt) == 4 && stride_class(stores[0]->src[1], x) == 1;
  for (auto& l : loads) vec = vec && stride_class(l->src[1], x) != 2 && itemsize(l->src[0]->dtype) == 4;
  if (vec) left[x->range_id()] /= 4;
  std::vector<UOpRef> order{x};
  for (auto it = out_rngs.rbegin(); it != out_rngs.rend(); ++it) if (*it != x) order.push_back(*it);
  std::vector<Opt> locals;
  for (auto& r : order) {
    if (budget <= 1) break;
    // a sliding window's axes whole where they fit (28 / 4 = 7 threads along a row): neighbouring threads, neighbouring
    // pixels of one image
    int64_t rest = left[r->range_id()];
    if (std::any_of(window.begin(), window.end(), [&](auto& o) { return o.op == OptOp::UPCAST && o.axis == r->range_id(); }) && rest > 1 && rest <= budget) {
      locals.insert(locals.begin(), {OptOp::LOCAL, r->range_id(), rest});
      left[r->range_id()] = 1, budget /= rest;
      continue;
    }
    for (int64_t a = budget; a > 1; a /= 2)
      if (left[r->range_id()] % a == 0) { locals.insert(locals.begin(), {OptOp::LOCAL, r->range_id(), a}); left[r->range_id()] /= a; budget /= a; break; }
  }
  locals.insert(locals.end(), group.begin(), group.end());
  if (vec) locals.insert(locals.begin(), {OptOp::VECTOR, x->range_id(), 4});
  else if (big && left[x->range_id()] % 4 == 0) locals.push_back({OptOp::UPCAST, x->range_id(), 4});
  locals.insert(locals.begin(), window.begin(), window.end());
  locals.insert(locals.begin(), merged.begin(), merged.end());
  return locals;
}

// the hand-written heuristic for the CPU (C renderer)
inline std::vector<Opt> hand_coded_optimizations(const UOpRef& sink, const Renderer& ren) {
  using namespace detail;
  if (ren.has_local) return gpu_optimizations(sink, ren);
  std::vector<Opt> opts;
  auto topo = toposort(sink);
  std::vector<UOpRef> loads, stores;
  for (auto& u : topo) {
    if (u->op == Ops::LOAD) loads.push_back(u->src[0]);
    if (u->op == Ops::STORE) stores.push_back(u->src[0]);
  }
  auto loops = reduce_loops(topo);
  bool has_reduce = !loops.empty();
  if (!one_address(stores)) return opts;
  // reduce loops one after another in a multi-output kernel (not one inside another, a conv under a max-pool): each
  // unrolled, as register tiles are for one loop
  bool nested = false;
  for (auto& u : topo) {
    if (u->op != Ops::REDUCE) continue;
    std::vector<const UOp*> todo{u->src[0].get()};
    std::unordered_set<const UOp*> seen;
    while (!todo.empty() && !nested) {
      const UOp* x = todo.back();
      todo.pop_back();
      if (!seen.insert(x).second || x->op == Ops::REDUCE) continue;  // NOTE: another reduce's ranges are its own
      if (x->op == Ops::RANGE && axis_type(x) == AxisType::REDUCE && std::none_of(u->src.begin() + 1, u->src.end(), [&](auto& r) { return r.get() == x; })) nested = true;
      for (auto& s : x->src) todo.push_back(s.get());
    }
  }
  if (stores.size() > 1 && loops.size() > 1 && !nested) {
    int64_t expand = 1;
    for (auto& [rs, inner] : loops)
      if (inner->range_end() % 4 == 0 && inner->range_end() > 4 && expand * 4 <= Kernel::max_expand) { opts.push_back({OptOp::UNROLL, inner->range_id(), 4}); expand *= 4; }
    has_reduce = false;  // NOTE: only the threads below
  }
  DType out_dt = sink->src[0]->src[1]->dtype;
  auto rngs = ranges_of(sink);
  std::vector<UOpRef> out_rngs, red_rngs;
  for (auto& r : rngs) (axis_type(r) == AxisType::REDUCE ? red_rngs : out_rngs).push_back(r);
  auto addr = [](const UOpRef& index) { return index->src[1]; };
  int64_t lanes = ren.vector_lanes(out_dt);
  int64_t reduce_size = 1;
  for (auto& r : red_rngs) reduce_size *= r->range_end();
  std::unordered_map<int64_t, int64_t> left;  // range id -> size left after opts
  for (auto& r : rngs) left[r->range_id()] = r->range_end();

  // vector lanes on the output axis the store walks contiguously, when every load is contiguous or constant along it
  UOpRef vaxis;
  if (lanes > 1) {
    for (auto it = out_rngs.rbegin(); it != out_rngs.rend() && !vaxis; ++it) {
      auto& r = *it;
      // NOTE: half-width vectors when full ones do not divide the axis (a 20-wide conv output)
      int64_t n = r->range_end(), amt = n % lanes == 0 ? lanes : has_reduce && lanes >= 8 && n % (lanes / 2) == 0 ? lanes / 2 : 0;
      if (!amt || stride_class(addr(stores[0]), r) != 1) continue;
      bool ok = true;
      for (auto& l : loads) ok &= stride_class(addr(l), r) != 2 && itemsize(l->src[0]->dtype) == itemsize(out_dt);
      if (ok) { vaxis = r; lanes = amt; }
    }
  }
  if (vaxis) { opts.push_back({OptOp::VECTOR, vaxis->range_id(), lanes}); left[vaxis->range_id()] /= lanes; }
  // else the lanes on the innermost reduce axis, when every load walks it contiguously or not at all (x @ W.T, where
  // both operands are contiguous along K; a row's sum): vector loads of both operands, one vector accumulator per
  // output of the register tile, its lanes added after the loop. x @ W.T (4096x384 @ 384x1536), 2 Zen 4 threads: 28 -> 171
  // GFLOP/s (Eigen's A * B.transpose(): 151)
  UOpRef raxis;
  if (!vaxis && lanes > 1 && has_reduce && loops.size() == 1 && !nested) {
    const UOpRef& r = red_rngs.back();
    bool ok = r->range_end() % lanes == 0 && r->range_end() >= 2 * lanes, any = false;
    for (auto& u : topo) ok &= u->op != Ops::REDUCE || u->dtype == out_dt;
    for (auto& l : loads) {
      int c = stride_class(addr(l), r);
      ok &= c != 2 && itemsize(l->src[0]->dtype) == itemsize(out_dt);
      any |= c == 1;
    }
    if (ok && any) { raxis = r; opts.push_back({OptOp::VECTOR, r->range_id(), lanes}); left[r->range_id()] /= lanes; }
  }
  if (has_reduce && reduce_size >= 16) {
    // register tile: upcast output axes some load does not depend on (its value is reused across the tile), the
    // second one that reuses a load the first does not (a conv: images x channels), while the accumulators
    // fit the vector registers (BEAM's picks on AVX-512: 8 x 32 floats for convs and matmuls, 32 x 4 for 20-wide
    // convs), or one scalar a register without vectors; there the store's contiguous axis first when every load walks
    // it contiguously or not at all (a 10-wide conv: 5 neighbouring outputs x 4 channels, 2.3x faster than images x
    // channels: the compiler vectorizes the neighbours)
    // (lanes on the reduce axis: a vector register an accumulator, half of them: the loads take the others)
    const int64_t max_acc = vaxis ? lanes * ren.vector_registers : raxis ? ren.vector_registers / 2 : ren.vector_registers;
    int64_t acc = vaxis ? lanes : 1, tile_axis = -1;  // tile_axis: the first upcast axis
    int upcasted = 0;
    std::vector<bool> reused(loads.size());
    for (int pass = 0; pass < 2; pass++) {
      UOpRef best;
      int64_t best_amt = 0, best_new = 0;
      // NOTE: axes under 8 (a filter window's) only where no larger one qualifies, and next to a first axis only when
      // that one is whole in registers: upcasting a 5-wide window beside channels reloads the input per row (3.5x slower)
      for (bool small : {false, true}) {
        if (best || (small && pass > 0 && left[tile_axis] != 1)) break;
        for (auto& r : out_rngs) {
          if (r == vaxis || left[r->range_id()] != r->range_end() || (r->range_end() < 8) != small) continue;
          int64_t fresh = 0, any = 0;
          for (size_t i = 0; i < loads.size(); i++) if (stride_class(addr(loads[i]), r) == 0) { any++; fresh += !reused[i]; }
          if (!any || (pass > 0 && !fresh && !small)) continue;
          bool row = !vaxis && pass == 0 && stride_class(addr(stores[0]), r) == 1;
          for (auto& l : loads) row = row && stride_class(addr(l), r) != 2;
          int64_t score = fresh + (row ? 1000 : 0);
          for (int64_t amt : {4, 3, 5, 2})
            if (left[r->range_id()] % amt == 0 && acc * amt <= max_acc) {
              if (!best || score > best_new) { best = r; best_amt = amt; best_new = score; }
              break;
            }
        }
      }
      if (!best) break;
      for (size_t i = 0; i < loads.size(); i++) reused[i] = reused[i] || stride_class(addr(loads[i]), best) == 0;
      opts.push_back({OptOp::UPCAST, best->range_id(), best_amt});
      left[best->range_id()] /= best_amt;
      acc *= best_amt;
      if (tile_axis < 0) tile_axis = best->range_id();
      upcasted++;
    }
    // the scalar tile's contiguous axis innermost: its neighbours sit in neighbouring registers (1.6x for a 10-wide conv)
    if (!vaxis && upcasted == 2 && stride_class(addr(stores[0]), find_range(sink, opts.end()[-2].axis)) == 1)
      std::swap(opts.end()[-2], opts.end()[-1]);
    auto room = [&] {  // some axis is left to split over the cores
      bool ok = ren.threads <= 1;
      for (auto& r : out_rngs) ok = ok || left[r->range_id()] % ren.threads == 0;
      return ok;
    };
    // twice the tile along an axis, while the accumulators stay within cap and some axis is left to split over the cores
    auto grow = [&](int64_t axis, int64_t cap) {
      if (acc * 2 > cap || left[axis] % 2 != 0) return;
      left[axis] /= 2;
      if (!room()) { left[axis] *= 2; return; }
      opts.push_back({OptOp::UPCAST, axis, 2});
      acc *= 2;
    };
    // up to 128 floats (BEAM's pick for 1024 matmuls: 8 x 16; a conv's input gradient is 1.3x slower at 256) and
    // never past the registers (with AVX2, 128 floats of a half-width tile are 32 float4 accumulators in 16 registers:
    // a 20-wide conv spilled, 1.6x slower); a very long reduce (a weight gradient over a batch) up to the registers
    // (BEAM: 8 x 32, 1.9x faster for 32x32x5x5)
    const int64_t tile_cap = std::min<int64_t>(128, max_acc);
    if (vaxis && upcasted) grow(vaxis->range_id(), tile_cap);
    if (vaxis && upcasted && reduce_size >= 256) grow(tile_axis, tile_cap);
    if (vaxis && upcasted && reduce_size >= 16384) grow(vaxis->range_id(), max_acc);
    // a tile that takes every vector register leaves none for the loads and spills (AVX2's 16: a 1024 matmul's 8 x 16
    // floats, 16 float8 accumulators). The tile axis then takes as many steps as leave 4 registers free, padded where
    // they do not divide it (its padded steps recompute the last one, unstored): 6 x 16, 12 accumulators, as Eigen's
    // AVX2 kernel keeps. bench_core's 1024 matmul on an AVX2 EPYC, one thread: 27-35 -> 47-49 GFLOP/s (Eigen 59-61)
    if (vaxis && upcasted && acc / lanes >= ren.vector_registers) {
      int64_t u = 1, n = find_range(sink, tile_axis)->range_end();
      for (auto& o : opts) if (o.op == OptOp::UPCAST && o.axis == tile_axis) u *= o.amt;
      int64_t step = acc / u, fit = (ren.vector_registers - 4) * lanes / step;  // floats a step of the tile axis
      if (fit > u / 2 && fit < u) {
        int64_t was = std::exchange(left[tile_axis], (n + fit - 1) / fit);
        if (!room()) {
          left[tile_axis] = was;
        } else {
          auto first = std::find_if(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == OptOp::UPCAST && o.axis == tile_axis; });
          *first = {OptOp::UPCAST, tile_axis, fit};
          opts.erase(std::remove_if(first + 1, opts.end(), [&](const Opt& o) { return o.op == OptOp::UPCAST && o.axis == tile_axis; }), opts.end());
          if (n % fit) opts.insert(first, {OptOp::PADTO, tile_axis, fit});
          acc = step * fit;
        }
      }
    }
    // K blocks: a register tile over a long reduce streams the operand it reuses (a matmul's B) from L3 or memory once
    // per tile. When the loads span more than a core's L2, block the outermost reduce axis into the smallest blocks
    // whose inner loop still runs >= 256 steps (shorter streams defeat the prefetcher): a block then stays in cache
    // while every tile passes over it. On a Zen 4, one thread: matmul 2048 38 -> 81 GFLOP/s (blocks of 256; 128 the
    // same, 32 1.4x slower), 512 91 -> 97; a conv's weight gradient, 2 threads, 47 -> 92 (blocks of 2 images x 400)
    if (vaxis && upcasted && kblock_reduces(sink, red_rngs[0]).index() == 0) {
      double span = 0;
      for (auto& l : loads) span += double(addr(l)->vmax - addr(l)->vmin + 1) * double(itemsize(l->src[0]->dtype));
      int64_t n = red_rngs[0]->range_end(), inner = reduce_size / n, kc = 2;
      while (kc * inner < 256 && kc < n) kc *= 2;
      if (span > double(2 << 20) && kc < n && n % kc == 0) opts.push_back({OptOp::KBLOCK, red_rngs[0]->range_id(), kc});
    }
    if (!vaxis && !upcasted && !red_rngs.empty()) {
      auto& rr = red_rngs.back();
      int64_t n = left[rr->range_id()];
      for (int64_t amt : {4, 2}) if (n % amt == 0 && n > amt) { opts.push_back({OptOp::UNROLL, rr->range_id(), amt}); break; }
    }
  }
  // threads: split the outermost loop axis that divides, when each core gets enough work
  int th = ren.threads;
  int64_t work = reduce_size;
  for (auto& r : out_rngs) work *= r->range_end();
  for (; th > 1 && work / th < (1 << 16); th--) {}
  if (th > 1) {
    for (auto& r : out_rngs) {
      int64_t n = left[r->range_id()];
      if (n % th == 0 && n >= th) { opts.insert(opts.begin(), {OptOp::THREAD, r->range_id(), th}); break; }
    }
  }
  return opts;
}

}  // namespace tinygrad
