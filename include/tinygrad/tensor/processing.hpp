#pragma once
// Tensor methods: convolutions, pooling, normalization, attention, einsum.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
#include <cmath>
#include <map>
#include "movement.hpp"

namespace tinygrad {

// a size argument of a conv or pool, like torch's int-or-tuple: one value for every spatial dim (2) or one per dim ({2, 1})
struct Ints : std::vector<int64_t> {
  Ints() = default;
  Ints(std::nullopt_t) {}  // torch's None: a pool's stride defaults to its kernel
  Ints(int64_t v) : std::vector<int64_t>{v} {}
  Ints(std::initializer_list<int64_t> v) : std::vector<int64_t>(v) {}
  Ints(std::vector<int64_t> v) : std::vector<int64_t>(std::move(v)) {}
};
namespace detail {
// NOTE: the first member of the options structs: a plain list ({2, 1}) cannot initialize them, so x.max_pool2d({2, 1}) stays a
// kernel; only designated initializers ({.stride = 2}) select the options overload
struct DesignatedOnly {};
}  // namespace detail

// torch's keyword arguments of conv1d/conv2d/conv3d/conv_transpose2d: x.conv2d(w, {.stride = 2, .padding = 1}).
// padding: one value, one per dim, or (before, after) per dim. output_padding: conv_transpose2d only.
struct ConvOptions {
  [[no_unique_address]] detail::DesignatedOnly designated_only{};
  Ints stride = 1, padding = 0, dilation = 1;
  int64_t groups = 1;
  Ints output_padding = 0;
};
// torch's keyword arguments of max_pool2d/avg_pool2d: x.max_pool2d({.kernel = 3, .stride = 2, .padding = 1}).
// stride: empty is the kernel. count_include_pad and divisor_override: avg_pool2d only.
struct PoolOptions {
  [[no_unique_address]] detail::DesignatedOnly designated_only{};
  Ints kernel = 2, stride = {}, padding = 0, dilation = 1;
  bool ceil_mode = false, count_include_pad = true;
  std::optional<int64_t> divisor_override = std::nullopt;
};

}  // namespace tinygrad

