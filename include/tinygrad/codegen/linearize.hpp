#pragma once
// expander (LANE -> vector nodes) and linearizer (kernel graph -> ordered list with RANGE/END/accumulators)
#include "opt.hpp"

namespace tinygrad::detail {

// the ranges each node sits inside (a REDUCE closes its own)
inline std::unordered_map<const UOp*, std::vector<const UOp*>> open_ranges(const std::vector<UOpRef>& topo) {
  std::unordered_map<const UOp*, std::vector<const UOp*>> rs;
  for (auto& u : topo) {
    std::vector<const UOp*> s;
    if (u->op == Ops::RANGE) s.push_back(u.get());
    for (size_t i = 0; i < u->src.size(); i++) {
      if (u->op == Ops::REDUCE && i > 0) continue;
      for (auto* r : rs[u->src[i].get()]) if (std::find(s.begin(), s.end(), r) == s.end()) s.push_back(r);
    }
    if (u->op == Ops::REDUCE)
      std::erase_if(s, [&](const UOp* r) { return std::any_of(u->src.begin() + 1, u->src.end(), [&](auto& x) { return x.get() == r; }); });
    rs[u.get()] = std::move(s);
  }
  return rs;
}

// turn the LANE axis into vector nodes: contiguous loads/stores become vector loads/stores,
// other lane-dependent loads become gathers, ALU ops run on vectors
// (aligned: a vector load/store also needs its first address a multiple of the lane count, else it is per lane)
// NOTE: a walk, not a rule table: whether a load is contiguous is decided on its scalar address (the address at lane i
// against lane 0) before anything below it becomes a vector; bottom-up rules would meet the address already vectorized
inline UOpRef expand_lanes(const UOpRef& sink, bool aligned = false) {
  UOpRef lane;
  for (auto& u : toposort(sink)) if (u->op == Ops::LANE) lane = u;
  if (!lane) return sink;
  int W = int(lane->range_end());
  // a REDUCE over the lane (VECTOR on a reduce axis) closes it: its value does not depend on the lane
  auto closes = [&](const UOpRef& u) { return u->op == Ops::REDUCE && std::find(u->src.begin() + 1, u->src.end(), lane) != u->src.end(); };
  std::unordered_set<const UOp*> dep;  // the nodes that depend on the lane
  std::vector<UOpRef> closing;
  for (auto& u : toposort(sink)) {
    if (closes(u)) closing.push_back(u);
    else if (u == lane || std::any_of(u->src.begin(), u->src.end(), [&](auto& s) { return dep.count(s.get()); })) dep.insert(u.get());
  }
  std::unordered_map<const UOp*, UOpRef> memo;
  auto at = [&](const UOpRef& x, int i) { return simplify(substitute(x, {{lane.get(), const_int(lane->dtype, i)}})); };
  auto bcast = [&](const UOpRef& x) { return x->vcount == W ? x : make_uop(Ops::VECTORIZE, x->dtype, std::vector<UOpRef>(size_t(W), x), {}, W); };
  // NOTE: workgroup memory is read and written per lane (a GROUP reduce's per-lane slots): the renderers hold it as
  // scalars and CUDA/OpenCL would need address-space-qualified vector casts
  auto contiguous = [&](const UOpRef& idx) {
    const UOpRef& addr = idx->src[1];
    if (idx->src[0]->op == Ops::DEFINE_LOCAL || simplify(addr - at(addr, 0)) != lane) return false;
    return !aligned || simplify(mod(at(addr, 0), W))->is_const(0);
  };
  // a contiguous access whose mask (if any) is the same for every lane: its vector INDEX (a vector load or store);
  // else null (a gather, or one store per lane)
  auto vector_index = [&](const UOpRef& idx) -> UOpRef {
    bool gated = idx->src.size() > 2;
    if (!contiguous(idx) || (gated && dep.count(idx->src[2].get()))) return nullptr;
    std::vector<UOpRef> isrc{idx->src[0], at(idx->src[1], 0)};
    if (gated) isrc.push_back(idx->src[2]);
    return make_uop(Ops::INDEX, idx->dtype, isrc, {}, W);
  };
  // the sources of u that are vectorized before u (a LOAD reads its lanes' addresses itself)
  auto inputs = [&](const UOpRef& u) -> std::vector<UOpRef> {
    if (u->op == Ops::REDUCE) return {u->src[0]};
    if (is_alu(u->op) || u->op == Ops::CAST || u->op == Ops::BITCAST) return u->src;
    if (u->op == Ops::LANE || u->op == Ops::LOAD) return {};
    throw Error(std::string("tinygrad: expander cannot vectorize ") + op_name(u->op));
  };
  auto get = [&](const UOpRef& x) { return dep.count(x.get()) ? memo.at(x.get()) : x; };
  auto vec_one = [&](const UOpRef& u) -> UOpRef {
    if (u->op == Ops::LANE) {
      std::vector<UOpRef> s;
      for (int i = 0; i < W; i++) s.push_back(const_int(u->dtype, i));
      return make_uop(Ops::VECTORIZE, u->dtype, s, {}, W);
    }
    if (u->op == Ops::LOAD) {
      if (auto vidx = vector_index(u->src[0])) return make_uop(Ops::LOAD, u->dtype, {vidx}, {}, W);
      std::vector<UOpRef> s;
      for (int i = 0; i < W; i++) s.push_back(at(u, i));
      return make_uop(Ops::VECTORIZE, u->dtype, s, {}, W);
    }
    if (u->op == Ops::REDUCE) {
      std::vector<UOpRef> src{bcast(get(u->src[0]))};
      src.insert(src.end(), u->src.begin() + 1, u->src.end());
      return make_uop(Ops::REDUCE, u->dtype, src, u->arg, W);
    }
    std::vector<UOpRef> src;
    for (auto& s : u->src) src.push_back(bcast(get(s)));
    return make_uop(u->op, u->dtype, src, u->arg, W);
  };
  // vectorize what root needs, inputs first (an explicit stack: no recursion)
  auto vec = [&](const UOpRef& root) -> UOpRef {
    std::vector<std::pair<UOpRef, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [u, ready] = stack.back();
      if (!dep.count(u.get()) || memo.count(u.get())) { stack.pop_back(); continue; }
      if (!ready) {
        stack.back().second = true;
        for (auto& s : inputs(u)) if (dep.count(s.get()) && !memo.count(s.get())) stack.push_back({s, false});
        continue;
      }
      stack.pop_back();
      memo[u.get()] = vec_one(u);
    }
    return get(root);
  };
  if (!closing.empty()) {
    // each closing REDUCE keeps a vector accumulator and combines its lanes pairwise after the loop
    std::unordered_map<const UOp*, UOpRef> sub;
    for (auto& u : closing) {
      std::vector<UOpRef> src{bcast(vec(u->src[0]))};
      for (size_t i = 1; i < u->src.size(); i++) if (u->src[i] != lane) src.push_back(u->src[i]);
      UOpRef v = src.size() == 1 ? src[0] : make_uop(Ops::REDUCE, u->dtype, src, u->arg, W);
      std::vector<UOpRef> part;
      for (int i = 0; i < W; i++) part.push_back(make_uop(Ops::GEP, u->dtype, {v}, int64_t(i)));
      while (part.size() > 1) {
        std::vector<UOpRef> next;
        for (size_t i = 0; i + 1 < part.size(); i += 2) next.push_back(alu(u->reduce_op(), {part[i], part[i + 1]}));
        if (part.size() % 2) next.push_back(part.back());
        part = std::move(next);
      }
      sub[u.get()] = part[0];
    }
    return substitute(sink, sub);
  }
  std::vector<UOpRef> stores;
  for (auto& st : sink->src) {
    const UOpRef& idx = st->src[0];
    if (!dep.count(st.get())) { stores.push_back(st); continue; }
    // (a mask the same for every lane stores the vector or nothing: a padded loop axis's store)
    if (auto vidx = vector_index(idx)) {
      stores.push_back(make_uop(Ops::STORE, DType::Bool, {vidx, bcast(vec(st->src[1]))}));
    } else {
      auto v = bcast(vec(st->src[1]));
      for (int i = 0; i < W; i++) {
        auto lane_i = make_uop(Ops::GEP, v->dtype, {v}, int64_t(i));
        stores.push_back(make_uop(Ops::STORE, DType::Bool, {at(idx, i), lane_i}));
      }
    }
  }
  return make_uop(Ops::SINK, DType::Bool, stores);
}

