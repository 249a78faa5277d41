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
// value of every tensor the function assign()s (parameters, optimizer and BatchNorm state: each replay reads it and
// assigns the new value, as a call would), fresh random numbers for rand()/dropout, and data written in place into
// buffers it reads (Optimizer::set_lr). What it does not: C++ values (a double, a branch) and tensors made from host
// data inside the function are constants of the capture; pass what changes as tensor arguments. The returned tensors
// are new on every call. From the second call on, a call whose kernels differ from the one before throws JitError
// saying how (the first call may differ: it may initialize state).
#include <functional>
#include <tuple>
#include "tensor.hpp"

namespace tinygrad {
namespace detail {

// the non-template half: calls as vectors of tensors
class JitCore : JitRecorder {
 public:
  explicit JitCore(std::string name) : name_(std::move(name)) {}
  ~JitCore() override = default;
  // call the function (run) on args, or replay it; returns the returned tensors
  std::vector<Tensor> call(const std::vector<Tensor>& args, const std::function<std::vector<Tensor>()>& run);
  int64_t calls() const TINYGRAD_MEMBER_DEF({ return calls_; })
  bool captured() const TINYGRAD_MEMBER_DEF({ return bool(prog_); })
  size_t kernel_count() const TINYGRAD_MEMBER_DEF({ return prog_ ? jit_kernel_count(*prog_) : 0; })
  const std::string& name() const TINYGRAD_MEMBER_DEF({ return name_; })
  const JitProgram* program() const TINYGRAD_MEMBER_DEF({ return prog_.get(); })

 private:
  struct Sig {
    Shape shape;
    DType dtype;
    std::string device;
    static Sig of(const Tensor& t) TINYGRAD_MEMBER_DEF({ return {t.shape(), t.dtype(), t.device()}; })
    bool operator==(const Sig&) const = default;
  };
  // one recorded call: what it assigned (with the buffer it held before) and the random keys it drew
  struct Record {
    std::vector<Tensor> states;
    std::vector<std::shared_ptr<Buffer>> before;
    std::vector<Tensor> keys;
    std::vector<int64_t> draws;
  };
  // NOTE: declared inline where the library is header-only: a non-inline virtual would be the class's key function
  // and emit the vtable, and through it the whole library, in every TU that includes it
  TINYGRAD_API void assigned(const Tensor& t) override;
  TINYGRAD_API void drew(const Tensor& key, int64_t n) override;
  std::vector<Tensor> record(const std::vector<Tensor>& args, const std::function<std::vector<Tensor>()>& run);
  std::vector<Tensor> replay(const std::vector<Tensor>& args);
  std::string where() const TINYGRAD_MEMBER_DEF({ return "tinygrad::TinyJit(" + name_ + ")"; })

  std::string name_;
  int64_t calls_ = 0;
  std::vector<Sig> in_sig_, out_sig_;  // the first call's arguments; the capture's returned tensors
  std::shared_ptr<JitProgram> prog_, prev_;
  Record cur_, rec_;  // the call being recorded; the last recorded call
};

template <class T>
concept StaticTensorLike = requires(const T& t) { { t.tensor() } -> std::convertible_to<const Tensor&>; };

template <class A>
const Tensor& jit_arg(const A& a) {
  if constexpr (std::is_same_v<A, Tensor>) return a;
  else {
    static_assert(StaticTensorLike<A>, "TinyJit: arguments must be tensors (Tensor or static tensors); a C++ value would be a constant of the capture, so pass it as a tensor");
    return a.tensor();
  }
}

template <class R> struct jit_result {
  static_assert(StaticTensorLike<R> || std::is_same_v<R, Tensor>, "TinyJit: the function returns tensors: Tensor, a static tensor, std::vector<Tensor>, a tuple or pair of them, or nothing");
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
  static void flatten(const Tup<T...>& r, std::vector<Tensor>& out) { std::apply([&](const auto&... x) { (jit_result<std::decay_t<decltype(x)>>::flatten(x, out), ...); }, r); }
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
    std::vector<Tensor> in{detail::jit_arg(args)...};
    auto outs = core_->call(in, [&] {
      std::vector<Tensor> r;
      if constexpr (std::is_void_v<R>) f_(args...);
      else detail::jit_result<R>::flatten(f_(args...), r);
      return r;
    });
    if constexpr (!std::is_void_v<R>) {
      size_t i = 0;
      return detail::jit_result<R>::build(outs, i);
    }
  }

  int64_t calls() const { return core_->calls(); }
  bool captured() const { return core_->captured(); }  // replays from now on
  size_t kernel_count() const { return core_->kernel_count(); }  // launches (kernels and copies) a replay runs
  const JitProgram* program() const { return core_->program(); }  // what replays run (engine/jit.hpp), null before

