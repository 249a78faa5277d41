#pragma once
// TinyJit: a function of tensors captured once and replayed. The first call runs as usual; the second runs and
// captures every kernel and copy it launches with their buffers; later calls replay them over the new arguments'
// buffers: no graph building, scheduling or lowering at all (on CUDA one CUDA graph launch).
//
//   TinyJit step([&](const Tensor& x, const Tensor& y) {
//     opt.zero_grad();
//     Tensor loss = model(x).sparse_categorical_crossentropy(y);
//     loss.backward();
//     opt.step({loss});
//     return loss;
//   }, "train_step");
//   for (...) step(x, y);
//
// What a replay sees anew: the arguments (same shapes, dtypes and devices as captured, else JitError), the current
// value of every tensor made before the call that the function reads or assign()s (weights, optimizer and BatchNorm
// state, whatever assign(), load_state_dict, an optimizer step or replace() outside the function gave them since; each
// replay binds it, and assigns the new value of an assigned one, as a call would), fresh random numbers for
// rand()/dropout, and data written in place into buffers it reads (Optimizer::set_lr). A tensor it binds that moved
// to another device is a JitError. What it does not: C++ values (a double, a branch) and tensors made from host data
// inside the function are constants of the capture; pass what changes as tensor arguments, or an integer as a BoundVariable
// argument (tensor/variable.hpp): a replay passes each call's value to the kernels, with no new capture. An argument of
// symbolic shape (x.reshape({n.bind(rows), 64}), or a shrink of a bigger buffer by a variable) matches the capture up to
// its variables' values, which reach the replay the same way (a symbolic result comes back at this call's values). The returned tensors are
// new on every call. From the second call on, a call whose kernels differ from the one before throws JitError saying
// how (the first call may differ: it may initialize state). One tensor passed for two arguments at a recorded call
// reaches the function as two tensors (the second over a copy), so the capture tells the arguments apart.
// Threads: a TinyJit may be called from several threads; the calls take turns (one runs at a time).
#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <tuple>
#include <unordered_set>
#include "tensor.hpp"

namespace tinygrad {
namespace detail {

// the non-template half: calls as vectors of tensors
class JitCore : JitRecorder {
 public:
  // the function, called with the tensors to pass for the arguments
  using Run = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit JitCore(std::string name) : name_(std::move(name)) {}
  ~JitCore() override = default;
  // call the function (run) on args and vars (its BoundVariable arguments), or replay it; returns the returned tensors
  std::vector<Tensor> call(const std::vector<Tensor>& args, const std::vector<BoundVariable>& vars, const Run& run);
  int64_t calls() const TINYGRAD_MEMBER_DEF({ return calls_; })
  bool captured() const TINYGRAD_MEMBER_DEF({ return captured_; })
  size_t kernel_count() const TINYGRAD_MEMBER_DEF({
    std::lock_guard lk(mu_);
    return prog_ ? jit_kernel_count(*prog_) : 0;
  })
  const std::string& name() const TINYGRAD_MEMBER_DEF({ return name_; })
  const JitProgram* program() const TINYGRAD_MEMBER_DEF({ std::lock_guard lk(mu_); return prog_.get(); })

