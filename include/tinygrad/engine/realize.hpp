#pragma once
// realize: schedule (cached by graph structure), compile new kernels together, run them.
#include <list>
#include "../renderer/registry.hpp"
#include "api.hpp"
#include "multi.hpp"
#include "profile.hpp"
#include "schedule.hpp"
#include "search.hpp"

namespace tinygrad::detail {

// a device as the engine sees it: its runtime and its renderer (both from its descriptor)
struct Device {
  DeviceRuntime& rt;
  std::unique_ptr<Renderer> renderer;
};

struct DeviceRegistry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Device>> opened;
  static DeviceRegistry& get() { static auto* r = new DeviceRegistry(); return *r; }  // NOTE: leaked on purpose
};

inline Device& get_device(const std::string& name) {
  auto& r = detail::DeviceRegistry::get();
  std::lock_guard lk(r.mu);
  if (auto it = r.opened.find(name); it != r.opened.end()) return *it->second;
  auto& rt = runtime(name);
  return *(r.opened[name] = std::make_unique<Device>(Device{rt, make_renderer(device_spec(name), rt)}));
}

struct CompiledKernel {
  ProgramSpec spec;
  std::unique_ptr<Program> prg;
};

// TinyJit's capture (engine/jit.hpp): while a thread captures, every launch and copy it runs is recorded with its
// buffers, and every buffer the engine allocates for it
struct CapturedLaunch {
  std::shared_ptr<CompiledKernel> k;  // null: a copy, bufs[0] <- bufs[1]; or a collective (coll)
  std::vector<std::shared_ptr<Buffer>> bufs;
  std::vector<int64_t> vals;          // its variables' values (k->spec.vars)
  // a collective: its ReduceKind, dtype and count; bufs are the n results, then the n parts
  int coll = -1;
  DType coll_dt = DType::Float32;
  int64_t coll_n = 0;
};
struct Capture {
  std::vector<CapturedLaunch> launches;
  std::vector<std::shared_ptr<Buffer>> created;
};
inline Capture*& capturing() { static thread_local Capture* c = nullptr; return c; }

// a buffer for a kernel's output
inline std::shared_ptr<Buffer> new_buffer(const std::string& device, DType dt, int64_t n) {
  auto b = std::make_shared<Buffer>(device, dt, n);
  if (Capture* c = capturing()) c->created.push_back(b);
  return b;
}

// the values of the variables a graph binds (its BIND nodes), by variable (DEFINE_VAR); a few at most
using VarVals = std::vector<std::pair<const UOp*, int64_t>>;
// an int expression of variables (a symbolic size) at their values; VariableError naming one without a value
inline int64_t eval_int(const UOpRef& e, const VarVals& vv) {
  if (e->op == Ops::DEFINE_VAR || (e->op == Ops::CAST && e->src[0]->op == Ops::DEFINE_VAR))  // NOTE: the common case, no walk
    for (auto& [var, x] : vv) if (var == (e->op == Ops::CAST ? e->src[0] : e).get()) return x;
  std::unordered_map<const UOp*, int64_t> v;
  for (auto& x : toposort(e)) {
    auto a = [&](size_t i) { return v.at(x->src[i].get()); };
    int64_t r = 0;
    switch (x->op) {
      case Ops::CONST: r = x->iarg(); break;
      case Ops::DEFINE_VAR: {
        auto it = std::find_if(vv.begin(), vv.end(), [&](auto& p) { return p.first == x.get(); });
        if (it == vv.end()) throw VariableError("tinygrad: the variable " + var_name(*x) + " has no value here (bind it: v.bind(n))");
        r = it->second;
        break;
      }
      case Ops::BIND: r = x->src[1]->iarg(); break;
      case Ops::CAST: r = a(0); break;
      case Ops::ADD: r = a(0) + a(1); break;
      case Ops::MUL: r = a(0) * a(1); break;
      case Ops::IDIV: r = a(1) ? a(0) / a(1) : 0; break;
      case Ops::MOD: r = a(1) ? a(0) % a(1) : 0; break;
      case Ops::MAX: r = std::max(a(0), a(1)); break;
      default: if (x->op != Ops::DEVICE) throw Error(std::string("tinygrad: a symbolic size holds ") + op_name(x->op)); break;
    }
    v[x.get()] = r;
  }
  return v.at(e.get());
}
// the values a launch of k passes, in its order
inline std::vector<int64_t> launch_vals(const ProgramSpec& k, const VarVals& vv) {
  std::vector<int64_t> r;
  for (auto& v : k.vars) {
    auto it = std::find_if(vv.begin(), vv.end(), [&](auto& p) { return p.first == v.get(); });
    if (it == vv.end()) throw VariableError(cat("tinygrad: kernel ", k.name, " reads variable ", var_name(*v), ", which nothing binds"));
    r.push_back(it->second);
  }
  return r;
}

