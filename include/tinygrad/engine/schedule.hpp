#pragma once
// schedule: decide which tensor-graph nodes become buffers, then lower each kernel to an AST
// (SINK of STOREs over RANGEs). Movement ops turn into index arithmetic here; nothing copies.
//
// Fusion rules: everything fuses into its consumer's kernel except
//   - explicit CONTIGUOUS / COPY nodes and the realized roots,
//   - a REDUCE whose result is broadcast again (an EXPAND on the way to the consumer) or that sits
//     inside another REDUCE: recomputing it per output element would multiply its cost.
#include <map>
#include <unordered_set>
#include "../codegen/codegen.hpp"

namespace tinygrad {

struct KernelAST {
  UOpRef ast;              // SINK(STORE...)
  std::vector<int> slots;  // DEFINE_GLOBAL i reads/writes slot slots[i]; slot of the output is slots[0]
};

struct ScheduleSpec {
  std::vector<KernelAST> kernels;   // in execution order
  int n_inputs = 0;                 // slots [0, n_inputs) are the graph's existing buffers
  std::vector<std::pair<DType, int64_t>> new_slots;  // slots n_inputs.. : buffers this schedule allocates
  std::vector<int> root_slots;      // where each root ends up
};

namespace detail {
inline bool is_leaf(const UOp* u) { return u->op == Ops::BUFFER || u->realized != nullptr; }
inline bool expands(const UOp* u) {
  const Shape& in = u->src[0]->shape;
  for (size_t i = 0; i < in.size(); i++) if (in[i] != u->shape[i]) return true;
  return false;
}

class Scheduler {
 public:
  Scheduler(const std::vector<UOpRef>& roots, const std::unordered_map<const UOp*, int>& input_slots, int n_inputs)
      : slot_(input_slots), n_inputs_(n_inputs) {
    spec_.n_inputs = n_inputs;
    // a reduce that two kernels would both fuse is computed once, in its own kernel: plan again until none is shared
    const auto inputs = slot_;
    while (true) {
      for (auto& r : roots) {
        if (auto it = slot_.find(r.get()); it != slot_.end()) spec_.root_slots.push_back(it->second);
        else spec_.root_slots.push_back(make_root(r));
      }
      owner_.clear();
      size_t shared = shared_.size();
      for (size_t i = 0; i < kroots_.size(); i++) { UOpRef k = kroots_[i]; analyze(k); }  // kroots_ grows while we walk
      if (shared_.size() == shared) break;
      slot_ = inputs; spec_.new_slots.clear(); spec_.root_slots.clear(); kroots_.clear(); by_ptr_.clear(); deps_.clear();
    }
    // 64-bit indices only where a flattened index can pass 2^31: buffers, kernel outputs and reshapes, not
    // broadcast views (a matmul's N*M*K view is never flattened; int64 index math is slow on GPUs)
    int64_t maxn = 1;
    std::unordered_map<const UOp*, bool> seen;
    std::function<void(const UOpRef&)> walk = [&](const UOpRef& u) {
      if (seen[u.get()]) return;
      seen[u.get()] = true;
      if (is_leaf(u.get()) || is_kroot(u.get()) || u->op == Ops::RESHAPE) maxn = std::max(maxn, prod(u->shape));
      if (u->op == Ops::RESHAPE) maxn = std::max(maxn, prod(u->src[0]->shape));
      if (!is_leaf(u.get())) for (auto& s : u->src) walk(s);
    };
    for (auto& r : roots) walk(r);
    idx_dt_ = maxn > INT32_MAX ? DType::Int64 : DType::Int32;
    std::unordered_map<const UOp*, bool> done;
    std::function<void(const UOpRef&)> order = [&](const UOpRef& k) {
      if (done[k.get()]) return;
      done[k.get()] = true;
      for (auto* d : deps_[k.get()]) order(by_ptr_[d]);
      if (prod(k->shape) > 0) spec_.kernels.push_back(lower_kernel(k));
    };
    for (auto& k : kroots_) order(k);
  }
  ScheduleSpec spec() { return std::move(spec_); }

 private:
  int make_root(const UOpRef& u) {
    if (auto it = slot_.find(u.get()); it != slot_.end()) return it->second;
    int s = n_inputs_ + int(spec_.new_slots.size());
    spec_.new_slots.emplace_back(u->dtype, prod(u->shape));
    slot_[u.get()] = s;
    kroots_.push_back(u);
    by_ptr_[u.get()] = u;
    return s;
  }
  bool is_kroot(const UOp* u) const { return by_ptr_.count(u) > 0; }

