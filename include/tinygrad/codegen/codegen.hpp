#pragma once
// codegen pipeline: kernel AST -> opts (Kernel: kernel.hpp, heuristics.hpp) -> lowering passes (lowering_passes) -> linearize -> render
#include "linearize.hpp"
#include "../uop/spec.hpp"

namespace tinygrad::detail {

struct ProgramSpec {
  std::string name;     // for people: r_64_16_4
  std::string fn;       // the symbol: name + hash
  std::string src;
  std::vector<Opt> opts;
  LaunchDims launch;    // CPU: cores; GPU: workgroups and their threads
  std::vector<UOpRef> vars;  // the DEFINE_VARs whose values a launch passes, in order (tensor/variable.hpp)
  double flops = 0;     // estimated, for DEBUG=2
  UOpRef ast;
  std::vector<RewriteStage> stages;  // VIZ=1: the passes that made it from its AST
};

// float ALU ops times the iterations each runs (for DEBUG=2's GFLOPS)
inline double estimate_flops(const UOpRef& sink) {
  auto topo = toposort(sink);
  auto rs = open_ranges(topo);
  double flops = 0;
  for (auto& u : topo) {
    if (!(is_alu(u->op) && is_float(u->dtype)) && u->op != Ops::REDUCE) continue;
    double it = u->vcount;
    for (auto* r : rs[(u->op == Ops::REDUCE ? u->src[0] : u).get()]) it *= double(r->range_end());
    flops += it;
  }
  return flops;
}
inline std::string kernel_name(const UOpRef& sink, const std::vector<Opt>& opts) {
  bool red = false;
  for (auto& u : toposort(sink)) red |= u->op == Ops::REDUCE;
  std::string n = red ? "r" : "E";
  for (auto& r : ranges_of(sink)) {
    if (r->src.empty()) { n += cat("_", r->range_end()); continue; }
    // a symbolic dim by the variables of its extent (pos+1: r_pos_64)
    std::set<std::string> vars;
    for (auto& x : toposort(r->src[0])) if (x->op == Ops::DEFINE_VAR) vars.insert(var_name(*x));
    for (auto& v : vars) n += "_" + v;
  }
  // NOTE: the amounts that split an axis (PADTO and MERGE show in the range sizes; THREAD, SWAP, NOLOCALS, TC and TILE
  // name no split here)
  auto splits = [](OptOp op) {
    return op == OptOp::UPCAST || op == OptOp::VECTOR || op == OptOp::UNROLL || op == OptOp::LOCAL || op == OptOp::GROUP || op == OptOp::GROUPTOP ||
           op == OptOp::KBLOCK;
  };
  for (auto& o : opts) if (splits(o.op)) n += cat("_", o.amt);
  return n;
}

// ---- lowering: a kernel with its opts applied -> the graph the linearizer orders. A flat list of named passes
// (lowering_passes); each is a graph_rewrite of a PatternMatcher table, or a walk where its comment says why. A pass's
// context holds the kernel-wide facts its rules need (a thread's position in a workgroup, the ids an axis becomes),
// computed once before the rewrite.

// GROUP reduces: a REDUCE over GROUP ranges: each thread of the group reduces its share (the other ranges), writes it
// to workgroup memory at its local position, and after a barrier reduces the group's shares read back from there.
// Every thread computes the result; only the group's thread 0 stores it.
struct GroupCtx {
  std::vector<std::vector<UOpRef>> classes;  // the thread ranges by the id they run on (thread_classes)
  int64_t size = 1, next_id = 0, nbuf = 0;
  bool needed = false;  // a reduce has a group, or a store leaves a thread id out of its address
  bool warp_ranges = false;  // a tensor-core kernel's lanes: they take x
  std::unordered_set<const UOp*> gated;  // global stores already restricted to the first thread
  int warp = 0;  // the renderer's warp (SHUFFLE), 0: none
  const std::vector<UOpRef>* x = nullptr;  // the class on the innermost thread id (gpudims' x), where a warp's lanes are
  GroupCtx(const UOpRef& sink, std::vector<std::vector<UOpRef>> cls, int warp_lanes)
      : classes(std::move(cls)), next_id(next_range_id(sink)), warp(warp_lanes) {
    for (auto& c : classes) {
      size *= c[0]->range_end();
      if (axis_type(c[0]) == AxisType::WARP) warp_ranges = true;
      else if (!x || c[0]->range_id() > (*x)[0]->range_id()) x = &c;  // NOTE: gpudims orders by id, the highest on x
    }
    for (auto& u : toposort(sink))
      if (u->op == Ops::REDUCE)
        for (size_t i = 1; i < u->src.size(); i++) needed |= axis_type(u->src[i]) == AxisType::GROUP;
    for (auto& st : sink->src) needed |= first_thread(st->src[0])->op != Ops::CONST;
  }
  // the thread's position in the workgroup, a class's range replaced where sub has one of its ranges; class `scaled`
  // counted with extent `ext` (a slot per warp)
  UOpRef position(const std::unordered_map<const UOp*, UOpRef>& sub, const std::vector<UOpRef>* scaled = nullptr, int64_t ext = 0) const {
    UOpRef at = const_int(classes[0][0]->dtype, 0);
    for (auto& c : classes) {
      UOpRef coord = c[0];
      for (auto& r : c) if (auto it = sub.find(r.get()); it != sub.end()) coord = it->second;
      at = at * (&c == scaled ? ext : c[0]->range_end()) + coord;
    }
    return at;
  }
  // a store to address idx: the first thread along each thread id the address does not walk (the others hold the same
  // value: a reduce's result is every thread's)
  UOpRef first_thread(const UOpRef& idx) const {
    auto walked = ranges_of(idx);
    UOpRef g = const_uop(DType::Bool, 1);
    for (auto& c : classes)
      if (std::none_of(c.begin(), c.end(), [&](auto& r) { return std::find(walked.begin(), walked.end(), r) != walked.end(); }))
        g = logical_and(g, alu(Ops::CMPEQ, {c[0], const_int(c[0]->dtype, 0)}));
    return g;
  }
};
inline const PatternMatcher& pm_group_reduces() {
  static const PatternMatcher pm{
      {UPat::ops_of({Ops::REDUCE}, "r"), [](const Match& m) -> UOpRef {
         auto& c = m.context<GroupCtx>();
         const UOpRef& u = m["r"];
         std::vector<UOpRef> own, rest{u->src[0]};
         for (size_t i = 1; i < u->src.size(); i++) (axis_type(u->src[i]) == AxisType::GROUP ? own : rest).push_back(u->src[i]);
         if (own.empty()) return nullptr;
         UOpRef part = rest.size() == 1 ? rest[0] : make_uop(Ops::REDUCE, u->dtype, rest, u->arg, u->vcount);
         // a share that differs per vector lane (VECTOR on an output axis) gets a slot per lane: lane-major within a thread
         UOpRef lane;
         for (auto& x : toposort(part)) if (x->op == Ops::LANE) lane = x;
         int64_t w = lane ? lane->range_end() : 1;
         auto at = [&](const UOpRef& pos) { return lane ? pos * w + lane : pos; };
         // a group on the innermost thread id, whole warps of it: each warp adds its lanes' shares by exchanging them
         // (SHUFFLE, log2(warp) steps, every lane ends with the sum), then one slot a warp in workgroup memory
         int64_t t = own[0]->range_end();
         const std::vector<UOpRef>* cls = nullptr;
         for (auto& k : c.classes) if (std::find(k.begin(), k.end(), own[0]) != k.end()) cls = &k;
         if (c.warp && !c.warp_ranges && cls == c.x && own.size() == 1 && !lane && u->vcount == 1 && t % c.warp == 0) {
           const UOpRef& g = own[0];
           UOpRef v = part;
           for (int64_t mask = c.warp / 2; mask >= 1; mask /= 2) v = alu(u->reduce_op(), {v, make_uop(Ops::SHUFFLE, u->dtype, {v}, mask)});
           if (t == c.warp) return v;
           auto wbuf = make_uop(Ops::DEFINE_LOCAL, u->dtype, {}, std::vector<int64_t>{c.nbuf++, c.size / c.warp});
           auto first_lane = alu(Ops::CMPEQ, {mod(g, c.warp), const_int(g->dtype, 0)});
           auto st = make_uop(Ops::STORE, DType::Bool,
                              {make_uop(Ops::INDEX, u->dtype, {wbuf, c.position({{g.get(), idiv(g, c.warp)}}, cls, t / c.warp), first_lane}), v});
           auto bar = make_uop(Ops::BARRIER, DType::Bool, {st});
           auto warps = make_range(t / c.warp, c.next_id++, AxisType::REDUCE, g->dtype);
           auto ld = make_uop(Ops::LOAD, u->dtype, {make_uop(Ops::INDEX, u->dtype, {wbuf, c.position({{g.get(), warps}}, cls, t / c.warp)}), bar});
           return make_uop(Ops::REDUCE, u->dtype, {ld, warps}, u->arg, u->vcount);
         }
         auto buf = make_uop(Ops::DEFINE_LOCAL, u->dtype, {}, std::vector<int64_t>{c.nbuf++, c.size * w});
         auto store = make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, u->dtype, {buf, at(c.position({}))}), part});
         auto barrier = make_uop(Ops::BARRIER, DType::Bool, {store});
         // one group of 32 threads or more (a power of two): a tree, the lower half of the active threads adding the
         // upper half's shares each step (the others read their own slot, which no thread writes then: no race), then
         // every thread reads the first slot. Each thread reading all t shares had cost t loads a thread (a LayerNorm
         // row of 128 threads: 128 x 128 loads of workgroup memory a reduce)
         if (own.size() == 1 && !lane && u->vcount == 1 && t >= 32 && (t & (t - 1)) == 0) {
           const UOpRef& g = own[0];
           auto read = [&](const UOpRef& gi) {  // the slot of thread gi, after the last barrier
             return make_uop(Ops::LOAD, u->dtype, {make_uop(Ops::INDEX, u->dtype, {buf, c.position({{g.get(), gi}})}), barrier});
           };
           for (int64_t half = t / 2; half >= 1; half /= 2) {
             auto active = alu(Ops::CMPLT, {g, const_int(g->dtype, half)});
             auto sum = alu(u->reduce_op(), {read(g), read(alu(Ops::WHERE, {active, g + half, g}))});
             store = make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, u->dtype, {buf, c.position({}), active}), sum});
             barrier = make_uop(Ops::BARRIER, DType::Bool, {store});
           }
           return read(const_int(g->dtype, 0));
         }
         std::unordered_map<const UOp*, UOpRef> other;
         std::vector<UOpRef> src{nullptr};
         for (auto& g : own) src.push_back(other[g.get()] = make_range(g->range_end(), c.next_id++, AxisType::REDUCE, g->dtype));
         src[0] = make_uop(Ops::LOAD, u->dtype, {make_uop(Ops::INDEX, u->dtype, {buf, at(c.position(other))}), barrier});
         return make_uop(Ops::REDUCE, u->dtype, src, u->arg, u->vcount);
       }},
      // a store to global memory: the group's first thread writes
      {UPat::ops_of({Ops::STORE}, "st"), [](const Match& m) -> UOpRef {
         auto& c = m.context<GroupCtx>();
         const UOpRef &st = m["st"], &idx = st->src[0];
         if (idx->src[0]->op != Ops::DEFINE_GLOBAL || c.gated.count(st.get())) return nullptr;
         UOpRef first = c.first_thread(idx);
         if (first->op == Ops::CONST) return nullptr;
         std::vector<UOpRef> isrc{idx->src[0], idx->src[1], idx->src.size() > 2 ? logical_and(idx->src[2], first) : first};
         auto r = make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, idx->dtype, isrc, idx->arg, idx->vcount), st->src[1]});
         c.gated.insert(r.get());
         return r;
       }},
  };
  return pm;
}