// the one way a kernel runs (realize, static plans, TinyJit's replay): k over the buffers table[slots[i]] with its
// variables' values; returns its time when `timed`. ptrs is scratch space.
inline double run_kernel(const std::shared_ptr<CompiledKernel>& k, const std::vector<int>& slots, const std::vector<std::shared_ptr<Buffer>>& table,
                         std::vector<void*>& ptrs, bool timed, const std::vector<int64_t>& vals = {}) {
  ptrs.clear();
  for (int s : slots) ptrs.push_back(table[size_t(s)]->ptr());
  if (Capture* c = capturing()) {
    auto& l = c->launches.emplace_back(CapturedLaunch{k, {}, vals});
    for (int s : slots) l.bufs.push_back(table[size_t(s)]);
  }
  run_stats().kernels_run++;
  return k->prg->call(ptrs, vals, timed);
}

// the one way a buffer is copied (a COPY between devices, TinyJit's replay of one), recorded like a launch
inline void copy_buffer(const std::shared_ptr<Buffer>& to, const std::shared_ptr<Buffer>& from) {
  const bool prof = profiling();
  double t0 = prof ? now_s() : 0;
  if (from->device == to->device) runtime(to->device).allocator->copy(to->ptr(), from->ptr(), to->nbytes());
  else { std::vector<char> host(to->nbytes()); from->copyout(host.data()); to->copyin(host.data()); }
  if (Capture* c = capturing()) c->launches.push_back({nullptr, {to, from}, {}});
  if (prof) profile_event(Profile::Track::copies, cat("copy ", from->device, " -> ", to->device), to->device, t0, double(to->nbytes()));
}

// an all-reduce to run: recv[i] = the reduction of every send, as `n` elements of dt (a replay's buffers are planned
// memory of another dtype)
struct Collective {
  std::vector<std::shared_ptr<Buffer>> recv, send;
  ReduceKind op;
  DType dt;
  int64_t n;
};

// the one way collectives run (a wave of ALLREDUCEs, TinyJit's replay of them), each recorded like a launch: those of
// one group of devices go to its communicator as one batch
inline void run_collectives(const std::vector<Collective>& batch) {
  const bool prof = profiling();
  double t0 = prof ? now_s() : 0, bytes = 0;
  std::vector<std::unique_ptr<Buffer>> views;
  std::map<std::vector<std::string>, std::vector<AllReduce>> groups;
  for (auto& c : batch) {
    AllReduce a{{}, {}, c.op};
    std::vector<std::string> devs;
    for (size_t i = 0; i < c.send.size(); i++) {
      a.send.push_back(views.emplace_back(std::make_unique<Buffer>(c.send[i]->device, c.dt, c.n, c.send[i]->ptr())).get());
      a.recv.push_back(views.emplace_back(std::make_unique<Buffer>(c.recv[i]->device, c.dt, c.n, c.recv[i]->ptr())).get());
      devs.push_back(c.send[i]->device);
    }
    groups[devs].push_back(std::move(a));
    bytes += double(c.n * itemsize(c.dt));
  }
  for (auto& [devs, g] : groups) communicator(devs).all_reduce(g);
  if (Capture* cap = capturing())
    for (auto& c : batch) {
      auto& l = cap->launches.emplace_back(CapturedLaunch{nullptr, c.recv, {}, int(c.op), c.dt, c.n});
      l.bufs.insert(l.bufs.end(), c.send.begin(), c.send.end());
    }
  if (prof && !batch.empty())
    profile_event(Profile::Track::copies, cat(batch.size(), " all-reduces of ", batch[0].send.size(), " devices"), batch[0].send[0]->device, t0,
                  bytes);
}