 private:
  struct Sig {
    Shape shape;
    DType dtype;
    std::string device;
    std::pair<int64_t, std::vector<Shape>> split;  // of a tensor of several devices (realized)
    std::vector<UOpRef> dyn;                        // a symbolic shape's extents, unbound (the same for every value)
    static Sig of(const Tensor& t) TINYGRAD_MEMBER_DEF({
      Sig s{t.shape(), t.dtype(), t.device(), t.device_split(), {}};
      for (auto& d : t.impl_->uop->dyn) s.dyn.push_back(d ? sym_unbound(d) : nullptr);
      return s;
    })
    std::string str() const TINYGRAD_MEMBER_DEF({
      if (dyn.empty()) return to_string(shape);
      std::string r;
      for (size_t i = 0; i < shape.size(); i++) r += (i ? ", " : "") + (dyn[i] ? sym_str(dyn[i]) : std::to_string(shape[i]));
      return "(" + r + ")";
    })
    bool operator==(const Sig&) const = default;
  };
  // a tensor made before the call that the call assigns (a state) or only reads: an input of the capture, bound to the
  // tensor's value on each replay. `seen`, `buf`: the value last bound (a replay looks the buffer up only when the
  // tensor's graph changed)
  struct Bound {
    Tensor t;
    std::vector<std::shared_ptr<Buffer>> captured;  // one per device
    const UOp* seen = nullptr;
    std::vector<std::shared_ptr<Buffer>> buf;
  };
  // one recorded call: the tensors it assigned and read, and the random keys it drew
  struct Record {
    std::vector<Bound> states, reads;
    std::vector<size_t> assigned_args;  // the arguments it assigned (a replay assigns the ones it is given)
    std::vector<Tensor> keys;
    std::vector<int64_t> draws;
  };
  // NOTE: declared inline where the library is header-only: a non-inline virtual would be the class's key function
  // and emit the vtable, and through it the whole library, in every TU that includes it
  TINYGRAD_API void read(const Tensor& t) override;
  TINYGRAD_API void assigned(const Tensor& t) override;
  TINYGRAD_API void drew(const Tensor& key, int64_t n) override;
  Bound made_before(const Tensor& t);
  std::vector<std::shared_ptr<Buffer>> bind(Bound& b, const char* how);
  std::vector<Tensor> record(const std::vector<Tensor>& args, const Run& run);
  std::vector<Tensor> replay(const std::vector<Tensor>& args, const std::vector<std::pair<const UOp*, int64_t>>& vv);
  // a symbolic argument over a buffer of its values only (Tensor::name_symbolic): kernels may read up to the bound (an
  // UPCAST's or a tile's rows past the extent), so its values are copied into argument i's kept buffer of the bound's
  // size, which is returned (null: any other argument)
  std::shared_ptr<Buffer> staged(size_t i, const Tensor& a) TINYGRAD_MEMBER_DEF({
    const UOp& u = *a.impl_->uop;
    if (u.dyn.empty()) return nullptr;
    auto b = a.buffers()[0];
    if (b->size >= prod(u.shape)) return nullptr;
    if (staged_.size() <= i) staged_.resize(i + 1);
    auto& st = staged_[i];
    if (!st || st->device != b->device || st->dtype != b->dtype) st = std::make_shared<Buffer>(b->device, b->dtype, prod(u.shape));
    runtime(st->device).allocator->copy(st->ptr(), b->ptr(), size_t(b->nbytes()));
    return st;
  })
  std::string where() const TINYGRAD_MEMBER_DEF({ return "tinygrad::TinyJit(" + name_ + ")"; })
  // buf as a tensor of shape (the bounds) whose dims dyn names are symbolic (null: concrete)
  static Tensor sym_view(const std::shared_ptr<Buffer>& buf, const Shape& shape, const std::vector<UOpRef>& dyn) TINYGRAD_MEMBER_DEF({
    return Tensor(sym_movement(Ops::RESHAPE, make_uop(Ops::BUFFER, buf->dtype, {}, buf), shape, dyn), buf->device);
  })

