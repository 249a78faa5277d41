#pragma once
// TinyJit's engine half: what one captured call ran (kernels and copies over buffers) becomes a program over a
// buffer table. Its inputs are bound anew on each replay, its outputs are fresh buffers each replay (a buffer is
// never written twice), the buffers it made for itself share memory where their lifetimes allow (plan_memory), the
// rest (weights it only reads, constants) stay as they were. A replay launches the prepared calls in a loop, or as
// one graph where the device has them (CUDA graphs). The Tensor half is tensor/jit.hpp.
#include "realize.hpp"

namespace tinygrad::detail {

struct JitProgram {
  struct Step {
    std::shared_ptr<CompiledKernel> k;  // null: a copy, slots[0] <- slots[1]; or a collective (coll >= 0)
    std::vector<int> slots;
    std::vector<int64_t> vals;          // its variables' values (k->spec.vars) at the capture; a replay may bind others
    int coll = -1;                      // a collective's ReduceKind, dtype, count; slots: the n results, then the n parts
    DType coll_dt = DType::Float32;
    int64_t coll_n = 0;
  };
  std::vector<Step> steps;
  // the table: inputs [0, n_in), then `fixed`, then `pool` (the planned intermediates), then `fresh` (the outputs
  // allocated on each replay: device, dtype, size)
  size_t n_in = 0;
  std::vector<std::shared_ptr<Buffer>> fixed, pool;
  // outer (a symbolic first dim's extent; null: none): the buffer holds outer x inner elements for a run's values
  struct Fresh { std::string device; DType dtype; int64_t size; UOpRef outer; int64_t inner = 0; };
  std::vector<Fresh> fresh;
  std::vector<int> out_slots;              // per output, its slot
  size_t intermediates = 0, bytes_unplanned = 0, bytes_planned = 0;
  // replay state (replays hold the engine lock)
  std::vector<std::shared_ptr<Buffer>> table;
  std::vector<std::vector<void*>> args;    // per step, the pointers last launched with
  std::vector<std::vector<int64_t>> vals;  // per step, the variables' values last launched with
  VarVals var_vals;                        // the values this replay binds (TinyJit's variable arguments)
  // the graphs: runs of two or more kernel steps of one device that has them, [begin, end) (built on the first replay)
  struct Segment { size_t begin, end; std::unique_ptr<GraphExec> graph; };
  std::vector<Segment> graphs;
  bool graph_tried = false;
};

// TinyJit's memory planner: items (first launch, last launch, bytes) -> a pool index each, where two items whose
// launch ranges overlap (inclusive: a kernel's inputs and output are alive together) never share an index; greedy in
// order of first use, best fit among the free entries, growing the largest free one when none fits
struct MemoryPlan { std::vector<int> of; std::vector<size_t> bytes; };
inline MemoryPlan plan_memory(const std::vector<std::array<size_t, 3>>& items) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a][0] < items[b][0]; });
  MemoryPlan p{std::vector<int>(items.size(), -1), {}};
  std::vector<size_t> busy_until;  // per pool entry: the last launch of the item that holds it
  for (size_t i : order) {
    auto [first, last, bytes] = items[i];
    int best = -1, largest = -1;
    for (size_t e = 0; e < p.bytes.size(); e++) {
      if (busy_until[e] >= first) continue;
      if (p.bytes[e] >= bytes && (best < 0 || p.bytes[e] < p.bytes[size_t(best)])) best = int(e);
      if (largest < 0 || p.bytes[e] > p.bytes[size_t(largest)]) largest = int(e);
    }
    if (best < 0) best = largest;
    if (best < 0) { best = int(p.bytes.size()); p.bytes.push_back(0); busy_until.push_back(0); }
    p.bytes[size_t(best)] = std::max(p.bytes[size_t(best)], bytes);
    busy_until[size_t(best)] = last;
    p.of[i] = best;
  }
  return p;
}