// a map that keeps its most recently used entries while their total weight is at most `cap` (the newest entry
// always stays); get() marks an entry used
template <class K, class V, class Weight>
struct LRUMap {
  struct Entry;
  using Map = std::map<K, Entry>;
  struct Entry { V v; typename std::list<typename Map::iterator>::iterator pos; };
  explicit LRUMap(size_t c) : cap(c) {}
  V* get(const K& k) {
    auto it = map.find(k);
    if (it == map.end()) return nullptr;
    order.splice(order.begin(), order, it->second.pos);
    return &it->second.v;
  }
  void put(const K& k, V v) {
    if (auto it = map.find(k); it != map.end()) erase(it);
    weight += Weight{}(v);
    auto it = map.emplace(k, Entry{std::move(v), {}}).first;
    order.push_front(it);
    it->second.pos = order.begin();
    trim();
  }
  void set_cap(size_t c) { cap = c; trim(); }
  void clear() { order.clear(); map.clear(); weight = 0; }
  size_t size() const { return map.size(); }
  size_t cap, weight = 0;
  Map map;
  std::list<typename Map::iterator> order;  // most recent first

 private:
  void erase(typename Map::iterator it) { weight -= Weight{}(it->second.v); order.erase(it->second.pos); map.erase(it); }
  void trim() { while (weight > cap && map.size() > 1) erase(order.back()); }
};

struct Plan {
  std::string device;
  std::vector<std::shared_ptr<CompiledKernel>> kernels;
  ScheduleSpec spec;
  std::vector<std::vector<int>> release;  // per kernel: the buffers no later kernel reads (a long chain holds two at a time)
};
// NOTE: both caches are bounded in programs (a loaded GPU program holds driver memory: PoCL's grew past 6 GB in the
// test suite). An evicted program stays alive while a plan (cached schedule, static plan, JIT) still holds it: the
// driver program is released when its last owner drops it. So at most PROGRAM_CACHE + SCHEDULE_CACHE are loaded,
// besides those of static plans.
struct ProgramWeight { template <class V> size_t operator()(const V&) const { return 1; } };
struct PlanWeight { size_t operator()(const std::shared_ptr<Plan>& p) const { return std::max<size_t>(p->kernels.size(), 1); } };
struct EngineState {
  std::mutex mu;  // one realize at a time: the graph a realize walks is never half-built by another
  // structural key -> plan; its weight is the plan's kernel count
  LRUMap<std::vector<uint64_t>, std::shared_ptr<Plan>, PlanWeight> schedule_cache{size_t(std::max<int64_t>(getenv_int("SCHEDULE_CACHE", 512), 1))};
  // per device: kernel AST (kept alive, it is the key) -> loaded program
  std::map<std::string, LRUMap<const UOp*, std::pair<UOpRef, std::shared_ptr<CompiledKernel>>, ProgramWeight>> programs;
  size_t max_programs = size_t(std::max<int64_t>(getenv_int("PROGRAM_CACHE", 512), 1));
  static EngineState& get() { static auto* s = new EngineState(); return *s; }  // NOTE: leaked on purpose
};

// the programs the cache holds now, on every device, most recently used first (tests and benchmarks look inside)
inline std::vector<std::shared_ptr<CompiledKernel>> loaded_programs() {
  auto& st = EngineState::get();
  std::lock_guard lk(st.mu);
  std::vector<std::shared_ptr<CompiledKernel>> r;
  for (auto& [dev, c] : st.programs) for (auto it : c.order) r.push_back(it->second.v.second);
  return r;
}


// the device a node names (buffers, DEVICE), or nullptr; no copies on the realize path
inline const std::string* node_device(const UOp* u) {
  if (u->op == Ops::BUFFER) return &u->buffer()->device;
  if (u->realized) return &u->realized->device;
  if (u->op == Ops::DEVICE) return &std::get<std::string>(u->arg);
  return nullptr;
}