  std::string name_;
  mutable std::mutex mu_;  // held by a call: calls from several threads take turns
  std::atomic<int64_t> calls_{0};
  std::vector<Sig> in_sig_, out_sig_;  // the first call's arguments; the capture's returned tensors
  std::vector<Variable> var_sig_;      // the first call's variable arguments
  std::shared_ptr<JitProgram> prog_, prev_;
  Record cur_, rec_;  // the call being recorded; the last recorded call
  std::unordered_set<const void*> heard_;  // the tensors (Impl) the recorded call has read or assigned so far
  std::vector<const void*> args_;          // the recorded call's arguments (Impl)
  std::vector<std::shared_ptr<Buffer>> staged_;  // per argument: the bound-size copy of a symbolic one's values
  std::atomic<bool> captured_{false};
};

template <class T>
concept StaticTensorLike = requires(const T& t) { { t.tensor() } -> std::convertible_to<const Tensor&>; };

template <class A>
const Tensor& jit_arg(const A& a) {
  if constexpr (std::is_same_v<A, Tensor>) return a;
  else {
    static_assert(StaticTensorLike<A>,
                  "TinyJit: arguments must be tensors (Tensor or static tensors) or BoundVariables; a C++ value would be a constant of "
                  "the capture, so pass it as a tensor or a variable");
    return a.tensor();
  }
}
// each argument's place among the tensor arguments (a BoundVariable's: none)
template <class... A>
constexpr std::array<size_t, sizeof...(A)> tensor_places() {
  std::array<size_t, sizeof...(A)> r{};
  size_t n = 0, i = 0;
  ((r[i++] = std::is_same_v<A, BoundVariable> ? ~size_t(0) : n++), ...);
  return r;
}

template <class R> struct jit_result {
  static_assert(StaticTensorLike<R> || std::is_same_v<R, Tensor>,
                "TinyJit: the function returns tensors: Tensor, a static tensor, std::vector<Tensor>, a tuple or pair of them, or nothing");
  static void flatten(const R& r, std::vector<Tensor>& out) { out.push_back(jit_arg(r)); }
  static R build(const std::vector<Tensor>& v, size_t& i) {
    if constexpr (std::is_same_v<R, Tensor>) return v[i++];
    else return R(v[i++]);
  }
};
template <> struct jit_result<std::vector<Tensor>> {
  static void flatten(const std::vector<Tensor>& r, std::vector<Tensor>& out) { out.insert(out.end(), r.begin(), r.end()); }
  static std::vector<Tensor> build(const std::vector<Tensor>& v, size_t& i) { i = v.size(); return v; }
};
template <template <class...> class Tup, class... T>
  requires(std::is_same_v<Tup<T...>, std::tuple<T...>> || std::is_same_v<Tup<T...>, std::pair<T...>>)
struct jit_result<Tup<T...>> {
  static void flatten(const Tup<T...>& r, std::vector<Tensor>& out) {
    std::apply([&](const auto&... x) { (jit_result<std::decay_t<decltype(x)>>::flatten(x, out), ...); }, r);
  }
  static Tup<T...> build(const std::vector<Tensor>& v, size_t& i) { return Tup<T...>{jit_result<T>::build(v, i)...}; }  // NOTE: braces: in order
};
}  // namespace detail

template <class F>
class TinyJit {
 public:
  explicit TinyJit(F f, std::string name = "function") : f_(std::move(f)), core_(std::make_unique<detail::JitCore>(std::move(name))) {}

  template <class... A>
  auto operator()(const A&... args) {
    using R = std::invoke_result_t<F&, const A&...>;
    std::vector<Tensor> in;
    std::vector<BoundVariable> vars;
    auto add = [&]<class X>(const X& a) {
      if constexpr (std::is_same_v<X, BoundVariable>) vars.push_back(a);
      else in.push_back(detail::jit_arg(a));
    };
    (add(args), ...);
    auto outs = core_->call(in, vars, [&](const std::vector<Tensor>& use) {
      return invoke<R>(use, std::index_sequence_for<A...>{}, args...);
    });
    if constexpr (!std::is_void_v<R>) {
      size_t i = 0;
      return detail::jit_result<R>::build(outs, i);
    }
  }

  int64_t calls() const { return core_->calls(); }
  bool captured() const { return core_->captured(); }  // replays from now on
  size_t kernel_count() const { return core_->kernel_count(); }  // launches (kernels and copies) a replay runs
  const detail::JitProgram* program() const { return core_->program(); }  // what replays run (engine/jit.hpp), null before