inline std::string step_name(const JitProgram::Step& s) { return s.k ? s.k->spec.name : "copy"; }
// what a slot of the table holds, in words (jit_difference)
inline std::string slot_name(const JitProgram& p, size_t x) {
  if (x < p.n_in) return cat("input ", x);
  if (x < p.n_in + p.fixed.size()) return "a buffer made outside the capture";
  auto out = std::find(p.out_slots.begin(), p.out_slots.end(), int(x));
  if (x < p.n_in + p.fixed.size() + p.pool.size() || out == p.out_slots.end()) return "an intermediate buffer";
  return cat("output ", out - p.out_slots.begin());
}
using SymSizes = std::unordered_map<const Buffer*, std::pair<UOpRef, int64_t>>;  // a buffer's outer extent and inner size
inline std::shared_ptr<JitProgram> make_program(const Capture& cap, const std::vector<std::shared_ptr<Buffer>>& inputs,
                                         const std::vector<std::shared_ptr<Buffer>>& outputs, bool pooled, const SymSizes* sym = nullptr);
inline std::shared_ptr<JitProgram> schedule_program(const ScheduleSpec& sp, const std::vector<std::shared_ptr<CompiledKernel>>& ks,
                                             const std::vector<std::shared_ptr<Buffer>>& inputs, const std::vector<std::shared_ptr<Buffer>>& consts,
                                             const std::string& device);

#if TINYGRAD_DEFINE_API
inline std::unique_ptr<Capture>& capture_owner() { static thread_local std::unique_ptr<Capture> c; return c; }

TINYGRAD_API void jit_capture_begin() {
  if (capturing()) throw JitError("tinygrad::TinyJit: a jitted function called another jitted function while it was captured");
  capture_owner() = std::make_unique<Capture>();
  capturing() = capture_owner().get();
}

TINYGRAD_API void jit_capture_abort() {
  capturing() = nullptr;
  capture_owner().reset();
}

TINYGRAD_API void realize_uncaptured(const std::vector<UOpRef>& roots) {
  struct Pause {
    Capture* c = std::exchange(capturing(), nullptr);
    ~Pause() { capturing() = c; }
  } pause;
  realize(roots);
}