// gpudims (tinygrad's): loop axes become global ids, LOCAL and GROUP axes local ids, innermost on x. More than 3 axes,
// or a dim past its limit, merge into the next inner dim (index = id / stride % size).
struct GpuDimsCtx {
  std::unordered_map<const UOp*, UOpRef> ids;  // range -> its expression in SPECIALs
  // gv: the workgroups of a dim whose outermost axis is a symbolic dim's (a tight range), as an expression of variables
  // threads: the thread ranges by the id they run on, as found before group_reduces (whose workgroup memory then joins them)
  GpuDimsCtx(const UOpRef& sink, const Renderer& ren, LaunchDims& launch, std::array<UOpRef, 3>& gv,
             const std::vector<std::vector<UOpRef>>& threads) {
    launch.global = launch.local = {1, 1, 1};
    auto rs = ranges_of(sink);
    std::unordered_map<const UOp*, UOpRef> shared;  // a thread range -> the range whose id it runs on
    for (auto& c : threads) for (size_t i = 1; i < c.size(); i++) shared[c[i].get()] = c[0];
    for (int kind : {1, 2}) {
      std::vector<std::vector<UOpRef>> dims;  // each: its axes, innermost first
      std::vector<UOpRef> order(rs.rbegin(), rs.rend());
      std::stable_partition(order.begin(), order.end(), [](auto& r) { return axis_type(r) == AxisType::WARP; });  // a warp's lanes: x
      for (auto& r : order) {
        auto t = axis_type(r);
        if (kind == 1 ? t != AxisType::LOOP : !is_thread(t) || shared.count(r.get())) continue;
        if (dims.size() < 3) dims.push_back({r}); else dims.back().push_back(r);
      }
      auto size = [](const std::vector<UOpRef>& d) { int64_t s = 1; for (auto& r : d) s *= r->range_end(); return s; };
      const int64_t* mx = kind == 1 ? ren.global_max : ren.local_max;
      for (size_t d = dims.size(); d-- > 1;)
        if (size(dims[d]) > mx[d]) { dims[d - 1].insert(dims[d - 1].end(), dims[d].begin(), dims[d].end()); dims.erase(dims.begin() + long(d)); }
      for (size_t d = 0; d < dims.size(); d++) {
        int64_t n = size(dims[d]);
        if (n > mx[d])
          throw Error(
              cat("tinygrad: a kernel needs ", n, " ", kind == 1 ? "workgroups" : "threads", " in dim ", d, ", more than the device's ", mx[d]));
        auto id = make_uop(Ops::SPECIAL, dims[d][0]->dtype, {}, std::vector<int64_t>{n, kind, int64_t(d)});
        (kind == 1 ? launch.global : launch.local)[d] = n;
        // NOTE: the outermost axis of a dim is its id over the others' product, so past its extent no thread has work
        if (const UOpRef& o = dims[d].back(); kind == 1 && !o->src.empty()) gv[d] = simplify(o->src[0] * (n / o->range_end()));
        int64_t stride = 1;
        for (size_t j = 0; j < dims[d].size(); j++) {
          auto& r = dims[d][j];
          UOpRef e = stride == 1 ? id : idiv(id, stride);
          ids[r.get()] = j + 1 == dims[d].size() ? e : mod(e, r->range_end());
          stride *= r->range_end();
        }
      }
    }
    for (auto& [r, c] : shared) ids[r] = ids.at(c.get());
  }
};
// an int expression of the kernel's variables (vars: in the order a launch passes their values) as a LaunchExpr; empty
// where it has another op (the launch keeps its bound). Walked with a stack: each use of a shared node is emitted again
inline LaunchExpr launch_expr(const UOpRef& e, const std::vector<UOpRef>& vars) {
  LaunchExpr r;
  std::vector<std::pair<const UOp*, bool>> st{{e.get(), false}};
  while (!st.empty()) {
    const UOp* u = st.back().first;  // NOTE: no structured binding: clang before 16 cannot capture one
    bool done = st.back().second;
    st.pop_back();
    if (u->op == Ops::CAST && is_int(u->dtype) && is_int(u->src[0]->dtype)) { st.push_back({u->src[0].get(), false}); continue; }
    if (u->op == Ops::CONST) { r.code.push_back({LaunchExpr::CONST, u->iarg()}); continue; }
    if (u->op == Ops::DEFINE_VAR) {
      auto it = std::find_if(vars.begin(), vars.end(), [&](auto& v) { return v.get() == u; });
      if (it == vars.end()) return {};
      r.code.push_back({LaunchExpr::VAR, it - vars.begin()});
      continue;
    }
    static const std::pair<Ops, LaunchExpr::Op> ops[] = {{Ops::ADD, LaunchExpr::ADD}, {Ops::MUL, LaunchExpr::MUL}, {Ops::IDIV, LaunchExpr::IDIV},
                                                         {Ops::MOD, LaunchExpr::MOD}, {Ops::MAX, LaunchExpr::MAX}};
    auto op = std::find_if(std::begin(ops), std::end(ops), [&](auto& o) { return o.first == u->op; });
    if (op == std::end(ops) || u->src.size() != 2) return {};
    if (done) { r.code.push_back({op->second, 0}); continue; }
    st.push_back({u, true});
    st.push_back({u->src[1].get(), false});
    st.push_back({u->src[0].get(), false});
  }
  return r;
}
inline const PatternMatcher& pm_gpudims() {
  static const PatternMatcher pm{{UPat::ops_of({Ops::RANGE}, "r"), [](const Match& m) -> UOpRef {
                                    auto& ids = m.context<GpuDimsCtx>().ids;
                                    auto it = ids.find(m["r"].get());
                                    return it == ids.end() ? nullptr : it->second;
                                  }}};
  return pm;
}
// A float32 sum of float16 or bfloat16 products takes each product exactly (11 + 11 or 8 + 8 significant bits fit a
// float's 24, and a product of halves never leaves a float's range) instead of rounding it to the halves' precision
// first: as tensor cores (the TC opt) and PyTorch's matmul do, so a half matmul gives one result with and without TC.
// The terms are found below the REDUCE through ADDs and CASTs (UNROLL sums an unrolled reduce's lanes with ADDs).
// On the CPU, where halves are floats rounded after each op, the rounding was most of a half matmul's time.
inline const PatternMatcher& pm_exact_products() {
  static const PatternMatcher exact{{UPat::ops_of({Ops::CAST}, "c"), [](const Match& m) -> UOpRef {
    const UOpRef &c = m["c"], &p = c->src[0];
    if (c->dtype != DType::Float32 || p->op != Ops::MUL || (p->dtype != DType::Float16 && p->dtype != DType::BFloat16)) return nullptr;
    return alu(Ops::MUL, {cast_uop(p->src[0], DType::Float32), cast_uop(p->src[1], DType::Float32)});
  }}};
  static const PatternMatcher pm{{UPat::ops_of({Ops::REDUCE}, "r"), [](const Match& m) -> UOpRef {
    const UOpRef& r = m["r"];
    if (r->reduce_op() != Ops::ADD || r->dtype != DType::Float32) return nullptr;
    UOpRef x = graph_rewrite(r->src[0], exact, nullptr, [](const UOp* u) { return u->op != Ops::ADD && u->op != Ops::CAST; });
    if (x == r->src[0]) return nullptr;
    std::vector<UOpRef> src = r->src;
    src[0] = x;
    return make_uop(r->op, r->dtype, std::move(src), r->arg, r->vcount);
  }}};
  return pm;
}


