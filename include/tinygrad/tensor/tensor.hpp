#pragma once
// Tensor: a lazy, shape-checked handle on a UOp graph. Copies alias (like torch::Tensor);
// nothing runs until realize(), item(), or to_vector().
#include "creation.hpp"
#include "elementwise.hpp"
#include "movement.hpp"
#include "processing.hpp"
#include "reduce.hpp"
#include "variable.hpp"

namespace tinygrad {

class Tensor;
namespace detail {
class JitCore;
// what TinyJit (tensor/jit.hpp) hears of a call it records: the tensors it reads the value of (their graph is used)
// and assigns, and the random numbers it draws
struct JitRecorder {
  virtual ~JitRecorder() = default;
  virtual void read(const Tensor& t) = 0;
  virtual void assigned(const Tensor& t) = 0;
  virtual void drew(const Tensor& key, int64_t n) = 0;
};
TINYGRAD_API JitRecorder*& jit_recorder() TINYGRAD_DEF({ static thread_local JitRecorder* r = nullptr; return r; })
// the call TinyJit records on this thread (0: none); a tensor made during it is the call's own
TINYGRAD_API uint64_t& jit_call_id() TINYGRAD_DEF({ static thread_local uint64_t id = 0; return id; })
// read back the index checks this thread left on the device (check_indices): an IndexError for the first that failed
TINYGRAD_API void read_index_checks();
}  // namespace detail

class Tensor : public detail::CreationOps<Tensor>, public detail::ElementwiseOps<Tensor>, public detail::MovementOps<Tensor>,
               public detail::ProcessingOps<Tensor>, public detail::ReduceOps<Tensor> {
  template <class> friend struct detail::CreationOps;
  template <class> friend struct detail::ElementwiseOps;
  template <class> friend struct detail::MovementOps;
  template <class> friend struct detail::ProcessingOps;
  template <class> friend struct detail::ReduceOps;
  friend class detail::JitCore;

 public:
  // ---- construction ----
  Tensor() : Tensor(Tensor::zeros({})) {}
  // NOTE: every op's result passes here: under NoGrad (mixin.hpp) a value a gradient could flow through is detached
  explicit Tensor(UOpRef u, std::string device)
      : impl_(std::make_shared<Impl>(Impl{grad_scope(std::move(u)), std::move(device), false, nullptr, 0, detail::jit_call_id()})) {}
  /// u, detached under NoGrad where a gradient could flow through it (out of line: UOp is incomplete in a user's TU)
  static UOpRef grad_scope(UOpRef u) TINYGRAD_MEMBER_DEF({
    return !u->grad_dep || grad_enabled() ? u : make_uop(Ops::DETACH, u->dtype, {u});
  })
  /// a variable with its value, as an int32 scalar (tensor/variable.hpp): kernels take the value as an argument
  Tensor(const BoundVariable& v, const std::string& device = "")
      : Tensor(v.uop(device.empty() ? default_device() : device), device.empty() ? default_device() : device) {}
  /// an int or an expression of bound variables (p + 1), as an int32 scalar
  explicit Tensor(const SInt& v, const std::string& device = "") : Tensor(of_sint(v, device)) {}

  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Tensor(const std::vector<T>& data, Shape shape = {}, std::string device = "") : Tensor(from_vector(data, std::move(shape), std::move(device))) {}
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Tensor(std::initializer_list<T> data) : Tensor(std::vector<T>(data)) {}
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Tensor(std::initializer_list<std::initializer_list<T>> rows) {
    std::vector<T> flat;
    int64_t cols = rows.size() ? int64_t(rows.begin()->size()) : 0;
    for (auto& r : rows) {
      if (int64_t(r.size()) != cols) throw ShapeError("tinygrad::Tensor: nested initializer lists must be rectangular");
      flat.insert(flat.end(), r.begin(), r.end());
    }
    *this = Tensor(flat, Shape{int64_t(rows.size()), cols});
  }
  /// copy n elements of type T from ptr into a new tensor of the given shape
  template <class T>
  static Tensor from_data(const T* ptr, Shape shape, std::string device = "") {
    return from_host(ptr, dtype_of<T>(), size_t(check_shape(shape, "from_data")), shape, std::move(device));
  }

  /// copy raw bytes holding prod(shape) elements of dtype dt
  static Tensor from_bytes(const void* data, DType dt, Shape shape, std::string device = "") TINYGRAD_MEMBER_DEF({
    return from_host(data, dt, size_t(check_shape(shape, "from_bytes")), shape, std::move(device));
  })

  /// torch.full: shape filled with value (dtype from the value unless given)
  static Tensor full(Shape shape, double value, std::optional<DType> dtype = std::nullopt, std::string device = "") TINYGRAD_MEMBER_DEF({
    check_shape(shape, "full");
    DType dt = dtype.value_or(dtypes::default_float);
    std::string dev = device.empty() ? default_device() : device;
    auto c = make_uop(Ops::CONST, dt, {make_uop(Ops::DEVICE, DType::Bool, {}, dev)},
                      is_float(dt) ? Arg(value) : Arg(int64_t(dt == DType::Bool ? value != 0 : value)));
    Tensor t(c, dev);
    if (shape.empty()) return t;
    return t.reshape(Shape(shape.size(), 1)).expand(shape);
  })
  /// torch.zeros
  static Tensor zeros(Shape shape, std::optional<DType> dt = std::nullopt, std::string dev = "") TINYGRAD_MEMBER_DEF({
    return full(std::move(shape), 0, dt, std::move(dev));
  })
  /// torch.ones
  static Tensor ones(Shape shape, std::optional<DType> dt = std::nullopt, std::string dev = "") TINYGRAD_MEMBER_DEF({
    return full(std::move(shape), 1, dt, std::move(dev));
  })
  /// uninitialized memory
  static Tensor empty(Shape shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    int64_t n = check_shape(shape, "empty");
    std::string dev = device.empty() ? default_device() : device;
    if (dev.find(',') != std::string::npos) return empty(shape, dt, detail::split_devices(dev)[0]).to(dev);
    return of_buffer(std::make_shared<Buffer>(dev, dt, n), shape);
  })
  /// full, zeros, ones and empty with sizes that may be symbolic (tensor/variable.hpp): Tensor::zeros({v, 64}) has a dim of
  /// extent v. Its buffer is allocated at the bound (v's max); kernels touch the extent only. {2, 3} takes this overload
  /// too (an init list of SInts), and an all-int shape is the Shape one's.
  static Tensor full(std::initializer_list<SInt> shape, double value, std::optional<DType> dtype = std::nullopt, std::string device = "")
      TINYGRAD_MEMBER_DEF({ return full(std::vector<SInt>(shape), value, dtype, std::move(device)); })
  /// full with symbolic sizes (the extents of sym_shape())
  static Tensor full(const std::vector<SInt>& shape, double value, std::optional<DType> dtype = std::nullopt, std::string device = "")
      TINYGRAD_MEMBER_DEF({
        std::string dev = device.empty() ? default_device() : device;
        auto [b, d] = sym_dims(shape, "full", dev);
        if (d.empty()) return full(b, value, dtype, dev);
        return full(Shape{}, value, dtype, dev).reshape(Shape(b.size(), 1)).expand_to(b, d);
      })
  /// zeros with symbolic sizes
  static Tensor zeros(std::initializer_list<SInt> shape, std::optional<DType> dt = std::nullopt, std::string dev = "") TINYGRAD_MEMBER_DEF({
    return full(std::vector<SInt>(shape), 0, dt, std::move(dev));
  })
  /// zeros with symbolic sizes
  static Tensor zeros(const std::vector<SInt>& shape, std::optional<DType> dt = std::nullopt, std::string dev = "") TINYGRAD_MEMBER_DEF({
    return full(shape, 0, dt, std::move(dev));
  })
  /// ones with symbolic sizes
  static Tensor ones(std::initializer_list<SInt> shape, std::optional<DType> dt = std::nullopt, std::string dev = "") TINYGRAD_MEMBER_DEF({
    return full(std::vector<SInt>(shape), 1, dt, std::move(dev));
  })
  /// ones with symbolic sizes
  static Tensor ones(const std::vector<SInt>& shape, std::optional<DType> dt = std::nullopt, std::string dev = "") TINYGRAD_MEMBER_DEF({
    return full(shape, 1, dt, std::move(dev));
  })
  /// uninitialized memory with symbolic sizes: a buffer at the bounds
  static Tensor empty(std::initializer_list<SInt> shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    return empty(std::vector<SInt>(shape), dt, std::move(device));
  })
  /// uninitialized memory with symbolic sizes: a buffer at the bounds
  static Tensor empty(const std::vector<SInt>& shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    std::string dev = device.empty() ? default_device() : device;
    auto [b, d] = sym_dims(shape, "empty", dev);
    Tensor e = empty(d.empty() ? b : Shape{detail::prod(b)}, dt, dev);
    return d.empty() ? e : Tensor(detail::sym_movement(Ops::RESHAPE, e.uop(), b, d), dev);
  })
  /// torch.arange(start, stop, step) (stop unset: arange(0, start))
  static Tensor arange(double start, std::optional<double> stop = std::nullopt, double step = 1, std::optional<DType> dtype = std::nullopt,
                       std::string device = "") TINYGRAD_MEMBER_DEF({
    if (!stop) { stop = start; start = 0; }
    if (step == 0) throw Error("tinygrad::arange: step must not be 0");
    bool ints = start == std::trunc(start) && *stop == std::trunc(*stop) && step == std::trunc(step);
    DType dt = dtype.value_or(ints ? dtypes::default_int : dtypes::default_float);
    double len = std::ceil((*stop - start) / step);
    // NaN too
    if (!(len < 0x1p63))
      throw ShapeError(tinygrad::detail::cat("tinygrad::arange: ", start, " to ", *stop, " by ", step, " is more than 2^63 elements"));
    int64_t n = len > 0 ? int64_t(len) : 0;  // NOTE: not int64_t(len) first: a double below -2^63 does not convert
    std::string dev = device.empty() ? default_device() : device;
    Tensor i(make_uop(Ops::IOTA, is_float(dt) ? DType::Int32 : dt, {make_uop(Ops::DEVICE, DType::Bool, {}, dev)}, n), dev);
    return (i.cast(dt) * scalar(step, dt, dev) + scalar(start, dt, dev));
  })
  /// arange(0, stop) with a symbolic stop: Tensor::arange(v) is int32 0..v-1, a dim of extent v
  static Tensor arange(const SInt& stop) TINYGRAD_MEMBER_DEF({ return arange(SInt(0), stop); })
  /// int32 start, start + step, ... before stop, where start or stop may be symbolic: ceil((stop - start) / step) elements
  /// (a symbolic extent, its buffer at the bound). An all-int range is the double overload's with dtype int32.
  static Tensor arange(const SInt& start, const SInt& stop, int64_t step = 1, std::string device = "") TINYGRAD_MEMBER_DEF({
    if (step == 0) throw Error("tinygrad::arange: step must not be 0");
    std::string dev = device.empty() ? default_device() : device;
    if (start.is_int() && stop.is_int()) return arange(double(start.value()), double(stop.value()), double(step), DType::Int32, dev);
    if (step < INT32_MIN + 1 || step > INT32_MAX) throw ShapeError(detail::cat("tinygrad::arange: the step ", step, " leaves int32"));
    SInt span = step > 0 ? stop - start : start - stop;
    int64_t by = step > 0 ? step : -step;
    UOpRef sp = span.is_int() ? detail::const_int(DType::Int32, span.value()) : span.uop();
    UOpRef q = detail::idiv(sp + (by - 1), by);
    SInt len(q->vmin >= 0 ? q : detail::alu(Ops::MAX, {q, detail::const_int(DType::Int32, 0)}));  // NOTE: no max where it is the identity
    Tensor i = arange(0.0, double(len.max()), 1, DType::Int32, dev);
    if (!len.is_int()) i = i.shrink({{SInt(0), len}});
    if (step != 1) i = i * Tensor(SInt(step), dev);
    return start.is_int() && start.value() == 0 ? i : i + Tensor(start, dev);
  })
  /// torch.eye: n x m identity
  static Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, DType dt = dtypes::default_float,
                    std::string device = "") TINYGRAD_MEMBER_DEF({
    auto a = arange(double(n), std::nullopt, 1, DType::Int32, device).reshape({n, 1});
    auto b = arange(double(m.value_or(n)), std::nullopt, 1, DType::Int32, device).reshape({1, m.value_or(n)});
    return (a == b).cast(dt);
  })

  // ---- random: a counter-based hash of (seed, counter, index); deterministic for a seed ----
  /// NOTE: the counter and seed reach the kernel in a small buffer, not as constants: every draw runs the same
  /// kernel (nothing recompiles), and a TinyJit replay draws new numbers by passing a new buffer
  static void manual_seed(uint64_t seed) TINYGRAD_MEMBER_DEF({ rng().seed = seed; rng().counter = 0; })
  /// uniform [0, 1)
  static Tensor rand(Shape shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    int64_t n = check_shape(shape, "rand");
    std::string dev = device.empty() ? default_device() : device;
    Tensor key = rng_key(n, dev);
    if (auto* r = detail::jit_recorder()) r->drew(key, n);
    auto word = [&](int64_t j) { return key.shrink({{j, j + 1}}); };
    auto i = arange(double(n), std::nullopt, 1, DType::UInt32, dev);
    auto x = mix32(i + word(0) + word(1));
    x = mix32(x ^ word(2));
    // 24 random bits -> [0, 1)
    auto f = x.shr(8).cast(DType::Float32) * (1.0 / 16777216.0);
    return f.cast(dt).reshape(shape);
  })
  /// standard normal
  static Tensor randn(Shape shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    // Box-Muller
    int64_t n = check_shape(shape, "randn");
    auto u = rand({2, n}, DType::Float32, device);
    auto u1 = u.shrink({{0, 1}, {0, n}}), u2 = u.shrink({{1, 2}, {0, n}});
    auto r = ((1.0 - u1).log() * -2.0).sqrt() * (u2 * (2 * M_PI)).cos();
    return r.cast(dt).reshape(shape);
  })

  // ---- autograd (tensor/gradient.hpp) ----
  /// A tensor that requires grad is a parameter: its uop becomes a node of its own (UOp::is_param) that
  /// hash-consing never merges with an equal value, e.g. ones() with the constant 1 of `w * 1.0`. Gradients
  /// find it by its id, which it keeps through realize() and assign(). Computed tensors can be parameters
  /// too: the gradient flows on through them.
  Tensor& requires_grad_(bool r = true) TINYGRAD_MEMBER_DEF({
    {
      std::lock_guard lk(grad_mutex());  // backward() on any thread reads requires_grad and param of every registered tensor
      static int64_t ids = 0;
      if (r && !impl_->requires_grad) grad_registry().push_back(impl_);
      if (r && !impl_->param) impl_->param = ++ids;
      impl_->requires_grad = r;
    }
    const UOpRef& u = uop();
    bool mine = u->is_param() && u->iarg() == impl_->param;
    if (r && !mine) impl_->uop = param_node(u);
    if (!r && mine) impl_->uop = u->src[0]->grad_dep || !u->realized ? u->src[0] : detail::buffer_view(u);
    return *this;
  })
  /// whether gradients are computed for it
  bool requires_grad() const TINYGRAD_MEMBER_DEF({ return impl_->requires_grad; })
  /// the gradient backward() filled, if any
  std::optional<Tensor> grad() const TINYGRAD_MEMBER_DEF({ return impl_->grad ? std::optional<Tensor>(Tensor(impl_->grad)) : std::nullopt; })
  /// clear .grad
  void zero_grad() TINYGRAD_MEMBER_DEF({ impl_->grad.reset(); })
  /// fill .grad of every tensor that requires it and this one depends on
  Tensor& backward(std::optional<Tensor> seed = std::nullopt);

  // ---- properties ----
  /// the graph of the value (a jitted call being recorded hears that it reads this tensor)
  const UOpRef& uop() const TINYGRAD_MEMBER_DEF({
    if (auto* r = detail::jit_recorder(); r && impl_->born != detail::jit_call_id()) r->read(*this);
    return impl_->uop;
  })
  /// a symbolic dim (tensor/variable.hpp) shows its bound here; sym_shape() names its extent
  const Shape& shape() const TINYGRAD_MEMBER_DEF({ return impl_->uop->shape; })
  /// the shape with symbolic extents (Variables) as UOps
  std::vector<SInt> sym_shape() const TINYGRAD_MEMBER_DEF({
    const UOp& u = *impl_->uop;
    std::vector<SInt> r;
    for (size_t i = 0; i < u.shape.size(); i++) r.push_back(u.dyn.empty() || !u.dyn[i] ? SInt(u.shape[i]) : SInt(u.dyn[i]));
    return r;
  })
  /// whether any extent is symbolic
  bool is_symbolic() const TINYGRAD_MEMBER_DEF({ return !impl_->uop->dyn.empty(); })
  /// the extent of dim (negative counts from the end)
  int64_t shape(int64_t dim) const TINYGRAD_MEMBER_DEF({ return shape()[size_t(detail::norm_axis(dim, ndim(), "shape"))]; })
  /// the element type
  DType dtype() const TINYGRAD_MEMBER_DEF({ return impl_->uop->dtype; })
  /// the device name (e.g. "CPU", "CUDA:0")
  const std::string& device() const TINYGRAD_MEMBER_DEF({ return impl_->device; })
  /// the number of dims
  size_t ndim() const TINYGRAD_MEMBER_DEF({ return shape().size(); })
  /// the number of elements
  int64_t numel() const TINYGRAD_MEMBER_DEF({
    if (is_symbolic()) throw ShapeError("tinygrad::numel: the shape " + sym_str() + " is symbolic (its count varies with the variables)");
    return tinygrad::detail::prod(shape());
  })
  /// the shape for people: (1, 9, pos+1)
  std::string sym_str() const TINYGRAD_MEMBER_DEF({
    const UOp& u = *impl_->uop;
    std::string r = "(";
    for (size_t i = 0; i < u.shape.size(); i++)
      r += (i ? ", " : "") + (u.dyn.empty() || !u.dyn[i] ? std::to_string(u.shape[i]) : detail::sym_str(u.dyn[i]));
    return r + (u.shape.size() == 1 ? ",)" : ")");
  })
  /// whether the value is in a buffer (nothing left to compute)
  bool is_realized() const TINYGRAD_MEMBER_DEF({
    const UOp* u = impl_->uop.get();
    if (on_many()) return detail::multi_done(u);
    return detail::is_leaf(u) || (u->op == Ops::RESHAPE && detail::is_leaf(u->src[0].get()));
  })

  // ---- realize and read back ----
  /// compute the value now (one schedule); returns *this
  Tensor& realize() TINYGRAD_MEMBER_DEF({
    if (!is_realized()) tinygrad::realize({uop()});
    adopt_realized();
    return *this;
  })
  /// realize several tensors in one schedule (an optimizer step: parameters and their state)
  static void realize_all(std::vector<Tensor> ts) TINYGRAD_MEMBER_DEF({
    std::vector<UOpRef> roots;
    for (auto& t : ts) if (!t.is_realized()) roots.push_back(t.uop());
    if (!roots.empty()) tinygrad::realize(roots);
    for (auto& t : ts) t.adopt_realized();
  })
  /// replace the value in place, lazily: every handle that shares this tensor sees v. Like an update under
  /// torch.no_grad(), it records no autograd history (v is detached), and a parameter stays a parameter.
  Tensor& assign(const Tensor& v) TINYGRAD_MEMBER_DEF({
    if (v.shape() != shape() || v.sym_str() != sym_str()) throw ShapeError("tinygrad::assign: shape " + v.sym_str() + " does not match " + sym_str());
    same_device(device(), v.device(), "assign");
    if (write_view(v)) return *this;
    if (auto* r = detail::jit_recorder()) r->assigned(*this);
    Tensor nv = v.cast(dtype());
    UOpRef u = nv.uop();
    if (u->grad_dep) u = nv.is_realized() ? detail::buffer_view(u) : nv.detach().uop();  // a read value: its buffer, no copy
    impl_->uop = impl_->requires_grad ? param_node(u) : u;
    return *this;
  })
  /// rebind every handle that shares this tensor to v, which may live on another device (tinygrad's replace); v is
  /// cast to this dtype and detached, and a parameter stays a parameter. A model moves to a device this way.
  Tensor& replace(const Tensor& v) TINYGRAD_MEMBER_DEF({
    if (v.shape() != shape()) throw ShapeError("tinygrad::replace: shape " + to_string(v.shape()) + " does not match " + to_string(shape()));
    UOpRef u = v.cast(dtype()).detach().uop();
    impl_->uop = impl_->requires_grad ? param_node(u) : u;
    impl_->device = v.device();
    return *this;
  })
  /// the device buffer that holds the value (contiguous, numel elements), realizing first
  std::shared_ptr<Buffer> buffer() const TINYGRAD_MEMBER_DEF({
    Tensor t = *this;
    t.realize();  // a realized tensor is a leaf (a BUFFER, or a node with its value in .realized) or a reshape of one
    const UOp* u = t.uop()->op == Ops::RESHAPE && detail::is_leaf(t.uop()->src[0].get()) ? t.uop()->src[0].get() : t.uop().get();
    return u->leaf_buffer();
  })
  /// each device's buffer (one per device of a sharded or copied tensor), realizing first
  std::vector<std::shared_ptr<Buffer>> buffers() const TINYGRAD_MEMBER_DEF({
    if (!on_many()) return {buffer()};
    Tensor t = *this;
    UOpRef m = t.realize().parts_node();
    std::vector<std::shared_ptr<Buffer>> r;
    for (size_t i = 1; i < m->src.size(); i++) r.push_back((detail::is_leaf(m->src[i].get()) ? m->src[i] : m->src[i]->src[0])->leaf_buffer());
    return r;
  })
  /// the values as a std::vector<T> (realizes; a sync)
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<char> host = host_bytes();
    std::vector<T> out(host.size() / size_t(itemsize(dtype())));
    if constexpr (!std::is_same_v<T, bool>) {  // NOTE: std::vector<bool> has no data()
      // NOTE: empty vectors may hold nullptr, and memcpy from/to nullptr is undefined even for 0 bytes
      if (dtype_of<T>() == dtype()) { if (!out.empty()) std::memcpy(out.data(), host.data(), out.size() * sizeof(T)); return out; }
    }
    for (size_t i = 0; i < out.size(); i++) out[i] = T(detail::load_as_double(host.data(), dtype(), i));
    return out;
  }
  /// the value's bytes on the host (numel elements of dtype(), contiguous), realizing first
  std::vector<char> host_bytes() const TINYGRAD_MEMBER_DEF({
    if (on_many()) return to(devices()[0]).host_bytes();  // the parts gathered on one device
    auto buf = buffer();
    std::vector<char> host(buf->nbytes());
    buf->copyout(host.data());
    detail::read_index_checks();  // a sync: what the device found of indices out of range is read now
    if (!is_symbolic()) return host;
    // a symbolic tensor lives at its bounds: the elements inside the bound variables' extents, in order
    const UOp& u = *impl_->uop;
    size_t n = u.shape.size(), isz = size_t(itemsize(dtype()));
    Shape ext(n), st = detail::strides_for(u.shape), at(n, 0);
    for (size_t i = 0; i < n; i++) ext[i] = u.dyn[i] ? detail::sym_value(u.dyn[i]) : u.shape[i];
    std::vector<char> out(size_t(detail::prod(ext)) * isz);
    for (size_t k = 0; k * isz < out.size(); k++) {
      int64_t off = 0;
      for (size_t i = 0; i < n; i++) off += at[i] * st[i];
      std::memcpy(out.data() + k * isz, host.data() + size_t(off) * isz, isz);
      for (size_t i = n; i-- > 0 && ++at[i] == ext[i];) at[i] = 0;
    }
    return out;
  })
  /// the value of a one-element tensor (realizes; a sync)
  template <class T>
  T item() const {
    if (numel() != 1) throw ShapeError("tinygrad::item: needs a tensor with one element, got shape " + to_string(shape()));
    return to_vector<T>()[0];
  }

  // ---- elementwise ----
  /// convert to dtype dt
  Tensor cast(DType dt) const TINYGRAD_MEMBER_DEF({ return dt == dtype() ? *this : unary(Ops::CAST, dt); })
  /// reinterpret the bits as dt (same itemsize)
  Tensor bitcast(DType dt) const TINYGRAD_MEMBER_DEF({
    if (itemsize(dt) != itemsize(dtype())) throw DTypeError("tinygrad::bitcast: " + to_string(dtype()) + " and " + to_string(dt) + " differ in size");
    return unary(Ops::BITCAST, dt);
  })
  /// torch.where(self, a, b): self is the condition
  Tensor where(const Tensor& a, const Tensor& b) const TINYGRAD_MEMBER_DEF({
    auto [x, y] = broadcast_pair(a, b, "where");
    auto shape = broadcast_shape(broadcast_shape(this->shape(), x.shape(), "where"), y.shape(), "where");
    auto d = broadcast_dyn({this, &x}, shape, "where");
    auto c = cast(DType::Bool).expand_to(shape, d);
    x = x.expand_to(shape, d); y = y.expand_to(shape, d);
    return Tensor(detail::alu(Ops::WHERE, {c.uop(), x.uop(), y.uop()}), same_device(device(), x.device(), "where"));
  })
  /// where with a scalar a
  Tensor where(double a, const Tensor& b) const TINYGRAD_MEMBER_DEF({ return where(b.like(a, true), b); })
  /// where with a scalar b
  Tensor where(const Tensor& a, double b) const TINYGRAD_MEMBER_DEF({ return where(a, a.like(b, true)); })
  /// where with scalars a and b
  Tensor where(double a, double b) const TINYGRAD_MEMBER_DEF({
    return where(full({}, a, std::nullopt, device()), full({}, b, std::nullopt, device()));
  })
  /// x >> bits, arithmetic for signed ints
  Tensor shr(int64_t bits) const TINYGRAD_MEMBER_DEF({ return Tensor(detail::alu(Ops::SHR, {uop(), like(double(bits)).uop()}), device()); })

  // ---- operators (C++ scalars are weak: they take the tensor's dtype) ----
  friend Tensor operator+(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::ADD, b, "add"); })
  friend Tensor operator-(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop_sub(b); })
  friend Tensor operator*(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::MUL, b, "mul"); })
  friend Tensor operator/(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.div(b); })
  friend Tensor operator-(const Tensor& a) TINYGRAD_MEMBER_DEF({ return a.neg(); })
  friend Tensor operator<(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::CMPLT, b, "lt"); })
  friend Tensor operator>(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return b.binop(Ops::CMPLT, a, "gt"); })
  friend Tensor operator<=(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return (a > b).logical_not(); })
  friend Tensor operator>=(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return (a < b).logical_not(); })
  friend Tensor operator==(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::CMPEQ, b, "eq"); })
  friend Tensor operator!=(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::CMPNE, b, "ne"); })
  friend Tensor operator&(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::AND, b, "bitwise_and"); })
  friend Tensor operator|(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::OR, b, "bitwise_or"); })
  friend Tensor operator^(const Tensor& a, const Tensor& b) TINYGRAD_MEMBER_DEF({ return a.binop(Ops::XOR, b, "bitwise_xor"); })