  // broadcasting this would recompute transcendental math or a long chain per output element
  bool expensive(const UOpRef& root) {
    int n = 0;
    bool heavy = false;
    std::unordered_map<const UOp*, bool> seen;
    std::function<void(const UOpRef&)> walk = [&](const UOpRef& u) {
      if (seen[u.get()] || is_leaf(u.get()) || is_kroot(u.get())) return;
      seen[u.get()] = true;
      if (is_alu(u->op)) { n++; heavy |= u->op == Ops::EXP2 || u->op == Ops::LOG2 || u->op == Ops::SIN || u->op == Ops::SQRT || u->op == Ops::RECIPROCAL; }
      heavy |= u->op == Ops::REDUCE_AXIS;
      for (auto& s : u->src) walk(s);
    };
    walk(root);
    return heavy || n > 16;
  }

  void analyze(const UOpRef& k) {
    std::map<std::tuple<const UOp*, bool, bool>, bool> seen;
    std::function<void(const UOpRef&, bool, bool)> visit = [&](const UOpRef& u, bool expanded, bool in_reduce) {
      if (u != k && (is_leaf(u.get()) || is_kroot(u.get()))) { if (is_kroot(u.get())) deps_[k.get()].push_back(u.get()); return; }
      if (seen[{u.get(), expanded, in_reduce}]) return;
      seen[{u.get(), expanded, in_reduce}] = true;
      bool realize_here = u != k && (u->op == Ops::CONTIGUOUS || u->op == Ops::COPY || shared_.count(u.get()) || (u->op == Ops::REDUCE_AXIS && (expanded || in_reduce)));
      if (realize_here) { make_root(u); deps_[k.get()].push_back(u.get()); return; }
      if (u->op == Ops::REDUCE_AXIS) {
        if (auto [it, fresh] = owner_.try_emplace(u.get(), k.get()); !fresh && it->second != k.get()) shared_.insert(u.get());
        visit(u->src[0], expanded, true);
        return;
      }
      if (u->op == Ops::CONV) { visit(u->src[0], expanded, in_reduce); return; }  // src[1:] only serve autograd
      if (u->op == Ops::EXPAND && expands(u.get()) && expensive(u->src[0])) {
        // realize below the movement ops: a window view of the value can be far larger than the value
        UOpRef b = u->src[0];
        while (is_movement(b->op) && !is_leaf(b.get()) && !is_kroot(b.get())) b = b->src[0];
        if (is_leaf(b.get())) { visit(u->src[0], true, in_reduce); return; }
        make_root(b);
        deps_[k.get()].push_back(b.get());
        if (b != u->src[0]) visit(u->src[0], true, in_reduce);
        return;
      }
      if (u->op == Ops::EXPAND) { visit(u->src[0], expanded || expands(u.get()), in_reduce); return; }
      for (auto& s : u->src) visit(s, expanded, in_reduce);
    };
    visit(k, false, false);
  }

  // ---- lowering one kernel ----
  struct KCtx {
    const UOp* root;
    std::vector<int> slots;
    std::unordered_map<int, int> param_of_slot;
    std::map<std::vector<const void*>, UOpRef> memo;
    int64_t next_range;
    std::vector<UOpRef> memo_keys;  // the memo is keyed by address: keep those nodes alive so no address is reused
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
    if (!gate->is_const(1)) isrc.push_back(gate);
    return make_uop(Ops::LOAD, u->dtype, {make_uop(Ops::INDEX, u->dtype, isrc)});
  }

  UOpRef lower(KCtx& c, const UOpRef& u, const std::vector<UOpRef>& idx, const UOpRef& gate) {
    if (u.get() != c.root && (is_leaf(u.get()) || is_kroot(u.get()))) return load(c, u.get(), idx, gate);
    std::vector<const void*> key{u.get(), gate.get()};
    for (auto& i : idx) key.push_back(i.get());
    if (auto it = c.memo.find(key); it != c.memo.end()) return it->second;
    UOpRef r = lower_node(c, u, idx, gate);
    c.memo_keys.push_back(u); c.memo_keys.push_back(gate);
    c.memo_keys.insert(c.memo_keys.end(), idx.begin(), idx.end());
    return c.memo[key] = r;
  }

