#pragma once
// Tensor methods: reductions, scans, sorting, losses.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
// Axes are a list (empty: all) or one int. Everything stays lazy and differentiable: scans are windowed
// reductions over a padded view (as tinygrad), sort is a bitonic network of compare-and-swaps.
#include <bit>
#include <concepts>
#include <string_view>
#include <utility>
#include "elementwise.hpp"

namespace tinygrad::detail {

// t.max(dim) / t.min(dim): the values, as a T (code that wants the max alone reads it as before), that also unpacks like
// torch's (values, indices): `auto [values, indices] = t.max(1)`. The indices (argmax/argmin: the first max) are built
// only when asked for, so a plain max builds no index graph. NOTE: it holds the input tensor until then.
template <class T>
struct ValuesIndices : T {
  ValuesIndices(T values, T in, int64_t dim, bool keepdim, bool min)
      : T(std::move(values)), in_(std::move(in)), dim_(dim), keepdim_(keepdim), min_(min) {}
  T values() const { return *this; }
  T indices() const { return min_ ? in_.argmin(dim_, keepdim_) : in_.argmax(dim_, keepdim_); }
  template <size_t I>
    requires(I < 2)
  T get() const { return I == 0 ? values() : indices(); }

 private:
  T in_;
  int64_t dim_;
  bool keepdim_, min_;
};

template <class T>
struct ReduceOps {
  using Axes = std::vector<int64_t>;