// what a capture recorded as a program of `inputs` to `outputs`. pooled: the buffers it made for itself share planned
// memory that the program keeps (TinyJit); else they are allocated on each run, as a realize would (static plans,
// whose cache would otherwise hold every plan's intermediates)
inline std::shared_ptr<JitProgram> make_program(const Capture& cap, const std::vector<std::shared_ptr<Buffer>>& inputs,
                                                        const std::vector<std::shared_ptr<Buffer>>& outputs, bool pooled, const SymSizes* sym) {
  auto p = std::make_shared<JitProgram>();
  p->n_in = inputs.size();
  std::unordered_set<const Buffer*> created;
  for (auto& b : cap.created) created.insert(b.get());
  // every buffer the launches touch, classified
  enum Kind { Input, Fixed, Inter, Out };
  struct Info { Kind kind; size_t first, last; std::shared_ptr<Buffer> buf; };
  std::unordered_map<const Buffer*, Info> info;
  std::vector<const Buffer*> seen;  // in order of first use
  std::unordered_map<const Buffer*, int> in_index, out_index;
  for (size_t i = inputs.size(); i-- > 0;) in_index[inputs[i].get()] = int(i);
  for (size_t i = 0; i < outputs.size(); i++) out_index.try_emplace(outputs[i].get(), int(i));
  // a run of collectives replays as one batch (launch_program): each of their buffers lives through the whole run, so
  // the memory plan never gives a later one's result the memory an earlier one still reads
  size_t n_l = cap.launches.size();
  std::vector<size_t> lo(n_l + 1), hi(n_l + 1);
  auto coll = [&](size_t s) { return !cap.launches[s].k && cap.launches[s].coll >= 0; };
  for (size_t s = 0; s <= n_l; s++) lo[s] = s < n_l && s > 0 && coll(s) && coll(s - 1) ? lo[s - 1] : s;
  for (size_t s = n_l + 1; s-- > 0;) hi[s] = s + 1 < n_l && coll(s) && coll(s + 1) ? hi[s + 1] : s;
  auto touch = [&](const std::shared_ptr<Buffer>& b, size_t step) {
    auto [it, fresh] = info.try_emplace(b.get(), Info{Fixed, lo[step], hi[step], b});
    it->second.last = std::max(it->second.last, hi[step]);
    if (!fresh) return;
    seen.push_back(b.get());
    if (in_index.count(b.get())) it->second.kind = Input;
    else if (created.count(b.get())) it->second.kind = out_index.count(b.get()) || !pooled ? Out : Inter;
  };
  for (size_t s = 0; s < cap.launches.size(); s++) for (auto& b : cap.launches[s].bufs) touch(b, s);
  for (auto& b : outputs) if (!info.count(b.get())) touch(b, cap.launches.size());  // an output no launch touched: an input or an old buffer

  // the table: inputs, fixed, pool, fresh
  std::unordered_map<const Buffer*, int> slot(in_index.begin(), in_index.end());
  for (auto* b : seen) if (info[b].kind == Fixed) {
    slot[b] = int(p->n_in + p->fixed.size());
    p->fixed.push_back(info[b].buf);
  }
  // intermediates: planned per device
  std::map<std::string, std::vector<const Buffer*>> by_device;
  for (auto* b : seen) if (info[b].kind == Inter) by_device[b->device].push_back(b);
  for (auto& [dev, bufs] : by_device) {
    std::vector<std::array<size_t, 3>> items;
    for (auto* b : bufs) items.push_back({info[b].first, info[b].last, std::max<size_t>(b->nbytes(), 1)});
    MemoryPlan mp = plan_memory(items);
    size_t base = p->n_in + p->fixed.size() + p->pool.size();
    for (size_t e = 0; e < mp.bytes.size(); e++) {
      p->pool.push_back(std::make_shared<Buffer>(dev, DType::UInt8, int64_t(mp.bytes[e])));
      p->bytes_planned += mp.bytes[e];
    }
    for (size_t i = 0; i < bufs.size(); i++) { slot[bufs[i]] = int(base + size_t(mp.of[i])); p->bytes_unplanned += items[i][2]; }
    p->intermediates += bufs.size();
  }
  // pool slots were appended per device in order, so fixed + pool are contiguous before fresh
  for (auto* b : seen) if (info[b].kind == Out) {
    slot[b] = int(p->n_in + p->fixed.size() + p->pool.size() + p->fresh.size());
    p->fresh.push_back({b->device, b->dtype, b->size, nullptr, 0});
    if (!sym) continue;
    if (auto it = sym->find(b); it != sym->end()) std::tie(p->fresh.back().outer, p->fresh.back().inner) = it->second;
  }
  for (auto& l : cap.launches) {
    JitProgram::Step st{l.k, {}, l.vals, l.coll, l.coll_dt, l.coll_n};
    for (auto& b : l.bufs) st.slots.push_back(slot.at(b.get()));
    p->steps.push_back(std::move(st));
  }
  for (auto& b : outputs) p->out_slots.push_back(slot.at(b.get()));
  return p;
}

