#pragma once
// the GEMM recipes of the TC and TILE opts: matching a kernel's reduce as a matmul (tc_match, gemm_merges), the tile
// shapes, and the staging of a block's tiles in workgroup memory (tc_stage, simt_stage) or a warp's fragments (tc_warp)
#include "ranges.hpp"

namespace tinygrad::detail {

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
  auto peel = [](UOpRef x) {
    return x->op == Ops::CAST && (x->src[0]->dtype == DType::Float16 || x->src[0]->dtype == DType::BFloat16) ? x->src[0] : x;
  };
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
  // a symbolic output axis (its extent e in src[0]): its operand is 0 past e, so a tile's copies read nothing there
  for (auto [x, ax] : {std::pair{&t.a, t.m}, std::pair{&t.b, t.n}})
    if (!ax->src.empty()) *x = alu(Ops::WHERE, {alu(Ops::CMPLT, {ax, ax->src[0]}), *x, const_uop(t.dt, 0)});
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
// tiles each, bk of K a step, `stages` steps' tiles held at once (cp.async copies, ldmatrix fragment loads). The mma
// tiles take up to 96 KB of workgroup memory (every GPU with tensor cores, sm_80 on, gives a block 99 KB or more), the
// wgmma ones up to 192 KB (Hopper: 227 KB).
// wg: Hopper's warpgroup MMA (wgmma, sm_90a): each 4 warps of the wm (a warpgroup) multiply a 64-row slice of A by the
// whole tile of B straight from workgroup memory, 64 of K a step; a warp's rows are 16 of the slice, its tn mma tiles
// of 16 x 8 the n of the block (the accumulator layout of wgmma's m64nNk16 is that of tn m16n8 tiles side by side)
struct TcTile { int64_t wm, wn, tm, tn, bk, stages; bool wg = false; };
inline constexpr TcTile tc_tiles[] = {{0, 0, 0, 0, 0, 0},   {2, 2, 4, 8, 32, 3}, {2, 2, 4, 4, 32, 3}, {2, 2, 2, 8, 32, 3},
                                      {2, 2, 2, 4, 32, 3},  {2, 4, 4, 4, 32, 3}, {4, 2, 2, 8, 32, 3}, {2, 2, 2, 4, 64, 3},
                                      {2, 4, 4, 8, 32, 3},  {4, 2, 4, 8, 32, 3}, {2, 2, 4, 8, 32, 4}, {2, 4, 4, 8, 32, 4},
                                      {2, 2, 4, 8, 64, 3},  {2, 2, 4, 8, 32, 5}, {8, 1, 1, 16, 64, 3, true}, {8, 1, 1, 32, 64, 3, true},
                                      {4, 1, 1, 32, 64, 4, true}, {8, 1, 1, 16, 64, 4, true}, {4, 1, 1, 16, 64, 3, true}, {8, 1, 1, 32, 64, 4, true},
                                      {16, 1, 1, 16, 64, 4, true}, {4, 1, 1, 16, 64, 4, true}, {4, 1, 1, 8, 64, 4, true}};
// the K of a tile's step: a wgmma step is a 128-byte row of K (64 halves; TF32: 32 floats)
inline int64_t tile_bk(const TcTile& t, DType dt) { return t.wg ? 128 / itemsize(dt) : t.bk; }
// the tiles of t along axis x: a symbolic dim's cover its bound (its extent is a call's value: the copies past it read
// nothing and the stores past it are gated, whether or not the bound is a multiple of t)
inline int64_t tiles_of(const UOpRef& x, int64_t t) { return (x->range_end() + (x->src.empty() ? 0 : t - 1)) / t; }
inline std::string tile_fits(const TcMatch& tm, const UOpRef& r, int64_t bm, int64_t bn, int64_t bk) {
  auto divides = [](const UOpRef& x, int64_t t) { return !x->src.empty() || x->range_end() % t == 0; };
  if (divides(tm.m, bm) && divides(tm.n, bn) && divides(r, bk)) return "";
  return cat("the tile ", bm, "x", bn, "x", bk, " does not divide ", tm.m->range_end(), "x", tm.n->range_end(), "x", r->range_end());
}
inline std::string tc_tile_fits(const TcMatch& tm, const UOpRef& r, const TcTile& t) {  // "" where tile t fits the match
  if (tm.dt == DType::Float32 && !t.wg) return "an mma.sync staged tile takes float16 or bfloat16 operands (TF32: TC 0 or a wgmma tile)";
  if (t.wg && (t.wm % 4 || t.wn != 1 || t.tm != 1 || t.bk != 64)) return "a wgmma tile is warpgroups of 4 warps along m, 128 bytes of K a step";
  return tile_fits(tm, r, t.wm * t.tm * 16, t.wn * t.tn * 8, tile_bk(t, tm.dt));
}
// element o of a stage tile with rows of rl elements, E of them in 16 bytes: its 16-byte chunk is XORed, within its
// 128-byte line, with the row (rows of a line or more) or the line: 8 rows read at one chunk column (ldmatrix), or 8
// threads writing a line, hit 8 different groups of banks
inline UOpRef tc_swizzle(const UOpRef& o, int64_t rl, int64_t E) {
  auto key = mod(idiv(o, std::max(rl, 8 * E)), 8);
  return idiv(o, 8 * E) * (8 * E) + alu(Ops::XOR, {mod(idiv(o, E), 8), key}) * E + mod(o, E);
}
// the load of an operand x = where(mask, load, 0) (a reduce's mask past a symbolic extent, PADTO's): the layout is the load's
inline const UOpRef& masked_load(const UOpRef& x) { return x->op == Ops::WHERE && x->src[2]->is_const(0) ? x->src[1] : x; }
// the copy of a chunk of values (v: the chunk's values, neighbours in the workgroup buffer) as one asynchronous copy
// of its bytes: loads of neighbouring elements of one buffer, aligned to the chunk's size, under one gate (a copy is
// 4, 8 or 16 bytes). Returns the source address (an INDEX of v.size() elements), or null: copy value by value
inline UOpRef async_source(std::vector<UOpRef> v) {
  // where(g, load, 0) (a reduce's mask past a symbolic extent) is the load under gate g: a gated copy fills zeros
  for (auto& x : v) {
    if (x->op != Ops::WHERE || !x->src[2]->is_const(0) || x->src[1]->op != Ops::LOAD) continue;
    const UOpRef &ld = x->src[1], &idx = ld->src[0];
    if (idx->op != Ops::INDEX) continue;
    UOpRef gate = idx->src.size() > 2 ? logical_and(idx->src[2], x->src[0]) : x->src[0];
    std::vector<UOpRef> src = ld->src;
    src[0] = make_uop(Ops::INDEX, idx->dtype, {idx->src[0], idx->src[1], gate}, idx->arg, idx->vcount);
    x = make_uop(Ops::LOAD, ld->dtype, std::move(src), ld->arg, ld->vcount);
  }
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
  bool swizzle;       // TC's tiles (ldmatrix, wgmma): chunks XORed (tc_swizzle), else padded rows
  int64_t stage = 0;  // elements a stage
  int64_t chunk = 8;  // elements in 16 bytes
  UOpRef buf{};
  int64_t lines = 0;  // wgmma's m- or n-major layout: blocks of 64 rows (this many elements each), a row of 64 a k
  UOpRef at(const UOpRef& i, const UOpRef& k) const {  // element (i, k) within a stage
    UOpRef o = kmajor ? i * pitch + k : lines ? idiv(i, 64) * lines + k * 64 + mod(i, 64) : k * pitch + i;
    return swizzle ? tc_swizzle(o, lines ? 64 : pitch, chunk) : o;
  }
};
// the block's stores of step `step` of a side into stage `stage` (gate: null, or whether the copies happen), by T
// threads (tid): 16-byte chunks along the buffer's rows where the operand is contiguous there, else one value at a time,
// neighbouring threads taking neighbouring elements of the operand's memory (along k where it walks K contiguously)
inline std::vector<UOpRef> staged_copies(const StagedSide& sd, const UOpRef& r, int64_t bk, int64_t T, const UOpRef& tid, const UOpRef& step,
                                         const UOpRef& stage, const UOpRef& gate) {
  DType dt = tid->dtype;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  auto value = [&](const UOpRef& i, const UOpRef& k) {
    return simplify(substitute(sd.x, {{sd.axis.get(), sd.block * sd.rows + i}, {r.get(), step * bk + k}}));
  };
  auto dst = [&](const UOpRef& i, const UOpRef& k, int vc) {
    std::vector<UOpRef> src{sd.buf, simplify(stage * sd.stage + sd.at(i, k))};
    if (gate) src.push_back(gate);
    return make_uop(Ops::INDEX, sd.x->dtype, src, {}, vc);
  };
  std::vector<UOpRef> out;
  int64_t E = 16 / itemsize(sd.x->dtype), rl = sd.kmajor ? bk : sd.rows;  // a chunk's elements, a row's
  const UOpRef& ld = masked_load(sd.x);
  bool along_k = ld->op == Ops::LOAD && stride_class(ld->src[0]->src[1], r) == 1;
  // (a TF32 tile is k-major whatever the operand's layout: an n-major B copies value by value, neighbouring threads
  // along n)
  if (sd.kmajor == along_k || (sd.swizzle && E == 8)) {
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
// stages, P steps ahead of the compute: steps 0 to P - 1 before the loop (a copy group each), step kc + P in step kc.
// Returns the barrier after which stage kc % S holds step kc's tiles. One barrier a step is enough: the stage written
// in step kc was last read in step kc + P - S, done by then where P = S - 2 (each step's multiplies waited for before
// the next barrier) or P = S - 3 (a step's wgmma left in flight until the next step's has been issued)
inline UOpRef staged_pipeline(const StagedSide (&sides)[2], const UOpRef& r, int64_t bk, int64_t T, const UOpRef& tid, const UOpRef& kc, int64_t nk,
                              int64_t S, int64_t P) {
  DType dt = kc->dtype;
  auto copies = [&](const UOpRef& step, const UOpRef& stage, const UOpRef& gate) {
    auto v = staged_copies(sides[0], r, bk, T, tid, step, stage, gate), w = staged_copies(sides[1], r, bk, T, tid, step, stage, gate);
    v.insert(v.end(), w.begin(), w.end());
    return v;
  };
  int64_t Q = std::min(P, nk);  // the copy groups issued after step kc's by the time step kc waits
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
// the K steps of a staged GEMM over reduce axis r, bk of r each: a symbolic r (extent e) loops to ceil(e / bk) (the
// copies past e are gated by the reduce's mask: they read nothing)
inline UOpRef k_steps(const UOpRef& r, int64_t nk, int64_t bk) {
  return make_range(nk, r->range_id(), AxisType::REDUCE, r->dtype, r->src.empty() ? nullptr : ceil_div(r->src[0], bk));
}
// the blocks of a staged GEMM as one loop axis (the m axis's id): blocks next to each other take up to 8 row tiles
// of one column tile, so the blocks running at once share A's rows and B's columns in L2 (an 8192 GEMM's B is larger
// than an H100's L2). Returns the block's row tile and column tile
inline std::pair<UOpRef, UOpRef> block_tiles(const TcMatch& tm, int64_t bm, int64_t bn, DType dt) {
  int64_t mb = tiles_of(tm.m, bm), nb = tiles_of(tm.n, bn), g8 = 8;
  while (mb % g8) g8 /= 2;
  // m a symbolic dim's (extent e): the blocks end with the last group of row blocks that e reaches (a GPU launches those)
  UOpRef tight = tm.m->src.empty() ? nullptr : ceil_div(ceil_div(tm.m->src[0], bm), g8) * (g8 * nb);
  auto blk = make_range(mb * nb, tm.m->range_id(), AxisType::LOOP, dt, tight), in_group = mod(blk, g8 * nb);
  return {idiv(blk, g8 * nb) * g8 + mod(in_group, g8), idiv(in_group, g8)};
}
// lane e of a tile's float accumulators
inline UOpRef acc_lane(const UOpRef& acc, int64_t e) { return make_uop(Ops::GEP, DType::Float32, {acc}, e); }
// the kernel's stores of two neighbouring outputs of a thread's tile: the reduce's values v0 and v1 at row m and
// columns n, n + 1. Where a store's address steps by one between them from an even first one (the output contiguous
// along n), the two are one store of a pair: 4 bytes of two halves packed by one conversion, 8 of two floats (a tile's
// outputs one at a time had cost a 4096 float16 GEMM on an H200 a tenth of its time)
inline void tile_stores(std::vector<UOpRef>& stores, const UOpRef& sink, const TcMatch& tm, const UOpRef& v0, const UOpRef& v1, const UOpRef& m,
                        const UOpRef& n) {
  std::unordered_map<const UOp*, UOpRef> at0{{tm.red.get(), v0}, {tm.m.get(), m}, {tm.n.get(), n}},
      at1{{tm.red.get(), v1}, {tm.m.get(), m}, {tm.n.get(), n + 1}};
  for (auto& st : sink->src) {
    UOpRef s0 = substitute(st, at0), s1 = substitute(st, at1);
    const UOpRef &i0 = s0->src[0], &i1 = s1->src[0];
    DType dt = s0->src[1]->dtype;
    bool pair = (dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32) && i0->src[0] == i1->src[0] &&
                i0->src.size() == i1->src.size() && (i0->src.size() == 2 || i0->src[2] == i1->src[2]) &&
                simplify(i1->src[1] - i0->src[1])->is_const(1) && simplify(mod(i0->src[1], 2))->is_const(0);
    if (!pair) {
      stores.insert(stores.end(), {s0, s1});
      continue;
    }
    auto idx = make_uop(Ops::INDEX, i0->dtype, i0->src, i0->arg, 2);
    stores.push_back(make_uop(Ops::STORE, DType::Bool, {idx, make_uop(Ops::VECTORIZE, dt, {s0->src[1], s1->src[1]}, {}, 2)}));
  }
}
// a staged TC tile's fragments at mma step ks of stage `stage`: a warp's A tiles of 16x16 (ldmatrix .x4, 8 halves a
// lane), its B tiles in pairs of 8x16 (.x4; one: .x2). The LOAD's arg: 1, or 2 for .trans (a buffer not k-major)
inline std::pair<std::vector<UOpRef>, std::vector<UOpRef>> ldmatrix_frags(const StagedSide (&sides)[2], const TcTile& t, const UOpRef& stage,
                                                                          const UOpRef& ks, const UOpRef& wm, const UOpRef& wn, const UOpRef& lane,
                                                                          const UOpRef& ready) {
  auto c = [&](int64_t v) { return const_int(lane->dtype, v); };
  auto frag = [&](const StagedSide& sd, const UOpRef& i, const UOpRef& k, int vc) {
    auto idx = make_uop(Ops::INDEX, sd.x->dtype, {sd.buf, simplify(stage * sd.stage + sd.at(i, k))});
    return make_uop(Ops::LOAD, sd.x->dtype, {idx, ready}, int64_t(sd.kmajor ? 1 : 2), vc);
  };
  const StagedSide &A = sides[0], &B = sides[1];
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
  return {fa, fb};
}
// TC with a staged tile: per block, tiles of A (bm x bk) and B (bn x bk) of each K step pass through workgroup memory
// (staged_pipeline); each warp multiplies its tm x tn mma tiles with fragments from ldmatrix. A buffer holds its
// operand k-major where the operand is contiguous along K, else m- or n-major (ldmatrix .trans).
inline UOpRef tc_stage(const UOpRef& sink, const UOpRef& r, const TcMatch& tm, const TcTile& t) {
  DType dt = r->dtype;
  const int64_t S = t.stages, bm = t.wm * t.tm * 16, bn = t.wn * t.tn * 8, bk = tile_bk(t, tm.dt), nk = tiles_of(r, bk), id = next_range_id(sink),
                T = t.wm * t.wn * 32;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  auto [gm, gn] = block_tiles(tm, bm, bn, dt);
  auto wm = make_range(t.wm, id, AxisType::LOCAL, dt), wn = make_range(t.wn, id + 1, AxisType::LOCAL, dt),
       lane = make_range(32, id + 2, AxisType::WARP, dt);
  auto kc = k_steps(r, nk, bk);
  auto tid = (wm * t.wn + wn) * 32 + lane;
  StagedSide sides[2] = {{.x = tm.a, .axis = tm.m, .block = gm, .rows = bm, .kmajor = true, .pitch = 0, .swizzle = true},
                         {.x = tm.b, .axis = tm.n, .block = gn, .rows = bn, .kmajor = true, .pitch = 0, .swizzle = true}};
  for (int i = 0; i < 2; i++) {
    StagedSide& sd = sides[i];
    // (wgmma's TF32 reads k-major tiles only)
    if (const UOpRef& ld = masked_load(sd.x); ld->op == Ops::LOAD && tm.dt != DType::Float32)
      sd.kmajor = stride_class(ld->src[0]->src[1], r) == 1 || stride_class(ld->src[0]->src[1], sd.axis) != 1;
    sd.pitch = sd.kmajor ? bk : sd.rows;
    sd.stage = sd.rows * bk;
    sd.chunk = 16 / itemsize(sd.x->dtype);
    if (t.wg && !sd.kmajor) sd.lines = 64 * bk;
    sd.buf = make_uop(Ops::DEFINE_LOCAL, sd.x->dtype, {}, std::vector<int64_t>{i, S * sd.stage, 1});
  }
  // a wgmma tile of 4 stages or more leaves each step's wgmma in flight while the next is issued (its copies then run
  // a step less ahead): a 128 x 256 tile of a 4096 float16 GEMM on an H200 0.67x -> 0.84x of cuBLAS with the paired stores
  bool inflight = t.wg && S >= 4;
  auto ready = staged_pipeline(sides, r, bk, T, tid, kc, nk, S, inflight ? S - 3 : S - 2);
  auto rarg = tm.red->varg();
  rarg[0] = int64_t(Ops::WMMA);
  auto g = idiv(lane, 4), q2 = mod(lane, 4) * 2;
  std::vector<UOpRef> stores;
  if (t.wg) {
    // one wgmma a K step for each warpgroup (wm / 4): its 64 rows of A by the block's bn columns of B, both from the
    // stage's tiles (the start of each; the arg: the dtype, and whether A and B are m- and n-major).
    // The REDUCE holds the warp's bn / 2 accumulators: mma tile j's four at 4j to 4j + 3, as for TC's staged tiles
    auto start = [&](const StagedSide& sd, const UOpRef& row) {
      return make_uop(Ops::INDEX, sd.x->dtype, {sd.buf, simplify(mod(kc, S) * sd.stage + (sd.lines ? idiv(row, 64) * sd.lines : row * sd.pitch))});
    };
    auto& A = sides[0];
    auto& B = sides[1];
    auto w = make_uop(Ops::WMMA, DType::Float32, {start(A, idiv(wm, 4) * 64), start(B, c(0)), ready},
                      WmmaArg{.dt = tm.dt, .a_mn = !A.kmajor, .b_mn = !B.kmajor, .inflight = inflight}.encode(), int(bn / 2));
    auto acc = make_uop(Ops::REDUCE, DType::Float32, {w, kc}, rarg, int(bn / 2));
    for (int64_t e = 0; e < bn / 2; e += 2)
      tile_stores(stores, sink, tm, acc_lane(acc, e), acc_lane(acc, e + 1), gm * bm + wm * 16 + c(8 * (e % 4 >> 1)) + g, gn * bn + c(e / 4 * 8) + q2);
    return make_uop(Ops::SINK, DType::Bool, stores);
  }
  auto ks = make_range(t.bk / 16, id + 3, AxisType::REDUCE, dt);  // the mma steps within a K step
  auto [fa, fb] = ldmatrix_frags(sides, t, mod(kc, S), ks, wm, wn, lane, ready);
  for (int64_t um = 0; um < t.tm; um++)
    for (int64_t un = 0; un < t.tn; un++) {
      // the arg: the dtype, and whether B's registers are the second half of its fragment load
      auto w = make_uop(Ops::WMMA, DType::Float32, {fa[size_t(um)], fb[size_t(un / 2)]}, WmmaArg{.dt = tm.dt, .b_hi = un % 2 == 1}.encode(), 4);
      auto acc = make_uop(Ops::REDUCE, DType::Float32, {w, kc, ks}, rarg, 4);
      for (int64_t e = 0; e < 4; e += 2)
        tile_stores(stores, sink, tm, acc_lane(acc, e), acc_lane(acc, e + 1), gm * bm + wm * (t.tm * 16) + c(um * 16 + 8 * (e >> 1)) + g,
                    gn * bn + wn * (t.tn * 8) + c(un * 8) + q2);
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
inline std::string simt_tile_fits(const TcMatch& tm, const UOpRef& r, const SimtTile& t) { return tile_fits(tm, r, t.ty * t.tm, t.tx * t.tn, t.bk); }
// TILE: per block, tiles of A (bm x bk) and B (bn x bk) pass through workgroup memory as in TC's staged tiles, both
// held m- or n-major (rows padded by 4 elements: a row of k copied value by value hits 8 different banks); thread
// (y, x) owns rows y * 4 + g * bm / (tm / 4) + i and columns x * 4 + g * bn / (tn / 4) + j: every K step, tm / 4 and
// tn / 4 vector reads of 4 elements feed tm x tn multiply-adds
inline UOpRef simt_stage(const UOpRef& sink, const UOpRef& r, const TcMatch& tm, const SimtTile& t) {
  DType dt = r->dtype;
  const int64_t S = t.stages, bm = t.ty * t.tm, bn = t.tx * t.tn, nk = tiles_of(r, t.bk), id = next_range_id(sink), T = t.ty * t.tx;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  auto [gm, gn] = block_tiles(tm, bm, bn, dt);
  auto ty = make_range(t.ty, id, AxisType::LOCAL, dt), tx = make_range(t.tx, id + 1, AxisType::LOCAL, dt);
  auto kc = k_steps(r, nk, t.bk), ks = make_range(t.bk, id + 2, AxisType::REDUCE, dt);
  auto tid = ty * t.tx + tx;
  StagedSide sides[2] = {
      {.x = tm.a, .axis = tm.m, .block = gm, .rows = bm, .kmajor = false, .pitch = bm + 4, .swizzle = false, .stage = (bm + 4) * t.bk},
      {.x = tm.b, .axis = tm.n, .block = gn, .rows = bn, .kmajor = false, .pitch = bn + 4, .swizzle = false, .stage = (bn + 4) * t.bk}};
  for (int i = 0; i < 2; i++) sides[i].buf = make_uop(Ops::DEFINE_LOCAL, sides[i].x->dtype, {}, std::vector<int64_t>{i, S * sides[i].stage, 1});
  auto ready = staged_pipeline(sides, r, t.bk, T, tid, kc, nk, S, S - 2);
  // a thread's 4 neighbouring rows (columns) of group g at step ks: one vector read of workgroup memory
  auto quad = [&](StagedSide& sd, const UOpRef& own, int64_t g, int64_t groups) {
    auto idx =
        make_uop(Ops::INDEX, sd.x->dtype, {sd.buf, simplify(mod(kc, S) * sd.stage + ks * sd.pitch + own * 4 + c(g * (sd.rows / groups)))}, {}, 4);
    return make_uop(Ops::LOAD, sd.x->dtype, {idx, ready}, {}, 4);
  };
  std::vector<UOpRef> qa, qb;
  for (int64_t g = 0; g < t.tm / 4; g++) qa.push_back(quad(sides[0], ty, g, t.tm / 4));
  for (int64_t g = 0; g < t.tn / 4; g++) qb.push_back(quad(sides[1], tx, g, t.tn / 4));
  std::vector<UOpRef> stores;
  auto acc = [&](int64_t i, int64_t j) {
    auto a = make_uop(Ops::GEP, tm.a->dtype, {qa[size_t(i / 4)]}, i % 4), b = make_uop(Ops::GEP, tm.b->dtype, {qb[size_t(j / 4)]}, j % 4);
    return make_uop(Ops::REDUCE, tm.red->dtype, {a * b, kc, ks}, tm.red->arg);
  };
  for (int64_t i = 0; i < t.tm; i++)
    for (int64_t j = 0; j < t.tn; j += 2)
      tile_stores(stores, sink, tm, acc(i, j), acc(i, j + 1), gm * bm + ty * 4 + c(i / 4 * (bm / (t.tm / 4)) + i % 4),
                  gn * bn + tx * 4 + c(j / 4 * (bn / (t.tn / 4)) + j % 4));
  return make_uop(Ops::SINK, DType::Bool, stores);
}
// TC with fragments from memory (amount 0): one warp computes a 16x8 tile of m x n with one mma.sync m16n8k16 per 16
// steps of r. Lane t of the warp (a WARP axis of 32) holds A's rows g, g + 8 (g = t / 4) at columns 2q, 2q + 1, 2q + 8,
// 2q + 9 (q = t % 4), B's column g at rows 2q, 2q + 1, 2q + 8, 2q + 9, and C's rows g, g + 8 at columns 2q, 2q + 1 (PTX
// ISA, the m16n8k16 fragments). TF32 (m16n8k8, 8 steps of r): A's rows g, g + 8 at columns q, q + 4; B's column g at
// rows q, q + 4; C the same. LOCAL and UPCAST after TC shape the block
inline UOpRef tc_warp(const UOpRef& sink, const UOpRef& r, const TcMatch& tm) {
  DType dt = r->dtype;
  auto mo = make_range(tm.m->range_end() / 16, tm.m->range_id(), AxisType::LOOP, dt),
       no = make_range(tm.n->range_end() / 8, tm.n->range_id(), AxisType::LOOP, dt);
  int64_t kt = tc_k(tm.dt);
  auto ko = make_range(r->range_end() / kt, r->range_id(), AxisType::REDUCE, dt), lane = make_range(32, next_range_id(sink), AxisType::WARP, dt);
  auto g = idiv(lane, 4), q = mod(lane, 4), q2 = q * 2;
  auto c = [&](int64_t v) { return const_int(dt, v); };
  std::vector<UOpRef> frag;
  auto at_a = [&](const UOpRef& row, const UOpRef& col) {
    frag.push_back(substitute(tm.a, {{tm.m.get(), mo * 16 + row}, {r.get(), ko * kt + col}}));
  };
  auto at_b = [&](const UOpRef& k) { frag.push_back(substitute(tm.b, {{r.get(), ko * kt + k}, {tm.n.get(), no * 8 + g}})); };
  if (kt == 8) {
    for (int64_t e = 0; e < 4; e++) at_a(g + c(8 * (e & 1)), q + c(4 * (e >> 1)));
    for (int64_t e = 0; e < 2; e++) at_b(q + c(4 * e));
  } else {
    for (int64_t e = 0; e < 8; e++) at_a(g + c(8 * ((e >> 1) & 1)), q2 + c((e & 1) + 8 * (e >> 2)));
    for (int64_t e = 0; e < 4; e++) at_b(q2 + c((e & 1) + 8 * (e >> 1)));
  }
  // a pair of neighbouring values that are loads of neighbouring, 4-byte aligned elements is one 32-bit load of
  // the packed register (WmmaArg's pairs), else the renderer packs them with a cvt
  WmmaArg arg{.dt = tm.dt};
  for (int p = 0; p < 6 && kt == 16; p++) {
    const UOpRef &lo = frag[size_t(2 * p)], &hi = frag[size_t(2 * p + 1)];
    auto plain = [&](const UOpRef& x) { return x->op == Ops::LOAD && x->dtype == tm.dt && x->src[0]->src.size() == 2; };
    if (!plain(lo) || !plain(hi) || lo->src[0]->src[0] != hi->src[0]->src[0]) continue;
    const UOpRef &alo = lo->src[0]->src[1], &ahi = hi->src[0]->src[1];
    if (simplify(ahi - alo)->is_const(1) && simplify(mod(alo, 2))->is_const(0)) arg.pairs |= 1 << p;
  }
  auto w = make_uop(Ops::WMMA, DType::Float32, frag, arg.encode(), 4);
  auto rarg = tm.red->varg();
  rarg[0] = int64_t(Ops::WMMA);
  auto acc = make_uop(Ops::REDUCE, DType::Float32, {w, ko}, rarg, 4);
  std::vector<UOpRef> stores;
  for (int64_t e = 0; e < 4; e += 2)
    tile_stores(stores, sink, tm, acc_lane(acc, e), acc_lane(acc, e + 1), mo * 16 + g + c(8 * (e >> 1)), no * 8 + q2);
  return make_uop(Ops::SINK, DType::Bool, stores);
}
}  // namespace tinygrad::detail