// every new kernel rendered and compiled, not run, for each device whose descriptor gives a check compiler (CUDA's
// with CUDA_COMPILE_CHECK=1), other than the one it runs on. The sources wait and compile in batches (check_many: an
// NVRTC program costs 50 ms however small, a small kernel in one 3-7 ms), of 256, and when flush_compile_checks() is
// called. NOTE: not at exit: NVRTC's own state is torn down by then (it crashed in nvrtcCompileProgram)
struct CompileChecks {
  struct Check {
    std::string device;
    std::unique_ptr<Renderer> ren;
    std::unique_ptr<Compiler> compiler;
    std::vector<std::string> waiting;
    void flush() { auto w = std::move(waiting); waiting.clear(); compiler->check_many(w); }
  };
  std::vector<Check> list;
  std::mutex mu;
  CompileChecks() {
    for (auto& n : device_names()) {
      DeviceSpec spec = device_spec(n);
      if (!spec.check_compiler) continue;
      if (auto c = spec.check_compiler()) list.push_back({n, make_renderer(spec, DeviceRuntime{}), std::move(c), {}});
    }
  }
  ~CompileChecks() {
    size_t n = 0;
    for (auto& c : list) n += c.waiting.size();
    if (n) std::fprintf(stderr, "tinygrad: %zu kernels were not check-compiled: call tinygrad::flush_compile_checks() before exit\n", n);
  }
  static CompileChecks& get() { static CompileChecks c; return c; }
};
inline void compile_checks(const std::string& device, const std::vector<KernelAST>& ks, const std::vector<size_t>& todo) {
  auto& checks = CompileChecks::get();
  if (checks.list.empty()) return;
  std::lock_guard lk(checks.mu);
  for (auto& c : checks.list) {
    if (c.device == device_base(device)) continue;
    for (auto i : todo) c.waiting.push_back(to_program(ks[i].ast, *c.ren).src);
    if (c.waiting.size() >= 256) c.flush();
  }
}

// compile every kernel of a schedule that is not compiled yet, in one batch
inline std::vector<std::shared_ptr<CompiledKernel>> get_programs(Device& dev, const std::vector<KernelAST>& ks) {
  auto& st = EngineState::get();
  auto& cache = st.programs.try_emplace(dev.rt.name, st.max_programs).first->second;
  std::vector<std::shared_ptr<CompiledKernel>> out(ks.size());
  std::vector<size_t> todo;
  std::vector<ProgramSpec> specs;
  std::unordered_map<const UOp*, size_t> first;  // NOTE: the pieces of a long chain share one AST: one program
  std::vector<std::pair<size_t, size_t>> same;    // (kernel, earlier kernel with its AST)
  double t_codegen = now_s();
  for (size_t i = 0; i < ks.size(); i++) {
    if (auto* e = cache.get(ks[i].ast.get())) out[i] = e->second;
    else if (auto [f, fresh] = first.try_emplace(ks[i].ast.get(), i); !fresh) same.push_back({i, f->second});
    else {
      todo.push_back(i);
      auto searched = flags().beam > 0 ? beam_search(ks[i].ast, dev.rt, *dev.renderer, flags().beam) : std::nullopt;
      specs.push_back(searched ? to_program(ks[i].ast, *dev.renderer, *searched) : to_program(ks[i].ast, *dev.renderer));
    }
  }
  if (todo.empty()) return out;
  std::vector<std::string> srcs;
  for (auto& s : specs) srcs.push_back(s.src);
  double t0 = now_s();
  if (profiling()) {
    std::string names;
    for (auto& s : specs) names += (names.empty() ? "" : " ") + s.name;
    profile_event(Profile::Track::compiles, cat("codegen ", specs.size(), " kernels"), dev.rt.name, t_codegen, 0, names);
    t0 = now_s();
  }
  auto bins = dev.rt.compiler->compile_many(srcs);
  if (profiling()) profile_event(Profile::Track::compiles, cat("compile ", specs.size(), " kernels"), dev.rt.name, t0);
  compile_checks(dev.rt.name, ks, todo);
  if (flags().debug >= 1) std::fprintf(stderr, "compiled %zu kernels in %.2f ms\n", srcs.size(), (now_s() - t0) * 1e3);
  for (size_t j = 0; j < todo.size(); j++) {
    auto ck = std::make_shared<CompiledKernel>();
    ck->prg = dev.rt.load(specs[j].fn, bins[j], specs[j].launch);
    ck->spec = std::move(specs[j]);
    cache.put(ks[todo[j]].ast.get(), {ks[todo[j]].ast, ck});
    out[todo[j]] = ck;
    run_stats().kernels_compiled++;
  }
  for (auto [i, j] : same) out[i] = out[j];
  return out;
}