struct LowerCtx {
  const Renderer& ren;
  LaunchDims& launch;  // the GPU's global and local sizes, set by gpudims
  std::array<UOpRef, 3> global_var{};  // gpudims: the workgroups of a dim over a symbolic extent (null: fixed)
  std::vector<std::vector<UOpRef>> threads{};  // group_reduces: the thread ranges by shared id (thread_classes)
};
struct LoweringPass {
  const char* name;
  UOpRef (*run)(const UOpRef& sink, LowerCtx& c);
};
// the passes between a Kernel (opts applied) and the linearizer, in order
inline const std::vector<LoweringPass>& lowering_passes() {
  static const std::vector<LoweringPass> passes{
      {"exact_products", [](const UOpRef& s, LowerCtx&) { return graph_rewrite(s, detail::pm_exact_products()); }},
      {"group_reduces", [](const UOpRef& s, LowerCtx& c) {
         if (!c.ren.has_local) return s;
         c.threads = thread_classes(s);
         detail::GroupCtx g(s, c.threads, c.ren.warp);
         return g.needed ? graph_rewrite(s, detail::pm_group_reduces(), &g) : s;
       }},
      {"gpudims", [](const UOpRef& s, LowerCtx& c) {
         if (!c.ren.has_local) return s;
         detail::GpuDimsCtx g(s, c.ren, c.launch, c.global_var, c.threads);
         return graph_rewrite(s, detail::pm_gpudims(), &g);
       }},
      // a symbolic dim's loop that stayed whole ends at its extent: the gate that kept it inside holds (after gpudims,
      // which launches a symbolic dim at its bound, keeping the gate; opts that split a range drop its end)
      {"tight_loops", [](const UOpRef& s, LowerCtx&) {
         static const PatternMatcher pm{{UPat::ops_of({Ops::CMPLT}, "c"), [](const Match& m) -> UOpRef {
           const UOpRef& c = m["c"];
           bool tight = c->src[0]->op == Ops::RANGE && !c->src[0]->src.empty() && c->src[0]->src[0] == c->src[1];
           return tight ? const_uop(DType::Bool, 1, c->vcount) : nullptr;
         }}};
         return graph_rewrite(s, pm);
       }},
      // index math folds before and after the lanes become vectors
      {"simplify", [](const UOpRef& s, LowerCtx&) { return simplify(s); }},
      {"expand_lanes", [](const UOpRef& s, LowerCtx& c) { return expand_lanes(s, c.ren.aligned_vectors); }},
      {"simplify", [](const UOpRef& s, LowerCtx&) { return simplify(s); }},
  };
  return passes;
}