namespace tinygrad::detail {

template <class T>
struct ProcessingOps {
 public:
  // ---- convolutions (conv2d, in tensor.hpp, is n-d; these check the rank). torch's positional order; ConvOptions for keywords ----
  // NOTE: the positional forms are templates so that a designated list ({.padding = 1}) picks the options form on every compiler
  /// torch.nn.functional.conv1d (its positional order)
  template <class = void>
  T conv1d(const T& w, const std::optional<T>& bias = std::nullopt, Ints stride = 1, Ints padding = 0, Ints dilation = 1, int64_t groups = 1) const {
    return conv1d(w, bias, {.stride = std::move(stride), .padding = std::move(padding), .dilation = std::move(dilation), .groups = groups});
  }
  /// conv1d with options: x.conv1d(w, {.stride = 2})
  T conv1d(const T& w, const ConvOptions& o) const { return conv1d(w, std::nullopt, o); }
  /// conv1d with a bias and options
  T conv1d(const T& w, const std::optional<T>& bias, const ConvOptions& o) const TINYGRAD_MEMBER_DEF({
    check_conv_rank(w, 3, "conv1d");
    return self().conv2d(w, bias, o);
  })
  /// torch.nn.functional.conv3d (its positional order)
  template <class = void>
  T conv3d(const T& w, const std::optional<T>& bias = std::nullopt, Ints stride = 1, Ints padding = 0, Ints dilation = 1, int64_t groups = 1) const {
    return conv3d(w, bias, {.stride = std::move(stride), .padding = std::move(padding), .dilation = std::move(dilation), .groups = groups});
  }
  /// conv3d with options
  T conv3d(const T& w, const ConvOptions& o) const { return conv3d(w, std::nullopt, o); }
  /// conv3d with a bias and options
  T conv3d(const T& w, const std::optional<T>& bias, const ConvOptions& o) const TINYGRAD_MEMBER_DEF({
    check_conv_rank(w, 5, "conv3d");
    return self().conv2d(w, bias, o);
  })
  /// x (N, Cin, *in) and w (Cin, Cout/groups, *k) -> (N, Cout, *out), out = (in-1)*s - pB - pA + d*(k-1) + output_padding + 1.
  /// The gradient of conv2d: zeros between input pixels for the stride, then a conv with the flipped, transposed kernel.
  template <class = void>
  T conv_transpose2d(const T& w, const std::optional<T>& bias = std::nullopt, Ints stride = 1, Ints padding = 0, Ints output_padding = 0,
                     int64_t groups = 1, Ints dilation = 1) const {
    return conv_transpose2d(w, bias, {.stride = std::move(stride), .padding = std::move(padding), .dilation = std::move(dilation),
                                      .groups = groups, .output_padding = std::move(output_padding)});
  }
  /// conv_transpose2d with options
  T conv_transpose2d(const T& w, const ConvOptions& o) const { return conv_transpose2d(w, std::nullopt, o); }
  /// conv_transpose2d with a bias and options
  T conv_transpose2d(const T& w, const std::optional<T>& bias, const ConvOptions& o) const TINYGRAD_MEMBER_DEF({
    auto& x0 = self();
    const char* op = "conv_transpose2d";
    if (x0.ndim() < 3 || w.ndim() != x0.ndim())
      throw ShapeError(std::string("tinygrad::") + op + ": weight " + to_string(w.shape()) + " and input " +
                       to_string(x0.shape()) + " ranks do not fit");
    size_t nsp = x0.ndim() - 2;
    int64_t cin = w.shape()[0], groups = o.groups;
    if (cin != x0.shape()[1])
      throw ShapeError(std::string("tinygrad::") + op + ": weight " + to_string(w.shape()) + " needs " + std::to_string(cin) +
                       " input channels, input has shape " + to_string(x0.shape()));
    if (groups <= 0 || cin % groups)
      throw ShapeError(std::string("tinygrad::") + op + ": " + std::to_string(cin) + " input channels do not divide into " + std::to_string(groups) +
                       " groups (weight " + to_string(w.shape()) + ")");
    auto stride = per_dim(o.stride, nsp, "stride", op, 1), dilation = per_dim(o.dilation, nsp, "dilation", op, 1);
    auto output_padding = per_dim(o.output_padding, nsp, "output_padding", op, 0);
    auto pads = pad_pairs(o.padding, nsp, op);
    for (size_t i = 0; i < nsp; i++)
      if (output_padding[i] >= std::max(stride[i], dilation[i]))
        throw ShapeError(std::string("tinygrad::") + op + ": output_padding " + to_string(output_padding) +
                         " must be smaller than stride or dilation");
    T x = x0;
    Shape ks(w.shape().begin() + 2, w.shape().end());
    if (std::any_of(stride.begin(), stride.end(), [](auto s) { return s > 1; })) {
      // (k) -> (k, 1) -> pad -> (k, s) -> (k*s) -> shrink to k*s-(s-1)
      Shape s1(x.shape().begin(), x.shape().begin() + 2), s2 = s1;
      Pads p(2, {0, 0}), sh;
      for (size_t i = 0; i < nsp; i++) {
        int64_t k = x.shape()[2 + i];
        s1.insert(s1.end(), {k, 1}); p.push_back({0, 0}); p.push_back({0, stride[i] - 1}); s2.push_back(k * stride[i]);
      }
      for (size_t i = 0; i < 2; i++) sh.push_back({0, x.shape()[i]});
      for (size_t i = 0; i < nsp; i++) sh.push_back({0, s2[2 + i] - (stride[i] - 1)});
      x = x.reshape(s1).pad(p).reshape(s2).shrink(sh);
    }
    std::vector<int64_t> flips, cpad;
    for (size_t i = 0; i < nsp; i++) {
      flips.push_back(int64_t(3 + i));
      int64_t e = (ks[i] - 1) * dilation[i];
      cpad.push_back(e - pads[i].first); cpad.push_back(e - pads[i].second + output_padding[i]);
    }
    T wt = w.unflatten(0, {groups, -1}).transpose(1, 2).flip(flips).flatten(0, 1);
    return x.conv2d(wt, bias, {.padding = cpad, .dilation = dilation, .groups = groups});
  })

