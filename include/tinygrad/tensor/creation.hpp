#pragma once
// Tensor methods: creation helpers and random tensors.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
// Random tensors come from Tensor::rand (a counter-based hash of seed and position), so a manual_seed
// reproduces every one of them.
#include <string_view>
#include "mixin.hpp"

namespace tinygrad::detail {

template <class T>
struct CreationOps {
 public:

  // ---- like another tensor: same shape and device, its dtype unless given ----
  /// a tensor of self's shape and device filled with v
  T full_like(double v, std::optional<DType> dt = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return T::full(self().shape(), v, dt.value_or(self().dtype()), self().device());
  })
  /// zeros of self's shape and device
  T zeros_like(std::optional<DType> dt = std::nullopt) const TINYGRAD_MEMBER_DEF({ return full_like(0, dt); })
  /// ones of self's shape and device
  T ones_like(std::optional<DType> dt = std::nullopt) const TINYGRAD_MEMBER_DEF({ return full_like(1, dt); })
  /// an uninitialized tensor of self's shape and device
  T empty_like(std::optional<DType> dt = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return T::empty(self().shape(), dt.value_or(self().dtype()), self().device());
  })
  /// uniform [0, 1) of self's shape and device
  T rand_like(std::optional<DType> dt = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return T::rand(self().shape(), dt.value_or(float_dt()), self().device());
  })
  /// standard normal of self's shape and device
  T randn_like(std::optional<DType> dt = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return T::randn(self().shape(), dt.value_or(float_dt()), self().device());
  })

  // ---- creation ----
  /// steps values from start to stop, both included
  static T linspace(double start, double stop, int64_t steps, std::optional<DType> dtype = std::nullopt,
                    std::string device = "") TINYGRAD_MEMBER_DEF({
    if (steps < 0) throw Error("tinygrad::linspace: steps must be non-negative, got " + std::to_string(steps));
    DType dt = dtype.value_or(dtypes::default_float), ft = is_float(dt) ? dt : dtypes::default_float;
    if (steps == 1) return T::full({1}, start, dt, std::move(device));
    return (T::arange(double(steps), std::nullopt, 1, ft, std::move(device)) * ((stop - start) / double(steps - 1)) + start).cast(dt);
  })
  /// coordinate grids: "ij" gives shape (n0, n1, ...), "xy" swaps the first two (inputs are flattened)
  static std::vector<T> meshgrid(const std::vector<T>& ts, std::string_view indexing = "ij") TINYGRAD_MEMBER_DEF({
    if (indexing != "ij" && indexing != "xy")
      throw Error("tinygrad::meshgrid: indexing must be \"ij\" or \"xy\", got \"" + std::string(indexing) + "\"");
    if (ts.size() <= 1) return ts;
    Shape out;
    for (auto& t : ts) out.push_back(t.numel());
    if (indexing == "xy") std::swap(out[0], out[1]);
    std::vector<T> r;
    for (size_t i = 0; i < ts.size(); i++) {
      Shape rs(ts.size(), 1);
      rs[indexing == "xy" && i < 2 ? 1 - i : i] = ts[i].numel();
      r.push_back(ts[i].reshape(rs).expand(out));
    }
    return r;
  })
  /// wrap caller memory without a copy: host memory (the host device, the default) or a device pointer of `device`;
  /// it must outlive every use
  static T from_blob(void* ptr, Shape shape, DType dt, std::string device = "") TINYGRAD_MEMBER_DEF({
    int64_t n = T::check_shape(shape, "from_blob");
    if (!ptr && n > 0) throw Error("tinygrad::from_blob: null pointer for shape " + to_string(shape));
    std::string dev = device.empty() ? host_device() : device;  // NOTE: not default_device(): a host pointer is host memory
    auto buf = std::make_shared<Buffer>(dev, dt, n, ptr);
    return T::of_buffer(std::move(buf), shape);
  })

  // ---- random ----
  /// integers uniform in [low, high), torch's order and its int64 default; drawn from rand (manual_seed seeds it)
  static T randint(int64_t low, int64_t high, Shape shape, DType dt = DType::Int64, std::string device = "") TINYGRAD_MEMBER_DEF({
    if (high <= low) throw Error("tinygrad::randint: high (" + std::to_string(high) + ") must be greater than low (" + std::to_string(low) + ")");
    if (!is_int(dt)) throw DTypeError("tinygrad::randint: needs an integer dtype, got " + to_string(dt));
    double n = double(high - low);
    return (T::rand(std::move(shape), DType::Float64, std::move(device)) * n).floor().minimum(n - 1).cast(dt) + double(low);
  })
  /// torch.randint(high, size): low 0
  static T randint(int64_t high, Shape shape, DType dt = DType::Int64, std::string device = "") TINYGRAD_MEMBER_DEF({
    return randint(0, high, std::move(shape), dt, std::move(device));
  })
  /// normal(mean, std) samples (torch.normal with float arguments)
  static T normal(Shape shape, double mean = 0, double std = 1, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    return (T::randn(std::move(shape), dt, std::move(device)) * std + mean).cast(dt);
  })
  /// uniform [low, high) samples (torch's Tensor.uniform_)
  static T uniform(Shape shape, double low = 0, double high = 1, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    return (T::rand(std::move(shape), dt, std::move(device)) * (high - low) + low).cast(dt);
  })
  /// uniform in [-1, 1) / sqrt(numel)
  static T scaled_uniform(Shape shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    double s = std::pow(double(T::check_shape(shape, "scaled_uniform")), -0.5);
    return (uniform(std::move(shape), -1, 1, dt, std::move(device)) * s).cast(dt);
  })
  /// https://www.tensorflow.org/api_docs/python/tf/keras/initializers/GlorotUniform
  static T glorot_uniform(Shape shape, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    double b = std::sqrt(6.0 / double(fan_in(shape, "glorot_uniform") + shape[0]));
    return uniform(std::move(shape), -b, b, dt, std::move(device));
  })
  /// https://pytorch.org/docs/stable/nn.init.html#torch.nn.init.kaiming_uniform_
  static T kaiming_uniform(Shape shape, double a = 0.01, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    double b = std::sqrt(3.0) * std::sqrt(2.0 / (1 + a * a)) / std::sqrt(double(fan_in(shape, "kaiming_uniform")));
    return uniform(std::move(shape), -b, b, dt, std::move(device));
  })
  /// He initialization, tinygrad's (a = 0.01 leaky relu slope), not torch's kaiming_normal_ default (a = 0)
  static T kaiming_normal(Shape shape, double a = 0.01, DType dt = dtypes::default_float, std::string device = "") TINYGRAD_MEMBER_DEF({
    double s = std::sqrt(2.0 / (1 + a * a)) / std::sqrt(double(fan_in(shape, "kaiming_normal")));
    return normal(std::move(shape), 0, s, dt, std::move(device));
  })
  /// a random permutation of 0..n-1: the argsort of random keys (ties keep their order, so it is always a permutation)
  static T randperm(int64_t n, DType dt = DType::Int32, std::string device = "") TINYGRAD_MEMBER_DEF({
    if (n < 0) throw Error("tinygrad::randperm: n must be non-negative, got " + std::to_string(n));
    return T::rand({n}, DType::Float32, std::move(device)).argsort().cast(dt);
  })
  /// num_samples class indices per row of the weights (K) or (B, K), int32; without replacement by Gumbel top-k
  T multinomial(int64_t num_samples = 1, bool replacement = false) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (x.ndim() < 1 || x.ndim() > 2) throw ShapeError("tinygrad::multinomial: weights must be 1-D or 2-D, got shape " + to_string(x.shape()));
    if (num_samples < 1) throw Error("tinygrad::multinomial: num_samples must be positive, got " + std::to_string(num_samples));
    T w = x.ndim() == 1 ? x.unsqueeze(0) : x;
    int64_t b = w.shape()[0], k = w.shape()[1];
    if (!replacement && num_samples > k)
      throw Error("tinygrad::multinomial: cannot draw " + std::to_string(num_samples) + " samples without replacement from " +
                  std::to_string(k) + " categories");
    T r;
    if (replacement || num_samples == 1) {
      // count the cdf entries at or below a uniform sample
      T cw = w.fl().cumsum(1), cdf = cw / cw.shrink({{0, b}, {k - 1, k}});
      T u = T::rand({num_samples, b, 1}, DType::Float32, x.device());
      r = (u >= cdf.unsqueeze(0)).sum(2).minimum(double(k - 1)).permute({1, 0});
    } else {
      // log w + Gumbel noise, top num_samples: sequential sampling without replacement in one go
      T u = T::rand({b, k}, DType::Float64, x.device()) + std::ldexp(1.0, -25);
      r = (w.fl().cast(DType::Float64).log() - (-u.log()).log()).topk(num_samples, 1).second;
    }
    return (x.ndim() == 1 ? r.reshape({num_samples}) : r).cast(DType::Int64);  // int64, as torch
  })
  /// zero each element with probability p and scale the rest by 1/(1-p); identity unless training
  T dropout(double p = 0.5) const TINYGRAD_MEMBER_DEF({
    if (!(p >= 0 && p <= 1)) throw Error("tinygrad::dropout: p must be in [0, 1], got " + std::to_string(p));
    if (!tinygrad::training() || p == 0) return self();
    if (p == 1) return self() * 0.0;
    return (rand_like(DType::Float32) >= p).where(self(), 0.0) * (1.0 / (1.0 - p));
  })

 private:
  const T& self() const TINYGRAD_MEMBER_DEF({ return static_cast<const T&>(*this); })
  DType float_dt() const TINYGRAD_MEMBER_DEF({ return is_float(self().dtype()) ? self().dtype() : dtypes::default_float; })
  static int64_t fan_in(const Shape& s, const char* op) TINYGRAD_MEMBER_DEF({
    if (s.empty()) throw ShapeError(std::string("tinygrad::") + op + ": needs at least one dimension, got shape " + to_string(s));
    T::check_shape(s, op);  // then the product of any of its dims fits
    return tinygrad::detail::prod(Shape(s.begin() + 1, s.end()));
  })
};

}  // namespace tinygrad::detail