inline void realize_locked(const std::vector<UOpRef>& roots_in);

// a COPY between devices: realize its source on its own device, then copy the buffer across; the COPY node
// becomes a leaf holding the new buffer, so the graph above it sees one device
inline void realize_copies(const std::vector<UOpRef>& roots) {
  // sources first, so a COPY of a COPY copies in order
  for (auto& u : toposort_all(roots, [](const UOp* x) { return !is_leaf(x); })) {
    if (u->op != Ops::COPY || is_leaf(u.get())) continue;
    UOpRef src = u->src[0];
    if (src->op == Ops::RESHAPE && is_leaf(src->src[0].get()) && prod(src->src[0]->shape) == prod(src->shape)) src = src->src[0];
    if (!is_leaf(src.get())) realize_locked({src});
    auto from = src->leaf_buffer();
    auto to = new_buffer(std::get<std::string>(u->src[1]->arg), u->dtype, prod(u->shape));
    double t0 = now_s();
    copy_buffer(to, from);
    if (flags().debug >= 2)
      std::fprintf(stderr, "*** copy %s -> %s, %.3f MB in %.2f us\n", from->device.c_str(), to->device.c_str(), double(to->nbytes()) / 1e6,
                   (now_s() - t0) * 1e6);
    u->realized.set(to);
  }
}