 private:
  F f_;
  std::unique_ptr<detail::JitCore> core_;  // NOTE: a stable address: the recorder is registered by pointer
};

#if TINYGRAD_DEFINE_API
namespace detail {

TINYGRAD_API void JitCore::assigned(const Tensor& t) {
  for (auto& s : cur_.states) if (s.impl_ == t.impl_) return;
  cur_.states.push_back(t);
  cur_.before.push_back(t.is_realized() ? t.buffer() : nullptr);
}

TINYGRAD_API void JitCore::drew(const Tensor& key, int64_t n) {
  cur_.keys.push_back(key);
  cur_.draws.push_back(n);
}

TINYGRAD_API std::vector<Tensor> JitCore::call(const std::vector<Tensor>& args, const std::function<std::vector<Tensor>()>& run) {
  if (jit_recorder()) throw JitError(where() + ": called while another jitted function is recorded; jitted functions do not nest");
  calls_++;
  if (calls_ == 1) for (auto& a : args) in_sig_.push_back(Sig::of(a));
  if (args.size() != in_sig_.size()) throw JitError(cat(where(), ": called with ", args.size(), " arguments, captured with ", in_sig_.size()));
  for (size_t i = 0; i < args.size(); i++) {
    Sig s = Sig::of(args[i]);
    if (!(s == in_sig_[i]))
      throw JitError(cat(where(), ": argument ", i, " is ", to_string(s.dtype), " ", to_string(s.shape), " on ", s.device, ", but the function was captured with ",
                         to_string(in_sig_[i].dtype), " ", to_string(in_sig_[i].shape), " on ", in_sig_[i].device));
  }
  Tensor::realize_all(args);
  return prog_ ? replay(args) : record(args, run);
}

TINYGRAD_API std::vector<Tensor> JitCore::record(const std::vector<Tensor>& args, const std::function<std::vector<Tensor>()>& run) {
  // arguments that share a buffer (one tensor passed twice, or equal constants) get their own copy, so that the
  // capture tells them apart
  for (size_t i = 0; i < args.size(); i++) {
    auto b = args[i].buffer();
    for (size_t j = 0; j < i; j++) {
      if (args[j].buffer() != b) continue;
      auto c = std::make_shared<Buffer>(b->device, b->dtype, b->size);
      copy_buffer(c, b);
      Tensor t = args[i];
      t.assign(Tensor::of_buffer(c, t.shape()));
      break;
    }
  }
  cur_ = Record{};
  struct Guard {  // NOTE: a throwing function ends the recording, and the tensors stay usable
    JitCore* j;
    bool done = false;
    explicit Guard(JitCore* c) : j(c) { jit_capture_begin(); jit_recorder() = c; }
    ~Guard() { jit_recorder() = nullptr; if (!done) jit_capture_abort(); }
  } g(this);
  std::vector<Tensor> outs = run(), all = outs;
  jit_recorder() = nullptr;
  // a state that had no buffer before the call is the function's own (a tensor it made and assigned)
  Record r;
  for (size_t i = 0; i < cur_.states.size(); i++)
    if (cur_.before[i]) { r.states.push_back(cur_.states[i]); r.before.push_back(cur_.before[i]); }
  r.keys = std::move(cur_.keys);
  r.draws = std::move(cur_.draws);
  all.insert(all.end(), r.states.begin(), r.states.end());
  Tensor::realize_all(all);
  std::vector<std::shared_ptr<Buffer>> in, out;
  for (auto& a : args) in.push_back(a.buffer());
  in.insert(in.end(), r.before.begin(), r.before.end());
  for (auto& k : r.keys) in.push_back(k.buffer());
  for (auto& t : all) out.push_back(t.buffer());
  g.done = true;
  auto prog = jit_capture_end(in, out);
  cur_ = Record{};

  std::string why;
  if (prev_) {
    if (r.states.size() != rec_.states.size()) why = cat("the first assigned ", rec_.states.size(), " tensors, the second ", r.states.size());
    else if (r.draws != rec_.draws) why = cat("the first drew ", rec_.draws.size(), " random tensors, the second ", r.draws.size());
    else why = jit_difference(*prev_, *prog);
  }
  if (prev_ && why.empty()) {
    prog_ = prog;
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

TINYGRAD_API std::vector<Tensor> JitCore::replay(const std::vector<Tensor>& args) {
  std::vector<std::shared_ptr<Buffer>> in;
  for (auto& a : args) in.push_back(a.buffer());
  for (auto& s : rec_.states) in.push_back(s.buffer());  // NOTE: realizes a state assigned lazily between calls
  for (size_t i = 0; i < rec_.draws.size(); i++) in.push_back(Tensor::rng_key(rec_.draws[i], rec_.keys[i].device()).buffer());
  auto out = jit_replay(*prog_, in);
  std::vector<Tensor> r;
  for (size_t i = 0; i < out_sig_.size(); i++) r.push_back(Tensor::of_buffer(out[i], out_sig_[i].shape));
  for (size_t j = 0; j < rec_.states.size(); j++) rec_.states[j].assign(Tensor::of_buffer(out[out_sig_.size() + j], rec_.states[j].shape()));
  return r;
}

}  // namespace detail
#endif

}  // namespace tinygrad