  UOpRef lower_node(KCtx& c, const UOpRef& u, std::vector<UOpRef> idx, const UOpRef& gate) {
    const Shape in = u->src.empty() ? Shape{} : u->src[0]->shape;
    switch (u->op) {
      case Ops::CONST: return make_uop(Ops::CONST, u->dtype, {}, u->arg);
      case Ops::IOTA: return cast_uop(idx[0], u->dtype);
      case Ops::CONTIGUOUS: case Ops::DETACH: case Ops::CONV: return lower(c, u->src[0], idx, gate);
      case Ops::RESHAPE: {
        if (in == u->shape) return lower(c, u->src[0], idx, gate);
        UOpRef flat = flat_index(idx, u->shape);
        Shape st = strides_for(in);
        std::vector<UOpRef> ni;
        // NOTE: a valid index is inside the tensor, so the outermost dim needs no modulo
        for (size_t j = 0; j < in.size(); j++)
          ni.push_back(in[j] == 1 ? const_int(idx_dt_, 0) : simplify(j == 0 ? idiv(flat, st[j]) : mod(idiv(flat, st[j]), in[j])));
        return lower(c, u->src[0], ni, gate);
      }
      case Ops::PERMUTE: {
        std::vector<UOpRef> ni(idx.size());
        for (size_t i = 0; i < idx.size(); i++) ni[size_t(u->varg()[i])] = idx[i];
        return lower(c, u->src[0], ni, gate);
      }
      case Ops::EXPAND: {
        for (size_t i = 0; i < in.size(); i++) if (in[i] == 1) idx[i] = const_int(idx_dt_, 0);
        return lower(c, u->src[0], idx, gate);
      }
      case Ops::SHRINK: {
        for (size_t i = 0; i < in.size(); i++) idx[i] = idx[i] + u->varg()[2 * i];
        return lower(c, u->src[0], idx, gate);
      }
      case Ops::FLIP: {
        for (size_t i = 0; i < in.size(); i++) if (u->varg()[i]) idx[i] = const_int(idx_dt_, in[i] - 1) - idx[i];
        return lower(c, u->src[0], idx, gate);
      }
      case Ops::PAD: {
        UOpRef valid = const_uop(DType::Bool, 1);
        for (size_t i = 0; i < in.size(); i++) {
          int64_t b = u->varg()[2 * i];
          if (b == 0 && u->varg()[2 * i + 1] == 0) continue;
          valid = logical_and(valid, logical_and(ge(idx[i], b), lt(idx[i], b + in[i])));
          idx[i] = idx[i] - b;
        }
        valid = simplify(valid);
        UOpRef v = lower(c, u->src[0], idx, simplify(logical_and(gate, valid)));
        return alu(Ops::WHERE, {valid, v, const_uop(u->dtype, 0)});
      }
      case Ops::REDUCE_AXIS: {
        std::vector<UOpRef> rngs{};
        for (auto a : u->reduce_axes()) {
          if (in[size_t(a)] == 1) { idx[size_t(a)] = const_int(idx_dt_, 0); continue; }
          auto r = make_uop(Ops::RANGE, idx_dt_, {}, std::vector<int64_t>{in[size_t(a)], c.next_range++, int64_t(AxisType::REDUCE)});
          idx[size_t(a)] = r;
          rngs.push_back(r);
        }
        UOpRef v = lower(c, u->src[0], idx, gate);
        if (rngs.empty()) return v;
        std::vector<UOpRef> src{v};
        src.insert(src.end(), rngs.begin(), rngs.end());
        return make_uop(Ops::REDUCE, u->dtype, src, std::vector<int64_t>{u->varg()[0]});
      }
      default: {
        if (!is_alu(u->op) && u->op != Ops::CAST && u->op != Ops::BITCAST)
          throw Error(std::string("tinygrad: the scheduler cannot lower ") + op_name(u->op));
        std::vector<UOpRef> src;
        for (auto& s : u->src) src.push_back(lower(c, s, idx, gate));
        return make_uop(u->op, u->dtype, src, u->arg);
      }
    }
  }

  KernelAST lower_kernel(const UOpRef& k) {
    KCtx c{k.get(), {}, {}, {}, int64_t(k->shape.size()), {}};
    int out = slot_.at(k.get());
    c.slots.push_back(out);
    c.param_of_slot[out] = 0;
    std::vector<UOpRef> idx;
    for (size_t i = 0; i < k->shape.size(); i++)
      idx.push_back(k->shape[i] == 1 ? const_int(idx_dt_, 0) : make_uop(Ops::RANGE, idx_dt_, {}, std::vector<int64_t>{k->shape[i], int64_t(i), int64_t(AxisType::LOOP)}));
    UOpRef v = lower(c, k, idx, const_uop(DType::Bool, 1));
    auto g = make_uop(Ops::DEFINE_GLOBAL, k->dtype, {}, int64_t(0));
    auto st = make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, k->dtype, {g, flat_index(idx, k->shape)}), v});
    return {simplify(make_uop(Ops::SINK, DType::Bool, {st})), c.slots};
  }

  std::unordered_map<const UOp*, int> slot_;
  int n_inputs_;
  std::vector<UOpRef> kroots_;
  std::unordered_map<const UOp*, UOpRef> by_ptr_;
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps_;
  std::unordered_map<const UOp*, const UOp*> owner_;  // reduce -> the first kernel that fused it
  std::unordered_set<const UOp*> shared_;             // reduces that get their own kernel
  ScheduleSpec spec_;
  DType idx_dt_ = DType::Int32;
};
}  // namespace detail

// roots -> kernels; input_slots numbers the graph's existing buffers
inline ScheduleSpec create_schedule(const std::vector<UOpRef>& roots, const std::unordered_map<const UOp*, int>& input_slots, int n_inputs) {
  return detail::Scheduler(roots, input_slots, n_inputs).spec();
}

}  // namespace tinygrad
