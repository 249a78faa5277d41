#pragma once
// the hand-written heuristics: the opts a kernel gets without BEAM (hand_coded_optimizations; GPUs:
// gpu_optimizations). Each drives a Kernel as it decides, reading the sizes left from the kernel's ranges, so every
// opt it returns is one the kernel accepted
#include "kernel.hpp"

namespace tinygrad::detail {

// the facts the heuristics read about one kernel AST, computed once: its nodes, the INDEXes of its loads and stores,
// its reduce loops, its ranges by kind, and the stride class of an index along a range (memoized)
struct KernelFacts {
  UOpRef sink;
  std::vector<UOpRef> topo, loads, stores, rngs, out_rngs, red_rngs;
  std::map<std::vector<int64_t>, UOpRef> loops;
  int64_t reduce_size = 1, total = 1;  // the product of the reduce ranges' sizes, of the output ranges'
  explicit KernelFacts(const UOpRef& s) : sink(s), topo(toposort(s)) {
    for (auto& u : topo) {
      if (u->op == Ops::LOAD) loads.push_back(u->src[0]);
      if (u->op == Ops::STORE) stores.push_back(u->src[0]);
      if (u->op == Ops::RANGE) rngs.push_back(u);
    }
    rngs = by_range_id(std::move(rngs));
    loops = reduce_loops(topo);
    for (auto& r : rngs) {
      if (axis_type(r) == AxisType::REDUCE) { reduce_size *= r->range_end(); red_rngs.push_back(r); }
      else { total *= r->range_end(); out_rngs.push_back(r); }
    }
  }
  // stride_class of an INDEX's address along range r
  int stride(const UOpRef& index, const UOpRef& r) const {
    auto [it, fresh] = strides_.try_emplace({index, r}, 0);
    if (fresh) it->second = stride_class(index->src[1], r);
    return it->second;
  }
  UOpRef range(int64_t id) const { for (auto& r : rngs) if (r->range_id() == id) return r; throw KernelOptError(cat("no range with id ", id)); }

