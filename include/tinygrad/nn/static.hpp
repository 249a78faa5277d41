#pragma once
// Static nn layers: sizes are template arguments, parameters are static tensors over ordinary Tensor
// handles (parameters() hands them to any optimizer). seq(l1, relu, l2) chains layers; the compiler
// checks each layer's input against the previous layer's output and names the layer on a mismatch.
#include <cmath>
#include "nn.hpp"
#include "../static/tensor.hpp"

namespace tinygrad::static_nn {

namespace detail {
template <class Self, class S>
void check_fits() {
  if constexpr (!Self::template fits<S>()) tinygrad::detail::st::fail<error::layer_does_not_fit<Self, S>>();
}
// a trainable parameter (requires grad, like nn's): uniform in [-b, b)
template <class P> P param(double b) { P p = P::uniform(b); p.requires_grad_(); return p; }
constexpr int64_t last(const auto& v) { return v.size() ? v[v.size() - 1] : 0; }
}  // namespace detail

// x (..., In) -> (..., Out): x @ weight.T + bias
template <int64_t In, int64_t Out, class T = float>
struct Linear {
  using W = static_tensor<T, Out, In>;
  using B = static_tensor<T, Out>;
  TINYGRAD_MEMBERS(Linear, (W, weight), (B, bias));
  Linear() : weight(detail::param<W>(1.0 / std::sqrt(double(In)))), bias(detail::param<B>(1.0 / std::sqrt(double(In)))) {}
  template <class S> static constexpr bool fits() { return S::rank >= 1 && (detail::last(S::value) == In || detail::last(S::value) == dyn); }
  template <static_expr X> auto operator()(const X& x) const {
    detail::check_fits<Linear, typename X::shape_type>();
    return x.matmul(weight.T()) + bias;
  }
  std::vector<Tensor> parameters() const { return {weight.tensor(), bias.tensor()}; }
};

// x (N, Cin, H, W) -> (N, Cout, OH, OW), a K x K kernel
template <int64_t Cin, int64_t Cout, int64_t K, int64_t Stride = 1, int64_t Padding = 0, class T = float>
struct Conv2d {
  using W = static_tensor<T, Cout, Cin, K, K>;
  using B = static_tensor<T, Cout>;
  TINYGRAD_MEMBERS(Conv2d, (W, weight), (B, bias));
  Conv2d() : weight(detail::param<W>(1.0 / std::sqrt(double(Cin * K * K)))), bias(detail::param<B>(1.0 / std::sqrt(double(Cin * K * K)))) {}
  template <class S> static constexpr bool fits() {
    if constexpr (S::rank != 4) return false;
    else {
      auto v = S::value;
      return (v[1] == Cin || v[1] == dyn) && (v[2] == dyn || v[2] + 2 * Padding >= K) && (v[3] == dyn || v[3] + 2 * Padding >= K);
    }
  }
  template <static_expr X> auto operator()(const X& x) const {
    detail::check_fits<Conv2d, typename X::shape_type>();
    return conv2d<Stride, Padding>(x, weight, bias);
  }
  std::vector<Tensor> parameters() const { return {weight.tensor(), bias.tensor()}; }
};

// batch norm over channel dim 1 of (N, C, ...): nn::BatchNorm underneath (running statistics follow bn.training, else TrainingScope)
template <int64_t C>
struct BatchNorm {
  nn::BatchNorm bn{C};
  template <class S> static constexpr bool fits() {
    if constexpr (S::rank < 2) return false;
    else return S::value[1] == C || S::value[1] == dyn;
  }
  template <static_expr X> auto operator()(const X& x) const {
    detail::check_fits<BatchNorm, typename X::shape_type>();
    using R = static_tensor_of<X>;
    // inference on images: the running statistics are leaves of a static expression, so one plan serves every batch
    if constexpr (X::shape_type::rank == 4 && X::dtype == DType::Float32) {
      auto f32 = [](const std::optional<Tensor>& t) { return t && t->dtype() == DType::Float32; };
      if (!bn.is_training() && bn.track_running_stats && f32(bn.weight) && f32(bn.bias) && f32(bn.running_mean) && f32(bn.running_var)) {
        using V = static_tensor<float, C>;
        auto ch = [](const Tensor& t) { return V(t, V::unchecked).template reshape<C, 1, 1>(); };
        return R((x - ch(bn.running_mean)) * ((ch(bn.running_var) + float(bn.eps)).rsqrt() * ch(*bn.weight)) + ch(*bn.bias));
      }
    }
    return R(bn(x.lazy()), R::unchecked);
  }
  std::vector<Tensor> parameters() const { return {*bn.weight, *bn.bias, bn.running_mean, bn.running_var, bn.num_batches_tracked}; }
};

// x (..., N) normalized over the last dim (biased variance), then scaled and shifted: torch's nn.LayerNorm(N)
template <int64_t N, class T = float>
struct LayerNorm {
  using P = static_tensor<T, N>;
  TINYGRAD_MEMBERS(LayerNorm, (P, weight), (P, bias));
  double eps = 1e-5;
  explicit LayerNorm(double eps_ = 1e-5) : weight(P::ones()), bias(P::zeros()), eps(eps_) { weight.requires_grad_(); bias.requires_grad_(); }
  template <class S> static constexpr bool fits() { return S::rank >= 1 && (detail::last(S::value) == N || detail::last(S::value) == dyn); }
  template <static_expr X> auto operator()(const X& x) const {
    detail::check_fits<LayerNorm, typename X::shape_type>();
    return layer_norm(x, weight, bias, eps);
  }
  std::vector<Tensor> parameters() const { return {weight.tensor(), bias.tensor()}; }
};

// rows of weight (Vocab, Dim) picked by integer indices: idx (...) -> (..., Dim); an index outside [0, Vocab) is an
// IndexError where nn::embedding would see it (ids of a realized static tensor: checked here, as a cached plan lowers
// over placeholders), else a zero row
template <int64_t Vocab, int64_t Dim, class T = float>
struct Embedding {
  using W = static_tensor<T, Vocab, Dim>;
  TINYGRAD_MEMBERS(Embedding, (W, weight));
  Embedding() : weight(detail::param<W>(std::sqrt(6.0 / double(Vocab + Dim)))) {}
  struct op {
    static constexpr const char* name = "embedding";
    static constexpr const char* errors[] = {""};
    template <int, class... S> using error = void;
    template <size_t A, size_t B> static constexpr auto rule(const tinygrad::detail::st::dims<A>& idx, const tinygrad::detail::st::dims<B>& w) {
      tinygrad::detail::st::res<A + 1> r;
      for (size_t i = 0; i < A; i++) r.out[i] = idx[i];
      r.out[A] = w[B - 1];
      return r;
    }
    static Tensor lower(const auto&, const Tensor& idx, const Tensor& w) { return nn::embedding(idx, w); }
  };
  template <class S> static constexpr bool fits() { return true; }
  template <static_expr I> auto operator()(const I& idx) const {
    if constexpr (tinygrad::detail::st::float_dt(I::dtype) || I::dtype == DType::Bool)
      tinygrad::detail::st::fail<error::needs_integer_dtype<Embedding, scalar_type<I::dtype>>>();
    if constexpr (requires { { idx.tensor() } -> std::convertible_to<const Tensor&>; })
      tinygrad::detail::check_indices(idx.tensor(), weight.tensor().shape(0), false, "nn::embedding");
    return tinygrad::detail::st::make<op, static_dtype<T>>(op{}, idx, weight);
  }
  std::vector<Tensor> parameters() const { return {weight.tensor()}; }
};

template <int64_t K = 2, int64_t Stride = K>
struct MaxPool2d {
  template <class S> static constexpr bool fits() {
    if constexpr (S::rank < 2) return false;
    else {
      auto v = S::value;
      return (v[S::rank - 2] == dyn || v[S::rank - 2] >= K) && (v[S::rank - 1] == dyn || v[S::rank - 1] >= K);
    }
  }
  template <static_expr X> auto operator()(const X& x) const {
    detail::check_fits<MaxPool2d, typename X::shape_type>();
    return max_pool2d<K, Stride>(x);
  }
  std::vector<Tensor> parameters() const { return {}; }
};

// (N, ...) -> (N, prod(...))
template <int64_t Start = 1>
struct Flatten {
  template <class S> static constexpr bool fits() { return int64_t(S::rank) > Start; }
  template <static_expr X> auto operator()(const X& x) const {
    detail::check_fits<Flatten, typename X::shape_type>();
    return x.template flatten<Start, -1>();
  }
  std::vector<Tensor> parameters() const { return {}; }
};

// activations as layers
#define TG_ACT(NAME)                                                                        \
  struct NAME##_t {                                                                         \
    template <class S> static constexpr bool fits() { return true; }                        \
    template <static_expr X> auto operator()(const X& x) const { return x.NAME(); }         \
    std::vector<Tensor> parameters() const { return {}; }                                   \
  };                                                                                        \
  inline constexpr NAME##_t NAME{};
