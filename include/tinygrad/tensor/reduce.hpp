#pragma once
// Tensor methods: reductions, scans, sorting, losses.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
// Axes are a list (empty: all) or one int. Everything stays lazy and differentiable: scans are windowed
// reductions over a padded view (as tinygrad), sort is a bitonic network of compare-and-swaps.
#include <bit>
#include <concepts>
#include <string_view>
#include "elementwise.hpp"

namespace tinygrad::detail {

template <class T>
struct ReduceOps {
  using Axes = std::vector<int64_t>;

 public:
  // ---- reductions ----
  T sum(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::ADD, std::move(axes), keepdim, "sum"); })
  T sum(std::integral auto axis, bool keepdim = false) const { return sum(Axes{int64_t(axis)}, keepdim); }
  T prod(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::MUL, std::move(axes), keepdim, "prod"); })
  T prod(std::integral auto axis, bool keepdim = false) const { return prod(Axes{int64_t(axis)}, keepdim); }
  // max/min of an empty dim throw IndexError (as torch: there is no identity to return); NaN propagates
  T max(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().reduce(Ops::MAX, nonempty(axes, "max"), keepdim, "max"); })
  T max(std::integral auto axis, bool keepdim = false) const { return max(Axes{int64_t(axis)}, keepdim); }
  T min(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    return inv(inv(self()).reduce(Ops::MAX, nonempty(axes, "min"), keepdim, "min"));
  })
  T min(std::integral auto axis, bool keepdim = false) const { return min(Axes{int64_t(axis)}, keepdim); }
  // float16 and bfloat16 accumulate, divide (and take the root of var) in float32, then round once (as torch)
  T mean(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    auto ax = self().norm_axes(axes, "mean");
    return mean_acc(ax, keepdim).cast(self().fl().dtype());
  })
  T mean(std::integral auto axis, bool keepdim = false) const { return mean(Axes{int64_t(axis)}, keepdim); }
  // sum((x - mean)^2) / (n - correction)
  T var(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return var_acc(self().norm_axes(axes, "var"), keepdim, correction).cast(self().fl().dtype());
  })
  T var(std::integral auto axis, bool keepdim = false, double correction = 1) const { return var(Axes{int64_t(axis)}, keepdim, correction); }
  T std(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return var_acc(self().norm_axes(axes, "std"), keepdim, correction).sqrt().cast(self().fl().dtype());
  })
  T std(std::integral auto axis, bool keepdim = false, double correction = 1) const { return std(Axes{int64_t(axis)}, keepdim, correction); }
  std::pair<T, T> var_mean(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return {var(axes, keepdim, correction), mean(axes, keepdim)};
  })
  std::pair<T, T> std_mean(Axes axes = {}, bool keepdim = false, double correction = 1) const TINYGRAD_MEMBER_DEF({
    return {std(axes, keepdim, correction), mean(axes, keepdim)};
  })
  T any(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().bool_().reduce(Ops::MAX, std::move(axes), keepdim, "any"); })
  T any(std::integral auto axis, bool keepdim = false) const { return any(Axes{int64_t(axis)}, keepdim); }
  T all(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return self().logical_not().any(std::move(axes), keepdim).logical_not(); })
  T all(std::integral auto axis, bool keepdim = false) const { return all(Axes{int64_t(axis)}, keepdim); }
  // realizes: true when every element isclose
  bool allclose(const T& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const TINYGRAD_MEMBER_DEF({
    return self().isclose(o, rtol, atol, equal_nan).all().template item<bool>();
  })
  // index of the first maximum along axis (of the flattened tensor without one), int64 (as torch). NaN is the maximum (as torch).
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
  T argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const TINYGRAD_MEMBER_DEF({ return inv(self()).argmax(axis, keepdim); })
  // log(sum(exp(x))), shifted by the (detached) max for stability
  T logsumexp(Axes axes = {}, bool keepdim = false) const TINYGRAD_MEMBER_DEF({
    axes = self().norm_axes(axes, "logsumexp");
    auto x = self().fl();
    auto m = x.reduce(Ops::MAX, axes, true, "logsumexp").detach();  // an empty dim gives -inf, as torch
    m = m.isinf().where(0.0, m);  // an all -inf slice gives -inf, not NaN
    auto s = (x - m).exp().sum(axes, keepdim);
    return s.log() + m.reshape(s.shape());
  })
  T logsumexp(std::integral auto axis, bool keepdim = false) const { return logsumexp(Axes{int64_t(axis)}, keepdim); }
  T softmax(int64_t axis = -1) const TINYGRAD_MEMBER_DEF({
    axis = norm_axis(axis, self().ndim(), "softmax");
    auto m = self().fl() - self().fl().reduce(Ops::MAX, {axis}, true, "softmax").detach();
    auto e = m.exp();
    return e / e.sum(axis, true);
  })
  T log_softmax(int64_t axis = -1) const TINYGRAD_MEMBER_DEF({
    axis = norm_axis(axis, self().ndim(), "log_softmax");
    auto m = self().fl() - self().fl().reduce(Ops::MAX, {axis}, true, "log_softmax").detach();
    return m - m.exp().sum(axis, true).log();
  })
  T softmin(int64_t axis = -1) const TINYGRAD_MEMBER_DEF({ return (-self()).softmax(axis); })

  // ---- scans (inclusive) ----
  T cumsum(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return split_cum(axis, Ops::ADD, "cumsum"); })
  T cumprod(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return split_cum(axis, Ops::MUL, "cumprod"); })
  T cummax(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return split_cum(axis, Ops::MAX, "cummax"); })
  T cummin(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return inv(inv(self()).cummax(axis)); })
  // (values, int64 index of the last occurrence of each running max along axis), like torch.cummax
  std::pair<T, T> cummax_indices(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return cum_indices(self(), cummax(axis), axis, "cummax_indices"); })
  std::pair<T, T> cummin_indices(int64_t axis = 0) const TINYGRAD_MEMBER_DEF({ return cum_indices(self(), cummin(axis), axis, "cummin_indices"); })

  // ---- sorting ----
  // (values, int64 indices, as torch) along dim. Equal values keep their original order (the k-th equal value in the
  // output is the k-th in the input), ascending and descending alike. NaN sorts above +inf (last ascending, first
  // descending), as torch.
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
  T argsort(int64_t dim = -1, bool descending = false) const TINYGRAD_MEMBER_DEF({ return sort(dim, descending).second; })
  // the k largest (or smallest) along dim, as (values, int64 indices); always sorted
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

  // ---- losses (reduction: "mean", "sum" or "none"; labels are integer class indices) ----
  // self: probabilities; log is clamped at -100 like torch, so a certain wrong answer costs 100, not inf
  T binary_crossentropy(const T& y, std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    auto& p = self();
    same_shape(p, y, "binary_crossentropy");
    return reduce_loss(-(y * p.log().maximum(-100.0) + (1.0 - y) * (1.0 - p).log().maximum(-100.0)), reduction, "binary_crossentropy");
  })
  // self: logits; pos_weight scales the positive term
  T binary_crossentropy_logits(const T& y, std::string_view reduction = "mean",
                               const std::optional<T>& pos_weight = std::nullopt) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    same_shape(x, y, "binary_crossentropy_logits");
    return reduce_loss(-((pos_weight ? *pos_weight * y : y) * x.logsigmoid() + (1.0 - y) * (-x).logsigmoid()), reduction,
                       "binary_crossentropy_logits");
  })
  // self: logits (..., C); y: class indices (...). Labels equal to ignore_index (other than -1) drop out of the mean.
  T sparse_categorical_crossentropy(const T& y, int64_t ignore_index = -1, double label_smoothing = 0,
                                    std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    const char* op = "sparse_categorical_crossentropy";
    check_smoothing(label_smoothing, op);
    check_reduction(reduction, op);
    if (x.ndim() == 0 || Shape(x.shape().begin(), x.shape().end() - 1) != y.shape())
      throw ShapeError("tinygrad::sparse_categorical_crossentropy: labels of shape " + to_string(y.shape()) + " do not fit logits of shape " +
                       to_string(x.shape()) + " (want logits.shape[:-1])");
    check_labels(y, op);
    auto logp = x.log_softmax(-1);
    T mask = ignore_index != -1 ? (y != double(ignore_index)) : T::ones(y.shape(), DType::Bool, y.device());
    T hot = label_mask(y.unsqueeze(-1), x.shape().back(), int64_t(x.ndim()) - 1) & mask.unsqueeze(-1);
    // NOTE: the smoothing term only where smoothing is on (as torch): 0 * log_softmax is NaN where a logit is -inf
    T unreduced = hot.where(logp, 0.0).sum(-1);
    if (label_smoothing > 0) unreduced = (1.0 - label_smoothing) * unreduced + label_smoothing * (logp.mean(-1) * mask);
    if (reduction == "mean") return -(unreduced.sum() / mask.sum());
    return reduction == "sum" ? -unreduced.sum() : -unreduced;
  })
  // self: logits (C) or (N, C, ...); y: class indices (shape without C) or class probabilities (same shape)
  T cross_entropy(const T& y, std::string_view reduction = "mean", double label_smoothing = 0) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    check_smoothing(label_smoothing, "cross_entropy");
    if (x.ndim() == 0) throw ShapeError("tinygrad::cross_entropy: logits need a class dim, got shape " + to_string(x.shape()));
    int64_t cd = x.ndim() == 1 ? 0 : 1, c = x.shape()[size_t(cd)];
    T logp = x.log_softmax(cd);
    // as torch: probabilities weight every log-probability (0 * -inf is NaN there too), class indices pick one,
    // and the smoothing term is only there when smoothing is on
    if (y.shape() == x.shape()) {
      T p = label_smoothing > 0 ? (1.0 - label_smoothing) * y + label_smoothing / double(c) : y;
      return reduce_loss(-(logp * p).sum(cd), reduction, "cross_entropy");
    }
    Shape want = x.shape();
    want.erase(want.begin() + cd);
    if (y.shape() != want)
      throw ShapeError("tinygrad::cross_entropy: target of shape " + to_string(y.shape()) + " fits neither logits " + to_string(x.shape()) +
                       " (probabilities) nor " + to_string(want) + " (class indices)");
    check_labels(y, "cross_entropy");
    T nll = -label_mask(y.unsqueeze(cd), c, cd).where(logp, 0.0).sum(cd);
    if (label_smoothing > 0) nll = (1.0 - label_smoothing) * nll - label_smoothing / double(c) * logp.sum(cd);
    return reduce_loss(nll, reduction, "cross_entropy");
  })
  // self: log-probabilities (C) or (N, C, ...); y: class indices; weight: per class (C)
  T nll_loss(const T& y, const std::optional<T>& weight = std::nullopt, std::optional<int64_t> ignore_index = std::nullopt,
             std::string_view reduction = "mean") const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    check_reduction(reduction, "nll_loss");
    if (x.ndim() == 0) throw ShapeError("tinygrad::nll_loss: input needs a class dim, got shape " + to_string(x.shape()));
    int64_t cd = x.ndim() == 1 ? 0 : 1, c = x.shape()[size_t(cd)];
    Shape want = x.shape();
    want.erase(want.begin() + cd);
    if (y.shape() != want)
      throw ShapeError("tinygrad::nll_loss: target of shape " + to_string(y.shape()) + " does not fit input " + to_string(x.shape()) +
                       " (want " + to_string(want) + ")");
    check_labels(y, "nll_loss");
    if (weight && weight->shape() != Shape{c})
      throw ShapeError("tinygrad::nll_loss: weight of shape " + to_string(weight->shape()) + " needs one value per class (" +
                       std::to_string(c) + ")");
    T hot = label_mask(y.unsqueeze(cd), c, cd);
    Shape ws(x.ndim(), 1);
    ws[size_t(cd)] = c;
    T w = weight ? hot.where(weight->fl().reshape(ws), 0.0).sum(cd) : T::ones(y.shape(), x.fl().dtype(), x.device());
    if (ignore_index) w = (y != double(*ignore_index)).where(w, 0.0);
    T nll = -hot.where(x, 0.0).sum(cd) * w;
    return reduction == "mean" ? nll.sum() / w.sum() : reduction == "sum" ? nll.sum() : nll;
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
  static void same_shape(const T& a, const T& b, const char* op) TINYGRAD_MEMBER_DEF({
    if (a.shape() != b.shape())
      throw ShapeError(std::string("tinygrad::") + op + ": input " + to_string(a.shape()) + " and target " +
                       to_string(b.shape()) + " differ in shape");
  })
  static void check_labels(const T& y, const char* op) TINYGRAD_MEMBER_DEF({
    if (!is_int(y.dtype()))
      throw DTypeError(std::string("tinygrad::") + op + ": class labels must be an integer tensor, got " + to_string(y.dtype()));
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