 private:
  mutable std::map<std::pair<UOpRef, UOpRef>, int> strides_;  // NOTE: holds the nodes, so an address is never reused
};

// what is left of the AST's range r in kernel k: the size of its range there (same id and kind), 1 where splits took
// all of it
inline int64_t size_left(const Kernel& k, const UOpRef& r) {
  for (auto& x : k.ranges()) if (x->range_id() == r->range_id() && axis_type(x) == axis_type(r)) return x->range_end();
  return 1;
}
// apply o to k where k accepts it
inline bool try_apply(Kernel& k, const Opt& o) {
  try { k.apply(o); return true; } catch (const KernelOptError&) { return false; }
}
// the kernel of ast with opts applied, or none where one is refused (a heuristic that reorders its opts)
inline std::optional<Kernel> replay(const UOpRef& ast, const Renderer& ren, const std::vector<Opt>& opts) {
  Kernel k(ast, ren);
  for (auto& o : opts) if (!try_apply(k, o)) return std::nullopt;
  return k;
}
// the kernel's opts with the first ones applied again first (THREAD, which the CPU heuristic decides last), where it
// accepts them in that order; else k as it is
inline Kernel with_first(const Kernel& k, std::vector<Opt> first) {
  first.insert(first.end(), k.applied().begin(), k.applied().end());
  auto t = replay(k.ast(), k.renderer(), first);
  return t ? *t : k;
}

// the blocks a GEMM tile of bm x bn leaves in kernel k: the other loop axes (a batch) multiply them
inline int64_t gemm_blocks(const Kernel& k, const TcMatch& f, int64_t bm, int64_t bn) {
  int64_t b = tiles_of(f.m, bm) * tiles_of(f.n, bn);
  for (auto& r : k.ranges()) if (axis_type(r) == AxisType::LOOP && r != f.m && r != f.n) b *= r->range_end();
  return b;
}
// float32 GEMMs (TF32 not allowed) on a device with cp.async: a block tile staged in workgroup memory (TILE) where
// one divides the sizes (m and n padded to 64, K to 16, where that does not double them) and leaves 16 blocks or
// more. 64 x 64 (8 x 8 threads, 16 of K a step) was the fastest on an H100 at 1024 and 4096
inline std::optional<Kernel> gpu_tile(Kernel k, const UOpRef& red) {
  auto loose = tc_match(k.sink(), red, false, true);
  auto* l = std::get_if<TcMatch>(&loose);
  if (!l) return std::nullopt;
  for (auto [r, tile] : {std::pair{l->m, int64_t(64)}, std::pair{l->n, int64_t(64)}, std::pair{red, int64_t(16)}})
    if (r->range_end() % tile) try_apply(k, {OptOp::PADTO, r->range_id(), tile});
  UOpRef rr = find_range(k.sink(), red->range_id());
  auto found = tc_match(k.sink(), rr, false, true);
  auto* f = std::get_if<TcMatch>(&found);
  if (!f) return std::nullopt;
  // NOTE: 256 x 32, 128 x 32 and 64 x 32 for 32 columns (a conv's 32 channels): padding them to 64 would double
  // them. 256 x 32 gives each thread 8 x 8 outputs, as 64 x 64 does (on an H100, 5-10% faster than 128 x 32's 8 x 4)
  for (int64_t a : flags().tile > 0 ? std::vector<int64_t>{flags().tile} : std::vector<int64_t>{5, 2, 10, 8, 9}) {
    if (a >= int64_t(std::size(simt_tiles))) break;
    const SimtTile& t = simt_tiles[a];
    if (simt_tile_fits(*f, rr, t).empty() && (gemm_blocks(k, *f, t.ty * t.tm, t.tx * t.tn) >= 16 || flags().tile > 0))
      return k.apply({OptOp::TILE, rr->range_id(), a});
  }
  return std::nullopt;
}
// tensor cores: a float16/bfloat16 matmul-shaped reduce (float32 with TF32 allowed). Sizes that are not tile
// multiples are padded first, where that does not double them: staged tiles want m and n in multiples of 64 and K of
// 32; the warp tile m of 16, n of 8, K of 16 (8 for TF32)
inline std::optional<Kernel> gpu_tc(Kernel k, const UOpRef& red) {
  const Renderer& ren = k.renderer();
  try {
    auto loose = tc_match(k.sink(), red, false);
    int stage = flags().tc_stage;
    if (auto* l = std::get_if<TcMatch>(&loose)) {
      bool staged = stage != 0 && l->dt != DType::Float32;
      for (auto [r, small, big] :
           {std::tuple{l->m, int64_t(16), int64_t(64)}, std::tuple{l->n, int64_t(8), int64_t(64)}, std::tuple{red, tc_k(l->dt), int64_t(32)}})
        for (int64_t tile : {staged ? big : small, small})
          if (r->range_end() % tile != 0 && try_apply(k, {OptOp::PADTO, r->range_id(), tile})) break;
    }
    UOpRef rr = find_range(k.sink(), red->range_id()), pre = k.sink();
    // a tile staged in workgroup memory where one divides the sizes and leaves 32 blocks or more, the largest first:
    // on Hopper the wgmma tiles, 128 x 256 in 4 stages (one block an SM, each step's wgmma in flight) where that
    // leaves 128 blocks and K is 1024 or more (a short K spends a larger part in filling the stages), else 128 x 128
    // (two an SM) where that leaves 128 (an H100's SMs: 132), else 64 x 128 in 4 stages (MiniLM's 4096 x 384
    // outputs: 96 blocks of 128 x 128 left a quarter of the SMs idle), else 64 x 64 (a width of 576); else 128 x 128
    // in 4 warps of 64 x 64, 4 stages, the fastest mma.sync tile (measured on an H100, 4096 and 8192). Each tile
    // against cuBLAS on an H200 (float16): 4096 / 8192 0.80x / 0.85x (128 x 128: 0.68x / 0.71x), 1024 0.77x,
    // 4096 x 384 x 384 0.99x, 512 x 1536 x 576 1.15x.
    // A pick: the tile, the blocks it must leave, the K it needs. NOTE: where 128 x 128 fits, 64 x 128 does, with twice
    // its blocks: no kernel needs 128 x 128 under 128 blocks
    struct Pick { int64_t tile, blocks, k = 0; };
    static constexpr Pick picks[] = {{19, 128, 1024}, {14, 128}, {21, 32}, {22, 32}, {10, 32}, {2, 32}, {3, 32}, {4, 0}};
    auto found = tc_match(pre, rr);
    if (auto* f = std::get_if<TcMatch>(&found); f && stage != 0)
      for (const Pick& p : stage > 0 ? std::vector<Pick>{{stage, 0}} : std::vector<Pick>(std::begin(picks), std::end(picks))) {
        if (p.tile >= int64_t(std::size(tc_tiles))) break;
        const TcTile& t = tc_tiles[p.tile];
        if (t.wg && !ren.wgmma) continue;
        if (tc_tile_fits(*f, rr, t).empty() && rr->range_end() >= p.k && gemm_blocks(k, *f, t.wm * t.tm * 16, t.wn * t.tn * 8) >= p.blocks)
          return k.apply({OptOp::TC, rr->range_id(), p.tile});
      }
    // fragments from memory: 2 x 2 warps a block (they share A's and B's tiles through L1), each warp up to 4 x 4 mma
    // tiles (A's fragments serve 4 column tiles, B's 4 rows)
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
    return k;
  } catch (const KernelOptError&) { return std::nullopt; }
}
// few outputs, each a long reduce: the threads of a workgroup share one output's reduce (GROUP), on the innermost
// reduce axis that a group size divides, else on all reduce axes merged into one (MERGE, first): a conv's bias
// gradient over 2x24x24 pixels had run as 8192 threads, each reading its 1152 values alone. Several reduce loops one
// after another (a LayerNorm's mean, then its variance) each get the same GROUP: 1024 rows of 768 had run as 1024
// threads, each reading its row alone, strided (426 us on an H200); the groups share one thread id (thread_classes).
// Returns the MERGEs, then the GROUPs
inline std::pair<std::vector<Opt>, std::vector<Opt>> gpu_group(const KernelFacts& f) {
  std::vector<Opt> group, merged;
  if (f.loops.size() > 1 && f.total <= 16384) {
    for (int64_t a : {256, 128, 64, 32, 16, 8, 4}) {
      bool all = true;
      for (auto& [ids, inner] : f.loops) all &= ids.size() == 1 && inner->range_end() >= 2 * a && inner->range_end() % a == 0;
      if (!all) continue;
      for (auto& [ids, inner] : f.loops) group.push_back({OptOp::GROUP, inner->range_id(), a});
      break;
    }
    return {merged, group};
  }
  if (f.loops.size() != 1 || f.total > 16384 || f.reduce_size < 256) return {merged, group};
  for (auto it = f.red_rngs.rbegin(); it != f.red_rngs.rend() && group.empty(); ++it)
    for (int64_t a : {64, 32, 16}) if ((*it)->range_end() % a == 0) { group.push_back({OptOp::GROUP, (*it)->range_id(), a}); break; }
  if (group.empty() && f.red_rngs.size() > 1)
    for (int64_t a : {64, 32, 16})
      if (f.reduce_size % a == 0) {
        merged = merges_into_first(f.red_rngs);
        group.push_back({OptOp::GROUP, f.red_rngs[0]->range_id(), a});
        break;
      }
  return {merged, group};
}
// a sliding window (a conv's input gradient into one channel): a load reads x + j for an output axis x and a short
// reduce axis j (moving one along x reads what moving one along j does). j unrolled and 4 neighbouring x a thread
// (2 along a second such pair) share their loads: 8 reads for 4 outputs of a 5-tap row, not 20. Applied to k; returns them
inline std::vector<Opt> gpu_window(const KernelFacts& f, Kernel& k) {
  std::vector<Opt> window;
  if (f.loops.size() != 1 || f.reduce_size <= 1) return window;
  int64_t expand = 1;
  std::unordered_set<const UOp*> used;
  for (auto& l : f.loads)
    for (auto it = f.out_rngs.rbegin(); it != f.out_rngs.rend(); ++it) {
      const UOpRef& r = *it;
      int64_t up = window.empty() ? 4 : 2;
      for (auto& t : f.red_rngs) {
        if (used.count(r.get()) || used.count(t.get()) || t->range_end() > 8 || size_left(k, r) % up ||
            expand * up * t->range_end() > Kernel::max_expand)
          continue;
        if (f.stride(l, r) == 0 || !simplify(sub_range(l->src[1], r, r + 1) - sub_range(l->src[1], t, t + 1))->is_const(0)) continue;
        for (Opt o : {Opt{OptOp::UNROLL, t->range_id(), t->range_end()}, Opt{OptOp::UPCAST, r->range_id(), up}})
          if (try_apply(k, o)) window.push_back(o);
        used.insert(r.get()), used.insert(t.get());
        expand *= up * t->range_end();
      }
    }
  return window;
}
// a big elementwise kernel whose contiguous axis x is short (a padded 28 x 28 image): a warp would write a few pixels
// of each of several rows. The outer axes the stores walk contiguously are merged into it (MERGE) until 256 threads
// fit along it (a conv gradient's padded input, 512x32x28x28). Returns the kernel with the MERGEs, or none
inline std::optional<Kernel> gpu_merge_rows(const KernelFacts& f, const Renderer& ren, const UOpRef& x) {
  auto pow2 = [](int64_t v) { return v & -v; };
  if (f.reduce_size != 1 || f.total < (1 << 16) || x != f.out_rngs.back() || pow2(x->range_end()) >= 256) return std::nullopt;
  Kernel k(f.sink, ren);
  int64_t inner = x->range_id(), size = x->range_end();
  for (auto it = f.out_rngs.rbegin() + 1; it != f.out_rngs.rend() && pow2(size) < 256; ++it) {
    Kernel t = k;
    if (!try_apply(t, {OptOp::MERGE, (*it)->range_id(), inner})) break;
    UOpRef joined = find_range(t.sink(), (*it)->range_id());
    if (!std::all_of(t.sink()->src.begin(), t.sink()->src.end(), [&](auto& st) { return stride_class(st->src[0]->src[1], joined) == 1; })) break;
    k = t, inner = joined->range_id(), size = joined->range_end();
  }
  if (k.applied().empty()) return std::nullopt;
  return k;
}
// up to `budget` threads a workgroup over the output axes, x's local created last (local dim 0); a sliding window's
// upcast axes whole where they fit (28 / 4 = 7 threads along a row: neighbouring threads, neighbouring pixels). The
// amounts are decided in that order and applied in the reverse
inline void gpu_locals(const KernelFacts& f, Kernel& k, const UOpRef& x, int64_t budget, const std::vector<Opt>& window) {
  std::vector<UOpRef> order{x};
  for (auto it = f.out_rngs.rbegin(); it != f.out_rngs.rend(); ++it) if (*it != x) order.push_back(*it);
  std::vector<Opt> locals;
  for (auto& r : order) {
    if (budget <= 1) break;
    int64_t rest = size_left(k, r);
    if (std::any_of(window.begin(), window.end(), [&](auto& o) { return o.op == OptOp::UPCAST && o.axis == r->range_id(); }) && rest > 1 &&
        rest <= budget) {
      locals.insert(locals.begin(), {OptOp::LOCAL, r->range_id(), rest});
      budget /= rest;
      continue;
    }
    for (int64_t a = budget; a > 1; a /= 2)
      if (rest % a == 0) { locals.insert(locals.begin(), {OptOp::LOCAL, r->range_id(), a}); budget /= a; break; }
  }
  for (auto& o : locals) try_apply(k, o);
}

// the threads of a row's share of a workgroup over a row of n whose reduces run over `terms` each: 256 down to 32
// dividing them all, n / threads at most 32, at least 4 where a count does (a warp alone reduces without workgroup
// memory: SHUFFLE), else 2; 0 where none does (the scheduler keeps the two kernels: schedule.hpp)
inline int64_t row_threads(int64_t n, const std::vector<int64_t>& terms) {
  for (int64_t least : {4, 2, 1})
    for (int64_t t : {256, 128, 64, 32})
      if (n % t == 0 && n / t <= 32 && n / t >= least && std::all_of(terms.begin(), terms.end(), [&](int64_t x) { return x % t == 0; }))
        return t;
  return 0;
}
// a row kernel (schedule.hpp: a reduce's rows and the elementwise kernel over them, a LayerNorm's statistics and its
// output): a workgroup a row, its threads one id for every reduce's GROUP and the row's LOCAL (thread_classes), so
// the row is read from memory once and its reduces run over the whole workgroup. Each thread's share of the row
// upcast whole (a loop axis left would be workgroups of their own, each computing the reduces again)
inline std::optional<Kernel> gpu_rows(const KernelFacts& f, const Renderer& ren) {
  std::vector<UOpRef> cols;
  for (auto& r : f.out_rngs)
    if (std::any_of(f.stores.begin(), f.stores.end(), [&](auto& st) { return f.stride(st, r) == 0; })) cols.push_back(r);
  if (cols.size() != 1 || f.loops.empty() || cols[0] != f.out_rngs.back()) return std::nullopt;
  const UOpRef& c = cols[0];
  for (auto& u : f.topo)
    if (u->op == Ops::REDUCE && depends_on(u->src[0], c).count(u->src[0].get())) return std::nullopt;
  int64_t n = c->range_end();
  std::vector<int64_t> terms;
  for (auto& [ids, inner] : f.loops) terms.push_back(ids.size() == 1 ? inner->range_end() : 1);
  int64_t t = row_threads(n, terms);
  if (!t || t > ren.max_threads) return std::nullopt;
  // short rows: several a workgroup (128 threads), their LOCAL first (a lower id: the row's threads stay on x)
  const UOpRef& row = f.out_rngs[f.out_rngs.size() > 1 ? f.out_rngs.size() - 2 : 0];
  for (int64_t m = f.out_rngs.size() > 1 && t < 128 ? 128 / t : 1; m >= 1; m /= 2) {
    Kernel k(f.sink, ren);
    bool ok = m == 1 || (row->range_end() % m == 0 && try_apply(k, {OptOp::LOCAL, row->range_id(), m}));
    ok = ok && try_apply(k, {OptOp::LOCAL, c->range_id(), t});
    for (auto& [ids, inner] : f.loops) ok = ok && try_apply(k, {OptOp::GROUP, inner->range_id(), t});
    if (!ok || k.workgroup() != t * m || (n > t && !try_apply(k, {OptOp::UPCAST, c->range_id(), n / t}))) continue;
    // each reduce's share unrolled whole where the register budget allows (its terms are then the very expressions
    // the output upcasts: one load of the row into registers, a softmax's exp once), else by 4; the last loop first
    // (a softmax's sum of exponentials after its max, a variance after its mean)
    for (auto it = f.loops.rbegin(); it != f.loops.rend(); ++it)
      for (int64_t u : {size_left(k, it->second), int64_t(4), int64_t(2)})
        if (u > 1 && size_left(k, it->second) % u == 0 && try_apply(k, {OptOp::UNROLL, it->second->range_id(), u})) break;
    return k;
  }
  return std::nullopt;
}

// the hand-written heuristic for GPUs: the store's contiguous axis on local x (coalesced), an 8x32 workgroup
// of 8x4 register tiles for reduces whose loads are reused (matmul, conv: 27 TFLOP/s at 4096 on an H100)
inline std::vector<Opt> gpu_optimizations(const UOpRef& sink, const Renderer& ren) {
  KernelFacts f(sink);
  if (!one_address(f.stores)) {
    auto k = gpu_rows(f, ren);
    return k ? k->applied() : std::vector<Opt>{};
  }
  // implicit GEMMs (convs) have their reduce ranges and their rows merged first (gemm_merges): TILE and TC see one
  // reduce axis, one axis of A and one of B; where neither applies, the kernel is optimized unmerged
  Kernel base(sink, ren);
  if (ren.tensor_cores) try { for (auto& o : gemm_merges(sink)) base.apply(o); } catch (const KernelOptError&) { base = Kernel(sink, ren); }
  std::vector<UOpRef> gred;
  for (auto& r : base.ranges()) if (axis_type(r) == AxisType::REDUCE) gred.push_back(r);
  if (ren.tensor_cores && gred.size() == 1 && flags().tile != 0 && !flags().tf32)
    if (auto k = gpu_tile(base, gred[0])) return k->applied();
  if (ren.tensor_cores && gred.size() == 1)
    if (auto k = gpu_tc(base, gred[0])) return k->applied();
  Kernel k(sink, ren);
  auto [merged, group] = gpu_group(f);
  if (f.out_rngs.empty()) {
    for (auto* os : {&merged, &group}) for (auto& o : *os) try_apply(k, o);
    return k.applied();
  }
  // the first amount of amts that divides what is left of r
  auto try_opt = [&](OptOp op, const UOpRef& r, std::initializer_list<int64_t> amts) {
    for (int64_t a : amts) if (size_left(k, r) % a == 0) { try_apply(k, {op, r->range_id(), a}); return; }
  };
  // x: the innermost output axis the store walks contiguously, else the innermost
  UOpRef x = f.out_rngs.back();
  for (auto it = f.out_rngs.rbegin(); it != f.out_rngs.rend(); ++it) if (f.stride(f.stores[0], *it) == 1) { x = *it; break; }
  // y: another output axis that some load does not depend on (register tiles reuse its data). Only loads that vary
  // with some output axis count (a bias read along the reduce is the same for every output, no operand to reuse),
  // and only where the tiles (8 x 32 threads of 4 x 4 outputs) leave at least 32 workgroups (a LayerNorm's mean over
  // 4096 tokens had run as one workgroup)
  auto operand = [&](const UOpRef& idx) { return std::any_of(f.out_rngs.begin(), f.out_rngs.end(), [&](auto& r) { return f.stride(idx, r) != 0; }); };
  UOpRef y;
  bool reuse_x = false;
  for (auto& l : f.loads) reuse_x |= operand(l) && f.stride(l, x) == 0;
  if (f.reduce_size >= 16 && reuse_x && f.total >= 32 * 4096)
    for (auto it = f.out_rngs.rbegin(); it != f.out_rngs.rend() && !y; ++it)
      for (auto& l : f.loads) if (*it != x && operand(l) && f.stride(l, *it) == 0 && (*it)->range_end() >= 16) { y = *it; break; }
  if (y) {
    // NOTE: LOCAL first, then UPCAST of the outer part: neighbouring threads keep neighbouring addresses
    try_opt(OptOp::LOCAL, y, {8, 4, 2});
    try_opt(OptOp::LOCAL, x, {32, 16, 8, 4, 2});
    try_opt(OptOp::UPCAST, y, {8, 4, 2});
    try_opt(OptOp::UPCAST, x, {4, 2});
    return k.applied();
  }
  for (auto& o : merged) try_apply(k, o);
  auto window = gpu_window(f, k);
  if (auto m = gpu_merge_rows(f, ren, x)) {
    for (auto& o : gpu_optimizations(m->sink(), ren)) try_apply(*m, o);
    return m->applied();
  }
  int64_t budget = std::min<int64_t>(256, ren.max_threads) / (group.empty() ? 1 : group[0].amt);  // NOTE: the groups share a thread id
  // elementwise: 4 contiguous elements a thread as one vector load/store when every load is contiguous or
  // constant along x, else 4 elements 256 apart (UPCAST): both coalesced (1.0x memcpy on an H100, 0.79x with 1)
  DType out_dt = sink->src[0]->src[1]->dtype;
  bool big = f.reduce_size == 1 && f.total >= (1 << 16);
  bool vec = big && size_left(k, x) % 4 == 0 && ren.vector_lanes(out_dt) == 4 && f.stride(f.stores[0], x) == 1;
  for (auto& l : f.loads) vec = vec && f.stride(l, x) != 2 && itemsize(l->src[0]->dtype) == 4;
  if (vec) try_apply(k, {OptOp::VECTOR, x->range_id(), 4});
  gpu_locals(f, k, x, budget, window);
  for (auto& o : group) try_apply(k, o);
  if (!vec && big && size_left(k, x) % 4 == 0) try_apply(k, {OptOp::UPCAST, x->range_id(), 4});
  return k.applied();
}

// reduce loops one inside another (a conv under a max-pool): a REDUCE whose terms run over a reduce range not its own
inline bool nested_reduces(const KernelFacts& f) {
  for (auto& u : f.topo) {
    if (u->op != Ops::REDUCE) continue;
    std::vector<const UOp*> todo{u->src[0].get()};
    std::unordered_set<const UOp*> seen;
    while (!todo.empty()) {
      const UOp* x = todo.back();
      todo.pop_back();
      if (!seen.insert(x).second || x->op == Ops::REDUCE) continue;  // NOTE: another reduce's ranges are its own
      if (x->op == Ops::RANGE && axis_type(x) == AxisType::REDUCE &&
          std::none_of(u->src.begin() + 1, u->src.end(), [&](auto& r) { return r.get() == x; }))
        return true;
      for (auto& s : x->src) todo.push_back(s.get());
    }
  }
  return false;
}
// the CPU heuristic's register tile: the kernel it drives, the vector axes chosen before, the tile so far
struct CpuTile {
  const KernelFacts& f;
  Kernel& k;
  UOpRef vaxis, raxis, tile_axis{};  // lanes on an output axis, on the reduce axis; the tile's first upcast axis
  int64_t lanes, acc = 1, max_acc = 0;  // floats in the tile (accumulators x lanes), and the most it may hold
  int upcasted = 0;
  // some axis is left to split over the cores in kernel t
  bool room(const Kernel& t) const {
    int threads = t.renderer().threads;
    return threads <= 1 || std::any_of(f.out_rngs.begin(), f.out_rngs.end(), [&](auto& r) { return size_left(t, r) % threads == 0; });
  }
  // upcast output axes some load does not depend on (its value is reused across the tile), the second one that reuses
  // a load the first does not (a conv: images x channels), while the accumulators fit the vector registers, or one
  // scalar a register without vectors; there the store's contiguous axis first when every load walks it contiguously
  // or not at all (a 10-wide conv: 5 neighbouring outputs x 4 channels, 2.3x faster than images x channels)
  void upcast_axes() {
    std::vector<bool> reused(f.loads.size());
    for (int pass = 0; pass < 2; pass++) {
      UOpRef best;
      int64_t best_amt = 0, best_new = 0;
      // NOTE: axes under 8 (a filter window's) only where no larger one qualifies, and next to a first axis only when
      // that one is whole in registers: upcasting a 5-wide window beside channels reloads the input per row (3.5x slower)
      for (bool small : {false, true}) {
        if (best || (small && pass > 0 && size_left(k, tile_axis) != 1)) break;
        for (auto& r : f.out_rngs) {
          if (r == vaxis || size_left(k, r) != r->range_end() || (r->range_end() < 8) != small) continue;
          int64_t fresh = 0, any = 0;
          for (size_t i = 0; i < f.loads.size(); i++) if (f.stride(f.loads[i], r) == 0) { any++; fresh += !reused[i]; }
          if (!any || (pass > 0 && !fresh && !small)) continue;
          bool row = !vaxis && pass == 0 && f.stride(f.stores[0], r) == 1;
          for (auto& l : f.loads) row = row && f.stride(l, r) != 2;
          int64_t score = fresh + (row ? 1000 : 0);
          for (int64_t amt : {4, 3, 5, 2})
            if (size_left(k, r) % amt == 0 && acc * amt <= max_acc) {
              if (!best || score > best_new) { best = r; best_amt = amt; best_new = score; }
              break;
            }
        }
      }
      if (!best || !try_apply(k, {OptOp::UPCAST, best->range_id(), best_amt})) break;
      for (size_t i = 0; i < f.loads.size(); i++) reused[i] = reused[i] || f.stride(f.loads[i], best) == 0;
      acc *= best_amt;
      if (!tile_axis) tile_axis = best;
      upcasted++;
    }
    // the scalar tile's contiguous axis innermost: its neighbours sit in neighbouring registers (1.6x for a 10-wide conv)
    if (!vaxis && upcasted == 2 && f.stride(f.stores[0], tile_axis) == 1) {
      std::vector<Opt> os = k.applied();
      std::swap(os.end()[-2], os.end()[-1]);
      if (auto t = replay(k.ast(), k.renderer(), os)) k = *t;
    }
  }
  // twice the tile along an axis, while the accumulators stay within cap and some axis is left to split over the cores
  void grow(const UOpRef& axis, int64_t cap) {
    if (acc * 2 > cap || size_left(k, axis) % 2 != 0) return;
    Kernel t = k;
    if (!try_apply(t, {OptOp::UPCAST, axis->range_id(), 2}) || !room(t)) return;
    k = t;
    acc *= 2;
  }
  // a tile that takes every vector register leaves none for the loads and spills (AVX2's 16: a 1024 matmul's 8 x 16
  // floats, 16 float8 accumulators). The tile axis then takes as many steps as leave 4 registers free, padded where
  // they do not divide it (its padded steps recompute the last one, unstored): 6 x 16, 12 accumulators, as Eigen's
  // AVX2 kernel keeps (a 1024 matmul on an AVX2 EPYC, one thread: 1.5x faster)
  void fit_registers() {
    const Renderer& ren = k.renderer();
    if (acc / lanes < ren.vector_registers) return;
    int64_t u = 1, n = tile_axis->range_end(), id = tile_axis->range_id();
    for (auto& o : k.applied()) if (o.op == OptOp::UPCAST && o.axis == id) u *= o.amt;
    int64_t step = acc / u, fit = (ren.vector_registers - 4) * lanes / step;  // floats a step of the tile axis
    if (fit <= u / 2 || fit >= u) return;
    std::vector<Opt> os = k.applied();
    auto first = std::find_if(os.begin(), os.end(), [&](const Opt& o) { return o.op == OptOp::UPCAST && o.axis == id; });
    *first = {OptOp::UPCAST, id, fit};
    os.erase(std::remove_if(first + 1, os.end(), [&](const Opt& o) { return o.op == OptOp::UPCAST && o.axis == id; }), os.end());
    if (n % fit) os.insert(first, {OptOp::PADTO, id, fit});
    if (auto t = replay(k.ast(), ren, os); t && room(*t)) { k = *t; acc = step * fit; }
  }
  static constexpr double l2_bytes = 2 << 20;  // where a stream passes a core's L2 (one figure for every CPU)
  // the bytes a load's addresses span
  static double bytes(const UOpRef& l) { return double(l->src[1]->vmax - l->src[1]->vmin + 1) * double(itemsize(l->src[0]->dtype)); }
  // K blocks: a register tile over a long reduce streams the operand it reuses (a matmul's B) from L3 or memory once
  // per tile. When the loads span more than a core's L2, block the outermost reduce axis into the smallest blocks
  // whose inner loop still runs >= 256 steps (shorter streams defeat the prefetcher): a block then stays in cache
  // while every tile passes over it (a 2048 matmul on a Zen 4: 2.1x; a conv's weight gradient: 2x)
  void kblock() {
    const UOpRef& r0 = f.red_rngs[0];
    if (kblock_reduces(f.sink, r0).index() != 0) return;
    double span = 0;
    for (auto& l : f.loads) span += bytes(l);
    int64_t n = r0->range_end(), inner = f.reduce_size / n, kc = 2;
    while (kc * inner < 256 && kc < n) kc *= 2;
    if (!(span > l2_bytes && kc < n && n % kc == 0) || !try_apply(k, {OptOp::KBLOCK, r0->range_id(), kc})) return;
    // a plain matmul then walks the rows innermost: a block of B's columns stays in cache over every row's tile (BEAM's
    // pick for 1024 and 2048 on a Zen 4); so does one whose B is read from panels (rows, panels, the lanes within one:
    // Tensor::cpu_panels), inside each panel
    if (f.out_rngs.size() == 2 || (f.out_rngs.size() == 3 && vaxis == f.out_rngs[2]))
      try_apply(k, {OptOp::SWAP, f.out_rngs[0]->range_id(), f.out_rngs[1]->range_id()});
  }
  // a tile over K's lanes (x @ W.T) walks its second output axis innermost: each step of the first reads again all
  // that does not depend on the first (W). Where that spans more than a core's L2 and more than the first's other
  // operand, the first axis goes innermost: a tile of W stays in L1 over every row of x (a prefill chunk, 64 rows
  // against a weight of 3.5 MB, streamed W 8 times a thread from L3: 43 GFLOPS on the Xeon's 2 cores)
  void rows_inner() {
    if (f.out_rngs.size() != 2) return;
    double reread[2] = {0, 0};  // bytes of the loads independent of out_rngs[i]
    for (auto& l : f.loads)
      for (int i : {0, 1})
        if (f.stride(l, f.out_rngs[size_t(i)]) == 0) reread[i] += bytes(l);
    if (reread[0] > l2_bytes && reread[1] < reread[0]) try_apply(k, {OptOp::SWAP, f.out_rngs[0]->range_id(), f.out_rngs[1]->range_id()});
  }
  void run() {
    const Renderer& ren = k.renderer();
    // (lanes on the reduce axis: a vector register an accumulator, half of them: the loads take the others)
    max_acc = vaxis ? lanes * ren.vector_registers : raxis ? ren.vector_registers / 2 : ren.vector_registers;
    acc = vaxis ? lanes : 1;
    upcast_axes();
    // up to 16 vector registers of floats (BEAM's pick for 1024 matmuls: 8 x 16 with AVX2, 8 x 32 with AVX-512, 2.1x
    // faster than 4 x 32 on a Zen 4; a conv's input gradient is 1.3x slower at 32 AVX2 registers) and never past the
    // registers (with AVX2, 128 floats of a half-width tile spilled); a very long reduce (a weight gradient over a
    // batch) up to the registers (BEAM: 8 x 32, 1.9x faster for 32x32x5x5)
    const int64_t tile_cap = std::min<int64_t>(16 * lanes, max_acc);
    if (vaxis && upcasted) {
      grow(vaxis, tile_cap);
      if (f.reduce_size >= 256) grow(tile_axis, tile_cap);
      if (f.reduce_size >= 16384) grow(vaxis, max_acc);
      fit_registers();
      kblock();
    }
    if (raxis && upcasted == 2) rows_inner();
    if (!vaxis && !upcasted && !f.red_rngs.empty()) {
      const UOpRef& rr = f.red_rngs.back();
      int64_t n = size_left(k, rr);
      for (int64_t amt : {4, 2}) if (n % amt == 0 && n > amt) { try_apply(k, {OptOp::UNROLL, rr->range_id(), amt}); break; }
    }
  }
};

// the block of a quantized operand along the reduce range r: the largest divisor of r's size up to 32 by which some
// address divides an expression of r (a ggml Q4_1 weight's scales at (k / 32) * 20, its nibbles at k % 16), else 1;
// and the largest divisor of all (a K type's super-block of 256)
inline std::pair<int64_t, int64_t> quant_block(const KernelFacts& f, const UOpRef& r) {
  auto dep = depends_on(f.sink, r);
  int64_t n = r->range_end(), best = 1, most = 1;
  for (auto& u : f.topo)
    if (u->op == Ops::IDIV && u->src[1]->op == Ops::CONST && dep.count(u->src[0].get())) {
      auto c = int64_t(u->src[1]->const_value());
      most = std::max(most, c);
      if (c > best && c <= 32 && n % c == 0) best = c;
    }
  return {best, most};
}
// the hand-written heuristic for the CPU (C renderer)
inline std::vector<Opt> hand_coded_optimizations(const UOpRef& sink, const Renderer& ren) {
  if (ren.has_local) return gpu_optimizations(sink, ren);
  KernelFacts f(sink);
  Kernel k(sink, ren);
  if (!one_address(f.stores)) return {};
  bool has_reduce = !f.loops.empty(), nested = nested_reduces(f);
  DType out_dt = sink->src[0]->src[1]->dtype;
  const int64_t full = ren.vector_lanes(out_dt);
  // reduce loops one after another in a multi-output kernel (softmax's max and sum of a row): the loop with the most
  // work (the sum's exp2) gets vector lanes on its range where every load in it walks the range contiguously or not at
  // all (a kernel has one set of lanes), the others are unrolled (a prefill chunk's softmax over its keys, a symbolic
  // count: 3.7x faster with the sum's exp2 a vector's)
  if (f.stores.size() > 1 && f.loops.size() > 1 && !nested) {
    std::vector<std::pair<size_t, UOpRef>> loops;  // (the nodes whose value varies along the loop, its inner range)
    for (auto& [ids, inner] : f.loops) loops.push_back({depends_on(f.sink, inner).size(), inner});
    std::stable_sort(loops.begin(), loops.end(), [](auto& a, auto& b) { return a.first > b.first; });
    int64_t expand = 1, lanes = 1;
    for (auto& [work, inner] : loops) {
      int64_t n = inner->range_end(), amt = 0;
      for (int64_t a : vector_amounts(full)) if (lanes == 1 && n % a == 0 && n >= 2 * a) { amt = a; break; }
      for (auto& l : f.loads) if (int c = f.stride(l, inner); c == 2 || (c == 1 && itemsize(l->src[0]->dtype) != itemsize(out_dt))) amt = 0;
      if (amt && expand * amt <= Kernel::max_expand && try_apply(k, {OptOp::VECTOR, inner->range_id(), amt})) expand *= amt, lanes = amt;
      else if (n % 4 == 0 && n > 4 && expand * 4 <= Kernel::max_expand && try_apply(k, {OptOp::UNROLL, inner->range_id(), 4})) expand *= 4;
    }
    has_reduce = false;  // NOTE: only the threads below
  }
  int64_t lanes = full;
  auto narrow_int = [&](const UOpRef& l) { return is_int(l->src[0]->dtype) && itemsize(l->src[0]->dtype) < itemsize(out_dt); };
  // vector lanes on the output axis the store walks contiguously, when every load is contiguous or constant along it;
  // in a large elementwise kernel, other loads of the element's size are gathered per lane (a max-pool's gradient read
  // at x / 2 beside a conv's padded gradient: 1.4x), and quantized bytes (a weight dequantized into floats) may take them too where
  // the lanes divide the block (as the reduce below): the block's scales are the same for every lane
  UOpRef vaxis;
  int64_t eblock = 1;
  const bool big = f.total >= (1 << 16), gather = !has_reduce && big;  // (a small kernel, a decode step's, stays as it was)
  if (lanes > 1) {
    for (auto it = f.out_rngs.rbegin(); it != f.out_rngs.rend() && !vaxis; ++it) {
      auto& r = *it;
      // NOTE: narrower vectors when full ones do not divide the axis (a 20-wide conv output: 4 lanes; a 24-wide row: 8)
      int64_t n = r->range_end(), amt = 0;
      for (int64_t a : vector_amounts(lanes)) if (n % a == 0 && (a == lanes || (a >= 4 && (has_reduce || big)))) { amt = a; break; }
      if (!amt || f.stride(f.stores[0], r) != 1) continue;
      auto [qb, qm] = has_reduce ? std::pair<int64_t, int64_t>{1, 1} : quant_block(f, r);
      bool ok = true;
      for (auto& l : f.loads)
        ok &= (narrow_int(l) && qb % amt == 0 && qm % qb == 0) ||
              ((f.stride(l, r) != 2 || gather) && itemsize(l->src[0]->dtype) == itemsize(out_dt));
      if (ok) { vaxis = r; lanes = amt; eblock = qb; }
    }
  }
  // in a reduce whose store's contiguous axis takes no full vector (a conv's 20-wide output: 4 of 16 lanes), the lanes
  // on an axis every load walks contiguously or not at all (the conv's output channels, its weight laid out with them
  // innermost): the store, strided, is once per output, after the reduce
  if (full > 1 && has_reduce && f.loops.size() == 1 && !nested && f.reduce_size >= 64 && (!vaxis || lanes < full)) {
    std::vector<UOpRef> looped;  // (an epilogue's loads are gathered once per output)
    std::copy_if(f.loads.begin(), f.loads.end(), std::back_inserter(looped), [](auto& l) { return in_reduce_loop(l); });
    for (auto& r : f.out_rngs) {
      bool ok = r != vaxis && r->range_end() % full == 0, any = false;
      for (auto& l : looped) {
        int c = f.stride(l, r);
        ok &= c != 2 && itemsize(l->src[0]->dtype) == itemsize(out_dt);
        any |= c == 1;
      }
      if (ok && any) { vaxis = r; lanes = full; eblock = 1; break; }
    }
  }
  if (vaxis && !try_apply(k, {OptOp::VECTOR, vaxis->range_id(), lanes})) vaxis = nullptr;
  // and the rest of the block unrolled, so its scales are decoded once a block (a Q4_1 weight into floats: ~10x)
  if (vaxis && eblock > lanes && size_left(k, vaxis) % (eblock / lanes) == 0) try_apply(k, {OptOp::UPCAST, vaxis->range_id(), eblock / lanes});
  // else the lanes on the innermost reduce axis, when every load walks it contiguously or not at all (x @ W.T, where
  // both operands are contiguous along K; a row's sum): vector loads of both operands, one vector accumulator per
  // output of the register tile, its lanes added after the loop (x @ W.T on a Zen 4: 6x, past Eigen's)
  // Quantized bytes (loads narrower than the result whose addresses divide the reduce index by a block: ggml's
  // Q4_0, Q4_1, Q8_0) may take the lanes too where they divide the block and every larger block read is a multiple of
  // it (a K type's super-block: its index folds to one per sub-block, see fold_divmod): a lane's bytes are gathered
  // or, contiguous in the block, loaded as one vector; the block's scales are the same for every lane (a Q4_1 matvec:
  // 2x faster than scalar; a Q4_K one 10-17x, whose super-block scale was gathered per lane before the fold)
  UOpRef raxis;
  bool quant = has_reduce && f.loops.size() == 1 && !nested && std::any_of(f.loads.begin(), f.loads.end(), narrow_int);
  auto [qblock, qmost] = quant ? quant_block(f, f.red_rngs.back()) : std::pair<int64_t, int64_t>{1, 1};
  if (!vaxis && lanes > 1 && has_reduce && f.loops.size() == 1 && !nested) {
    // NOTE: narrower vectors where a register's lanes would leave fewer than two steps (a row of 16 floats, AVX-512)
    const UOpRef& r = f.red_rngs.back();
    int64_t amt = 0;
    for (int64_t a : vector_amounts(lanes)) if (r->range_end() % a == 0 && r->range_end() >= 2 * a) { amt = a; break; }
    bool ok = amt > 0, any = false;
    for (auto& u : f.topo) ok &= u->op != Ops::REDUCE || u->dtype == out_dt;
    for (auto& l : f.loads) {
      int c = f.stride(l, r);
      if (narrow_int(l) && amt && qblock % amt == 0 && qmost % qblock == 0) continue;
      ok &= c != 2 && itemsize(l->src[0]->dtype) == itemsize(out_dt);
      any |= c == 1;
    }
    if (ok && any && try_apply(k, {OptOp::VECTOR, r->range_id(), amt})) raxis = r, lanes = amt;
  }
  if (has_reduce && f.reduce_size >= 16) CpuTile{.f = f, .k = k, .vaxis = vaxis, .raxis = raxis, .lanes = lanes}.run();
  // a reduce over quantized bytes: the rest of its block (past the lanes) unrolled, so the block's scales are loaded
  // and decoded once per block, not per element (a Q4_1 matvec on the CPU: ~20x)
  if (qblock > 1 && !vaxis) {
    const UOpRef& rr = f.red_rngs.back();
    int64_t n = size_left(k, rr), split = rr->range_end() / n;  // lanes (or an unroll) already taken from it
    for (int64_t b = qblock % split == 0 ? qblock / split : 1; b >= 2; b /= 2)
      if (n % b == 0 && try_apply(k, {OptOp::UNROLL, rr->range_id(), b})) break;
  }
  // threads: split the outermost loop axis that divides, when each core gets enough work (applied first); in a reduce,
  // a concrete axis of at least 4 a core before a symbolic dim's (its extent may be a few rows: chunks of
  // ceil(e / cores) leave cores idle, and each core's rows walk all of a matmul's other operand: on a 16-core Xeon,
  // (512, 1024) @ (1024, 1024) of a bound 1024 ran 0.34x the concrete kernel's speed split by rows)
  int th = ren.threads;
  int64_t work = f.reduce_size * f.total;
  for (; th > 1 && work / th < (1 << 16); th--) {}
  if (th > 1) {
    auto first = [&](int64_t at_least, bool concrete) {
      return std::find_if(f.out_rngs.begin(), f.out_rngs.end(), [&](auto& r) {
        int64_t n = size_left(k, r);
        return (!concrete || r->src.empty()) && n % th == 0 && n >= th * at_least;
      });
    };
    bool sym = has_reduce && std::any_of(f.out_rngs.begin(), f.out_rngs.end(), [](auto& r) { return !r->src.empty(); });
    auto it = sym ? first(4, true) : f.out_rngs.end();
    if (it == f.out_rngs.end()) it = first(1, false);
    if (it != f.out_rngs.end()) k = with_first(k, {{OptOp::THREAD, (*it)->range_id(), th}});
  }
  return k.applied();
}

}  // namespace tinygrad::detail