 public:
  // ---- reductions ----
  /// torch.sum over axes (empty: all)
  T sum(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::ADD, std::move(axes), keepdim, "sum"); })
  /// sum over one axis
  T sum(std::integral auto axis, bool keepdim = false) const { return sum(Axes{int64_t(axis)}, keepdim); }
  /// torch.prod over axes (empty: all)
  T prod(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::MUL, std::move(axes), keepdim, "prod"); })
  /// prod over one axis
  T prod(std::integral auto axis, bool keepdim = false) const { return prod(Axes{int64_t(axis)}, keepdim); }
  /// max/min of an empty dim throw IndexError (as torch: there is no identity to return); NaN propagates
  T max(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::MAX, nonempty(axes, "max"), keepdim, "max"); })
  /// one dim, as torch: the values, unpacking into (values, indices) (ValuesIndices)
  ValuesIndices<T> max(std::integral auto axis, bool keepdim = false) const {
    return {max(Axes{int64_t(axis)}, keepdim), self(), int64_t(axis), keepdim, false};
  }
  /// min over axes (empty: all)
  T min(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    return inv(inv(self()).reduce(Ops::MAX, nonempty(axes, "min"), keepdim, "min"));
  })
  /// min over one axis
  ValuesIndices<T> min(std::integral auto axis, bool keepdim = false) const {
    return {min(Axes{int64_t(axis)}, keepdim), self(), int64_t(axis), keepdim, true};
  }
  /// torch.amax / amin: max / min over dims (empty: all), the gradient split evenly between ties (as torch)
  T amax(Axes dims = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::MAX, nonempty(dims, "amax"), keepdim, "amax"); })
  /// amax over one dim
  T amax(std::integral auto dim, bool keepdim = false) const { return amax(Axes{int64_t(dim)}, keepdim); }
  /// torch.amin: min over dims (empty: all), the gradient split evenly between ties
  T amin(Axes dims = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    return inv(inv(self()).reduce(Ops::MAX, nonempty(dims, "amin"), keepdim, "amin"));
  })
  /// amin over one dim
  T amin(std::integral auto dim, bool keepdim = false) const { return amin(Axes{int64_t(dim)}, keepdim); }
  /// torch.linalg.vector_norm: p = 2, 1, inf (largest |x|), -inf (smallest), 0 (count of nonzeros) or any other p, over
  /// dims (empty: all). Float tensors only (as torch). The gradient at 0 is 0 (as torch), not NaN; inf norms split it
  /// between ties like amax. float16 and bfloat16 accumulate in float32
  T norm(double p = 2, Axes dim = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (!is_float(x.dtype())) throw DTypeError("tinygrad::norm: needs a float tensor, got " + to_string(x.dtype()));
    auto ax = x.norm_axes(dim, "norm");
    T a = acc().abs();
    if (std::isinf(p)) return (p > 0 ? a.amax(ax, keepdim) : a.amin(ax, keepdim)).cast(x.dtype());
    // NOTE: a (0 where it is picked) keeps the count in the graph: its gradient is 0, as torch's, not "no gradient"
    if (p == 0) return (a != 0.0).where(1.0, a).sum(ax, keepdim).cast(x.dtype());
    if (p == 1) return a.sum(ax, keepdim).cast(x.dtype());
    // b^e with b = 0 gives 0 from a base of 1 on the unused branch: its gradient is 0, not 0 * inf
    auto pow0 = [](const T& b, double e) {
      T z = b == 0.0, s = z.where(1.0, b);
      return z.where(0.0, e == 0.5 ? s.sqrt() : s.pow(e));
    };
    T s = p == 2 ? a.square().sum(ax, keepdim) : (p > 0 ? pow0(a, p) : a.pow(p)).sum(ax, keepdim);
    return (p > 0 ? pow0(s, 1 / p) : s.pow(1 / p)).cast(x.dtype());
  })
  /// norm over one dim
  T norm(double p, std::integral auto dim, bool keepdim = false) const { return norm(p, Axes{int64_t(dim)}, keepdim); }
  /// float16 and bfloat16 accumulate, divide (and take the root of var) in float32, then round once (as torch)
  T mean(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    auto ax = self().norm_axes(axes, "mean");
    return mean_acc(ax, keepdim).cast(self().fl().dtype());
  })
  /// mean over one axis
  T mean(std::integral auto axis, bool keepdim = false) const { return mean(Axes{int64_t(axis)}, keepdim); }
  /// sum((x - mean)^2) / (n - correction)
  T var(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return var_acc(self().norm_axes(axes, "var"), keepdim, correction).cast(self().fl().dtype());
  })
  /// var over one axis
  T var(std::integral auto axis, bool keepdim = false, double correction = 1) const { return var(Axes{int64_t(axis)}, keepdim, correction); }
  /// torch.std: sqrt(var)
  T std(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return var_acc(self().norm_axes(axes, "std"), keepdim, correction).sqrt().cast(self().fl().dtype());
  })
  /// std over one axis
  T std(std::integral auto axis, bool keepdim = false, double correction = 1) const { return std(Axes{int64_t(axis)}, keepdim, correction); }
  /// torch.var_mean: (var, mean)
  std::pair<T, T> var_mean(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return {var(axes, keepdim, correction), mean(axes, keepdim)};
  })
  /// torch.std_mean: (std, mean)
  std::pair<T, T> std_mean(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return {std(axes, keepdim, correction), mean(axes, keepdim)};
  })
  /// var_mean over one axis
  std::pair<T, T> var_mean(std::integral auto axis, bool keepdim = false, double correction = 1) const {
    return var_mean(Axes{int64_t(axis)}, keepdim, correction);
  }
  /// std_mean over one axis
  std::pair<T, T> std_mean(std::integral auto axis, bool keepdim = false, double correction = 1) const {
    return std_mean(Axes{int64_t(axis)}, keepdim, correction);
  }
  /// torch.any over axes (empty: all)
  T any(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().bool_().reduce(Ops::MAX, std::move(axes), keepdim, "any"); })
  /// any over one axis
  T any(std::integral auto axis, bool keepdim = false) const { return any(Axes{int64_t(axis)}, keepdim); }
  /// torch.all over axes (empty: all)
  T all(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().logical_not().any(std::move(axes), keepdim).logical_not(); })
  /// all over one axis
  T all(std::integral auto axis, bool keepdim = false) const { return all(Axes{int64_t(axis)}, keepdim); }
  /// realizes: true when every element isclose
  bool allclose(const T& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const TINYGRAD_MEMBER_DEF({
    return self().isclose(o, rtol, atol, equal_nan).all().template item<bool>();
  })
  /// index of the first maximum along axis (of the flattened tensor without one), int64 (as torch). NaN is the maximum (as torch).
  T argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (!axis) { auto r = x.flatten().argmax(0); return keepdim ? r.reshape(Shape(x.ndim(), 1)) : r; }
    int a = norm_axis(*axis, x.ndim(), "argmax");
    if (x.ndim() == 0) return T::zeros({}, DType::Int64, x.device());
    int64_t n = x.shape()[size_t(a)];
    if (n == 0)
      throw IndexError("tinygrad::argmax: cannot take the argmax of an empty dim " + std::to_string(a) + " of shape " + to_string(x.shape()));
    // first maximum = largest reversed index n - i among the maxima. NOTE: int32 index math where it fits (GPUs are
    // slower in int64), one cast to int64 at the end
    Shape rs(x.ndim() - size_t(a), 1);
    rs[0] = n;
    DType it = n > INT32_MAX ? DType::Int64 : DType::Int32;
    auto rev = T::arange(double(n), 0.0, -1, it, x.device()).reshape(rs);
    return (T::scalar(double(n), it, x.device()) - (same(x, x.max(a, true)) * rev).max(a, keepdim)).cast(DType::Int64);
  })
  /// torch.argmin
  T argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return inv(self()).argmax(axis, keepdim); })
  /// log(sum(exp(x))), shifted by the (detached) max for stability
  T logsumexp(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    axes = self().norm_axes(axes, "logsumexp");
    auto x = self().fl();
    auto m = x.reduce(Ops::MAX, axes, true, "logsumexp").detach();  // an empty dim gives -inf, as torch
    m = m.isinf().where(0.0, m);  // an all -inf slice gives -inf, not NaN
    auto s = (x - m).exp().sum(axes, keepdim);
    return s.log() + m.reshape(s.shape());
  })
  /// logsumexp over one axis
  T logsumexp(std::integral auto axis, bool keepdim = false) const { return logsumexp(Axes{int64_t(axis)}, keepdim); }
  /// torch.softmax along axis
  T softmax(int64_t axis = -1) const TINYGRAD_MEMBER_DEF({
    axis = norm_axis(axis, self().ndim(), "softmax");
    auto m = self().fl() - self().fl().reduce(Ops::MAX, {axis}, true, "softmax").detach();
    auto e = m.exp();
    return e / e.sum(axis, true);
  })
  /// torch.log_softmax along axis
  T log_softmax(int64_t axis = -1) const TINYGRAD_MEMBER_DEF({
    axis = norm_axis(axis, self().ndim(), "log_softmax");
    auto m = self().fl() - self().fl().reduce(Ops::MAX, {axis}, true, "log_softmax").detach();
    return m - m.exp().sum(axis, true).log();
  })
  /// softmax(-x) along axis
  T softmin(int64_t axis = -1) const TINYGRAD_MEMBER_DEF({ return (-self()).softmax(axis); })

  // ---- scans (inclusive) ----
  /// torch.cumsum
  T cumsum(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return split_cum(axis, Ops::ADD, "cumsum"); })
  /// torch.cumprod
  T cumprod(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return split_cum(axis, Ops::MUL, "cumprod"); })
  /// running max values (torch.cummax's values)
  T cummax(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return split_cum(axis, Ops::MAX, "cummax"); })
  /// running min values (torch.cummin's values)
  T cummin(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return inv(inv(self()).cummax(axis)); })
  /// (values, int64 index of the last occurrence of each running max along axis), like torch.cummax
  std::pair<T, T> cummax_indices(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return cum_indices(self(), cummax(axis), axis, "cummax_indices"); })
  /// the indices of cummin's values
  std::pair<T, T> cummin_indices(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return cum_indices(self(), cummin(axis), axis, "cummin_indices"); })

  // ---- sorting ----
  /// (values, int64 indices, as torch) along dim. Equal values keep their original order (the k-th equal value in the
  /// output is the k-th in the input), ascending and descending alike. NaN sorts above +inf (last ascending, first
  /// descending), as torch.
  std::pair<T, T> sort(int64_t dim = -1, bool descending = false) const TINYGRAD_MEMBER_DEF({
    auto& x0 = self();
    if (x0.ndim() == 0) return {x0, T::zeros({}, DType::Int64, x0.device())};
    int d = norm_axis(dim, x0.ndim(), "sort");
    int64_t n = x0.shape()[size_t(d)];
    if (n <= 1) return {x0, T::zeros(x0.shape(), DType::Int64, x0.device())};
    T y = x0.transpose(d, -1);  // the sorted dim last
    Shape lead(y.shape().begin(), y.shape().end() - 1);
    int s = int(std::bit_width(uint64_t(n - 1)));
    // pad to 2^s with values that sort last, split the dim into s dims of 2; bit weight 2^w lives at dim nb+s-1-w
    std::vector<std::pair<int64_t, int64_t>> pads(lead.size(), {0, 0});
    pads.push_back({0, (int64_t(1) << s) - n});
    Shape twos = lead;
    twos.insert(twos.end(), size_t(s), 2);
    double last = descending ? dtype_min(y.dtype()) : is_float(y.dtype()) ? double(NAN) : dtype_max(y.dtype());
    T x = y.pad(pads, last).reshape(twos);
    size_t nb = lead.size();
    auto bit = [&](int w) { return int64_t(nb) + s - 1 - w; };
    auto first = [&](int64_t dm) {  // true where the bit of dim dm is 0
      Shape ms(x.ndim(), 1);
      ms[size_t(dm)] = 2;
      return (T::arange(2, std::nullopt, 1, DType::Int32, x.device()) == 0.0).reshape(ms);
    };
    // bitonic sorter with every comparator facing the same way: the upper half of each block is flipped before a
    // stage and back after it (https://en.wikipedia.org/wiki/Bitonic_sorter, the second diagram)
    for (int stage = 1; stage <= s; stage++) {
      std::vector<int64_t> low;
      for (int w = 0; w < stage; w++) low.push_back(bit(w));
      auto cross = [&] { if (stage != s) x = first(bit(stage)).where(x, x.flip(low)); };
      cross();
      for (int sub = stage - 1; sub >= 0; sub--) {
        // NOTE: not minimum/maximum: they propagate NaN into both outputs
        T p = x.flip(bit(sub)), up = after(x, p), lo = up.where(p, x), hi = up.where(x, p);
        x = first(bit(sub)).where(descending ? hi : lo, descending ? lo : hi).contiguous();
      }
      cross();
    }
    Shape flat = lead;
    flat.push_back(int64_t(1) << s);
    std::vector<std::pair<int64_t, int64_t>> keep;
    for (auto l : lead) keep.push_back({0, l});
    keep.push_back({0, n});
    T ys = x.reshape(flat).shrink(keep);
    // indices: sorted position i takes the original j with the same value and the same occurrence count
    T idx = T::arange(double(n), std::nullopt, 1, DType::Int32, x.device());
    T tri = idx.reshape({1, n}) <= idx.reshape({n, 1});  // [i, j]: j <= i
    auto occ = [&](const T& t) { return (same(t.unsqueeze(-1), t.unsqueeze(-2)) & tri).sum(-1); };
    T yd = y.detach(), sd = ys.detach();
    T cond = same(sd.unsqueeze(-1), yd.unsqueeze(-2)) & (occ(sd).unsqueeze(-1) == occ(yd).unsqueeze(-2));
    T ind = (cond * idx.reshape({1, n})).sum(-1).cast(DType::Int64);
    return {ys.transpose(d, -1), ind.transpose(d, -1)};
  })
  /// torch.argsort (int64)
  T argsort(int64_t dim = -1, bool descending = false) const TINYGRAD_MEMBER_DEF({ return sort(dim, descending).second; })
  /// the k largest (or smallest) along dim, as (values, int64 indices); always sorted
  std::pair<T, T> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const TINYGRAD_MEMBER_DEF({
    (void)sorted;
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), "topk");
    int64_t n = x.ndim() ? x.shape()[size_t(d)] : 1;
    if (k < 0 || k > n)
      throw IndexError("tinygrad::topk: k=" + std::to_string(k) + " is out of range for dim " + std::to_string(d) +
                       " of shape " + to_string(x.shape()));
    auto [v, i] = sort(d, largest);
    if (x.ndim() == 0) return {v, i};
    std::vector<std::pair<int64_t, int64_t>> sh;
    for (size_t a = 0; a < x.ndim(); a++) sh.push_back({0, int64_t(a) == d ? k : x.shape()[a]});
    return {v.shrink(sh), i.shrink(sh)};
  })

  /// torch.median: the lower of the two middle values of all elements (NaN if there is one); the gradient is split
  /// between the elements equal to it (as torch)
  T median() const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (x.numel() == 0) throw IndexError("tinygrad::median: the tensor of shape " + to_string(x.shape()) + " is empty");
    T f = x.flatten().detach();
    int64_t k = (f.shape()[0] - 1) / 2;
    T v = f.sort(0).first.shrink({{k, k + 1}}).reshape({});
    if (is_float(x.dtype())) v = f.isnan().any().where(v.like(NAN), v);
    // a max over the elements equal to v: its gradient splits between them
    return same(x, v).where(x, dtype_min(x.dtype())).max();
  })
  /// along dim: (values, indices); the gradient goes to the element at the index (as torch)
  std::pair<T, T> median(int64_t dim, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (x.ndim() == 0) return {x, T::zeros({}, DType::Int64, x.device())};
    int d = norm_axis(dim, x.ndim(), "median");
    int64_t n = x.shape()[size_t(d)];
    if (n == 0) throw IndexError("tinygrad::median: cannot reduce the empty dim " + std::to_string(d) + " of shape " + to_string(x.shape()));
    T si = x.detach().sort(d).second;
    auto at = [&](int64_t k) {
      std::vector<std::pair<int64_t, int64_t>> sh;
      for (size_t a = 0; a < x.ndim(); a++) sh.push_back({0, x.shape()[a]});
      sh[size_t(d)] = {k, k + 1};
      return si.shrink(sh);
    };
    T idx = at((n - 1) / 2);
    if (is_float(x.dtype())) idx = x.isnan().any(d, true).where(at(n - 1), idx);  // NaN sorts last
    T val = x.gather(d, idx);
    if (keepdim) return {val, idx};
    return {val.squeeze(d), idx.squeeze(d)};
  })

  // ---- regression and divergence losses (torch.nn.functional's; target broadcasts against input) ----
  /// torch.nn.functional.mse_loss
  T mse_loss(const T& y, std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    return reduce_loss((self() - y).square(), reduction, "mse_loss");
  })
  /// torch.nn.functional.l1_loss
  T l1_loss(const T& y, std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    return reduce_loss((self() - y).abs(), reduction, "l1_loss");
  })
  /// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)
  T huber_loss(const T& y, std::string_view reduction = "mean", double delta = 1.0) const TINYGRAD_MEMBER_DEF({
    if (!(delta > 0)) throw Error("tinygrad::huber_loss: delta must be positive, got " + std::to_string(delta));
    T d = self() - y, a = d.abs();
    return reduce_loss((a < delta).where(d.square() * 0.5, (a - 0.5 * delta) * delta), reduction, "huber_loss");
  })
  /// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta 0: l1_loss)
  T smooth_l1_loss(const T& y, std::string_view reduction = "mean", double beta = 1.0) const TINYGRAD_MEMBER_DEF({
    if (!(beta >= 0)) throw Error("tinygrad::smooth_l1_loss: beta must not be negative, got " + std::to_string(beta));
    T d = self() - y, a = d.abs();
    return reduce_loss(beta == 0 ? a : (a < beta).where(d.square() * (0.5 / beta), a - 0.5 * beta), reduction, "smooth_l1_loss");
  })
  /// self: log-probabilities; y: probabilities (log-probabilities with log_target). "batchmean" divides the sum by the
  /// batch size (dim 0): the KL divergence; torch's default "mean" averages over all elements
  T kl_div(const T& y, std::string_view reduction = "mean", bool log_target = false) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    T z = y == 0.0;  // xlogy(y, y): 0 where y is 0, its gradient too
    T l = log_target ? y.exp() * (y - x) : z.where(0.0, y * z.where(1.0, y).log()) - y * x;
    if (reduction == "batchmean") return l.sum() / double(x.ndim() ? x.shape()[0] : 1);
    if (reduction != "mean" && reduction != "sum" && reduction != "none")
      throw Error("tinygrad::kl_div: reduction must be \"mean\", \"batchmean\", \"sum\" or \"none\", got \"" + std::string(reduction) + "\"");
    return reduce_loss(l, reduction, "kl_div");
  })
  /// torch's names and argument order; weight (broadcast) scales each element's loss
  T binary_cross_entropy(const T& y, const std::optional<T>& weight = std::nullopt, std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    return bce(self(), y, weight, std::nullopt, false, reduction, "binary_cross_entropy");
  })
  /// torch.nn.functional.binary_cross_entropy_with_logits (pos_weight scales the positive term)
  T binary_cross_entropy_with_logits(const T& y, const std::optional<T>& weight = std::nullopt, std::string_view reduction = "mean",
                                     const std::optional<T>& pos_weight = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return bce(self(), y, weight, pos_weight, true, reduction, "binary_cross_entropy_with_logits");
  })

  // ---- losses (reduction: "mean", "sum" or "none"; labels are integer class indices) ----
  /// self: probabilities; log is clamped at -100 like torch, so a certain wrong answer costs 100, not inf
  T binary_crossentropy(const T& y, std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    return bce(self(), y, std::nullopt, std::nullopt, false, reduction, "binary_crossentropy");
  })
  /// self: logits; pos_weight scales the positive term
  T binary_crossentropy_logits(const T& y, std::string_view reduction = "mean",
                               const std::optional<T>& pos_weight = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return bce(self(), y, std::nullopt, pos_weight, true, reduction, "binary_crossentropy_logits");
  })
  /// self: logits (..., C); y: class indices (...). Labels equal to ignore_index (other than -1) drop out of the mean.
  /// NOTE: tinygrad's name and default (ignore_index -1, which ignores nothing); cross_entropy is PyTorch's (-100)
  T sparse_categorical_crossentropy(const T& y, int64_t ignore_index = -1, double label_smoothing = 0,
                                    std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    const char* op = "sparse_categorical_crossentropy";
    check_smoothing(label_smoothing, op);
    check_reduction(reduction, op);
    if (x.ndim() == 0 || Shape(x.shape().begin(), x.shape().end() - 1) != y.shape())
      throw ShapeError("tinygrad::sparse_categorical_crossentropy: labels of shape " + to_string(y.shape()) + " do not fit logits of shape " +
                       to_string(x.shape()) + " (want logits.shape[:-1])");
    check_labels(y, x.shape().back(), ignore_index, op);
    auto logp = x.log_softmax(-1);
    T mask = ignore_index != -1 ? (y != double(ignore_index)) : T::ones(y.shape(), DType::Bool, y.device());
    T hot = label_mask(y.unsqueeze(-1), x.shape().back(), int64_t(x.ndim()) - 1) & mask.unsqueeze(-1);
    // NOTE: the smoothing term only where smoothing is on (as torch): 0 * log_softmax is NaN where a logit is -inf
    T unreduced = hot.where(logp, 0.0).sum(-1);
    if (label_smoothing > 0) unreduced = (1.0 - label_smoothing) * unreduced + label_smoothing * (logp.mean(-1) * mask);
    if (reduction == "mean") return -(unreduced.sum() / mask.sum());
    return reduction == "sum" ? -unreduced.sum() : -unreduced;
  })
  /// F.cross_entropy. self: logits (C) or (N, C, d1, ...); y: class indices of that shape without C, or class
  /// probabilities of its shape. weight: per class (C). With class indices, targets equal to ignore_index count
  /// nothing and "mean" divides by the summed weight of the other targets; with probabilities, "mean" divides by
  /// the number of samples (ignore_index does not apply). label_smoothing mixes in the uniform distribution, as torch
  T cross_entropy(const T& y, const std::optional<T>& weight = std::nullopt, std::optional<int64_t> ignore_index = -100,
                  std::string_view reduction = "mean", double label_smoothing = 0) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    check_smoothing(label_smoothing, "cross_entropy");
    check_reduction(reduction, "cross_entropy");
    if (x.ndim() == 0) throw ShapeError("tinygrad::cross_entropy: logits need a class dim, got shape " + to_string(x.shape()));
    int64_t cd = x.ndim() == 1 ? 0 : 1, c = x.shape()[size_t(cd)];
    T logp = x.log_softmax(cd);
    // as torch: probabilities weight every log-probability (0 * -inf is NaN there too), class indices pick one,
    // and the smoothing term is only there when smoothing is on
    if (y.shape() == x.shape()) {
      std::optional<T> w = class_weight(weight, x, cd, "cross_entropy");
      T p = label_smoothing > 0 ? (1.0 - label_smoothing) * y + label_smoothing / double(c) : y;
      return reduce_loss(-(w ? logp * p * *w : logp * p).sum(cd), reduction, "cross_entropy");
    }
    return class_nll(logp, y, weight, ignore_index, reduction, label_smoothing, "cross_entropy");
  })
  /// F.nll_loss. self: log-probabilities (C) or (N, C, d1, ...); y: class indices; weight and ignore_index as cross_entropy
  /// (nullopt: nothing ignored)
  T nll_loss(const T& y, const std::optional<T>& weight = std::nullopt, std::optional<int64_t> ignore_index = -100,
             std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    check_reduction(reduction, "nll_loss");
    if (self().ndim() == 0) throw ShapeError("tinygrad::nll_loss: input needs a class dim, got shape " + to_string(self().shape()));
    return class_nll(self(), y, weight, ignore_index, reduction, 0, "nll_loss");
  })

 private:
  const T& self() const TINYGRAD_MEMBER_DEF({ return static_cast<const T&>(*this); })
  int64_t reduced_count(const Axes& ax) const TINYGRAD_MEMBER_DEF({
    int64_t n = 1;
    for (auto a : ax) {
      if (self().is_symbolic() && self().uop()->dyn[size_t(a)])
        throw ShapeError("tinygrad::var: the dim " + std::to_string(a) + " of " + self().sym_str() + " is symbolic (var and std take concrete dims)");
      n *= self().shape()[size_t(a)];
    }
    return n;
  })
  // the float tensor in its accumulation dtype: float16 and bfloat16 widen to float32 (tinygrad's sum_acc_dtype)
  T acc() const TINYGRAD_MEMBER_DEF({
    auto x = self().fl();
    return x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16 ? x.cast(DType::Float32) : x;
  })
  // mean and var of acc() over normalized axes ax, not rounded back
  T mean_acc(const Axes& ax, bool keepdim) const TINYGRAD_MEMBER_DEF({
    auto s = acc().sum(ax, keepdim);
    const UOp& u = *self().uop();
    if (std::any_of(ax.begin(), ax.end(), [&](int64_t a) { return !u.dyn.empty() && u.dyn[size_t(a)]; })) {  // a count that varies
      UOpRef n = detail::const_int(DType::Int32, 1);
      for (auto a : ax) n = n * (u.dyn[size_t(a)] ? u.dyn[size_t(a)] : detail::size_const(self().shape()[size_t(a)]));
      return s / T(n, self().device()).cast(s.dtype());
    }
    int64_t n = reduced_count(ax);
    return n == 0 ? s * double(NAN) : s * (1.0 / double(n));
  })
  T var_acc(const Axes& ax, bool keepdim, double correction) const TINYGRAD_MEMBER_DEF({
    auto x = acc();
    return (x - x.mean_acc(ax, true)).square().sum(ax, keepdim) / std::max(0.0, double(reduced_count(ax)) - correction);
  })
  // the axes (normalized) of a max or min, none of them empty
  Axes nonempty(const Axes& axes, const char* op) const TINYGRAD_MEMBER_DEF({
    auto ax = self().norm_axes(axes, op);
    for (auto a : ax)
      if (self().shape()[size_t(a)] == 0)
        throw IndexError(std::string("tinygrad::") + op + ": cannot reduce the empty dim " + std::to_string(a) + " of shape " +
                         to_string(self().shape()) + " (an empty max or min has no value)");
    return ax;
  })
  // a == b, with NaN equal to NaN (max and cummax propagate NaN, so NaN is where they found it)
  static T same(const T& a, const T& b) TINYGRAD_MEMBER_DEF({ return is_float(a.dtype()) ? (a == b) | (a.isnan() & b.isnan()) : a == b; })
  // a sorts after b: NaN after everything but NaN
  static T after(const T& a, const T& b) TINYGRAD_MEMBER_DEF({ return is_float(a.dtype()) ? a.isnan().where(b == b, b < a) : b < a; })
  // order-reversing: min = inv(max(inv))
  static T inv(const T& x) TINYGRAD_MEMBER_DEF({ return is_float(x.dtype()) ? -x : x.bitwise_not(); })
  // inclusive scan along the last axis: each output reduces its window of the row padded on the left
  static T cum_last(const T& x, Ops op, const char* name) TINYGRAD_MEMBER_DEF({
    int64_t n = x.shape().back();
    double ident = reduce_identity(op, x.dtype());
    std::vector<std::pair<int64_t, int64_t>> p(x.ndim() - 1, {0, 0});
    p.push_back({n - 1, 0});
    T w = x.pad(p, ident).pool({n}, {1}, {1}, name);
    return op == Ops::ADD ? w.sum(-1) : op == Ops::MUL ? w.prod(-1) : w.max(-1);
  })
  // long rows: scan blocks of 512, then add (mul, max) each block's exclusive scan of the block totals (tinygrad's split)
  T split_cum(int64_t axis, Ops op, const char* name) const TINYGRAD_MEMBER_DEF({
    auto& x0 = self();
    if (x0.ndim() == 0) return x0.reshape({1}).split_cum(0, op, name).reshape({});
    int a = norm_axis(axis, x0.ndim(), name);
    int64_t n = x0.shape()[size_t(a)];
    if (n == 0) return op == Ops::MAX ? x0 : x0.cast(x0.reduce(op, {a}, true, name).dtype());
    T x = x0.transpose(a, -1);
    constexpr int64_t S = 512;
    if (n <= S) return cum_last(x, op, name).transpose(a, -1);
    double ident = reduce_identity(op, x.dtype());
    int64_t m = (n + S - 1) / S;
    Shape blocks(x.shape().begin(), x.shape().end() - 1);
    blocks.insert(blocks.end(), {m, S});
    T inner = cum_last(x.pad(padlast(x.ndim(), m * S - n, 0), ident).reshape(blocks), op, name);  // (..., m, S)
    std::vector<std::pair<int64_t, int64_t>> lastcol;
    for (auto d : inner.shape()) lastcol.push_back({0, d});
    lastcol.back() = {S - 1, S};
    // exclusive scan of the block totals: shift the inclusive one right by one block
    T tot = cum_last(inner.shrink(lastcol).reshape(Shape(blocks.begin(), blocks.end() - 1)), op, name);
    T base = tot.pad(padlast(tot.ndim(), 1, -1), ident).unsqueeze(-1);
    T r = op == Ops::ADD ? inner + base : op == Ops::MUL ? inner * base : inner.maximum(base);
    Shape flat(blocks.begin(), blocks.end() - 2);
    flat.push_back(m * S);
    std::vector<std::pair<int64_t, int64_t>> tail;
    for (size_t i = 0; i + 1 < flat.size(); i++) tail.push_back({0, flat[i]});
    tail.push_back({m * S - n, m * S});
    return r.reshape(flat).shrink(tail).transpose(a, -1);
  })
  static std::vector<std::pair<int64_t, int64_t>> padlast(size_t nd, int64_t before, int64_t after) TINYGRAD_MEMBER_DEF({
    std::vector<std::pair<int64_t, int64_t>> p(nd - 1, {0, 0});
    p.push_back({before, after});
    return p;
  })
  // index of the last j <= i with x[j] == v[i] (NaN == NaN: torch gives the last NaN so far)
  static std::pair<T, T> cum_indices(const T& x0, const T& v0, int64_t axis, const char* name) TINYGRAD_MEMBER_DEF({
    if (x0.ndim() == 0) return {v0, T::zeros({}, DType::Int64, x0.device())};
    int a = norm_axis(axis, x0.ndim(), name);
    T x = x0.transpose(a, -1).detach(), v = v0.transpose(a, -1).detach();
    int64_t n = x.shape().back();
    T idx = T::arange(double(n), std::nullopt, 1, DType::Int32, x.device());
    T hit = same(x.unsqueeze(-2), v.unsqueeze(-1)) & (idx.reshape({1, n}) <= idx.reshape({n, 1}));  // [i, j]
    return {v0, (hit * idx.reshape({1, n})).reduce(Ops::MAX, {-1}, false, name).cast(DType::Int64).transpose(a, -1)};
  })
  // bool (..., C at dim, ...) from labels y (..., 1 at dim, ...)
  static T label_mask(const T& y, int64_t c, int64_t dim) TINYGRAD_MEMBER_DEF({
    Shape rs(y.ndim(), 1);
    rs[size_t(dim)] = c;
    return y == T::arange(double(c), std::nullopt, 1, y.dtype(), y.device()).reshape(rs);
  })
  // binary cross-entropy of probabilities p (log clamped at -100, as torch) or of logits; pos_weight scales the positive
  // term (logits), weight each element's loss
  static T bce(const T& p, const T& y, const std::optional<T>& weight, const std::optional<T>& pos_weight, bool logits,
               std::string_view reduction, const char* op) TINYGRAD_MEMBER_DEF({
    same_shape(p, y, op);
    T l = logits ? -((pos_weight ? *pos_weight * y : y) * p.logsigmoid() + (1.0 - y) * (-p).logsigmoid())
                 : -(y * p.log().maximum(-100.0) + (1.0 - y) * (1.0 - p).log().maximum(-100.0));
    return reduce_loss(weight ? l * *weight : l, reduction, op);
  })
  // weight (C) shaped to broadcast over x's class dim cd
  static std::optional<T> class_weight(const std::optional<T>& weight, const T& x, int64_t cd, const char* op) TINYGRAD_MEMBER_DEF({
    if (!weight) return std::nullopt;
    int64_t c = x.shape()[size_t(cd)];
    if (weight->shape() != Shape{c})
      throw ShapeError(std::string("tinygrad::") + op + ": weight of shape " + to_string(weight->shape()) + " needs one value per class (" +
                       std::to_string(c) + ")");
    Shape ws(x.ndim(), 1);
    ws[size_t(cd)] = c;
    return weight->fl().reshape(ws);
  })
  // torch's weighted nll of log-probabilities logp (C) or (N, C, ...) at class indices y, with its label smoothing:
  // (1 - ls) * nll + ls / C * (-sum_c w_c logp_c), both zero at ignored targets; "mean" divides by the summed w[y]
  static T class_nll(const T& logp, const T& y, const std::optional<T>& weight, std::optional<int64_t> ignore_index,
                     std::string_view reduction, double ls, const char* op) TINYGRAD_MEMBER_DEF({
    int64_t cd = logp.ndim() == 1 ? 0 : 1, c = logp.shape()[size_t(cd)];
    Shape want = logp.shape();
    want.erase(want.begin() + cd);
    if (y.shape() != want)
      throw ShapeError(std::string("tinygrad::") + op + ": target of shape " + to_string(y.shape()) + " fits neither input " +
                       to_string(logp.shape()) + " (probabilities) nor " + to_string(want) + " (class indices)");
    check_labels(y, c, ignore_index, op);
    std::optional<T> w = class_weight(weight, logp, cd, op);
    T hot = label_mask(y.unsqueeze(cd), c, cd);
    T wy = w ? hot.where(*w, 0.0).sum(cd) : T::ones(y.shape(), logp.fl().dtype(), logp.device());
    std::optional<T> keep;
    if (ignore_index) keep = y != double(*ignore_index);
    if (keep) wy = keep->where(wy, 0.0);
    T l = -hot.where(logp, 0.0).sum(cd) * wy;
    if (ls > 0) {
      T smooth = -(w ? logp * *w : logp).sum(cd);
      l = (1.0 - ls) * l + ls / double(c) * (keep ? keep->where(smooth, 0.0) : smooth);
    }
    return reduction == "mean" ? l.sum() / wy.sum() : reduction == "sum" ? l.sum() : l;
  })
  static void same_shape(const T& a, const T& b, const char* op) TINYGRAD_MEMBER_DEF({
    if (a.shape() != b.shape())
      throw ShapeError(std::string("tinygrad::") + op + ": input " + to_string(a.shape()) + " and target " +
                       to_string(b.shape()) + " differ in shape");
  })
  // a label outside [0, c) that is not ignore_index is an IndexError naming it and c (torch: "Target 7 is out of bounds"):
  // at once for labels known on the host (unless some are ignore_index), else at the next sync (check_indices)
  static void check_labels(const T& y, int64_t c, std::optional<int64_t> ignore, const char* op) TINYGRAD_MEMBER_DEF({
    if (!is_int(y.dtype()))
      throw DTypeError(std::string("tinygrad::") + op + ": class labels must be an integer tensor, got " + to_string(y.dtype()));
    if (ignore && *ignore >= 0 && *ignore < c) ignore.reset();  // in range anyway
    try {
      if (detail::check_index_values(y.uop(), c, false, (std::string(op) + " target").c_str())) return;
    } catch (const IndexError&) {
      if (!ignore) throw;  // else the bad value may be ignore_index: look again without it
    }
    detail::check_indices(ignore ? (y == double(*ignore)).where(0.0, y) : y, c, false, (std::string(op) + " target").c_str());
  })
  static void check_smoothing(double ls, const char* op) TINYGRAD_MEMBER_DEF({
    if (!(ls >= 0 && ls <= 1)) throw Error(std::string("tinygrad::") + op + ": label_smoothing must be in [0, 1], got " + std::to_string(ls));
  })
  static void check_reduction(std::string_view r, const char* op) TINYGRAD_MEMBER_DEF({
    if (r != "mean" && r != "sum" && r != "none")
      throw Error(std::string("tinygrad::") + op + ": reduction must be \"mean\", \"sum\" or \"none\", got \"" + std::string(r) + "\"");
  })
  static T reduce_loss(const T& l, std::string_view r, const char* op) TINYGRAD_MEMBER_DEF({
    check_reduction(r, op);
    return r == "mean" ? l.mean() : r == "sum" ? l.sum() : l;
  })
};

}  // namespace tinygrad::detail

template <class T>
struct std::tuple_size<tinygrad::detail::ValuesIndices<T>> : std::integral_constant<size_t, 2> {};
template <size_t I, class T>
struct std::tuple_element<I, tinygrad::detail::ValuesIndices<T>> {
  using type = T;
};