  // ---- pooling over the last kernel.size() dims (a single value means 2 dims). torch's positional order; PoolOptions for keywords ----
  /// padding: one value, one per dim, or (before, after) per dim; stride: empty (or std::nullopt) is the kernel
  template <class = void>
  T max_pool2d(Ints kernel = 2, Ints stride = {}, Ints padding = 0, Ints dilation = 1, bool ceil_mode = false) const {
    return max_pool2d({.kernel = std::move(kernel), .stride = std::move(stride), .padding = std::move(padding), .dilation = std::move(dilation),
                       .ceil_mode = ceil_mode});
  }
  /// max_pool2d with options: x.max_pool2d({.kernel = 3, .stride = 2, .padding = 1})
  T max_pool2d(const PoolOptions& o) const TINYGRAD_MEMBER_DEF({
    auto a = pool_args(o.kernel, o.stride, o.dilation, o.padding, o.ceil_mode, "max_pool2d");
    return pooled(a, dtype_min(self().dtype())).max(a.axes);
  })
  /// {values, indices}: indices into the flattened spatial dims of the input (the first maximum of each window), like torch
  template <class = void>
  std::pair<T, T> max_pool2d_with_indices(Ints kernel = 2, Ints stride = {}, Ints padding = 0, Ints dilation = 1, bool ceil_mode = false) const {
    return max_pool2d_with_indices({.kernel = std::move(kernel), .stride = std::move(stride), .padding = std::move(padding),
                                    .dilation = std::move(dilation), .ceil_mode = ceil_mode});
  }
  /// max_pool2d with options, with indices
  std::pair<T, T> max_pool2d_with_indices(const PoolOptions& o) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    auto a = pool_args(o.kernel, o.stride, o.dilation, o.padding, o.ceil_mode, "max_pool2d");
    T p = pooled(a, dtype_min(x.dtype()));
    T mx = p.max(a.axes, true);
    Shape sp(x.shape().end() - int64_t(a.ks.size()), x.shape().end());
    int64_t n = tinygrad::detail::prod(sp);
    // reversed positions, so that the max picks the first maximum
    T idx = T::arange(double(n), 0.0, -1, dtypes::default_int, x.device()).reshape(sp);
    Pads ip(a.pads.end() - int64_t(a.ks.size()), a.pads.end());
    T ipool = idx.pad(ip, dtype_min(idx.dtype())).pool(a.ks, a.st, a.dl, "max_pool2d");
    Shape out = mx.shape();
    out.resize(out.size() - a.ks.size());
    T key = (p == mx).where(ipool, 0.0);
    if (!is_float(x.dtype())) return {mx.reshape(out), (double(n) - key.max(a.axes)).detach()};
    // NOTE: a window holding NaN gives NaN and, like torch, the index of its last NaN: the smallest reversed
    // position, found by the same max as -position (padding is -inf, never NaN)
    T hasnan = mx.isnan();
    key = hasnan.where(p.isnan().where(-ipool, dtype_min(ipool.dtype())), key).max(a.axes);
    T index = hasnan.reshape(out).where(double(n) + key, double(n) - key);
    return {mx.reshape(out), index.detach()};
  })
  /// torch's order (no dilation: PoolOptions has one); count_include_pad: padding counts in the divisor; divisor_override: the divisor
  template <class = void>
  T avg_pool2d(Ints kernel = 2, Ints stride = {}, Ints padding = 0, bool ceil_mode = false, bool count_include_pad = true,
               std::optional<int64_t> divisor_override = std::nullopt) const {
    return avg_pool2d({.kernel = std::move(kernel), .stride = std::move(stride), .padding = std::move(padding), .ceil_mode = ceil_mode,
                       .count_include_pad = count_include_pad, .divisor_override = divisor_override});
  }
  /// avg_pool2d with options
  T avg_pool2d(const PoolOptions& o) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    auto a = pool_args(o.kernel, o.stride, o.dilation, o.padding, false, "avg_pool2d");
    auto c = pool_args(o.kernel, o.stride, o.dilation, o.padding, o.ceil_mode, "avg_pool2d");
    auto pool = [&](const T& t, const Pads& p) { return t.pad(p).pool(a.ks, a.st, a.dl, "avg_pool2d").sum(a.axes); };
    if (o.divisor_override) {
      if (*o.divisor_override == 0) throw Error("tinygrad::avg_pool2d: divisor_override must not be 0");
      return pool(x, c.pads) / double(*o.divisor_override);
    }
    T ones = T::ones(x.shape(), x.dtype(), x.device());
    if (!o.count_include_pad) return pool(x, c.pads) / pool(ones, c.pads);
    if (!o.ceil_mode) return x.pad(a.pads).pool(a.ks, a.st, a.dl, "avg_pool2d").mean(a.axes);
    // ceil_mode: windows hanging over the end count only up to the (regular) padding
    Pads extra;
    for (size_t i = 0; i < a.pads.size(); i++) extra.push_back({c.pads[i].first - a.pads[i].first, c.pads[i].second - a.pads[i].second});
    return pool(x, c.pads) / T::ones(x.pad(a.pads).shape(), x.dtype(), x.device()).pad(extra).pool(a.ks, a.st, a.dl, "avg_pool2d").sum(a.axes);
  })

  // ---- normalization ----
  /// (x - mean) / sqrt(var + eps) over axes (biased variance)
  /// float16 and bfloat16 are normalized in float32 and rounded once (as torch): their squares overflow past 256
  T layernorm(std::vector<int64_t> axes = {-1}, double eps = 1e-5) const TINYGRAD_MEMBER_DEF({
    return layernorm_acc(axes, eps).cast(self().fl().dtype());
  })
  /// torch's F.layer_norm: normalize the trailing dims `normalized_shape`, then scale and shift elementwise
  T layer_norm(const Shape& normalized_shape, const std::optional<T>& weight = std::nullopt, const std::optional<T>& bias = std::nullopt,
               double eps = 1e-5) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    size_t k = normalized_shape.size();
    if (k == 0 || k > x.ndim() || !std::equal(normalized_shape.begin(), normalized_shape.end(), x.shape().end() - int64_t(k)))
      throw ShapeError("tinygrad::layer_norm: normalized_shape " + to_string(normalized_shape) +
                       " is not the end of input shape " + to_string(x.shape()));
    for (auto* p : {&weight, &bias})
      if (*p && (*p)->shape() != normalized_shape)
        throw ShapeError("tinygrad::layer_norm: weight/bias shape " + to_string((*p)->shape()) + " is not normalized_shape " +
                         to_string(normalized_shape));
    std::vector<int64_t> axes;
    for (size_t i = 0; i < k; i++) axes.push_back(-1 - int64_t(i));
    DType dt = x.fl().dtype();
    T y = x.layernorm_acc(axes, eps);  // the affine in float32 too, one rounding at the end
    if (weight) { y = y * *weight; dt = least_upper_dtype(dt, weight->dtype()); }
    if (bias) { y = y + *bias; dt = least_upper_dtype(dt, bias->dtype()); }
    return y.cast(dt);
  })
  /// (x - mean) * invstd * weight + bias, the statistics along `axes` (channels: 1) and broadcast elsewhere
  T batchnorm(const std::optional<T>& weight, const std::optional<T>& bias, const T& mean, const T& invstd,
              std::vector<int64_t> axes = {1}) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    Shape s(x.ndim(), 1), chan;
    for (auto a : axes) { int d = norm_axis(a, x.ndim(), "batchnorm"); s[size_t(d)] = x.shape()[size_t(d)]; }
    for (size_t i = 0; i < s.size(); i++) if (s[i] != 1 || std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end()) chan.push_back(s[i]);
    auto fit = [&](const T& t, const char* what) {
      if (t.numel() != tinygrad::detail::prod(s))
        throw ShapeError(std::string("tinygrad::batchnorm: ") + what + " of shape " + to_string(t.shape()) + " does not fit input " +
                         to_string(x.shape()) + " along axes " + to_string(axes));
      return t.reshape(s);
    };
    T y = x - fit(mean, "mean");
    if (weight) y = y * fit(*weight, "weight");
    y = y * fit(invstd, "invstd");
    return bias ? y + fit(*bias, "bias") : y;
  })

  /// F.normalize: x / max(norm(x, p, dim), eps)
  T normalize(double p = 2, int64_t dim = 1, double eps = 1e-12) const TINYGRAD_MEMBER_DEF({
    return self() / self().norm(p, {dim}, true).maximum(eps);
  })
  /// F.cosine_similarity with torch's formula: each side over its 2-norm clamped to eps, then the products summed
  /// along dim. The clamp passes the gradient through (torch clamps in place under no_grad)
  T cosine_similarity(const T& other, int64_t dim = 1, double eps = 1e-8) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self().fl(), other.fl(), "cosine_similarity");
    auto unit = [&](const T& v) {
      T n = v.norm(2, {dim}, true);
      return v / (n + (n.maximum(eps) - n).detach());
    };
    return (unit(a) * unit(b)).sum(dim);
  })

  // ---- attention ----
  /// softmax(q k^T / sqrt(d) + mask) v; a bool mask keeps the true entries. No dropout.
  T scaled_dot_product_attention(const T& key, const T& value, const std::optional<T>& attn_mask = std::nullopt,
                                 bool is_causal = false) const TINYGRAD_MEMBER_DEF({
    auto& q = self();
    const char* op = "scaled_dot_product_attention";
    if (q.ndim() < 2 || key.ndim() < 2 || value.ndim() < 2 || q.shape().back() != key.shape().back() ||
        key.shape()[key.ndim() - 2] != value.shape()[value.ndim() - 2])
      throw ShapeError(std::string("tinygrad::") + op + ": query " + to_string(q.shape()) + ", key " + to_string(key.shape()) + " and value " +
                       to_string(value.shape()) + " do not fit");
    if (is_causal && attn_mask) throw Error(std::string("tinygrad::") + op + ": cannot take attn_mask with is_causal");
    T qk = q.matmul(key.transpose(-2, -1)) * (1.0 / std::sqrt(double(q.shape().back())));
    std::optional<T> m = attn_mask;
    if (is_causal) m = T::ones({qk.shape()[qk.ndim() - 2], qk.shape().back()}, DType::Bool, q.device()).tril();
    if (m) {
      try { T::broadcast_shape(qk.shape(), m->shape(), op); } catch (const ShapeError&) {
        throw ShapeError(std::string("tinygrad::") + op + ": attn_mask " + to_string(m->shape()) +
                         " does not broadcast to the scores " + to_string(qk.shape()));
      }
      qk = qk + (is_bool(m->dtype()) ? m->where(0.0, -std::numeric_limits<double>::infinity()).cast(qk.dtype()) : *m);
    }
    if (!m || is_causal) return qk.softmax(-1).matmul(value);  // NOTE: every row keeps a key: the plain softmax
    // a query row whose keys are all masked (all -inf) gives 0, as torch's (bool or float mask), not exp(-inf + inf) / 0 = NaN;
    // the guarded max and sum keep its gradient 0 too
    T mx = qk.reduce(Ops::MAX, {int64_t(qk.ndim()) - 1}, true, op).detach();
    T e = (qk - (mx == -std::numeric_limits<double>::infinity()).where(0.0, mx)).exp(), s = e.sum(-1, true);
    return (e / (s == 0.0).where(1.0, s)).matmul(value);
  })

  // ---- misc ----
  /// integer classes -> (..., num_classes) int64 (as torch); num_classes -1 reads max+1 (realizes x)
  T one_hot(int64_t num_classes = -1) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (!is_int(x.dtype())) throw DTypeError("tinygrad::one_hot: needs an integer tensor, got " + to_string(x.dtype()));
    if (num_classes < 0) num_classes = x.numel() ? int64_t(x.max().template item<double>()) + 1 : 0;
    check_indices(x, std::max<int64_t>(num_classes, 0), false, "one_hot");
    return (x.unsqueeze(-1) == T::arange(double(num_classes), std::nullopt, 1, x.dtype(), x.device())).cast(DType::Int64);
  })
  /// lower / upper triangle of the last two dims (others zero); diagonal shifts the edge up (+) or down (-)
  T tril(int64_t diagonal = 0) const TINYGRAD_MEMBER_DEF({ return tri(diagonal + 1, "tril").where(zero(), self()); })
  /// torch.triu: zeros below the diagonal
  T triu(int64_t diagonal = 0) const TINYGRAD_MEMBER_DEF({ return tri(diagonal, "triu").where(self(), zero()); })

  /// resize the last size.size() dims. mode: "nearest" (torch's default), "nearest-exact", "linear" (also "bilinear",
  /// "trilinear")
  T interpolate(const Shape& size, const std::string& mode = "nearest", bool align_corners = false) const TINYGRAD_MEMBER_DEF({
    return resize(size, {}, mode, align_corners);
  })
  /// torch's F.interpolate(x, None, scale_factor, mode): x is (N, C, *spatial), scale_factor one value or one per spatial
  /// dim; the size is floor(in * scale) and, as torch's recompute_scale_factor=None, sampling uses 1 / scale itself
  /// (not in / out) unless align_corners
  T interpolate(std::nullopt_t, const std::vector<double>& scale_factor, const std::string& mode = "nearest",
                bool align_corners = false) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    size_t k = x.ndim() < 3 ? 0 : x.ndim() - 2;
    std::vector<double> sf = scale_factor.size() == 1 ? std::vector<double>(k, scale_factor[0]) : scale_factor;
    if (k == 0 || sf.size() != k)
      throw ShapeError("tinygrad::interpolate: scale_factor of " + std::to_string(scale_factor.size()) + " values does not fit input " +
                       to_string(x.shape()) + " (N, C, then one per spatial dim)");
    Shape size;
    for (size_t i = 0; i < k; i++) {
      if (!(sf[i] > 0)) throw Error("tinygrad::interpolate: scale_factor must be positive, got " + std::to_string(sf[i]));
      size.push_back(int64_t(std::floor(double(x.shape()[2 + i]) * sf[i])));
    }
    return resize(size, sf, mode, align_corners);
  })

  // ---- matrix products with torch's strict ranks (matmul broadcasts) ----
  /// (n, m) @ (m, p)
  T mm(const T& b) const TINYGRAD_MEMBER_DEF({ check_mm(self(), b, 2, "mm"); return self().matmul(b); })
  /// (B, n, m) @ (B, m, p)
  T bmm(const T& b) const TINYGRAD_MEMBER_DEF({ check_mm(self(), b, 3, "bmm"); return self().matmul(b); })
  /// beta * self + alpha * batch1.bmm(batch2), self broadcast to the product; beta 0 ignores self (NaN and inf too, as torch)
  T baddbmm(const T& batch1, const T& batch2, double beta = 1, double alpha = 1) const TINYGRAD_MEMBER_DEF({
    check_mm(batch1, batch2, 3, "baddbmm");
    T p = batch1.matmul(batch2);
    auto& s = self();
    bool fits = s.ndim() <= 3;
    for (size_t i = 1; fits && i <= s.ndim(); i++) fits = s.shape()[s.ndim() - i] == 1 || s.shape()[s.ndim() - i] == p.shape()[3 - i];
    if (!fits)
      throw ShapeError("tinygrad::baddbmm: self " + to_string(s.shape()) + " does not broadcast to the product's shape " + to_string(p.shape()));
    if (alpha != 1) p = p * alpha;
    return beta == 0 ? p : (beta == 1 ? s : s * beta) + p;
  })

 private:
  // the body of interpolate; sf (one per dim of size, or empty) is torch's scale_factor
  T resize(const Shape& size, const std::vector<double>& sf, const std::string& mode, bool align_corners) const TINYGRAD_MEMBER_DEF({
    auto& x0 = self();
    bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
    if (!linear && mode != "nearest" && mode != "nearest-exact") throw Error("tinygrad::interpolate: unknown mode \"" + mode + "\"");
    if (size.empty() || size.size() > x0.ndim())
      throw ShapeError("tinygrad::interpolate: size " + to_string(size) + " does not fit input " + to_string(x0.shape()));
    for (auto s : size) if (s <= 0) throw ShapeError("tinygrad::interpolate: size " + to_string(size) + " must be positive");
    if (align_corners && !linear) throw Error("tinygrad::interpolate: align_corners needs a linear mode");
    T x = x0.cast(is_float(x0.dtype()) ? x0.dtype() : dtypes::default_float);
    Shape ex = x.shape();
    for (size_t k = 0; k < size.size(); k++) {
      size_t i = x.ndim() - 1 - k;
      int64_t n = x0.shape()[i], m = size[size.size() - 1 - k];
      double scale = align_corners ? (m > 1 ? double(n - 1) / double(m - 1) : 0.0)
                                   : sf.empty() ? double(n) / double(m) : 1.0 / sf[sf.size() - 1 - k];
      T ar = T::arange(double(m), std::nullopt, 1, DType::Float32, x.device());
      Shape rs(x.ndim(), 1);
      rs[i] = ex[i] = m;
      auto idx = [&](const T& f) { return f.cast(DType::Int32).reshape(rs).expand(ex); };
      if (linear) {
        T pos = (align_corners ? ar * scale : (ar + 0.5) * scale - 0.5).clip(0, double(n - 1));
        T lo = pos.trunc(), hi = (lo + 1.0).minimum(double(n - 1));
        T w = (pos - lo).cast(x.dtype()).reshape(rs).expand(ex);
        T a = x.gather(int64_t(i), idx(lo)), b = x.gather(int64_t(i), idx(hi));
        x = a + (b - a) * w;
      } else {
        T pos = ((mode == "nearest-exact" ? ar + 0.5 : ar) * scale).trunc().minimum(double(n - 1));
        x = x.gather(int64_t(i), idx(pos));
      }
    }
    return x.cast(x0.dtype());
  })
  static void check_mm(const T& a, const T& b, size_t rank, const char* op) TINYGRAD_MEMBER_DEF({
    auto bad = [&](const std::string& why) {
      return ShapeError(std::string("tinygrad::") + op + ": " + why + ", got " + to_string(a.shape()) + " and " + to_string(b.shape()));
    };
    if (a.ndim() != rank || b.ndim() != rank) throw bad(rank == 2 ? "needs two 2-d matrices" : "needs two 3-d batches of matrices");
    if (rank == 3 && a.shape()[0] != b.shape()[0]) throw bad("the batch sizes differ");
    if (a.shape()[rank - 1] != b.shape()[rank - 2]) throw bad("a.shape[-1] must equal b.shape[-2]");
  })

 public:
  /// einsum("ij,jk->ik", {a, b}): letters name dims, "..." broadcast dims; repeated letters take diagonals;
  /// without "->" the output is the letters seen once, in order
  static T einsum(const std::string& formula, const std::vector<T>& xs) TINYGRAD_MEMBER_DEF({
    auto fail = [&](const std::string& why) { return ShapeError("tinygrad::einsum(\"" + formula + "\"): " + why); };
    auto arrow = formula.find("->");
    if (arrow != std::string::npos && formula.find("->", arrow + 1) != std::string::npos) throw fail("more than one \"->\"");
    std::string lhs = formula.substr(0, arrow), rhs = arrow == std::string::npos ? "" : formula.substr(arrow + 2);
    // a term -> ids: letters are their char, the k-th ellipsis dim counted from the right is -1-k
    auto parse = [&](const std::string& s, size_t off, int64_t ndim, bool* ell) {
      std::vector<int> ids;
      int64_t at = -1;
      for (size_t i = 0; i < s.size(); i++) {
        if (s[i] == ' ') continue;
        if (s.compare(i, 3, "...") == 0) {
          if (at >= 0) throw fail("two \"...\" in one term at position " + std::to_string(off + i));
          at = int64_t(ids.size());
          i += 2;
          continue;
        }
        if (!std::isalpha(uint8_t(s[i]))) throw fail(std::string("unexpected '") + s[i] + "' at position " + std::to_string(off + i));
        ids.push_back(s[i]);
      }
      if (ell) *ell = at >= 0;
      if (ndim < 0) return ids;
      if (at < 0 ? int64_t(ids.size()) != ndim : int64_t(ids.size()) > ndim)
        throw fail("term \"" + s + "\" has " + std::to_string(ids.size()) + " letters for a tensor of rank " + std::to_string(ndim));
      if (at >= 0) {
        int64_t ne = ndim - int64_t(ids.size());
        std::vector<int> e;
        for (int64_t k = ne; k-- > 0;) e.push_back(-1 - int(k));
        ids.insert(ids.begin() + at, e.begin(), e.end());
      }
      return ids;
    };
    std::vector<std::vector<int>> terms;
    size_t b = 0;
    int max_ell = 0;
    for (size_t k = 0;; k++) {
      size_t e = std::min(lhs.find(',', b), lhs.size());
      if (k >= xs.size()) throw fail(std::to_string(xs.size()) + " operands for more terms");
      terms.push_back(parse(lhs.substr(b, e - b), b, int64_t(xs[k].ndim()), nullptr));
      for (int id : terms.back()) max_ell = std::max(max_ell, id < 0 ? -id : 0);
      if (e == lhs.size()) break;
      b = e + 1;
    }
    if (terms.size() != xs.size()) throw fail(std::to_string(terms.size()) + " terms for " + std::to_string(xs.size()) + " operands");
    // sizes, with size-1 broadcasting for ellipsis dims; diagonals for repeated letters
    std::map<int, int64_t> size;
    std::vector<T> ops;
    std::map<int, int> count;
    for (size_t k = 0; k < xs.size(); k++) {
      T x = xs[k];
      auto& ids = terms[k];
      for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < ids.size() && !again; i++)
          for (size_t j = i + 1; j < ids.size() && !again; j++) {
            if (ids[i] != ids[j]) continue;
            if (x.shape()[i] != x.shape()[j])
              throw fail(std::string("letter '") + char(ids[i]) + "' has sizes " + std::to_string(x.shape()[i]) + " and " +
                         std::to_string(x.shape()[j]));
            x = x.diagonal(0, int64_t(i), int64_t(j));
            int id = ids[i];
            ids.erase(ids.begin() + int64_t(j)); ids.erase(ids.begin() + int64_t(i)); ids.push_back(id);
            again = true;
          }
      }
      for (size_t i = 0; i < ids.size(); i++) {
        int64_t n = x.shape()[i];
        auto [it, fresh] = size.try_emplace(ids[i], n);
        if (!fresh && it->second != n) {
          if (ids[i] < 0 && (n == 1 || it->second == 1)) it->second = std::max(n, it->second);
          else
            throw fail(ids[i] < 0 ? "\"...\" dims " + to_string(xs[k].shape()) + " do not broadcast"
                                  : std::string("letter '") + char(ids[i]) + "' has sizes " + std::to_string(it->second) + " and " +
                                        std::to_string(n));
        }
        count[ids[i]]++;
      }
      ops.push_back(x);
    }
    std::vector<int> out;
    if (arrow == std::string::npos) {
      for (int k = max_ell; k > 0; k--) out.push_back(-k);
      for (auto& [id, c] : count) if (id > 0 && c == 1) out.push_back(id);
    } else {
      bool ell = false;
      out = parse(rhs, arrow + 2, -1, &ell);
      std::vector<int> o;
      for (auto id : out) {
        if (!size.count(id)) throw fail(std::string("output letter '") + char(id) + "' is not in the inputs");
        if (std::find(o.begin(), o.end(), id) != o.end()) throw fail(std::string("output letter '") + char(id) + "' appears twice");
        o.push_back(id);
      }
      if (ell) {  // put the ellipsis dims where "..." stands
        size_t at = 0;
        for (size_t i = 0, n = 0; i < rhs.size(); i++) {
          if (rhs.compare(i, 3, "...") == 0) { at = n; break; }
          if (std::isalpha(uint8_t(rhs[i]))) n++;
        }
        std::vector<int> e;
        for (int k = max_ell; k > 0; k--) e.push_back(-k);
        o.insert(o.begin() + int64_t(at), e.begin(), e.end());
      } else if (max_ell) throw fail("the inputs have \"...\" but the output does not");
      out = o;
    }
    // every operand as (all ids, sorted), multiply, sum what is not in the output, permute to the output order
    std::vector<int> all;
    Shape full;
    for (auto& [id, n] : size) { all.push_back(id); full.push_back(n); }
    std::optional<T> r;
    for (size_t k = 0; k < ops.size(); k++) {
      auto& ids = terms[k];
      std::vector<int64_t> order(ids.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](auto p, auto q) { return ids[size_t(p)] < ids[size_t(q)]; });
      Shape s;
      for (auto id : all) {
        auto it = std::find(ids.begin(), ids.end(), id);
        s.push_back(it == ids.end() ? 1 : ops[k].shape()[size_t(it - ids.begin())]);
      }
      T x = ops[k].permute(order).reshape(s).expand(full);
      r = r ? *r * x : x;
    }
    std::vector<int64_t> red;
    std::vector<int> kept;
    for (size_t i = 0; i < all.size(); i++) {
      if (std::find(out.begin(), out.end(), all[i]) == out.end()) red.push_back(int64_t(i));
      else kept.push_back(all[i]);
    }
    T y = red.empty() ? *r : r->sum(red);
    std::vector<int64_t> perm;
    for (auto id : out) perm.push_back(int64_t(std::find(kept.begin(), kept.end(), id) - kept.begin()));
    return y.permute(perm);
  })

 private:
  const T& self() const TINYGRAD_MEMBER_DEF({ return static_cast<const T&>(*this); })
  // layernorm in the accumulation dtype (float32 for float16 and bfloat16), not rounded back
  T layernorm_acc(const std::vector<int64_t>& axes, double eps) const TINYGRAD_MEMBER_DEF({
    T x = self().fl();
    if (x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16) x = x.cast(DType::Float32);
    T y = x - x.mean(axes, true);
    return y * ((y * y).mean(axes, true) + eps).rsqrt();
  })
  struct PoolArgs { Shape ks; std::vector<int64_t> st, dl, axes; Pads pads; };  // pads cover every dim
  static std::vector<int64_t> per_dim(std::vector<int64_t> v, size_t n, const char* what, const char* op, int64_t lo) TINYGRAD_MEMBER_DEF({
    if (v.size() == 1) v.assign(n, v[0]);
    if (v.size() != n)
      throw ShapeError(std::string("tinygrad::") + op + ": " + what + " " + to_string(v) + " needs 1 or " + std::to_string(n) + " values");
    for (auto x : v)
      if (x < lo) throw ShapeError(std::string("tinygrad::") + op + ": " + what + " " + to_string(v) + " must be at least " + std::to_string(lo));
    return v;
  })
  static Pads pad_pairs(const std::vector<int64_t>& p, size_t n, const char* op) TINYGRAD_MEMBER_DEF({
    Pads r;
    if (p.size() == 1 || p.size() == n) for (size_t i = 0; i < n; i++) r.push_back({p[p.size() == 1 ? 0 : i], p[p.size() == 1 ? 0 : i]});
    else if (p.size() == 2 * n) for (size_t i = 0; i < n; i++) r.push_back({p[2 * i], p[2 * i + 1]});
    else
      throw ShapeError(std::string("tinygrad::") + op + ": padding " + to_string(p) + " needs 1, " + std::to_string(n) + " or " +
                       std::to_string(2 * n) + " values");
    for (auto& [b, a] : r)
      if (b < 0 || a < 0) throw ShapeError(std::string("tinygrad::") + op + ": padding " + to_string(p) + " must not be negative");
    return r;
  })
  PoolArgs pool_args(std::vector<int64_t> kernel, std::vector<int64_t> stride, std::vector<int64_t> dilation, const std::vector<int64_t>& padding,
                     bool ceil_mode, const char* op) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    size_t n = kernel.size() == 1 ? 2 : kernel.size();
    if (n == 0 || x.ndim() < n)
      throw ShapeError(std::string("tinygrad::") + op + ": kernel " + to_string(kernel) + " needs " + std::to_string(n) +
                       " spatial dims, input has shape " + to_string(x.shape()));
    PoolArgs a;
    a.ks = per_dim(kernel, n, "kernel", op, 1);
    a.st = stride.empty() ? a.ks : per_dim(stride, n, "stride", op, 1);
    a.dl = per_dim(dilation, n, "dilation", op, 1);
    Pads sp = pad_pairs(padding, n, op);
    for (size_t i = 0; i < n; i++) {
      int64_t in = x.shape()[x.ndim() - n + i], span = a.dl[i] * (a.ks[i] - 1) + 1;
      auto& [pb, pa] = sp[i];
      if (in + pb + pa < span)
        throw ShapeError(std::string("tinygrad::") + op + ": kernel " + to_string(a.ks) + " (dilation " + to_string(a.dl) + ", padding " +
                         to_string(padding) + ") is larger than the input " + to_string(x.shape()));
      if (ceil_mode) {  // grow the end padding so a last partial window exists, unless it would start in the padding
        int64_t o = (in + pb + pa - span + a.st[i] - 1) / a.st[i] + 1;
        pa += a.st[i] * (o - 1) + span - (in + pb + pa) - std::max<int64_t>(a.st[i] * (o - 1) - (pb + in - 1), 0);
      }
    }
    a.pads.assign(x.ndim() - n, {0, 0});
    a.pads.insert(a.pads.end(), sp.begin(), sp.end());
    for (size_t i = 0; i < n; i++) a.axes.push_back(-1 - int64_t(i));
    return a;
  })
  T pooled(const PoolArgs& a, double fill) const TINYGRAD_MEMBER_DEF({ return self().pad(a.pads, fill).pool(a.ks, a.st, a.dl, "max_pool2d"); })
  void check_conv_rank(const T& w, size_t nd, const char* op) const TINYGRAD_MEMBER_DEF({
    if (self().ndim() != nd || w.ndim() != nd)
      throw ShapeError(std::string("tinygrad::") + op + ": input " + to_string(self().shape()) + " and weight " + to_string(w.shape()) +
                       " must both have rank " + std::to_string(nd));
  })
  T zero() const TINYGRAD_MEMBER_DEF({ return T::full({}, 0, self().dtype(), self().device()); })  // NOTE: a weak 0 would turn bools into ints
  T tri(int64_t diagonal, const char* op) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (x.ndim() < 2) throw ShapeError(std::string("tinygrad::") + op + ": needs at least 2 dims, got shape " + to_string(x.shape()));
    int64_t r = x.shape()[x.ndim() - 2], c = x.shape().back();
    T a = T::arange(double(r), std::nullopt, 1, DType::Int32, x.device()).unsqueeze(-1) + T::scalar(double(diagonal), DType::Int32, x.device());
    return a <= T::arange(double(c), std::nullopt, 1, DType::Int32, x.device());
  })
};

}  // namespace tinygrad::detail