// a kernel with its opts applied -> source and launch dimensions
inline ProgramSpec to_program(const Kernel& k) {
  const Renderer& ren = k.renderer();
  ProgramSpec p;
  p.ast = k.ast();
  p.opts = k.applied();
  UOpRef sink = k.sink();
  int64_t threads = 1;
  for (auto& o : p.opts) if (o.op == OptOp::THREAD) threads = o.amt;
  p.launch.threads = threads;
  p.name = detail::kernel_name(sink, p.opts);
  LowerCtx ctx{ren, p.launch};
  detail::SpecCheck spec(k.ast(), sink);  // each stage against its spec (SPEC=1, DEBUG>=3, the tests)
  const bool viz = !flags().viz.empty();
  for (auto& pass : lowering_passes()) {
    int64_t r0 = viz ? rewrites_done() : 0;
    sink = pass.run(sink, ctx);
    if (viz) p.stages.push_back({pass.name, rewrites_done() - r0, toposort(sink).size()});
    spec.after(pass.name, sink);
    if (flags().debug >= 6) std::fprintf(stderr, "after %s:\n%s", pass.name, print_graph(sink).c_str());
  }
  p.flops = detail::estimate_flops(k.ast());
  auto lin = linearize(sink);
  spec.linear(lin);
  if (viz) p.stages.push_back({"linearize", 0, lin.size()});
  for (auto& u : lin) {
    p.launch.smem += CStyleRenderer::dynamic_smem(*u);
    if (u->op == Ops::DEFINE_VAR) p.vars.push_back(u);
  }
  for (size_t d = 0; d < 3; d++) if (ctx.global_var[d]) p.launch.global_var[d] = detail::launch_expr(ctx.global_var[d], p.vars);
  if (flags().debug == 5) std::fprintf(stderr, "%s", print_graph(sink).c_str());
  std::string body = ren.render("KERNEL_NAME", lin);
  p.fn = p.name + "_" + hex64(hash_bytes(body)).substr(0, 8);
  // the symbol carries a hash of the body, so kernels compiled together never clash
  for (size_t at; (at = body.find("KERNEL_NAME")) != std::string::npos;) body.replace(at, 11, p.fn);
  p.src = body;
  if (flags().debug >= 3) {
    std::string s;
    for (auto& o : p.opts) s += o.str() + " ";
    std::fprintf(stderr, "%s opts: [%s]\n", p.name.c_str(), s.c_str());
  }
  if (flags().debug >= 4) std::fprintf(stderr, "%s\n", p.src.c_str());
  return p;
}

// one of a heuristic's opts on k. The heuristics drive a Kernel, so the kernel accepts each of theirs: one it refuses is
// a heuristic's bug, an error with flags().strict_opts (STRICT_OPTS=1; the tests set it), else skipped with a line on
// stderr at DEBUG>=1 (to_program and BEAM's start kernel alike)
inline void apply_heuristic_opt(Kernel& k, const Opt& o) {
  try { k.apply(o); }
  catch (const KernelOptError& e) {
    if (flags().strict_opts) throw;
    if (flags().debug >= 1) std::fprintf(stderr, "tinygrad: the heuristic's %s was refused (skipped): %s\n", o.str().c_str(), e.what());
  }
}
// pinned: exactly these opts (an illegal one throws KernelOptError); else the heuristic's (NOOPT=1: none)
inline ProgramSpec to_program(const UOpRef& ast, const Renderer& ren, std::optional<std::vector<Opt>> pinned = std::nullopt) {
  Kernel k(ast, ren);
  if (pinned) for (auto& o : *pinned) k.apply(o);
  else if (!flags().noopt) for (auto& o : hand_coded_optimizations(ast, ren)) apply_heuristic_opt(k, o);
  return to_program(k);
}

}  // namespace tinygrad::detail