// a schedule as a program (the static plans): `inputs` are its first slots, then `consts` (read, kept)
inline std::shared_ptr<JitProgram> schedule_program(const ScheduleSpec& sp, const std::vector<std::shared_ptr<CompiledKernel>>& ks,
                                                            const std::vector<std::shared_ptr<Buffer>>& inputs,
                                                            const std::vector<std::shared_ptr<Buffer>>& consts, const std::string& device) {
  Capture cap;
  std::vector<std::shared_ptr<Buffer>> slots = inputs;
  slots.insert(slots.end(), consts.begin(), consts.end());
  SymSizes sym;
  for (size_t i = 0; i < sp.new_slots.size(); i++) {
    auto [dt, n] = sp.new_slots[i];
    cap.created.push_back(slots.emplace_back(std::make_shared<Buffer>(device, dt, n)));
    if (const UOpRef& o = sp.slot_outer[i]) sym[slots.back().get()] = {o, n / std::max<int64_t>(o->vmax, 1)};
  }
  for (size_t k = 0; k < sp.kernels.size(); k++) {
    auto& l = cap.launches.emplace_back(CapturedLaunch{ks[k], {}, {}});
    for (int s : sp.kernels[k].slots) l.bufs.push_back(slots[size_t(s)]);
    for (auto& v : ks[k]->spec.vars) l.vals.push_back(v->vmin);  // a run binds every variable (jit_replay's vars)
  }
  std::vector<std::shared_ptr<Buffer>> outs;
  for (int r : sp.root_slots) outs.push_back(slots[size_t(r)]);
  return make_program(cap, inputs, outs, false, &sym);
}

TINYGRAD_API std::shared_ptr<JitProgram> jit_capture_end(const std::vector<std::shared_ptr<Buffer>>& inputs,
                                                                 const std::vector<std::shared_ptr<Buffer>>& outputs) {
  std::unique_ptr<Capture> cap = std::move(capture_owner());
  capturing() = nullptr;
  if (!cap) throw JitError("tinygrad::TinyJit: no capture is running");
  auto p = make_program(*cap, inputs, outputs, true);
  // the buffers the capture's own run made go back to their devices, not to the devices' caches of freed buffers:
  // the replays run in the planned pool (a language model's prefill capture made 600 MB that stayed cached)
  std::vector<std::string> devs;
  for (auto& b : cap->created)
    if (std::find(devs.begin(), devs.end(), b->device) == devs.end()) devs.push_back(b->device);
  cap.reset();
  for (auto& d : devs) runtime(d).allocator->free_cache();
  if (flags().debug >= 1)
    std::fprintf(stderr, "TinyJit: captured %zu launches; %zu intermediate buffers, %.3f MB -> %.3f MB planned\n", p->steps.size(), p->intermediates,
                 double(p->bytes_unplanned) / 1e6, double(p->bytes_planned) / 1e6);
  return p;
}

// the values a step launches with: each variable's value this replay binds, else its value at the capture
// into v, in place (no allocation a replay once v has its size); false where v changed
inline bool fill_step_vals(const JitProgram::Step& st, const VarVals& vv, std::vector<int64_t>& v) {
  bool same = v.size() == st.vals.size();
  v.resize(st.vals.size());
  for (size_t j = 0; j < v.size(); j++) {
    int64_t x = st.vals[j];
    for (auto& [var, val] : vv) if (var == st.k->spec.vars[j].get()) x = val;
    same &= v[j] == x;
    v[j] = x;
  }
  return same;
}

// the device of a kernel step ("" for a copy or a collective)
inline const std::string& step_device(const JitProgram& p, const JitProgram::Step& st) {
  static const std::string none;
  return st.k && !st.slots.empty() ? p.table[size_t(st.slots[0])]->device : none;
}

// the graphs of a program: each run of two or more kernels of one device that has graphs (JIT_GRAPH=0: none). A step
// of one device is one graph; a step of several is a graph per device between its collectives
inline void build_graphs(JitProgram& p) {
  p.graph_tried = true;
  if (getenv_int("JIT_GRAPH", 1) == 0) return;
  for (size_t b = 0, e; b < p.steps.size(); b = e) {
    const std::string& dev = step_device(p, p.steps[b]);
    for (e = b + 1; !dev.empty() && e < p.steps.size() && step_device(p, p.steps[e]) == dev; e++) {}
    bool one = !dev.empty() && e - b >= 2;
    for (size_t s = b; s < e && one; s++) for (int x : p.steps[s].slots) one &= p.table[size_t(x)]->device == dev;
    if (!one || !runtime(dev).graph) continue;
    std::vector<GraphLaunch> l;
    for (size_t s = b; s < e; s++) l.push_back({p.steps[s].k->prg.get(), p.args[s], p.vals[s]});
    p.graphs.push_back({b, e, runtime(dev).graph(l)});
  }
}