// order a kernel graph into a list a renderer prints top to bottom:
// loop axes open in id order; each group of REDUCEs over the same ranges gets accumulators, its loops, updates
// NOTE: a walk, not a rule table: it places every node in a loop nest, a decision over the whole graph
inline std::vector<UOpRef> linearize(const UOpRef& sink) {
  auto topo = toposort(sink);
  std::unordered_map<const UOp*, size_t> pos;
  for (size_t i = 0; i < topo.size(); i++) pos[topo[i].get()] = i;
  auto rs = detail::open_ranges(topo);
  std::vector<UOpRef> loops;  // loop axes (not closed by any reduce): KBLOCK's first, then in id order
  std::unordered_map<const UOp*, bool> is_reduce_range;
  for (auto& u : topo) if (u->op == Ops::REDUCE) for (size_t i = 1; i < u->src.size(); i++) is_reduce_range[u->src[i].get()] = true;
  for (auto& u : topo) if (u->op == Ops::RANGE && !is_reduce_range[u.get()]) loops.push_back(u);
  std::sort(loops.begin(), loops.end(), [](auto& a, auto& b) {
    auto key = [](const UOpRef& r) { return std::pair(detail::axis_type(r) != AxisType::KBLOCK, r->range_id()); };
    return key(a) < key(b);
  });
  auto loop_level = [&](const UOp* u) {
    int l = -1;
    for (auto* r : rs[u]) for (int i = 0; i < int(loops.size()); i++) if (loops[size_t(i)].get() == r) l = std::max(l, i);
    return l;
  };
  auto in_reduce = [&](const UOp* u) {
    for (auto* r : rs[u]) if (is_reduce_range[r]) return true;
    return false;
  };

  std::vector<UOpRef> out;
  std::unordered_map<const UOp*, bool> done;
  auto emit = [&](const UOpRef& u) { if (!done[u.get()]) { done[u.get()] = true; out.push_back(u); } };
  // variables (by name: the order of their values in a launch), then params and specials
  std::vector<UOpRef> vars;
  for (auto& u : topo) if (u->op == Ops::DEFINE_VAR) vars.push_back(u);
  std::sort(vars.begin(), vars.end(), [](const UOpRef& a, const UOpRef& b) { return var_name(*a) < var_name(*b); });
  for (auto& u : vars) emit(u);
  for (auto& u : topo) if (u->op == Ops::DEFINE_GLOBAL || u->op == Ops::DEFINE_LOCAL || u->op == Ops::SPECIAL) emit(u);

  auto emit_group = [&](const UOpRef& red) {
    std::vector<UOpRef> rngs = detail::reduce_ranges(red);
    int lvl = loop_level(red.get());
    std::vector<UOpRef> group;
    for (auto& u : topo)
      if (u->op == Ops::REDUCE && !done[u.get()] && loop_level(u.get()) == lvl &&
          std::vector<UOpRef>(u->src.begin() + 1, u->src.end()).size() == rngs.size() &&
          std::all_of(u->src.begin() + 1, u->src.end(), [&](auto& r) { return std::find(rngs.begin(), rngs.end(), r) != rngs.end(); }))
        group.push_back(u);
    // nodes inside the group's loops: everything below the reduces that depends on a group range
    std::vector<UOpRef> body;
    std::unordered_map<const UOp*, bool> below;
    for (auto& g : group) for (auto& x : toposort(g->src[0])) below[x.get()] = true;
    for (auto& u : topo) {
      if (!below[u.get()] || done[u.get()] || u->op == Ops::RANGE) continue;
      bool uses_group = false;
      for (auto* r : rs[u.get()]) uses_group |= std::find_if(rngs.begin(), rngs.end(), [&](auto& x) { return x.get() == r; }) != rngs.end();
      if (uses_group) body.push_back(u);
      else if (u->op != Ops::CONST) emit(u);  // loop-invariant: hoisted before the loops
    }
    for (auto& g : group) out.push_back(make_uop(Ops::DEFINE_ACC, g->dtype, {g}, {}, g->vcount));
    for (size_t j = 0; j < rngs.size(); j++) {
      out.push_back(rngs[j]);
      for (auto& u : body) {
        int l = -1;
        for (auto* r : rs[u.get()]) for (int i = 0; i < int(rngs.size()); i++) if (rngs[size_t(i)].get() == r) l = std::max(l, i);
        if (l == int(j)) emit(u);
      }
    }
    for (auto& g : group) out.push_back(make_uop(Ops::ACC_UPDATE, g->dtype, {g, g->src[0]}, {}, g->vcount));
    for (size_t j = rngs.size(); j-- > 0;) out.push_back(make_uop(Ops::END, DType::Bool, {rngs[j]}));
    for (auto& g : group) emit(g);
  };

  for (int L = -1; L < int(loops.size()); L++) {
    if (L >= 0) out.push_back(loops[size_t(L)]);
    for (auto& u : topo) {
      if (done[u.get()] || u->op == Ops::RANGE || u->op == Ops::SINK || u->op == Ops::CONST || loop_level(u.get()) != L || in_reduce(u.get()))
        continue;
      if (u->op == Ops::REDUCE) emit_group(u);
      else emit(u);
    }
  }
  for (size_t L = loops.size(); L-- > 0;) out.push_back(make_uop(Ops::END, DType::Bool, {loops[L]}));
  return out;
}

}  // namespace tinygrad::detail
