#pragma once
// the hand-written heuristics: the opts a kernel gets without BEAM (hand_coded_optimizations; GPUs:
// gpu_optimizations). Each drives a Kernel, so every opt it returns is one the kernel accepted
#include "kernel.hpp"

namespace tinygrad {

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