// replay's launches: prepared calls, the graphs where there are some
inline void launch_program(JitProgram& p) {
  auto& t = p.table;
  // the pointers each step launches with, updated in place; a graph updates only the steps whose pointers changed
  if (p.args.empty()) p.args.resize(p.steps.size()), p.vals.resize(p.steps.size());
  std::vector<bool> changed(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); s++) {
    auto& a = p.args[s];
    const auto& sl = p.steps[s].slots;
    bool same = a.size() == sl.size();
    if (auto& st = p.steps[s]; st.k && !st.k->spec.vars.empty()) same &= fill_step_vals(st, p.var_vals, p.vals[s]);
    a.resize(sl.size());
    for (size_t i = 0; i < sl.size(); i++) {
      void* x = t[size_t(sl[i])]->ptr();
      same &= a[i] == x;
      a[i] = x;
    }
    changed[s] = !same;
  }
  if (!p.graph_tried) build_graphs(p);
  const bool prof = profiling(), viz = vizzing();
  size_t g = 0;
  for (size_t s = 0; s < p.steps.size(); s++) {
    if (g < p.graphs.size() && p.graphs[g].begin == s) {
      auto& seg = p.graphs[g++];
      for (size_t i = seg.begin; i < seg.end; i++) if (changed[i]) seg.graph->set_args(i - seg.begin, p.args[i], p.vals[i]);
      double start = prof ? now_s() : 0;
      seg.graph->launch();
      run_stats().kernels_run += int64_t(seg.end - seg.begin);
      if (prof) {  // one event a graph: its kernels are not timed one by one (JIT_GRAPH=0 times each)
        const std::string& dev = step_device(p, p.steps[s]);
        runtime(dev).synchronize();
        profile_event(Profile::Track::kernels, cat("jit graph of ", seg.end - seg.begin, " kernels"), dev, start);
      }
      s = seg.end - 1;
      continue;
    }
    auto& st = p.steps[s];
    if (!st.k && st.coll >= 0) {  // this and the collectives right after it, as one batch
      std::vector<Collective> batch;
      for (; s < p.steps.size() && !p.steps[s].k && p.steps[s].coll >= 0; s++) {
        auto& c = batch.emplace_back(Collective{{}, {}, ReduceKind(p.steps[s].coll), p.steps[s].coll_dt, p.steps[s].coll_n});
        size_t n = p.steps[s].slots.size() / 2;
        for (size_t i = 0; i < n; i++) c.recv.push_back(t[size_t(p.steps[s].slots[i])]), c.send.push_back(t[size_t(p.steps[s].slots[n + i])]);
      }
      s--;
      run_collectives(batch);
      continue;
    }
    if (!st.k) { copy_buffer(t[size_t(st.slots[0])], t[size_t(st.slots[1])]); continue; }
    double start = prof ? now_s() : 0;
    double tm = st.k->prg->call(p.args[s], p.vals[s], flags().debug >= 2 || prof);
    run_stats().kernels_run++;
    if (prof || viz) {
      double mem = 0;
      for (int x : st.slots) mem += double(t[size_t(x)]->nbytes());
      profile_kernel(st.k->spec, t[size_t(st.slots[0])]->device, start, tm, mem);
    }
    if (flags().debug >= 2)
      std::fprintf(stderr, "*** jit %4zu %-32s arg %2zu tm %9.2fus (%8.2f GFLOPS)\n", s, st.k->spec.name.c_str(), st.slots.size(), tm * 1e6,
                   st.k->spec.flops / std::max(tm, 1e-9) / 1e9);
  }
}