 private:
  // f_ on the tensors `use` (the arguments, or a copy of one passed twice)
  template <class R, class... A, size_t... I>
  std::vector<Tensor> invoke(const std::vector<Tensor>& use, std::index_sequence<I...>, const A&... args) {
    static constexpr auto place = detail::tensor_places<A...>();
    auto pass = [&]<class X>(const X& a, size_t i) -> X {
      if constexpr (std::is_same_v<X, Tensor>) return use[place[i]];
      else if constexpr (std::is_constructible_v<X, const Tensor&>) return X(use[place[i]]);  // aliases: the same tensor
      else return a;
    };
    std::vector<Tensor> r;
    if constexpr (std::is_void_v<R>) f_(pass(args, I)...);
    else detail::jit_result<R>::flatten(f_(pass(args, I)...), r);
    return r;
  }
  F f_;
  std::unique_ptr<detail::JitCore> core_;  // NOTE: a stable address: the recorder is registered by pointer
};

#if TINYGRAD_DEFINE_API
namespace detail {

// a tensor made before the recorded call, as its value: a lazy one is realized now, outside the capture, so the capture
// reads its buffer and a replay can bind whatever value the tensor has then
TINYGRAD_API JitCore::Bound JitCore::made_before(const Tensor& t) {
  struct Quiet {  // NOTE: what follows reads t's graph itself
    JitRecorder* r = std::exchange(jit_recorder(), nullptr);
    ~Quiet() { jit_recorder() = r; }
  } quiet;
  Tensor v = t;
  if (!v.is_realized()) {
    realize_uncaptured({v.impl_->uop});
    v.adopt_realized();
  }
  auto b = v.buffers();
  return Bound{v, b, v.impl_->uop.get(), b};
}

TINYGRAD_API void JitCore::read(const Tensor& t) {
  if (heard_.insert(t.impl_.get()).second) cur_.reads.push_back(made_before(t));
}

TINYGRAD_API void JitCore::assigned(const Tensor& t) {
  if (t.impl_->born == jit_call_id()) return;  // a tensor the call made: its own
  if (auto a = std::find(args_.begin(), args_.end(), t.impl_.get()); a != args_.end()) {
    size_t i = size_t(a - args_.begin());
    auto& as = cur_.assigned_args;
    if (std::find(as.begin(), as.end(), i) == as.end()) as.push_back(i);
    return;
  }
  if (!heard_.insert(t.impl_.get()).second) {
    auto it = std::find_if(cur_.reads.begin(), cur_.reads.end(), [&](const Bound& b) { return b.t.impl_ == t.impl_; });
    if (it == cur_.reads.end()) return;  // assigned before
    cur_.states.push_back(std::move(*it));  // read, then assigned: a state
    cur_.reads.erase(it);
    return;
  }
  cur_.states.push_back(made_before(t));
}

TINYGRAD_API void JitCore::drew(const Tensor& key, int64_t n) {
  cur_.keys.push_back(key);
  cur_.draws.push_back(n);
}

// the buffer that holds b's tensor's value now, checked against the one it was captured with
TINYGRAD_API std::vector<std::shared_ptr<Buffer>> JitCore::bind(Bound& b, const char* how) {
  if (b.t.impl_->uop.get() == b.seen) return b.buf;
  auto buf = b.t.buffers();
  for (size_t i = 0; i < std::max(buf.size(), b.captured.size()); i++) {
    auto &x = *buf[std::min(i, buf.size() - 1)], &c = *b.captured[std::min(i, b.captured.size() - 1)];
    if (buf.size() != b.captured.size() || x.device != c.device || x.dtype != c.dtype || x.size != c.size)
      throw JitError(cat(where(), ": a tensor the function ", how, " (", to_string(b.t.dtype()), " ", to_string(b.t.shape()), ") is on ",
                         b.t.device(), " now, split ", x.size, "; it was on ", c.device, ", split ", c.size,
                         " when the function was captured. Make a new TinyJit for tensors that moved"));
  }
  b.seen = b.t.impl_->uop.get();
  return b.buf = std::move(buf);
}

TINYGRAD_API std::vector<Tensor> JitCore::call(const std::vector<Tensor>& args, const std::vector<BoundVariable>& vars, const Run& run) {
  if (jit_recorder()) throw JitError(where() + ": called while another jitted function is recorded; jitted functions do not nest");
  std::lock_guard lk(mu_);
  int64_t n = ++calls_;
  for (auto& a : args) if (a.devices().size() > 1) Tensor(a).realize();  // NOTE: first: its split shows once realized
  if (n == 1) {
    for (auto& a : args) in_sig_.push_back(Sig::of(a));
    for (auto& v : vars) var_sig_.push_back(v.var());
  }
  if (vars.size() != var_sig_.size()) throw JitError(cat(where(), ": called with ", vars.size(), " variables, captured with ", var_sig_.size()));
  for (size_t i = 0; i < vars.size(); i++)
    if (!(vars[i].var() == var_sig_[i]))
      throw JitError(cat(where(), ": variable argument ", i, " is ", vars[i].var().str(), ", captured with ", var_sig_[i].str()));
  if (args.size() != in_sig_.size()) throw JitError(cat(where(), ": called with ", args.size(), " arguments, captured with ", in_sig_.size()));
  for (size_t i = 0; i < args.size(); i++) {
    Sig s = Sig::of(args[i]);
    if (!(s == in_sig_[i]))
      throw JitError(cat(where(), ": argument ", i, " is ", to_string(s.dtype), " ", s.str(), " on ", s.device,
                         ", but the function was captured with ", to_string(in_sig_[i].dtype), " ", in_sig_[i].str(), " on ",
                         in_sig_[i].device, in_sig_[i].split != s.split ? " (split otherwise)" : ""));
  }
  // the values of the variables: the variable arguments', and those an argument's symbolic dims are bound to
  VarVals vv;
  auto add = [&](const UOp* var, int64_t value, size_t arg) {  // arg: the tensor argument binding it (none: a variable argument)
    for (auto& [v, x] : vv)
      if (v == var && x != value)
        throw JitError(cat(where(), ": the variable ", var_name(*var), " is ", x, " and ", value, " (",
                           arg == args.size() ? std::string("a variable argument") : cat("argument ", arg), ") in one call"));
    vv.push_back({var, value});
  };
  for (auto& v : vars) add(v.var().uop().get(), v.value(), args.size());
  for (size_t i = 0; i < args.size(); i++)
    for (auto& d : args[i].impl_->uop->dyn)
      if (d) for (auto& x : toposort(d)) if (x->op == Ops::BIND) add(x->src[0].get(), x->src[1]->iarg(), i);
  Tensor::realize_all(args);
  return prog_ ? replay(args, vv) : record(args, run);
}

TINYGRAD_API std::vector<Tensor> JitCore::record(const std::vector<Tensor>& args, const Run& run) {
  // arguments that share a buffer (one tensor passed twice, or equal constants) reach the function as tensors of their
  // own, the later ones over a copy, so that the capture tells them apart
  std::vector<Tensor> use = args;
  for (size_t i = 0; i < use.size(); i++) {
    auto b = use[i].buffers()[0];
    for (size_t j = 0; j < i; j++) {
      if (use[j].buffers()[0] != b) continue;
      if (use[i].devices().size() > 1) throw JitError(where() + ": a tensor of several devices is passed twice");
      auto c = std::make_shared<Buffer>(b->device, b->dtype, b->size);
      copy_buffer(c, b);
      use[i] = Tensor::of_buffer(c, use[i].shape());
      break;
    }
    // captured over the bound-size buffer a replay stages it into (staged), so no kernel depends on this call's size
    if (auto s = staged(i, use[i])) use[i] = sym_view(s, use[i].shape(), use[i].impl_->uop->dyn);
  }
  std::vector<std::shared_ptr<Buffer>> in, out;
  for (auto& a : use) for (auto& b : a.buffers()) in.push_back(b);  // NOTE: before the call, which may assign an argument
  static std::atomic<uint64_t> ids{0};
  cur_ = Record{};
  heard_.clear();
  args_.clear();
  for (auto& a : use) heard_.insert(args_.emplace_back(a.impl_.get()));  // arguments are inputs of their own
  struct Guard {  // NOTE: a throwing function ends the recording, and the tensors stay usable
    JitCore* j;
    bool done = false;
    explicit Guard(JitCore* c) : j(c) { jit_capture_begin(); jit_recorder() = c; jit_call_id() = ++ids; }
    ~Guard() { jit_recorder() = nullptr; jit_call_id() = 0; if (!done) jit_capture_abort(); }
  } g(this);
  std::vector<Tensor> outs = run(use), all = outs;
  jit_recorder() = nullptr;
  jit_call_id() = 0;
  Record r = std::move(cur_);
  cur_ = Record{};
  heard_.clear();
  args_.clear();
  for (auto& s : r.states) all.push_back(s.t);
  for (size_t i : r.assigned_args) all.push_back(use[i]);
  Tensor::realize_all(all);
  for (auto* bs : {&r.states, &r.reads}) for (auto& b : *bs) in.insert(in.end(), b.captured.begin(), b.captured.end());
  for (auto& k : r.keys) for (auto& b : k.buffers()) in.push_back(b);
  for (auto& t : all) for (auto& b : t.buffers()) out.push_back(b);
  g.done = true;
  auto prog = jit_capture_end(in, out);

  std::string why;
  if (prev_) {
    if (r.states.size() != rec_.states.size()) why = cat("the first assigned ", rec_.states.size(), " tensors, the second ", r.states.size());
    else if (r.reads.size() != rec_.reads.size())
      why = cat("the first read ", rec_.reads.size(), " tensors made before it, the second ", r.reads.size());
    else if (r.assigned_args != rec_.assigned_args) why = "they assigned different arguments";
    else if (r.draws != rec_.draws) why = cat("the first drew ", rec_.draws.size(), " random tensors, the second ", r.draws.size());
    else why = jit_difference(*prev_, *prog);
  }
  if (prev_ && why.empty()) {
    prog_ = prog;
    captured_ = true;
    out_sig_.clear();
    for (auto& t : outs) out_sig_.push_back(Sig::of(t));
    prev_.reset();
  } else if (prev_ && calls_ > 2) {
    throw JitError(cat(where(), ": calls ", calls_ - 1, " and ", calls_, " ran different kernels: ", why,
                       ". A jitted function must launch the same kernels on every call: pass values that change as tensor arguments, and "
                       "keep C++ branches that depend on the call out of it"));
  } else prev_ = prog;  // the first call, or a second that differs from it (the first may have initialized state): once more
  rec_ = std::move(r);
  return outs;
}

TINYGRAD_API std::vector<Tensor> JitCore::replay(const std::vector<Tensor>& args, const VarVals& vv) {
  std::vector<std::shared_ptr<Buffer>> in;
  in.reserve(args.size() + rec_.states.size() + rec_.reads.size() + rec_.draws.size());
  auto add = [&](const std::vector<std::shared_ptr<Buffer>>& bs) { in.insert(in.end(), bs.begin(), bs.end()); };
  for (size_t i = 0; i < args.size(); i++) {
    auto bs = args[i].buffers();
    if (auto s = staged(i, args[i])) bs[0] = s;
    add(bs);
  }
  for (auto& s : rec_.states) add(bind(s, "assigns"));  // NOTE: realizes a state assigned lazily between calls
  for (auto& s : rec_.reads) add(bind(s, "reads"));
  for (size_t i = 0; i < rec_.draws.size(); i++) add(Tensor::rng_key(rec_.draws[i], rec_.keys[i].device()).buffers());
  auto out = jit_replay(*prog_, in, vv);
  // the outputs in order, each device's buffer of a tensor of several devices
  size_t o = 0;
  auto next = [&](const Shape& shape, const std::string& dev, const std::pair<int64_t, std::vector<Shape>>& sp) {
    size_t n = size_t(std::count(dev.begin(), dev.end(), ',')) + 1;
    std::vector<std::shared_ptr<Buffer>> bs(out.begin() + int64_t(o), out.begin() + int64_t(o + n));
    o += n;
    return std::pair{Tensor::of_buffers(bs, shape, dev, sp), bs};
  };
  std::vector<Tensor> r;
  for (auto& sg : out_sig_) {
    Tensor t = next(sg.shape, sg.device, sg.split).first;
    if (sg.dyn.empty()) { r.push_back(t); continue; }
    std::vector<UOpRef> d;  // a symbolic result: its extents at this call's values
    for (auto& x : sg.dyn) d.push_back(x ? sym_bound(x, vv, sg.device) : nullptr);
    r.push_back(sym_view(t.buffer(), sg.shape, d));
  }
  for (auto& s : rec_.states) {
    auto [v, bs] = next(s.t.shape(), s.t.device(), s.t.device_split());
    s.t.assign(v);
    s.seen = s.t.impl_->uop.get();
    s.buf = bs;
  }
  for (size_t i : rec_.assigned_args) Tensor(args[i]).assign(next(args[i].shape(), args[i].device(), args[i].device_split()).first);
  return r;
}

}  // namespace detail
#endif

}  // namespace tinygrad