#define TG_SCALAR_OPS(OP)                                                                      \
  friend Tensor operator OP(const Tensor& a, double b) { return a OP a.like(b, true); }        \
  friend Tensor operator OP(double a, const Tensor& b) { return b.like(a, true) OP b; }
  TG_SCALAR_OPS(+) TG_SCALAR_OPS(-) TG_SCALAR_OPS(*) TG_SCALAR_OPS(/) TG_SCALAR_OPS(<) TG_SCALAR_OPS(>) TG_SCALAR_OPS(<=) TG_SCALAR_OPS(>=)
  TG_SCALAR_OPS(==) TG_SCALAR_OPS(!=)
#undef TG_SCALAR_OPS

  // ---- math (elementwise.hpp), reductions, scans, sort and losses (reduce.hpp), creation and random (creation.hpp) ----

  // ---- movement (copy-free views) ----
  /// torch.reshape: a view of new_shape (one extent may be -1, inferred)
  Tensor reshape(Shape new_shape) const TINYGRAD_MEMBER_DEF({
    int64_t infer = -1, known = 1, numel = detail::prod(shape());  // NOTE: a symbolic tensor's at its bounds (mov checks its dims)
    bool zero = false, big = false;  // NOTE: the product of the nonzero dims must fit int64, as in valid_shape
    for (size_t i = 0; i < new_shape.size(); i++) {
      if (new_shape[i] == -1) {
        if (infer >= 0) throw ShapeError("tinygrad::reshape: only one dimension can be -1, got " + to_string(new_shape));
        infer = int64_t(i);
      } else if (new_shape[i] < 0) throw ShapeError("tinygrad::reshape: negative dimension in " + to_string(new_shape));
      else if (new_shape[i] == 0) zero = true;
      else big |= __builtin_mul_overflow(known, new_shape[i], &known);
    }
    if (big)
      throw ShapeError("tinygrad::reshape: cannot reshape " + to_string(shape()) + " to " + to_string(new_shape) +
                       ": the product of its dims overflows int64");
    if (zero) known = 0;
    if (infer >= 0) {
      if (known == 0 || numel % known) throw ShapeError("tinygrad::reshape: cannot reshape " + to_string(shape()) + " to " + to_string(new_shape));
      new_shape[size_t(infer)] = numel / known;
    } else if (known != numel)
      throw ShapeError("tinygrad::reshape: cannot reshape " + to_string(shape()) + " (" + std::to_string(numel) + " elements) to " +
                       to_string(new_shape));
    if (new_shape == shape()) return *this;
    return mov(Ops::RESHAPE, new_shape);
  })
  /// reshape({2, -1}): one -1 is inferred
  Tensor reshape(std::initializer_list<SInt> s) const TINYGRAD_MEMBER_DEF({ return reshape(std::vector<SInt>(s)); })
  /// a reshape that names symbolic dims: each of the tensor's symbolic dims, as a whole (its extent, in order)
  Tensor reshape(const std::vector<SInt>& s) const TINYGRAD_MEMBER_DEF({
    Shape b;
    bool sym = false;
    for (auto& x : s) { b.push_back(x.is_int() ? x.value() : x.max()); sym |= !x.is_int(); }
    if (sym && !is_symbolic()) return name_symbolic(s);
    Tensor r = reshape(b);
    if (!sym) return r;
    const UOp& ru = *r.impl_->uop;
    for (size_t i = 0; i < s.size(); i++)
      if (!s[i].is_int() && (ru.dyn.empty() || ru.dyn[i] != detail::sym_node(s[i], device())))
        throw ShapeError("tinygrad::reshape: cannot reshape " + sym_str() + " to the symbolic dims asked (got " + r.sym_str() + ")");
    return r;
  })
  /// a concrete tensor with a dim named by a bound symbolic size of its extent: x of shape (37, 16) as
  /// x.reshape({n.bind(37), 16}), the form a TinyJit argument of varying size takes (one capture for every n). The tensor
  /// is realized (its buffer, of 37 rows, is what the view reads); only a dim with no longer dim before it can be named
  /// (the layout of the rest would change with the value)
  Tensor name_symbolic(const std::vector<SInt>& s) const TINYGRAD_MEMBER_DEF({
    std::string want;
    for (auto& x : s) want += (want.empty() ? "" : ", ") + x.str();
    auto fail = [&](const std::string& why) {
      return ShapeError("tinygrad::reshape: cannot view " + to_string(shape()) + " as (" + want + "): " + why);
    };
    if (s.size() != ndim()) throw fail("naming symbolic dims keeps the rank");
    int64_t outer = 1;
    for (size_t i = 0; i < s.size(); i++) {
      if (s[i].value() != shape()[i]) throw fail(detail::cat("dim ", i, " is ", shape()[i], ", the size asked is ", s[i].value()));
      if (!s[i].is_int() && outer != 1)
        throw fail(detail::cat("dim ", i, " has longer dims before it (only the outermost dim of a buffer can vary; shrink a tensor of the "
                               "bound's size instead)"));
      outer *= shape()[i];
    }
    Tensor t = contiguous();
    t.realize();
    const UOpRef& u = t.uop();
    Shape bound;
    std::vector<UOpRef> d;
    for (auto& x : s) { bound.push_back(x.max()); d.push_back(detail::sym_node(x, device())); }
    return Tensor(detail::sym_movement(Ops::RESHAPE, u->op == Ops::RESHAPE ? u->src[0] : u, bound, d), device());
  })
  /// torch's variadic spelling: x.reshape(2, -1); x.reshape(6) is shape {6}
  template <class... D>
    requires(sizeof...(D) > 0 && (std::is_convertible_v<D, SInt> && ...))
  Tensor reshape(D... dims) const { return reshape(std::vector<SInt>{SInt(dims)...}); }
  /// torch's view(), a reshape: there is no stride to refuse (a lazy view of any tensor is free), so a shape torch's view
  /// rejects as not viable for the strides (x.T().view(-1)) works here as reshape does
  Tensor view(Shape s) const TINYGRAD_MEMBER_DEF({ return reshape(std::move(s)); })
  /// alias of reshape
  Tensor view(std::initializer_list<SInt> s) const TINYGRAD_MEMBER_DEF({ return reshape(std::vector<SInt>(s)); })
  /// view(2, -1), variadic as torch
  template <class... D>
    requires(sizeof...(D) > 0 && (std::is_convertible_v<D, SInt> && ...))
  Tensor view(D... dims) const { return reshape(std::vector<SInt>{SInt(dims)...}); }
  /// x.permute(1, 0)
  template <std::integral... D>
    requires(sizeof...(D) > 0)
  Tensor permute(D... order) const { return permute(std::vector<int64_t>{int64_t(order)...}); }
  /// torch.permute
  Tensor permute(std::vector<int64_t> order) const TINYGRAD_MEMBER_DEF({
    if (order.size() != ndim()) throw ShapeError("tinygrad::permute: order " + to_string(order) + " does not match shape " + to_string(shape()));
    std::vector<bool> seen(ndim());
    for (auto& o : order) {
      o = detail::norm_axis(o, ndim(), "permute");
      if (seen[size_t(o)]) throw ShapeError("tinygrad::permute: repeated axis in " + to_string(order));
      seen[size_t(o)] = true;
    }
    bool ident = true;
    for (size_t i = 0; i < order.size(); i++) ident &= order[i] == int64_t(i);
    return ident ? *this : mov(Ops::PERMUTE, order);
  })
  /// swap dims a and b
  Tensor transpose(int64_t a = 1, int64_t b = 0) const TINYGRAD_MEMBER_DEF({
    std::vector<int64_t> order(ndim());
    std::iota(order.begin(), order.end(), 0);
    std::swap(order[size_t(detail::norm_axis(a, ndim(), "transpose"))], order[size_t(detail::norm_axis(b, ndim(), "transpose"))]);
    return permute(order);
  })
  /// the last two dims swapped (transpose(-2, -1))
  Tensor T() const TINYGRAD_MEMBER_DEF({ return transpose(-2, -1); })
  /// broadcast to new_shape
  Tensor expand(Shape new_shape) const TINYGRAD_MEMBER_DEF({
    if (new_shape.size() < ndim()) throw ShapeError("tinygrad::expand: cannot expand " + to_string(shape()) + " to " + to_string(new_shape));
    Tensor x = reshape_left(new_shape.size());
    for (size_t i = 0; i < new_shape.size(); i++) {
      if (new_shape[i] == -1) new_shape[i] = x.shape()[i];
      if (x.shape()[i] != new_shape[i] && x.shape()[i] != 1)
        throw ShapeError("tinygrad::expand: cannot expand " + to_string(shape()) + " to " + to_string(new_shape));
    }
    detail::checked_prod(new_shape, "expand");
    return new_shape == x.shape() ? x : x.mov(Ops::EXPAND, new_shape);
  })
  /// expand to o's shape
  Tensor expand_as(const Tensor& o) const TINYGRAD_MEMBER_DEF({ return expand(o.shape()); })
  /// pad(...) with modes: tensor/movement.hpp
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> s) const TINYGRAD_MEMBER_DEF({
    if (s.size() != ndim()) throw ShapeError("tinygrad::shrink: " + std::to_string(s.size()) + " ranges for shape " + to_string(shape()));
    std::vector<int64_t> arg;
    bool ident = true;
    for (size_t i = 0; i < s.size(); i++) {
      if (s[i].first < 0 || s[i].second > shape()[i] || s[i].first > s[i].second)
        throw IndexError("tinygrad::shrink: range [" + std::to_string(s[i].first) + ", " + std::to_string(s[i].second) +
                         ") is out of bounds for dim " + std::to_string(i) + " of " + to_string(shape()));
      arg.push_back(s[i].first); arg.push_back(s[i].second);
      ident &= s[i].first == 0 && s[i].second == shape()[i];
    }
    return ident ? *this : mov(Ops::SHRINK, arg);
  })
  /// a shrink by sizes that may be symbolic: cache.shrink({{0, pos + 1}, {0, 64}}) (a symbolic dim of the tensor is kept
  /// whole: {0, its extent})
  Tensor shrink(std::initializer_list<std::pair<SInt, SInt>> s) const TINYGRAD_MEMBER_DEF({ return shrink(std::vector<std::pair<SInt, SInt>>(s)); })
  /// slice each dim to [begin, end)
  Tensor shrink(const std::vector<std::pair<SInt, SInt>>& s) const TINYGRAD_MEMBER_DEF({
    bool sym = is_symbolic();
    for (auto& [b, e] : s) sym |= !b.is_int() || !e.is_int();
    if (!sym) {
      std::vector<std::pair<int64_t, int64_t>> p;
      for (auto& [b, e] : s) p.push_back({b.value(), e.value()});
      return shrink(p);
    }
    const UOpRef& u = uop();
    if (s.size() != ndim()) throw ShapeError("tinygrad::shrink: " + std::to_string(s.size()) + " ranges for shape " + sym_str());
    std::vector<UOpRef> src{u}, ext;
    for (size_t i = 0; i < s.size(); i++) {
      const SInt &b = s[i].first, &e = s[i].second;
      SInt len = e - b;
      auto fail = [&](const std::string& why) {
        return IndexError(detail::cat("tinygrad::shrink: range [", b.str(), ", ", e.str(), ") of dim ", i, " of ", sym_str(), ": ", why));
      };
      if (b.min() < 0) throw fail(detail::cat("the begin may be negative (its range is [", b.min(), ", ", b.max(), "])"));
      if (len.min() < 0) throw fail(detail::cat("the end may be before the begin (end - begin is in [", len.min(), ", ", len.max(), "])"));
      if (e.max() > shape()[i]) throw fail(detail::cat("the end may pass the dim's size ", shape()[i], " (its max is ", e.max(), ")"));
      UOpRef dim = u->dyn.empty() ? nullptr : u->dyn[i];
      if (dim && (b.min() != 0 || b.max() != 0 || detail::sym_node(e, device()) != dim))
        throw fail("a symbolic dim is kept whole ({0, " + detail::sym_str(dim) + "})");
      src.push_back(detail::sym_node(b, device()));
      ext.push_back(detail::sym_node(len, device()));
    }
    src.insert(src.end(), ext.begin(), ext.end());
    return Tensor(make_uop(Ops::SHRINK, dtype(), std::move(src), std::vector<int64_t>{}), device());
  })
  /// reverse the given axes
  Tensor flip(std::vector<int64_t> axes) const TINYGRAD_MEMBER_DEF({
    std::vector<int64_t> arg(ndim(), 0);
    for (auto a : axes) arg[size_t(detail::norm_axis(a, ndim(), "flip"))] ^= 1;
    if (std::all_of(arg.begin(), arg.end(), [](auto x) { return x == 0; })) return *this;
    return mov(Ops::FLIP, arg);
  })
  /// reverse one axis
  Tensor flip(int64_t axis) const TINYGRAD_MEMBER_DEF({ return flip(std::vector<int64_t>{axis}); })
  /// merge dims start..end into one
  Tensor flatten(int64_t start = 0, int64_t end = -1) const TINYGRAD_MEMBER_DEF({
    if (ndim() == 0) return reshape({1});
    int s = detail::norm_axis(start, ndim(), "flatten"), e = detail::norm_axis(end, ndim(), "flatten");
    Shape ns(shape().begin(), shape().begin() + s);
    int64_t m = 1;
    for (int i = s; i <= e; i++) m *= shape()[size_t(i)];
    ns.push_back(m);
    ns.insert(ns.end(), shape().begin() + e + 1, shape().end());
    return reshape(ns);
  })
  /// insert a dim of size 1 at dim
  Tensor unsqueeze(int64_t dim) const TINYGRAD_MEMBER_DEF({
    int d = detail::norm_axis(dim < 0 ? dim + int64_t(ndim()) + 1 : dim, ndim() + 1, "unsqueeze");
    Shape s = shape();
    s.insert(s.begin() + d, 1);
    return reshape(s);
  })
  /// drop size-1 dims (or only dim)
  Tensor squeeze(std::optional<int64_t> dim = std::nullopt) const TINYGRAD_MEMBER_DEF({
    Shape s;
    int d = dim ? detail::norm_axis(*dim, ndim(), "squeeze") : -1;
    for (size_t i = 0; i < ndim(); i++) if (!(shape()[i] == 1 && (d < 0 || int(i) == d))) s.push_back(shape()[i]);
    return reshape(s);
  })
  /// a tensor in its own contiguous buffer
  Tensor contiguous() const TINYGRAD_MEMBER_DEF({ return Tensor(make_uop(Ops::CONTIGUOUS, dtype(), {uop()}), device()); })
  /// the same value without a gradient
  Tensor detach() const TINYGRAD_MEMBER_DEF({ return Tensor(make_uop(Ops::DETACH, dtype(), {uop()}), device()); })
  /// torch's clone(): a copy of the value in a buffer of its own (computed lazily, differentiable). Copies of a Tensor
  /// alias; a clone does not: assign() into it, or into a slice of it, leaves this tensor (and every other clone) as is.
  /// NOTE: a CONTIGUOUS of its own (its arg a fresh id, so hash-consing never merges two clones into one buffer)
  Tensor clone() const TINYGRAD_MEMBER_DEF({
    static std::atomic<int64_t> ids = 0;
    return Tensor(make_uop(Ops::CONTIGUOUS, dtype(), {uop()}, std::vector<int64_t>{++ids}), device());
  })
  /// the same values on another device ("CPU", "CUDA", "CL", "CUDA:1"): a COPY node, run at realize
  Tensor to(const std::string& dev) const TINYGRAD_MEMBER_DEF({
    if (dev == device()) return *this;
    if (dev.find(',') != std::string::npos && !on_many()) {  // each device a copy
      std::vector<UOpRef> src{make_uop(Ops::DEVICE, DType::Bool, {}, dev)};
      for (auto& d : detail::split_devices(dev)) src.push_back(to(d).uop());
      return Tensor(make_uop(Ops::MULTI, dtype(), std::move(src), int64_t(-1)), dev);
    }
    return Tensor(make_uop(Ops::COPY, dtype(), {uop(), make_uop(Ops::DEVICE, DType::Bool, {}, dev)}), dev);
  })

  /// several devices: "CPU:0,CPU:1" (engine/multi.hpp). to(devices) puts a copy on each; shard(devices, axis) splits
  /// the tensor along axis, a part a device (the first size % n parts one longer: 10 over 4 is 3, 3, 2, 2). Every op
  /// works on the result as on one tensor; a reduce over the split axis combines the parts (an all-reduce)
  Tensor to(const std::vector<std::string>& devices) const TINYGRAD_MEMBER_DEF({ return to(join_devices(devices, "to")); })
  /// split across devices along axis (one part each)
  Tensor shard(const std::vector<std::string>& devices, int64_t axis) const TINYGRAD_MEMBER_DEF({
    std::string g = join_devices(devices, "shard");
    if (devices.size() == 1) return to(devices[0]);
    if (on_many()) return to(devices[0]).shard(devices, axis);
    if (is_symbolic()) throw ShapeError("tinygrad::shard: the shape " + sym_str() + " is symbolic");
    int64_t a = detail::norm_axis(axis, ndim(), "shard"), n = shape(a), k = int64_t(devices.size());
    if (n < k) throw ShapeError(detail::cat("tinygrad::shard: dim ", a, " of ", sym_str(), " has ", n, " elements, fewer than the ", k, " devices"));
    std::vector<UOpRef> src{make_uop(Ops::DEVICE, DType::Bool, {}, g)};
    for (int64_t i = 0, at = 0; i < k; i++) {
      int64_t len = n / k + (i < n % k ? 1 : 0);
      std::vector<std::pair<int64_t, int64_t>> sl;
      for (size_t d = 0; d < ndim(); d++) sl.push_back(int64_t(d) == a ? std::pair{at, at + len} : std::pair<int64_t, int64_t>{0, shape()[d]});
      src.push_back(shrink(sl).to(devices[size_t(i)]).uop());
      at += len;
    }
    return Tensor(make_uop(Ops::MULTI, dtype(), std::move(src), a), g);
  })
  /// the devices the value lives on: one, or each of a sharded or copied tensor's
  std::vector<std::string> devices() const TINYGRAD_MEMBER_DEF({ return detail::split_devices(device()); })

  /// basic slicing: ints, Slice{start, stop, step} (negative steps flip), NewAxis, Ellipsis; copy-free
  Tensor slice(const std::vector<Index>& idx) const TINYGRAD_MEMBER_DEF({
    size_t n_real = 0, n_ell = 0;
    for (auto& i : idx) {
      n_real += std::holds_alternative<int64_t>(i) || std::holds_alternative<Slice>(i);
      n_ell += std::holds_alternative<Ellipsis>(i);
    }
    if (n_ell > 1) throw IndexError("tinygrad::slice: an index can only have one ellipsis");
    if (n_real > ndim())
      throw IndexError("tinygrad::slice: too many indices (" + std::to_string(n_real) + ") for a tensor of shape " + to_string(shape()));
    std::vector<Index> full;
    for (auto& i : idx) {
      if (std::holds_alternative<Ellipsis>(i)) for (size_t k = 0; k < ndim() - n_real; k++) full.push_back(Slice{});
      else full.push_back(i);
    }
    while (std::count_if(full.begin(), full.end(), [](auto& i) { return !std::holds_alternative<NewAxis>(i); }) < int64_t(ndim()))
      full.push_back(Slice{});
    std::vector<std::pair<int64_t, int64_t>> sh;
    std::vector<int64_t> flips, steps;
    Shape final_shape;
    size_t d = 0;
    for (auto& i : full) {
      if (std::holds_alternative<NewAxis>(i)) { final_shape.push_back(1); continue; }
      int64_t n = shape()[d];
      if (auto* k = std::get_if<int64_t>(&i)) {
        int64_t v = *k < 0 ? *k + n : *k;
        if (v < 0 || v >= n)
          throw IndexError("tinygrad::slice: index " + std::to_string(*k) + " is out of bounds for dim " + std::to_string(d) +
                           " of size " + std::to_string(n));
        sh.push_back({v, v + 1}); steps.push_back(1);
      } else {
        auto s = std::get<Slice>(i);
        if (s.step == 0) throw IndexError("tinygrad::slice: step cannot be 0");
        auto clampi = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
        int64_t b, e;
        if (s.step > 0) {
          b = s.start ? clampi(*s.start, 0, n) : 0;
          e = s.stop ? clampi(*s.stop, 0, n) : n;
          e = std::max(e, b);
          sh.push_back({b, e});
        }
        else {
          b = s.start ? clampi(*s.start, -1, n - 1) : n - 1; e = s.stop ? clampi(*s.stop, -1, n - 1) : -1;
          e = std::min(e, b);
          sh.push_back({e + 1, b + 1}); flips.push_back(int64_t(d));
        }
        // NOTE: a step past the dim picks one element, as a step of the dim does; clamped, the stride math below cannot overflow
        int64_t m = std::max<int64_t>(n, 1);
        steps.push_back(std::abs(std::clamp(s.step, -m, m)));
        int64_t len = sh.back().second - sh.back().first;
        final_shape.push_back(len / steps.back() + (len % steps.back() != 0));
      }
      d++;
    }
    Tensor x = shrink(sh).flip(flips);
    // strides: pad each dim to a multiple of its step, split it, keep the first of each group
    if (std::any_of(steps.begin(), steps.end(), [](auto s) { return s != 1; })) {
      std::vector<std::pair<int64_t, int64_t>> pads, sh2;
      Shape split;
      for (size_t i = 0; i < steps.size(); i++) {
        int64_t len = x.shape()[i], st = steps[i], m = len / st + (len % st != 0);
        pads.push_back({0, detail::size_mul(m, st, "slice") - len});
        split.push_back(m); split.push_back(st);
        sh2.push_back({0, m}); sh2.push_back({0, 1});
      }
      x = x.pad(pads).reshape(split).shrink(sh2);
    }
    return x.reshape(final_shape);
  })
  // operator[] (with tensor indices too): tensor/movement.hpp

  // ---- processing ----
  /// torch.matmul (batched, broadcast)
  Tensor matmul(const Tensor& w) const TINYGRAD_MEMBER_DEF({
    if (ndim() == 0 || w.ndim() == 0)
      throw ShapeError("tinygrad::matmul: both operands need at least 1 dimension, got " + to_string(shape()) + " and " + to_string(w.shape()));
    int64_t k = shape().back(), kw = w.shape()[w.ndim() >= 2 ? w.ndim() - 2 : 0];
    if (k != kw)
      throw ShapeError("tinygrad::matmul: shapes " + to_string(shape()) + " and " + to_string(w.shape()) + " do not fit: a.shape[-1] (" +
                       std::to_string(k) + ") != b.shape[-2] (" + std::to_string(kw) + ")");
    // x: (..., n, 1, k)  w: (..., 1, m, k) -> multiply, sum the last axis
    int64_t dx = int64_t(ndim()), dw = int64_t(w.ndim()), ones = std::min<int64_t>({dx - 1, dw - 1, 1}), axis_w = -std::min<int64_t>(dw, 2);
    Shape xs(shape().begin(), shape().end() - 1);
    xs.insert(xs.end(), size_t(ones), 1);
    xs.push_back(k);
    Shape ws(w.shape().begin(), w.shape().end() - std::min<int64_t>(dw, 2));
    ws.insert(ws.end(), size_t(ones), 1);
    ws.insert(ws.end(), w.shape().end() + axis_w, w.shape().end());
    Tensor x = reshape(xs), ww = w.cpu_panels(ndim() >= 2 && k > 0 ? detail::prod(shape()) / k : 1).reshape(ws).transpose(-1, axis_w);
    return (x * ww).sum(-1).cast(least_upper_dtype(dtype(), w.dtype()));
  })
  /// alias of matmul
  Tensor dot(const Tensor& w) const TINYGRAD_MEMBER_DEF({ return matmul(w); })
  /// x W^T + b (torch.nn.functional.linear)
  Tensor linear(const Tensor& w, const std::optional<Tensor>& b = std::nullopt) const TINYGRAD_MEMBER_DEF({
    auto x = matmul(w);
    return b ? x + *b : x;
  })

  /// x (N, Cin, H, W) * w (Cout, Cin/groups, KH, KW) -> (N, Cout, OH, OW): two views + MUL + SUM, one kernel.
  /// torch's positional order; x.conv2d(w, {.stride = 2, .padding = 1}) for its keywords (a template: see ProcessingOps::conv1d)
  template <class = void>
  Tensor conv2d(const Tensor& w, const std::optional<Tensor>& bias = std::nullopt, Ints stride = 1, Ints padding = 0, Ints dilation = 1,
                int64_t groups = 1) const {
    return conv2d(w, bias, {.stride = std::move(stride), .padding = std::move(padding), .dilation = std::move(dilation), .groups = groups});
  }
  /// conv2d with options: x.conv2d(w, {.stride = 2, .padding = 1})
  Tensor conv2d(const Tensor& w, const ConvOptions& o) const { return conv2d(w, std::nullopt, o); }
  /// conv2d with a bias and options
  Tensor conv2d(const Tensor& w, const std::optional<Tensor>& bias, const ConvOptions& o) const TINYGRAD_MEMBER_DEF({
    auto shapes = [&] { return "x " + to_string(shape()) + ", w " + to_string(w.shape()); };
    if (ndim() < 3 || w.ndim() != ndim()) throw ShapeError("tinygrad::conv2d: input and weight ranks do not fit: " + shapes());
    if (std::any_of(o.output_padding.begin(), o.output_padding.end(), [](int64_t p) { return p != 0; }))
      throw ShapeError("tinygrad::conv2d: output_padding is conv_transpose2d's option: " + shapes());
    size_t nsp = ndim() - 2;
    int64_t bs = shape()[0], cin_total = shape()[1], cout = w.shape()[0], cin = w.shape()[1], groups = o.groups;
    std::vector<int64_t> stride = o.stride, dilation = o.dilation, padding = o.padding;
    if (groups <= 0 || cout % groups)
      throw ShapeError("tinygrad::conv2d: out channels " + std::to_string(cout) + " do not divide into " +
                       std::to_string(groups) + " groups: " + shapes());
    if (cin * groups != cin_total)
      throw ShapeError("tinygrad::conv2d: input has " + std::to_string(cin_total) + " channels but weight expects " + std::to_string(cin * groups) +
                       " (groups=" + std::to_string(groups) + "): " + shapes());
    auto per_dim = [&](std::vector<int64_t> v, const char* what) {
      if (v.size() == 1) v.assign(nsp, v[0]);
      if (v.size() != nsp) throw ShapeError(std::string("tinygrad::conv2d: ") + what + " needs " + std::to_string(nsp) + " values");
      return v;
    };
    stride = per_dim(stride, "stride"); dilation = per_dim(dilation, "dilation");
    std::vector<std::pair<int64_t, int64_t>> pads{{0, 0}, {0, 0}};
    if (padding.size() == 1 || padding.size() == nsp) for (size_t i = 0; i < nsp; i++) {
      int64_t p = padding[padding.size() == 1 ? 0 : i];
      pads.push_back({p, p});
    }
    else if (padding.size() == 2 * nsp) for (size_t i = 0; i < nsp; i++) pads.push_back({padding[2 * i], padding[2 * i + 1]});
    else throw ShapeError("tinygrad::conv2d: padding needs 1, " + std::to_string(nsp) + " or " + std::to_string(2 * nsp) + " values");
    Shape ks(w.shape().begin() + 2, w.shape().end());
    Tensor x = pad(pads).pool(ks, stride, dilation, "conv2d");  // (bs, cin_total, *oyx, *ks)
    Shape oyx(x.shape().begin() + 2, x.shape().begin() + 2 + int64_t(nsp));
    int64_t rcout = cout / groups;
    // (bs, groups, cin, 1, *oyx, *ks) -> (bs, groups, rcout, *oyx, cin, *ks)
    Shape s1{bs, groups, cin, 1}; s1.insert(s1.end(), oyx.begin(), oyx.end()); s1.insert(s1.end(), ks.begin(), ks.end());
    Shape s2 = s1; s2[3] = rcout;
    std::vector<int64_t> perm{0, 1, 3};
    for (size_t i = 0; i < nsp; i++) perm.push_back(4 + int64_t(i));
    perm.push_back(2);
    for (size_t i = 0; i < nsp; i++) perm.push_back(4 + int64_t(nsp + i));
    x = x.reshape(s1).expand(s2).permute(perm);
    Shape ws{1, groups, rcout}; ws.insert(ws.end(), nsp, 1); ws.push_back(cin); ws.insert(ws.end(), ks.begin(), ks.end());
    std::vector<int64_t> red;
    for (size_t i = 0; i <= nsp; i++) red.push_back(-1 - int64_t(i));
    Shape out{bs, cout}; out.insert(out.end(), oyx.begin(), oyx.end());
    // the weight with its output channels innermost, for a device without workgroups (the CPU: the kernel's vector
    // lanes run over them; a conv's output width is rarely a multiple of a vector: a 20-wide one took 4 of 16 lanes);
    // a schedule for a GPU drops the copy (UOp::is_cpu_layout) and takes the conv as an implicit GEMM of the weight
    // as it is. A weight kept in that layout (a permuted view of a buffer) is read as it is
    std::vector<int64_t> inner, back{int64_t(nsp) + 1};
    for (size_t i = 1; i <= nsp + 1; i++) { inner.push_back(int64_t(i)); back.push_back(int64_t(i) - 1); }
    inner.push_back(0);
    const UOpRef& wu = w.uop();
    const UOp* ws0 = wu->op == Ops::PERMUTE ? wu->src[0].get() : nullptr;
    Tensor wl = ws0 && wu->varg() == back && (detail::is_buffer_view(ws0) || detail::is_leaf(ws0))
                    ? w
                    : w.cpu_layout(inner, back);
    Tensor r = (x * wl.reshape(ws)).sum(red, true).reshape(out);
    // NOTE: autograd differentiates the GRAD_RULE marker with conv formulas, not through the window view
    std::vector<int64_t> arg{int64_t(detail::GradRule::Conv), groups};
    arg.insert(arg.end(), stride.begin(), stride.end());
    arg.insert(arg.end(), dilation.begin(), dilation.end());
    for (size_t i = 0; i < nsp; i++) arg.insert(arg.end(), {pads[2 + i].first, pads[2 + i].second});
    r = Tensor(make_uop(Ops::GRAD_RULE, r.dtype(), {r.uop(), uop(), w.uop()}, arg), device());
    if (!bias) return r;
    Shape bsh{1, cout}; bsh.insert(bsh.end(), nsp, 1);
    return r + bias->reshape(bsh);
  })

  /// sliding windows over the last ks.size() dims: (..., *in) -> (..., *out, *ks)
  Tensor pool(const Shape& ks, std::vector<int64_t> stride, std::vector<int64_t> dilation, const char* op = "pool") const TINYGRAD_MEMBER_DEF({
    size_t nk = ks.size(), nb = ndim() - nk;
    if (ndim() < nk)
      throw ShapeError(std::string("tinygrad::") + op + ": kernel " + to_string(ks) + " has more dims than input " + to_string(shape()));
    if (stride.size() != nk || dilation.size() != nk)
      throw ShapeError(std::string("tinygrad::") + op + ": kernel " + to_string(ks) + ", stride " + to_string(stride) + " and dilation " +
                       to_string(dilation) + " differ in length");
    Shape in(shape().begin() + int64_t(nb), shape().end()), o;
    for (size_t i = 0; i < nk; i++) {
      if (ks[i] < 1 || stride[i] < 1 || dilation[i] < 1)
        throw ShapeError(std::string("tinygrad::") + op + ": kernel " + to_string(ks) + ", stride " + to_string(stride) + " and dilation " +
                         to_string(dilation) + " must be positive");
      if (ks[i] == 1) dilation[i] = 1;  // NOTE: no effect on one tap; keeps in + dilation below in range
      int64_t span = 0;  // NOTE: an overflowing span is larger than any dim
      if (__builtin_mul_overflow(dilation[i], ks[i] - 1, &span) || span >= in[i])
        throw ShapeError(std::string("tinygrad::") + op + ": kernel " + to_string(ks) + " (dilation " + to_string(dilation) +
                         ") is larger than the input " + to_string(shape()));
      o.push_back((in[i] - span - 1) / stride[i] + 1);
      stride[i] = std::min(stride[i], in[i]);  // NOTE: the same windows (o is 1 past it); keeps the padded dims below in range
    }
    Shape noop(shape().begin(), shape().begin() + int64_t(nb));
    // NOTE: windows that do not overlap (k <= s, no dilation) need no repeat: fit to o*s, split (o, s), keep k
    bool simple = true;
    for (size_t i = 0; i < nk; i++) simple &= ks[i] <= stride[i] && dilation[i] == 1;
    if (simple) {
      std::vector<std::pair<int64_t, int64_t>> p(nb, {0, 0}), sh;
      Shape s = noop;
      for (size_t i = 0; i < nk; i++) { p.push_back({0, detail::size_mul(o[i], stride[i], op) - in[i]}); s.push_back(o[i]); s.push_back(stride[i]); }
      for (auto n : noop) sh.push_back({0, n});
      for (size_t i = 0; i < nk; i++) { sh.push_back({0, o[i]}); sh.push_back({0, ks[i]}); }
      std::vector<int64_t> perm(nb);
      std::iota(perm.begin(), perm.end(), 0);
      for (size_t i = 0; i < 2 * nk; i++) perm.push_back(int64_t(nb + (i < nk ? 2 * i : 2 * (i - nk) + 1)));
      return pad(p).reshape(s).shrink(sh).permute(perm);
    }
    // repeat each window dim so every (k, o) pair reads a plain offset: idx = o*s + k*d
    Shape rs = noop, rexp = noop, rep = noop;
    for (size_t i = 0; i < nk; i++) {
      int64_t w = 0;  // k windows of i+d
      if (__builtin_mul_overflow(ks[i], detail::size_add(in[i], dilation[i], op), &w))
        throw ShapeError(std::string("tinygrad::") + op + ": the windows of kernel " + to_string(ks) + " over " +
                         to_string(shape()) + " overflow int64");
      int64_t reps = w / in[i] + (w % in[i] != 0);
      rs.insert(rs.end(), {1, in[i]}); rexp.insert(rexp.end(), {reps, in[i]}); rep.push_back(reps * in[i]);
    }
    Tensor x = reshape(rs).expand(rexp).reshape(rep);
    auto sh = [&](auto f) { std::vector<std::pair<int64_t, int64_t>> s; for (auto n : x.shape()) s.push_back({0, n}); f(s); return s; };
    // dilation: windows of i+d, keep k of them
    x = x.shrink(sh([&](auto& s) { for (size_t i = 0; i < nk; i++) s[nb + i] = {0, ks[i] * (in[i] + dilation[i])}; }));
    { Shape s = noop; for (size_t i = 0; i < nk; i++) { s.push_back(ks[i]); s.push_back(in[i] + dilation[i]); } x = x.reshape(s); }
    // stride: keep o*s of each window, split into (o, s), keep the first
    x = x.shrink(sh([&](auto& s) { for (size_t i = 0; i < nk; i++) s[nb + 2 * i + 1] = {0, o[i] * stride[i]}; }));
    { Shape s = noop; for (size_t i = 0; i < nk; i++) { s.push_back(ks[i]); s.push_back(o[i]); s.push_back(stride[i]); } x = x.reshape(s); }
    x = x.shrink(sh([&](auto& s) { for (size_t i = 0; i < nk; i++) s[nb + 3 * i + 2] = {0, 1}; }));
    { Shape s = noop; for (size_t i = 0; i < nk; i++) { s.push_back(ks[i]); s.push_back(o[i]); } x = x.reshape(s); }
    std::vector<int64_t> perm(nb);
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = 0; i < nk; i++) perm.push_back(int64_t(nb + 2 * i + 1));
    for (size_t i = 0; i < nk; i++) perm.push_back(int64_t(nb + 2 * i));
    return x.permute(perm);
  })

  /// a constant of this tensor's dtype and device (weak: a float literal makes an int tensor's result float)
  Tensor like(double v, bool weak = false) const TINYGRAD_MEMBER_DEF({
    DType dt = weak ? detail::weak_result(dtype(), v != std::trunc(v) || std::isinf(v) || std::isnan(v), false) : dtype();
    return full({}, v, dt, device());
  })
  /// a 0-d tensor of value v
  static Tensor scalar(double v, DType dt, const std::string& dev = "") TINYGRAD_MEMBER_DEF({ return full({}, v, dt, dev); })

 private:
  // B (k, n) of a product with `rows` rows, read from panels of a vector's width of its columns (each k x lanes, one
  // after another) where the CPU pays for that copy: a realized B of more than 2 MB (a core's L2) against 128 rows or
  // more. The kernel's tile then walks a panel as one stream, not a vector of each of k rows 4n bytes apart (an L1 set
  // and a TLB entry a row): a 2048 matmul, one thread, copy included, 0.42-0.44x -> 0.85-0.86x Eigen's speed on a Xeon,
  // 1.17x -> 1.47x on an AVX-512 EPYC; a Linear layer's realized W read as W.T the same way (the copy transposes it:
  // 1.02x -> 1.42x Eigen's x @ W.T on the EPYC, 2 threads). No copy on a device of workgroups
  Tensor cpu_panels(int64_t rows) const TINYGRAD_MEMBER_DEF({
    // NOTE: the device's runtime (a lock and a lookup) only for a candidate: every matmul's graph passes here
    const UOp* b = uop()->op == Ops::PERMUTE ? uop()->src[0].get() : uop().get();
    if (ndim() != 2 || rows < 128 || is_symbolic() || !(detail::is_buffer_view(b) || detail::is_leaf(b)) ||
        double(numel()) * double(itemsize(dtype())) <= double(2 << 20))
      return *this;
    const DeviceRuntime& rt = runtime(device());
    const int64_t k = shape()[0], n = shape()[1], w = rt.vector_bytes / int64_t(itemsize(dtype()));
    if (rt.workgroups || w < 4 || n % w || n == w) return *this;
    return reshape({k, n / w, w}).cpu_layout({1, 0, 2}, {1, 0, 2}).reshape({k, n});
  })
  // this permuted by `inner` as a copy marked as a CPU layout (UOp::is_cpu_layout: a schedule for a device of
  // workgroups drops it and reads this as it is), permuted back by `back`: the same values, laid out for the CPU
  Tensor cpu_layout(const std::vector<int64_t>& inner, const std::vector<int64_t>& back) const TINYGRAD_MEMBER_DEF({
    return Tensor(make_uop(Ops::CONTIGUOUS, dtype(), {permute(inner).uop()}, std::vector<int64_t>{UOp::kCpuLayout}), device()).permute(back);
  })
  struct Impl {
    UOpRef uop;
    std::string device;
    bool requires_grad = false;
    std::shared_ptr<Impl> grad;
    int64_t param = 0;  // the id of this tensor's parameter nodes (0: never required grad)
    uint64_t born = 0;  // the jitted call recorded when it was made (detail::jit_call_id)
  };
  friend std::vector<std::optional<Tensor>> compute_gradient(const Tensor&, const Tensor&, const std::vector<Tensor>&, std::vector<bool>*);
  // tensors that asked for gradients, found again by backward()
  static std::vector<std::weak_ptr<Impl>>& grad_registry() TINYGRAD_MEMBER_DEF({ static std::vector<std::weak_ptr<Impl>> r; return r; })
  static std::mutex& grad_mutex() TINYGRAD_MEMBER_DEF({ static std::mutex m; return m; })
  std::shared_ptr<Impl> impl_;
  explicit Tensor(std::shared_ptr<Impl> i) : impl_(std::move(i)) {}