TINYGRAD_API std::vector<std::shared_ptr<Buffer>> jit_replay(JitProgram& p, const std::vector<std::shared_ptr<Buffer>>& inputs,
                                                             const std::vector<std::pair<const UOp*, int64_t>>& vars) {
  if (inputs.size() != p.n_in) throw JitError(cat("tinygrad::TinyJit: replay with ", inputs.size(), " input buffers, captured with ", p.n_in));
  std::lock_guard lk(EngineState::get().mu);
  p.var_vals = vars;
  auto& t = p.table;
  if (t.empty()) {
    t.resize(p.n_in);
    t.insert(t.end(), p.fixed.begin(), p.fixed.end());
    t.insert(t.end(), p.pool.begin(), p.pool.end());
    t.resize(t.size() + p.fresh.size());
  }
  std::copy(inputs.begin(), inputs.end(), t.begin());
  size_t f0 = t.size() - p.fresh.size();
  for (size_t i = 0; i < p.fresh.size(); i++) {
    auto& f = p.fresh[i];
    t[f0 + i] = new_buffer(f.device, f.dtype, f.outer ? eval_int(f.outer, vars) * f.inner : f.size);
  }
  if (capturing()) {  // a static plan run while TinyJit captures: each launch recorded (run_kernel), no graph
    std::vector<void*> ptrs;
    for (auto& st : p.steps)
      if (st.k) {
        std::vector<int64_t> v;
        fill_step_vals(st, p.var_vals, v);
        run_kernel(st.k, st.slots, t, ptrs, false, v);
      }
      else copy_buffer(t[size_t(st.slots[0])], t[size_t(st.slots[1])]);
  } else launch_program(p);
  std::vector<std::shared_ptr<Buffer>> out;
  for (int x : p.out_slots) out.push_back(t[size_t(x)]);
  // the table keeps no input or output alive between replays
  for (size_t i = 0; i < p.n_in; i++) t[i].reset();
  for (size_t i = f0; i < t.size(); i++) t[i].reset();
  return out;
}

TINYGRAD_API std::string jit_difference(const JitProgram& a, const JitProgram& b) {
  if (a.steps.size() != b.steps.size()) return cat("the first ran ", a.steps.size(), " kernels, the second ", b.steps.size());
  for (size_t s = 0; s < a.steps.size(); s++) {
    auto &x = a.steps[s], &y = b.steps[s];
    bool same = x.k == y.k || (x.k && y.k && x.k->spec.src == y.k->spec.src);
    if (!same) return cat("kernel ", s, " is ", step_name(x), " in the first and ", step_name(y), " in the second");
    for (size_t i = 0; i < x.slots.size(); i++) {
      size_t sx = size_t(x.slots[i]), sy = size_t(y.slots[i]);
      // a fixed buffer must be the same buffer in both; any other slot, the same slot
      bool fx = sx >= a.n_in && sx < a.n_in + a.fixed.size(), fy = sy >= b.n_in && sy < b.n_in + b.fixed.size();
      if (fx && fy && a.fixed[sx - a.n_in] != b.fixed[sy - b.n_in])
        return cat("kernel ", s, " (", step_name(y), ") reads a different buffer at argument ", i,
                   " in each: a tensor made from host data inside the function "
                   "is a constant of the capture; pass data that changes as an argument");
      if (!(fx && fy) && sx != sy)
        return cat("kernel ", s, " (", step_name(y), ") reads ", slot_name(b, sy), " in the second where the first read ", slot_name(a, sx));
    }
  }
  return "";
}

TINYGRAD_API size_t jit_kernel_count(const JitProgram& p) { return p.steps.size(); }
#endif

}  // namespace tinygrad::detail