// ALLREDUCEs, in waves: those whose parts need no other collective first. Each device realizes its parts of a wave in
// one schedule, together with every value of that schedule the rest of the graph reads too (a forward activation the
// backward pass reads again): those stay buffers, never computed twice. Then the wave's collectives run; every
// device's ALLREDUCE node becomes a leaf holding its result
inline void realize_collectives(const std::vector<UOpRef>& roots) {
  for (;;) {
    auto topo = toposort_all(roots, [](const UOp* x) { return !is_leaf(x); });
    std::unordered_map<const UOp*, bool> waits;  // a collective not done yet at or below the node
    std::unordered_map<const UOp*, const std::string*> dev;  // where a node runs: its leaf's device, a COPY's target
    std::vector<UOpRef> wave;
    for (auto& u : topo) {
      bool w = u->op == Ops::ALLREDUCE && !is_leaf(u.get()), below = false;
      for (auto& s : u->src) below |= waits[s.get()];
      waits[u.get()] = w || below;
      if (w && !below) wave.push_back(u);
      const std::string* d = u->op == Ops::COPY ? &std::get<std::string>(u->src[1]->arg) : node_device(u.get());
      for (size_t i = 0; !d && i < u->src.size(); i++) d = dev[u->src[i].get()];
      dev[u.get()] = d;
    }
    if (wave.empty()) return;
    // the wave's parts and what they compute on the way, and of that what the rest reads too
    std::unordered_set<const UOp*> in_wave, wave_ar;
    std::vector<UOpRef> stack;
    for (auto& a : wave) { wave_ar.insert(a.get()); for (auto& s : a->src) stack.push_back(s); }
    while (!stack.empty()) {
      UOpRef x = stack.back();
      stack.pop_back();
      if (is_leaf(x.get()) || !in_wave.insert(x.get()).second) continue;
      for (auto& s : x->src) stack.push_back(s);
    }
    std::map<std::string, std::vector<UOpRef>> todo;
    auto add = [&](UOpRef x) {
      while (is_movement(x->op) && !is_leaf(x.get())) x = x->src[0];
      auto& v = todo[dev[x.get()] ? *dev[x.get()] : ""];
      bool value = x->op != Ops::CONST && x->op != Ops::DEVICE && x->op != Ops::BIND && x->op != Ops::DEFINE_VAR;
      if (!is_leaf(x.get()) && value && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    };
    for (auto& a : wave) for (auto& s : a->src) add(s);
    // of what the rest reads, an elementwise value (an activation) is not kept: the reduces and buffers under it are,
    // and the rest's kernels compute it fused, as one device's schedule does (kept, each was a kernel of its own)
    std::vector<UOpRef> read;
    std::unordered_set<const UOp*> looked;
    for (auto& u : topo)
      if (!in_wave.count(u.get()) && !wave_ar.count(u.get()))
        for (auto& s : u->src) if (in_wave.count(s.get()) && !waits[s.get()]) read.push_back(s);
    while (!read.empty()) {
      UOpRef x = read.back(), y = x;
      read.pop_back();
      if (!looked.insert(x.get()).second) continue;
      while (is_movement(y->op) && !is_leaf(y.get())) y = y->src[0];
      if (!is_alu(y->op) || is_leaf(y.get())) { add(x); continue; }
      for (auto& s : y->src) if (in_wave.count(s.get())) read.push_back(s);
    }
    for (auto& [d, r] : todo) realize_locked(r);
    std::vector<Collective> batch;
    std::vector<const UOp*> done;
    for (auto& u : wave) {
      auto same = [&](const UOp* d) { return d->src == u->src && d->varg()[0] == u->varg()[0]; };
      if (std::any_of(done.begin(), done.end(), same)) continue;  // another device's node of an all-reduce already here
      done.push_back(u.get());
      Collective c{{}, {}, ReduceKind::Sum, u->dtype, prod(u->shape)};
      for (auto& s : u->src) {  // each device's REDUCE_AXIS (lower_reduce), realized above
        c.send.push_back(s->leaf_buffer());
        c.recv.push_back(new_buffer(c.send.back()->device, u->dtype, prod(u->shape)));
      }
      Ops op = Ops(u->varg()[0]);
      c.op = op == Ops::ADD ? ReduceKind::Sum : op == Ops::MUL ? ReduceKind::Prod : ReduceKind::Max;
      batch.push_back(std::move(c));
    }
    run_collectives(batch);  // the whole wave at once: a model's gradients reduce as one NCCL group
    for (size_t b = 0; b < batch.size(); b++)
      for (size_t i = 0; i < batch[b].recv.size(); i++)
        make_uop(Ops::ALLREDUCE, done[b]->dtype, done[b]->src, std::vector<int64_t>{done[b]->varg()[0], int64_t(i)})->realized.set(batch[b].recv[i]);
  }
}

// a graph of several devices: lowered to each device's graph (engine/multi.hpp), realized device by device; a root
// keeps its devices' values in multi_value (one device's: in realized)
inline void realize_multi(const std::vector<UOpRef>& roots) {
  MultiLowering L;
  std::vector<Lowered> low;
  for (auto& r : roots) low.push_back(L.lower(r));
  std::vector<std::vector<UOpRef>> per(L.devs.size());
  for (auto& l : low) {
    if (l.single()) realize_locked({l.per[0]});
    else for (size_t i = 0; i < l.per.size(); i++) per[i].push_back(l.per[i]);
  }
  for (auto& p : per) if (!p.empty()) realize_locked(p);
  for (size_t i = 0; i < roots.size(); i++) {
    if (low[i].single()) { roots[i]->realized.set(low[i].per[0]->leaf_buffer()); continue; }
    if (roots[i]->op == Ops::MULTI) continue;  // its parts are realized nodes now
    std::vector<UOpRef> src{L.device_node};
    for (auto& p : low[i].per) src.push_back(buffer_view(p));  // each part as its buffer, not the graph that computed it
    roots[i]->multi_value.set(make_uop(Ops::MULTI, roots[i]->dtype, src, low[i].axis));
  }
}

inline void realize_locked(const std::vector<UOpRef>& roots_in) {
  if (std::any_of(roots_in.begin(), roots_in.end(), [](const UOpRef& r) { return r->multi; })) {
    std::vector<UOpRef> todo;
    for (auto& r : roots_in) if (r->multi ? !multi_done(r.get()) : !is_leaf(r.get())) todo.push_back(r);
    return todo.empty() ? void() : realize_multi(todo);
  }
  auto& st = EngineState::get();
  std::vector<UOpRef> roots;
  for (auto& r : roots_in) if (!is_leaf(r.get()) && std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  if (roots.empty()) return;
  double t0 = now_s();

  // structural key: the graph with buffers replaced by numbered inputs
  std::vector<uint64_t> key;
  std::unordered_map<const UOp*, int> input_slot, topo_id;
  std::vector<std::shared_ptr<Buffer>> inputs;
  std::string device;
  VarVals var_vals;
  for (auto& root : roots) {
    std::vector<std::pair<const UOp*, size_t>> stack{{root.get(), 0}};
    while (!stack.empty()) {
      auto& [u, i] = stack.back();
      if (topo_id.count(u)) { stack.pop_back(); continue; }
      // a COPY not done yet: do the copies first (they become leaves), then start over
      if (u->op == Ops::COPY && !is_leaf(u)) { realize_copies(roots); return realize_locked(roots_in); }
      if (u->op == Ops::ALLREDUCE && !is_leaf(u)) { realize_collectives(roots); return realize_locked(roots_in); }
      // a bound variable: its value is no part of the key (one plan for every value), it is passed to the kernels
      if (u->op == Ops::BIND && i == 1) {
        i++;
        const UOp* var = u->src[0].get();
        int64_t v = u->src[1]->iarg();
        auto it = std::find_if(var_vals.begin(), var_vals.end(), [&](auto& p) { return p.first == var; });
        if (it == var_vals.end()) var_vals.push_back({var, v});
        else if (it->second != v) throw VariableError(cat("tinygrad: one graph binds ", var_name(*var), " to ", it->second, " and to ", v));
        continue;
      }
      if (!is_leaf(u) && i < u->src.size()) { const UOp* s = u->src[i++].get(); if (!topo_id.count(s)) stack.push_back({s, 0}); continue; }
      topo_id[u] = int(topo_id.size());
      if (const std::string* d = node_device(u)) {
        if (device.empty()) device = *d;
        else if (*d != device) throw DeviceError("tinygrad: one graph mixes devices " + device + " and " + *d + "; move tensors with .to() first");
      }
      if (is_leaf(u)) {
        input_slot[u] = int(inputs.size());
        inputs.push_back(u->leaf_buffer());
        key.insert(key.end(), {0xB0FFull, uint64_t(u->dtype), uint64_t(inputs.back()->size), uint64_t(u->op == Ops::BUFFER)});
        for (auto x : u->shape) key.push_back(uint64_t(x));
      } else {
        key.insert(key.end(), {uint64_t(u->op) + 1, uint64_t(u->dtype), arg_hash(u->arg), u->src.size()});
        for (auto& s : u->src) key.push_back(u->op == Ops::BIND && s == u->src[1] ? 0xB1ADull : uint64_t(topo_id.at(s.get())));
      }
      stack.pop_back();
    }
    key.push_back(0x5007ull);
    key.push_back(uint64_t(topo_id.at(root.get())));
  }
  if (device.empty()) device = default_device();
  key.insert(key.end(), {hash_bytes(device), uint64_t(kernel_limits().max_buffers), uint64_t(kernel_limits().max_ops)});

  std::shared_ptr<Plan> plan;
  bool hit = false;
  if (auto* p = flags().scache ? st.schedule_cache.get(key) : nullptr) {
    plan = *p;
    hit = true;
    run_stats().schedule_cache_hits++;
  } else {
    plan = std::make_shared<Plan>();
    plan->device = device;
    plan->spec = create_schedule(roots, input_slot, int(inputs.size()), device);
    plan->kernels = get_programs(get_device(device), plan->spec.kernels);
    const ScheduleSpec& sp = plan->spec;
    std::vector<int> last(size_t(sp.n_inputs) + sp.new_slots.size(), -1);
    for (size_t k = 0; k < sp.kernels.size(); k++) for (int x : sp.kernels[k].slots) last[size_t(x)] = int(k);
    for (int r : sp.root_slots) last[size_t(r)] = -1;
    plan->release.resize(sp.kernels.size());
    for (size_t x = size_t(sp.n_inputs); x < last.size(); x++) if (last[x] >= 0) plan->release[size_t(last[x])].push_back(int(x));
    if (flags().scache) st.schedule_cache.put(key, plan);
    run_stats().schedules_built++;
  }
  if (flags().debug >= 1 && plan->kernels.size() > 1)
    std::fprintf(stderr, "scheduled %zu kernels in %.2f ms | %s\n", plan->kernels.size(), (now_s() - t0) * 1e3, hit ? "cache hit" : "CACHE MISS");

  // bind buffers and run
  const ScheduleSpec& sp = plan->spec;
  const bool prof = profiling(), viz = vizzing();
  if (viz) {
    std::vector<const ProgramSpec*> specs;
    for (auto& ck : plan->kernels) specs.push_back(&ck->spec);
    viz_schedule(plan, device, sp, specs);
  }
  std::vector<std::shared_ptr<Buffer>> slots = inputs;
  for (auto& [dt, n] : sp.new_slots) slots.push_back(new_buffer(device, dt, n));
  std::vector<void*> ptrs;
  const bool capture = capturing() != nullptr;
  for (size_t k = 0; k < sp.kernels.size(); k++) {
    auto& ck = *plan->kernels[k];
    double start = prof ? now_s() : 0;
    double tm = run_kernel(plan->kernels[k], sp.kernels[k].slots, slots, ptrs, flags().debug >= 2 || prof,
                           ck.spec.vars.empty() ? std::vector<int64_t>{} : launch_vals(ck.spec, var_vals));
    double mem = 0;
    if (flags().debug >= 2 || prof) for (int s : sp.kernels[k].slots) mem += double(slots[size_t(s)]->nbytes());
    if (prof || viz) profile_kernel(ck.spec, device, start, tm, mem);
    if (flags().debug >= 2) {
      std::fprintf(stderr, "*** %-6s %4lld %-32s arg %2zu mem %7.3f GB tm %9.2fus/%9.2fms (%8.2f GFLOPS %7.2f GB/s)\n", device.c_str(),
                   (long long)run_stats().kernels_run, ck.spec.name.c_str(), ptrs.size(), mem / 1e9, tm * 1e6, 0.0,
                   ck.spec.flops / std::max(tm, 1e-9) / 1e9, mem / std::max(tm, 1e-9) / 1e9);
    }
    // NOTE: a capture keeps the buffer (what its launches read) but not its memory: a language model's prefill capture
    // made 630 MB of fresh pages, one dequantized weight after another (VM: 161k page faults, most of the first token)
    for (int s : plan->release[k]) (capture ? slots[size_t(s)]->release() : void()), slots[size_t(s)].reset();
  }
  for (size_t i = 0; i < roots.size(); i++) roots[i]->realized.set(slots[size_t(sp.root_slots[i])]);
}

}  // namespace tinygrad::detail

namespace tinygrad {
// the engine's entry points (api.hpp)
#if TINYGRAD_DEFINE_API
TINYGRAD_API RunStats& run_stats() { static RunStats s; return s; }

TINYGRAD_API void clear_program_cache() {
  auto& st = detail::EngineState::get();
  std::lock_guard lk(st.mu);
  st.schedule_cache.clear();
  st.programs.clear();
}

TINYGRAD_API void flush_compile_checks() {
  auto& checks = detail::CompileChecks::get();
  std::lock_guard lk(checks.mu);
  for (auto& c : checks.list) c.flush();
}

TINYGRAD_API void set_cache_limits(size_t programs, size_t schedule_kernels) {
  auto& st = detail::EngineState::get();
  std::lock_guard lk(st.mu);
  st.max_programs = std::max<size_t>(programs, 1);
  for (auto& [dev, c] : st.programs) c.set_cap(st.max_programs);
  st.schedule_cache.set_cap(std::max<size_t>(schedule_kernels, 1));
}

TINYGRAD_API void realize(const std::vector<UOpRef>& roots) {
  std::lock_guard lk(detail::EngineState::get().mu);
  detail::realize_locked(roots);
}
#endif

}  // namespace tinygrad