#if TINYGRAD_WITH_INTERNALS
  struct Rng { std::atomic<uint64_t> seed{0}, counter{0}; };
#else
  struct Rng;  // where the library is compiled: the seed and the draw counter
#endif
  static Rng& rng() TINYGRAD_MEMBER_DEF({ static Rng r; return r; })
  // the next n numbers' key: 3 uint32 (the counter's low word, the seed mixed with its high word, the seed's high word)
  static Tensor rng_key(int64_t n, const std::string& dev) TINYGRAD_MEMBER_DEF({
    uint64_t base = rng().counter.fetch_add(uint64_t(n)), seed = rng().seed;  // threads draw disjoint counters
    uint32_t k[3] = {uint32_t(base), uint32_t(seed * 0x9E3779B9ull + (base >> 32)), uint32_t(seed >> 32) ^ 0x85EBCA6Bu};
    return from_host(k, DType::UInt32, 3, {3}, dev);
  })
  static Tensor mix32(Tensor x) TINYGRAD_MEMBER_DEF({  // murmur3's finalizer
    auto c = [&](double v) { return scalar(v, DType::UInt32, x.device()); };
    x = x ^ x.shr(16); x = x * c(0x85ebca6b); x = x ^ x.shr(13); x = x * c(0xc2b2ae35); return x ^ x.shr(16);
  })

  // the number of elements of a shape that enters op; ShapeError for a negative dim or an overflowing product
  static int64_t check_shape(const Shape& s, const char* op) TINYGRAD_MEMBER_DEF({ return detail::checked_prod(s, op); })
  template <class T>
  static Tensor from_vector(const std::vector<T>& d, Shape shape, std::string device) {
    // NOTE: std::vector<bool> is packed and has no data(): unpack it to one byte per element
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> b(d.begin(), d.end());
      return from_host(b.data(), DType::Bool, b.size(), std::move(shape), std::move(device));
    }
    else return from_host(d.data(), dtype_of<T>(), d.size(), std::move(shape), std::move(device));
  }
  static Tensor from_host(const void* data, DType src_dt, size_t n, Shape shape, std::string device) TINYGRAD_MEMBER_DEF({
    if (shape.empty() && n != 1) shape = {int64_t(n)};
    if (size_t(check_shape(shape, "Tensor")) != n)
      throw ShapeError("tinygrad::Tensor: " + std::to_string(n) + " values do not fill shape " + to_string(shape));
    std::string dev = device.empty() ? default_device() : device;
    if (dev.find(',') != std::string::npos) return from_host(data, src_dt, n, shape, detail::split_devices(dev)[0]).to(dev);  // each device a copy
    auto buf = std::make_shared<Buffer>(dev, src_dt, int64_t(n));
    buf->copyin(data);
    return of_buffer(std::move(buf), shape);
  })
  // a tensor over an existing buffer (its device and dtype), reshaped
  static Tensor of_buffer(std::shared_ptr<Buffer> buf, const Shape& shape) TINYGRAD_MEMBER_DEF({
    std::string dev = buf->device;
    DType dt = buf->dtype;
    return Tensor(make_uop(Ops::BUFFER, dt, {}, std::move(buf)), dev).reshape(shape);
  })
  // a shape of SInts as its bounds and symbolic dims on device dev (none: every size an int), each checked
  static std::pair<Shape, std::vector<UOpRef>> sym_dims(const std::vector<SInt>& s, const char* op, const std::string& dev) TINYGRAD_MEMBER_DEF({
    Shape b;
    std::vector<UOpRef> d;
    bool sym = false;
    for (size_t i = 0; i < s.size(); i++) {
      if (!s[i].is_int() && s[i].min() < 0)
        throw ShapeError(detail::cat("tinygrad::", op, ": dim ", i, " (", s[i].str(), ") may be negative (its range is [", s[i].min(), ", ",
                                     s[i].max(), "])"));
      b.push_back(s[i].max());
      d.push_back(s[i].is_int() ? nullptr : detail::sym_node(s[i], dev));
      sym |= !s[i].is_int();
    }
    check_shape(b, op);
    if (!sym) d.clear();
    return {b, d};
  })
  static Tensor of_sint(const SInt& v, const std::string& device) TINYGRAD_MEMBER_DEF({
    std::string dev = device.empty() ? default_device() : device;
    return Tensor(detail::sym_node(v, dev), dev);
  })
  // assign() to a part of a realized buffer (a shrink of it, with reshapes, permutes and flips: each element of the
  // view one element of the buffer) writes v into those elements now, in place: the KV-cache update
  // `cache.shrink({{0, H}, {p, p + 1}, {0, D}}).assign(kv)` costs the row, not the cache. Every tensor over the buffer
  // sees the new values, also a lazy one made before (realize it first to keep the old). False: not such a view.
  bool write_view(const Tensor& v) TINYGRAD_MEMBER_DEF({
    const UOp* b = impl_->uop.get();
    if (detail::is_leaf(b) || impl_->requires_grad) return false;
    bool part = false;  // a shrink: a part of the buffer (a whole-buffer view, a reshape or permute of it, is rebound)
    for (; !detail::is_leaf(b); b = b->src[0].get()) {
      if (!detail::is_movement(b->op)) return false;
      if (b->op == Ops::EXPAND || b->op == Ops::PAD)
        throw ShapeError("tinygrad::assign: cannot write through a " + std::string(op_name(b->op)) + " view " + sym_str());
      part |= b->op == Ops::SHRINK;
    }
    if (!part || (b->op != Ops::BUFFER && !b->realized)) return false;
    Tensor nv = v.cast(dtype()).detach();
    // a value that reads the buffer it overwrites is computed first (one kernel must not read what it writes)
    for (auto& x : detail::toposort(nv.uop(), [](const UOp* y) { return !detail::is_leaf(y); }))
      if (detail::is_leaf(x.get()) && x->leaf_buffer() == b->leaf_buffer()) { nv = nv.contiguous().realize(); break; }
    tinygrad::realize({make_uop(Ops::ASSIGN, dtype(), {impl_->uop, nv.uop()})});
    return true;
  })
  // a parameter node for this tensor over value u; a realized u lends it its buffer (no copy: buffers are never written twice)
  UOpRef param_node(const UOpRef& u) const TINYGRAD_MEMBER_DEF({
    auto p = make_uop(Ops::CONTIGUOUS, u->dtype, {u}, impl_->param);
    if (!p->realized && (detail::is_leaf(u.get()) || (u->op == Ops::RESHAPE && detail::is_leaf(u->src[0].get())))) {
      const UOp* l = detail::is_leaf(u.get()) ? u.get() : u->src[0].get();
      p->realized.set(l->leaf_buffer());
    }
    return p;
  })
  // after a realize: drop the graph below the value unless autograd needs it. A parameter keeps its id over
  // its buffer; a value that depends on parameters keeps its graph (the root holds .realized, so schedules
  // read it as an input); anything else becomes its buffer.
  void adopt_realized() TINYGRAD_MEMBER_DEF({
    const UOpRef& u = impl_->uop;
    if (on_many()) {  // each device's part a buffer view
      UOpRef m = parts_node();
      if (m->op != Ops::MULTI) return;
      std::vector<UOpRef> src{m->src[0]};
      for (size_t i = 1; i < m->src.size(); i++) src.push_back(detail::buffer_view(m->src[i]));
      UOpRef v = make_uop(Ops::MULTI, u->dtype, std::move(src), m->arg);
      if (impl_->requires_grad) { if (!(u->is_param() && u->src[0] == v)) impl_->uop = param_node(v); }
      else if (!u->grad_dep) impl_->uop = v;
      return;
    }
    if (impl_->requires_grad && u->is_param() && u->iarg() == impl_->param) {
      if (!u->src[0]->grad_dep && !detail::is_buffer_view(u->src[0].get())) impl_->uop = param_node(detail::buffer_view(u));
    } else if (impl_->requires_grad) impl_->uop = param_node(detail::buffer_view(u));
    else if (!u->grad_dep) impl_->uop = detail::buffer_view(u);
  })
  Tensor fl() const TINYGRAD_MEMBER_DEF({ return is_float(dtype()) ? *this : cast(dtypes::default_float); })
  // NOTE: two overloads, not an optional DType: valgrind saw the empty optional's payload reach make_uop's hash at -O2
  Tensor unary(Ops op) const TINYGRAD_MEMBER_DEF({ return unary(op, dtype()); })
  Tensor unary(Ops op, DType dt) const TINYGRAD_MEMBER_DEF({ return Tensor(make_uop(op, dt, {uop()}), device()); })
  Tensor mov(Ops op, std::vector<int64_t> arg) const TINYGRAD_MEMBER_DEF({
    if (is_symbolic()) return mov_sym(op, std::move(arg));
    return Tensor(make_uop(op, dtype(), {uop()}, std::move(arg)), device());
  })
  // a movement op of a tensor with symbolic dims: permutes and flips move them, reshapes and expands keep each whole
  // (their results name their extents in src[1..]), a pad of one names the padded extents (dyn + before + after); a
  // shrink that would cut into one is an error
  Tensor mov_sym(Ops op, std::vector<int64_t> arg) const TINYGRAD_MEMBER_DEF({
    const UOpRef& u = uop();
    const char* name = op == Ops::RESHAPE ? "reshape" : op == Ops::EXPAND ? "expand" : op == Ops::PAD ? "pad" : op == Ops::SHRINK ? "shrink" : "flip";
    auto refuse = [&](size_t i, const std::string& why) {
      return ShapeError(detail::cat("tinygrad::", name, ": dim ", i, " of ", sym_str(), " is symbolic (", detail::sym_str(u->dyn[i]), "): ", why));
    };
    auto ext = [](const UOpRef& d, int64_t n) { return d ? d : detail::size_const(n); };
    std::vector<UOpRef> src{u};
    bool pad_sym = false;
    for (size_t i = 0; i < u->shape.size() && op != Ops::RESHAPE && op != Ops::PERMUTE; i++) {
      if (!u->dyn[i]) { if (op == Ops::EXPAND) src.push_back(ext(nullptr, arg[i])); continue; }
      if (op == Ops::EXPAND) src.push_back(u->dyn[i]);
      pad_sym |= op == Ops::PAD && (arg[2 * i] || arg[2 * i + 1]);
      if (op == Ops::SHRINK && (arg[2 * i] || arg[2 * i + 1] != u->shape[i])) throw refuse(i, "shrink it with symbolic bounds ({0, extent})");
    }
    if (pad_sym) {  // src[1..n] the pads before, src[n+1..2n] the extents (tensor/variable.hpp): the valid region ends at dyn + before
      std::vector<UOpRef> ends;
      for (size_t i = 0; i < u->shape.size(); i++) {
        int64_t b = arg[2 * i], a = arg[2 * i + 1];
        src.push_back(detail::size_const(b));
        ends.push_back(u->dyn[i] ? (SInt(u->dyn[i]) + SInt(b + a)).uop() : detail::size_const(u->shape[i] + b + a));
      }
      src.insert(src.end(), ends.begin(), ends.end());
      arg.clear();
    }
    if (op == Ops::RESHAPE) {
      // each symbolic dim stays a dim of its own, with as many elements before it (since the last symbolic dim) as before
      std::vector<UOpRef> d(arg.size());
      size_t o = 0;
      int64_t before = 1;
      for (size_t i = 0; i < u->shape.size(); i++) {
        if (!u->dyn[i]) { before *= u->shape[i]; continue; }
        int64_t acc = 1;
        while (o < arg.size() && !(acc == before && arg[o] == u->shape[i]) && acc <= before) acc *= arg[o++];
        if (o >= arg.size() || acc != before) throw refuse(i, "a reshape keeps it a dim of its own, got " + to_string(Shape(arg)));
        d[o++] = u->dyn[i];
        before = 1;
      }
      for (size_t i = 0; i < arg.size(); i++) src.push_back(ext(d[i], arg[i]));
    }
    return Tensor(make_uop(op, dtype(), std::move(src), std::move(arg)), device());
  })
  // expand to a shape with symbolic dims d (empty: none)
  Tensor expand_to(const Shape& s, const std::vector<UOpRef>& d) const TINYGRAD_MEMBER_DEF({
    if (d.empty()) return expand(s);
    Tensor x = reshape_left(s.size());
    const UOpRef& u = x.uop();
    if (u->shape == s && u->dyn == d) return x;
    std::vector<UOpRef> src{u};
    for (size_t i = 0; i < s.size(); i++) {
      UOpRef have = u->dyn.empty() ? nullptr : u->dyn[i];
      if (u->shape[i] != 1 && (u->shape[i] != s[i] || have != d[i]))
        throw ShapeError("tinygrad::expand: cannot expand " + sym_str() + " to the symbolic shape of its operand");
      src.push_back(d[i] ? d[i] : detail::size_const(s[i]));
    }
    return Tensor(make_uop(Ops::EXPAND, dtype(), std::move(src), std::vector<int64_t>(s)), device());
  })
  // the symbolic dims of the broadcast of ts to s (empty: none); an error where two differ, or one meets a concrete dim
  static std::vector<UOpRef> broadcast_dyn(const std::vector<const Tensor*>& ts, const Shape& s, const char* op) TINYGRAD_MEMBER_DEF({
    if (std::none_of(ts.begin(), ts.end(), [](const Tensor* t) { return t->is_symbolic(); })) return {};
    std::vector<UOpRef> d(s.size());
    for (int pass = 0; pass < 2; pass++)
      for (auto* t : ts) {
        const UOp& u = *t->impl_->uop;
        size_t off = s.size() - u.shape.size();
        for (size_t i = 0; i < u.shape.size(); i++) {
          UOpRef x = u.dyn.empty() ? nullptr : u.dyn[i];
          UOpRef& want = d[off + i];
          bool clash = pass == 0 ? x && want && x != want : !x && want && u.shape[i] != 1;
          if (clash) {
            std::string shapes;
            for (auto* o : ts) shapes += (shapes.empty() ? "" : " and ") + o->sym_str();
            throw ShapeError(detail::cat("tinygrad::", op, ": shapes ", shapes, " cannot be broadcast together (dim ", off + i, ": ",
                                         detail::sym_str(want), " against ", x ? detail::sym_str(x) : std::to_string(u.shape[i]), ")"));
          }
          if (pass == 0 && x) want = x;
        }
      }
    return d;
  })
  Tensor reshape_left(size_t n) const TINYGRAD_MEMBER_DEF({
    Shape s(n - ndim(), 1);
    s.insert(s.end(), shape().begin(), shape().end());
    return reshape(s);
  })
  bool on_many() const { return impl_->device.find(',') != std::string::npos; }
  // a realized tensor of several devices: the MULTI of its parts
  UOpRef parts_node() const TINYGRAD_MEMBER_DEF({
    UOpRef m = impl_->uop;
    if (!m->multi_value && m->is_param()) m = m->src[0];  // a parameter's value: its node's, or the one below it
    return m->multi_value ? m->multi_value.get() : m;
  })
  // how a realized tensor is split: the axis (-1: copies) and each part's shape; none for one device
  std::pair<int64_t, std::vector<Shape>> device_split() const TINYGRAD_MEMBER_DEF({
    if (!on_many()) return {-1, {}};
    UOpRef m = parts_node();
    std::vector<Shape> parts;
    for (size_t i = 1; i < m->src.size(); i++) parts.push_back(m->src[i]->shape);
    return {m->iarg(), parts};
  })
  // a tensor over buffers (one per device of `device`) split as `sp`
  static Tensor of_buffers(const std::vector<std::shared_ptr<Buffer>>& bufs, const Shape& shape, const std::string& device,
                           const std::pair<int64_t, std::vector<Shape>>& sp) TINYGRAD_MEMBER_DEF({
    if (device.find(',') == std::string::npos) return of_buffer(bufs[0], shape);
    std::vector<UOpRef> src{make_uop(Ops::DEVICE, DType::Bool, {}, device)};
    for (size_t i = 0; i < bufs.size(); i++) src.push_back(of_buffer(bufs[i], sp.second[i]).uop());
    return Tensor(make_uop(Ops::MULTI, bufs[0]->dtype, std::move(src), sp.first), device);
  })
  static std::string join_devices(const std::vector<std::string>& devices, const char* op) TINYGRAD_MEMBER_DEF({
    std::string g;
    for (auto& d : devices) {
      if (d.empty() || d.find(',') != std::string::npos) throw DeviceError(std::string("tinygrad::") + op + ": bad device name '" + d + "'");
      if (g.find(d) != std::string::npos && std::count(devices.begin(), devices.end(), d) > 1)
        throw DeviceError(std::string("tinygrad::") + op + ": device " + d + " is listed twice");
      g += (g.empty() ? "" : ",") + d;
    }
    if (g.empty()) throw DeviceError(std::string("tinygrad::") + op + ": needs at least one device");
    return g;
  })
  static std::string same_device(const std::string& a, const std::string& b, const char* op) TINYGRAD_MEMBER_DEF({
    if (a != b)
      throw DeviceError(std::string("tinygrad::") + op + ": tensors are on different devices (" + a + " and " + b + "); move one with .to()");
    return a;
  })
  static Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) TINYGRAD_MEMBER_DEF({
    size_t n = std::max(a.size(), b.size());
    Shape r(n);
    for (size_t i = 0; i < n; i++) {
      int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())], y = i < n - b.size() ? 1 : b[i - (n - b.size())];
      if (x != y && x != 1 && y != 1)
        throw ShapeError(std::string("tinygrad::") + op + ": shapes " + to_string(a) + " and " + to_string(b) + " cannot be broadcast together");
      r[i] = x == 1 ? y : x;
    }
    return r;
  })
  static std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, const char* op) TINYGRAD_MEMBER_DEF({
    same_device(a.device(), b.device(), op);
    Shape s = broadcast_shape(a.shape(), b.shape(), op);
    auto d = broadcast_dyn({&a, &b}, s, op);
    DType dt = least_upper_dtype(a.dtype(), b.dtype());
    return {a.cast(dt).expand_to(s, d), b.cast(dt).expand_to(s, d)};
  })
  Tensor binop(Ops op, const Tensor& o, const char* name) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = broadcast_pair(*this, o, name);
    if ((op == Ops::AND || op == Ops::OR || op == Ops::XOR || op == Ops::IDIV) && is_float(a.dtype()))
      throw DTypeError(std::string("tinygrad::") + name + ": needs integer or bool tensors, got " + to_string(a.dtype()));
    return Tensor(detail::alu(op, {a.uop(), b.uop()}), a.device());
  })
  Tensor binop_sub(const Tensor& o) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = broadcast_pair(*this, o, "sub");
    if (a.dtype() == DType::Bool) throw DTypeError("tinygrad::sub: subtracting bool tensors is not supported");
    return a + b.neg();
  })
  std::vector<int64_t> norm_axes(const std::vector<int64_t>& axes, const char* op) const TINYGRAD_MEMBER_DEF({
    std::vector<int64_t> r;
    if (axes.empty()) { for (size_t i = 0; i < ndim(); i++) r.push_back(int64_t(i)); return r; }
    for (auto a : axes) {
      int64_t x = detail::norm_axis(a, ndim(), op);
      if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
    }
    std::sort(r.begin(), r.end());
    return r;
  })
  // REDUCE_AXIS keeping dims. NOTE: a long reduce into few outputs is split over two kernels by the scheduler
  // (split_reduceop in engine/schedule.hpp), which knows the device's parallelism
  Tensor reduce_axis(Ops op, const std::vector<int64_t>& ax) const TINYGRAD_MEMBER_DEF({
    std::vector<int64_t> a{int64_t(op)};
    a.insert(a.end(), ax.begin(), ax.end());
    return Tensor(make_uop(Ops::REDUCE_AXIS, dtype(), {uop()}, a), device());
  })
  Tensor reduce(Ops op, std::vector<int64_t> axes, bool keepdim, const char* name) const TINYGRAD_MEMBER_DEF({
    auto ax = norm_axes(axes, name);
    Tensor x = *this;
    DType out_dt = dtype();
    // sum and prod of bools and ints are int64 (as torch: no wrap at 2^31; tinygrad keeps int32), half floats accumulate in float32
    if (op != Ops::MAX) {
      if (is_bool(dtype()) || is_int(dtype())) out_dt = DType::Int64;
      if (dtype() == DType::Float16 || dtype() == DType::BFloat16) x = x.cast(DType::Float32);
      else x = x.cast(out_dt);
    }
    Tensor r = ax.empty() || ndim() == 0 ? x : x.reduce_axis(op, ax);
    r = r.cast(out_dt);
    if (keepdim) return r;
    Shape s;
    for (size_t i = 0; i < ndim(); i++) if (std::find(ax.begin(), ax.end(), int64_t(i)) == ax.end()) s.push_back(shape()[i]);
    return r.reshape(s);
  })
};