TG_ACT(relu) TG_ACT(sigmoid) TG_ACT(tanh) TG_ACT(gelu) TG_ACT(gelu_tanh) TG_ACT(silu)
#undef TG_ACT

// layers applied in order; layer I must accept what layer I-1 returns
template <class... L>
struct sequential {
  std::tuple<L...> layers;
  template <static_expr X> auto operator()(const X& x) const { return apply<0>(x); }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> r;
    std::apply([&](const auto&... l) { (append(r, l.parameters()), ...); }, layers);
    return r;
  }

 private:
  static void append(std::vector<Tensor>& r, const std::vector<Tensor>& p) { r.insert(r.end(), p.begin(), p.end()); }
  template <size_t I, class X>
  auto apply(const X& x) const {
    if constexpr (I == sizeof...(L)) return x;
    else {
      using Li = std::tuple_element_t<I, std::tuple<L...>>;
      if constexpr (!Li::template fits<typename X::shape_type>()) {
        tinygrad::detail::st::fail<error::layer_does_not_fit<layer<I>, Li, typename X::shape_type>>();
        return x;
      } else return apply<I + 1>(std::get<I>(layers)(x));
    }
  }
};
template <class... L> sequential<L...> seq(const L&... l) { return {{l...}}; }

}  // namespace tinygrad::static_nn