namespace detail {
// an index check left on the device: the least and greatest index (in the index's dtype), computed at the next sync
struct IndexCheck {
  Tensor mn, mx;
  int64_t lo, n;
  std::string op;
  int dim;
};
TINYGRAD_API std::vector<IndexCheck>& index_checks() TINYGRAD_DEF({ static thread_local std::vector<IndexCheck> v; return v; })

TINYGRAD_API void check_indices(const Tensor& idx, int64_t n, bool wrap, const char* op, int dim) TINYGRAD_DEF({
  if (check_index_values(idx.uop(), n, wrap, op, dim) || jit_recorder()) return;
  // NOTE: indices over a buffer that holds nothing yet (a static plan's placeholders, empty()) have no value to check
  for (auto& u : toposort(idx.uop()))
    if (is_leaf(u.get()))
      if (auto b = u->leaf_buffer(); !b || !b->allocated()) return;
  auto& v = index_checks();
  v.push_back({idx.min(), idx.max(), wrap ? -n : 0, n, op, dim});
  if (v.size() >= 64) read_index_checks();  // NOTE: bounded, where a loop never reads a value back
})

TINYGRAD_API void read_index_checks() TINYGRAD_DEF({
  auto& v = index_checks();
  if (v.empty()) return;
  std::vector<IndexCheck> checks = std::move(v);  // NOTE: first: reading them back is a sync too
  v.clear();
  for (auto& c : checks) {
    Tensor::realize_all({c.mn, c.mx});  // NOTE: one device a schedule: each check's own
    auto value = [](const Tensor& t) {
      return t.dtype() == DType::UInt64 ? i128(t.item<uint64_t>()) : i128(t.item<int64_t>());
    };
    i128 mn = value(c.mn), mx = value(c.mx);
    if (mn < c.lo || mx >= c.n) throw index_error(c.op.c_str(), mx >= c.n ? mx : mn, c.lo, c.n, c.dim);
  }
})
}  // namespace detail

#if defined(TINYGRAD_SEPARATE_COMPILATION)
// the mixins' members are compiled once, in the implementation TU (tinygrad/impl.hpp), not in every TU that calls them
#if TINYGRAD_DEFINE_API
#define TINYGRAD_MIXIN_INSTANCE template struct
#else
#define TINYGRAD_MIXIN_INSTANCE extern template struct
#endif
TINYGRAD_MIXIN_INSTANCE detail::CreationOps<Tensor>;
TINYGRAD_MIXIN_INSTANCE detail::ElementwiseOps<Tensor>;
TINYGRAD_MIXIN_INSTANCE detail::MovementOps<Tensor>;
TINYGRAD_MIXIN_INSTANCE detail::ProcessingOps<Tensor>;
TINYGRAD_MIXIN_INSTANCE detail::ReduceOps<Tensor>;
#undef TINYGRAD_MIXIN_INSTANCE
#endif

}  // namespace tinygrad
