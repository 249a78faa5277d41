#pragma once
// Compile-time tensors: static_tensor<float, dyn, 784> carries dtype and extents in its type. Ops return
// expression nodes whose type knows the result shape; a shape mistake is a compile error naming the op
// and the shapes (a run-time ShapeError with the same text where an extent is dyn). Evaluating an
// expression lowers it to the dynamic Tensor ops; plans are cached per expression type (detail/plan.hpp).
#include <tuple>
#include "detail/plan.hpp"
#include "../tensor/print.hpp"

namespace tinygrad {

struct half_t {};      // element type of float16 static tensors
struct bfloat16_t {};  // element type of bfloat16 static tensors

template <class T> inline constexpr DType static_dtype = dtype_of<T>();
template <> inline constexpr DType static_dtype<half_t> = DType::Float16;
template <> inline constexpr DType static_dtype<bfloat16_t> = DType::BFloat16;

namespace detail::st {
template <DType D>
using scalar_t = std::tuple_element_t<size_t(D), std::tuple<bool, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t,
                                                            half_t, bfloat16_t, float, double>>;
template <DType D> struct scalar_of { using type = scalar_t<D>; };
}  // namespace detail::st
template <DType D> using scalar_type = typename detail::st::scalar_of<D>::type;

template <class T, int64_t... E> class static_tensor;

// anything with a static shape: static_tensor or an expression node
template <class X>
concept static_expr = requires { typename std::remove_cvref_t<X>::shape_type; std::remove_cvref_t<X>::n_key; };

namespace detail::st {
template <class T, class S> struct tensor_of;
template <class T, int64_t... E> struct tensor_of<T, shape<E...>> { using type = static_tensor<T, E...>; };
template <class X> struct is_leaf_t : std::false_type {};
template <class T, int64_t... E> struct is_leaf_t<static_tensor<T, E...>> : std::true_type {};
}  // namespace detail::st
// the static_tensor an expression evaluates to
template <static_expr X> using static_tensor_of = typename detail::st::tensor_of<scalar_type<X::dtype>, typename X::shape_type>::type;

// ---- compile-time errors: undefined templates named as sentences (their run-time twins throw the same text) ----
namespace error {
template <class Op, class... S> struct shapes_not_broadcastable;
template <class Op, class... S> struct axis_out_of_range;
template <class Op, class... S> struct reshape_changes_element_count;
template <class Op, class... S> struct reshape_has_negative_extent;
template <class Op, class... S> struct reshape_can_infer_only_one_dyn;
template <class Op, class... S> struct unflatten_changes_extent;
template <class Op, class... S> struct mask_does_not_broadcast;
template <class Op, class... S> struct permute_needs_one_axis_per_dim;
template <class Op, class... S> struct permute_repeats_an_axis;
template <class Op, class... S> struct expand_does_not_fit;
template <class Op, class... S> struct needs_two_values_per_dim;
template <class Op, class... S> struct pad_removes_more_than_the_dim;
template <class Op, class... S> struct shrink_out_of_bounds;
template <class Op, class... S> struct slice_out_of_bounds;
template <class Op, class... S> struct ranks_differ;
template <class Op, class... S> struct shapes_differ;
template <class Op, class... S> struct needs_at_least_1_dim;
template <class Op, class... S> struct inner_dims_differ;
template <class Op, class... S> struct conv2d_needs_4d_input_and_weight;
template <class Op, class... S> struct out_channels_not_divisible_by_groups;
template <class Op, class... S> struct channels_differ;
template <class Op, class... S> struct kernel_larger_than_input;
template <class Op, class... S> struct pool_needs_2_dims;
template <class Op, class... S> struct window_larger_than_input;
template <class Op, class... S> struct needs_logits_n_c_and_labels_n;
template <class Op, class... S> struct batch_sizes_differ;
template <class Op, class... S> struct target_rank_does_not_fit;
template <class Op, class... T> struct needs_integer_dtype;
template <class Op, class... T> struct dtypes_differ;
template <class Layer, class... S> struct layer_does_not_fit;
}  // namespace error

// ---- op tags: name, rule (detail/shape.hpp), errors by code, lowering to Tensor ops ----
namespace op {
namespace st = detail::st;
using st::dims;
template <class Self>
struct ewise {  // elementwise binary: numpy broadcasting
  static constexpr const char* errors[] = {"shapes_not_broadcastable"};
  template <int, class... S> using error = tinygrad::error::shapes_not_broadcastable<Self, S...>;
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& a, const dims<B>& b) { return st::broadcast(a, b); }
};
#define TG_BINARY(NAME, EXPR)                                                                   \
  struct NAME : ewise<NAME> {                                                                   \
    static constexpr const char* name = #NAME;                                                  \
    static Tensor lower(const auto&, const Tensor& a, const Tensor& b) { return EXPR; }          \
  };
TG_BINARY(add, a + b) TG_BINARY(sub, a - b) TG_BINARY(mul, a * b) TG_BINARY(div, a / b) TG_BINARY(pow, a.pow(b))
TG_BINARY(maximum, a.maximum(b)) TG_BINARY(minimum, a.minimum(b))
TG_BINARY(lt, a < b) TG_BINARY(gt, a > b) TG_BINARY(le, a <= b) TG_BINARY(ge, a >= b) TG_BINARY(eq, a == b) TG_BINARY(ne, a != b)
TG_BINARY(bitwise_and, a & b) TG_BINARY(bitwise_or, a | b) TG_BINARY(bitwise_xor, a ^ b)
#undef TG_BINARY
struct where : ewise<where> {
  static constexpr const char* name = "where";
  template <size_t A, size_t B, size_t C>
  static constexpr auto rule(const dims<A>& c, const dims<B>& a, const dims<C>& b) {
    auto r = st::broadcast(st::broadcast(c, a).out, b);
    r.code |= st::broadcast(c, a).code;
    return r;
  }
  static Tensor lower(const auto&, const Tensor& c, const Tensor& a, const Tensor& b) { return c.where(a, b); }
};

template <class Self>
struct same_shape {  // unary: any shape
  static constexpr const char* errors[] = {""};
  template <int, class... S> using error = void;
  template <size_t A> static constexpr st::res<A> rule(const dims<A>& a) { return {0, a}; }
};
#define TG_UNARY(NAME)                                                                          \
  struct NAME : same_shape<NAME> {                                                              \
    static constexpr const char* name = #NAME;                                                  \
    static Tensor lower(const auto&, const Tensor& a) { return a.NAME(); }                      \
  };
TG_UNARY(neg) TG_UNARY(exp) TG_UNARY(log) TG_UNARY(exp2) TG_UNARY(log2) TG_UNARY(sqrt) TG_UNARY(rsqrt) TG_UNARY(reciprocal)
TG_UNARY(sin) TG_UNARY(cos) TG_UNARY(tan) TG_UNARY(sigmoid) TG_UNARY(tanh) TG_UNARY(gelu) TG_UNARY(silu) TG_UNARY(erf)
TG_UNARY(relu) TG_UNARY(abs) TG_UNARY(square) TG_UNARY(trunc) TG_UNARY(floor) TG_UNARY(ceil)
#undef TG_UNARY
struct gelu_tanh : same_shape<gelu_tanh> {
  static constexpr const char* name = "gelu_tanh";
  static Tensor lower(const auto&, const Tensor& a) { return a.gelu("tanh"); }
};
template <DType D>
struct cast : same_shape<cast<D>> {
  static constexpr const char* name = "cast";
  static Tensor lower(const auto&, const Tensor& a) { return a.cast(D); }
};

// NAME's lowering passes the axes and Keep as __VA_ARGS__
#define TG_REDUCE(NAME, ...)                                                                                          \
  template <bool Keep, int64_t... Ax>                                                                                 \
  struct NAME {                                                                                                       \
    static constexpr const char* name = #NAME;                                                                        \
    static constexpr const char* errors[] = {"axis_out_of_range"};                                                    \
    template <int, class... S> using error = tinygrad::error::axis_out_of_range<NAME, S...>;                          \
    template <size_t A> static constexpr auto rule(const dims<A>& a) {                                                \
      constexpr std::array<int64_t, sizeof...(Ax)> ax{Ax...};                                                         \
      return st::reduce<Keep, st::reduce_rank<Keep, A>(ax)>(a, ax);                                                   \
    }                                                                                                                 \
    static Tensor lower(const auto&, const Tensor& a) { return a.NAME(__VA_ARGS__); }                                \
  };
TG_REDUCE(sum, std::vector<int64_t>{Ax...}, Keep) TG_REDUCE(max, std::vector<int64_t>{Ax...}, Keep)
TG_REDUCE(min, std::vector<int64_t>{Ax...}, Keep) TG_REDUCE(mean, std::vector<int64_t>{Ax...}, Keep)
TG_REDUCE(argmax, std::optional<int64_t>{Ax...}, Keep) TG_REDUCE(argmin, std::optional<int64_t>{Ax...}, Keep)  // one axis or none
#undef TG_REDUCE
#define TG_AXIS_OP(NAME)                                                                                  \
  template <int64_t Ax>                                                                                   \
  struct NAME {                                                                                           \
    static constexpr const char* name = #NAME;                                                            \
    static constexpr const char* errors[] = {"axis_out_of_range"};                                        \
    template <int, class... S> using error = tinygrad::error::axis_out_of_range<NAME, S...>;              \
    template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::check_axis(a, Ax); }    \
    static Tensor lower(const auto&, const Tensor& a) { return a.NAME(Ax); }                              \
  };
TG_AXIS_OP(softmax) TG_AXIS_OP(log_softmax)
#undef TG_AXIS_OP

inline Shape to_shape(const auto& a) { return Shape(a.begin(), a.end()); }
// node n's extents as the target of a reshape or expand of a: the actual ones, or where a has symbolic dims (a plan's
// variables), -1 at the one dyn extent (the reshape infers it: the variable) or at each dyn extent a keeps (expand);
// a reshape of several: each dyn extent is one of a's symbolic dims, in order, at its bound (Tensor::reshape places
// them; a dyn extent of 1 among others is concrete, a 1 in a too)
template <class N>
Shape target_of(const N& n, const Tensor& a, bool expand) {
  Shape s = to_shape(n.rt_shape());
  constexpr auto v = N::shape_type::value;
  if (!a.is_symbolic()) return s;
  if (!expand && st::count_dyn(v) > 1) {
    Shape bounds;
    auto ss = a.sym_shape();
    for (size_t i = 0; i < ss.size(); i++) if (!ss[i].is_int()) bounds.push_back(a.shape()[i]);
    bool ones_concrete = bounds.size() < size_t(st::count_dyn(v));
    for (size_t i = 0, k = 0; i < s.size() && k < bounds.size(); i++)
      if (v[i] == dyn && !(ones_concrete && s[i] == 1)) s[i] = bounds[k++];
    return s;
  }
  for (size_t i = 0; i < s.size(); i++)
    if (v[i] == dyn && (!expand || (i + a.ndim() >= s.size() && a.shape()[i + a.ndim() - s.size()] != 1))) s[i] = -1;
  return s;
}

template <int64_t... T>
struct reshape {
  static constexpr const char* name = "reshape";
  static constexpr const char* errors[] = {"reshape_changes_element_count", "reshape_has_negative_extent", "reshape_can_infer_only_one_dyn"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::reshape_changes_element_count<reshape, S..., shape<T...>>,
                          tinygrad::error::reshape_has_negative_extent<reshape, S...>,
                          tinygrad::error::reshape_can_infer_only_one_dyn<reshape, S...>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::reshape<sizeof...(T)>(a, dims<sizeof...(T)>{T...}); }
  static Tensor lower(const auto& n, const Tensor& a) { return a.reshape(target_of(n, a, false)); }
};
template <int64_t S, int64_t E>
struct flatten {
  static constexpr const char* name = "flatten";
  static constexpr const char* errors[] = {"axis_out_of_range"};
  template <int, class... Sh> using error = tinygrad::error::axis_out_of_range<flatten, Sh...>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) {
    constexpr int64_t s = st::norm_axis(S, A), e = st::norm_axis(E, A);
    return st::flatten<(s >= 0 && e >= s && e < int64_t(A)) ? A - size_t(e - s) : A>(a, S, E);
  }
  static Tensor lower(const auto& n, const Tensor& a) { return a.reshape(target_of(n, a, false)); }
};
template <int64_t Ax, int64_t... N>
struct unflatten {  // axis Ax split into N... (all static: the other dims may be dyn)
  static constexpr const char* name = "unflatten";
  static constexpr const char* errors[] = {"axis_out_of_range", "unflatten_changes_extent"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::axis_out_of_range<unflatten, S...>,
                          tinygrad::error::unflatten_changes_extent<unflatten, S..., shape<N...>>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::unflatten(a, Ax, dims<sizeof...(N)>{N...}); }
  static Tensor lower(const auto& n, const Tensor& a) { return a.reshape(target_of(n, a, false)); }
};
template <int64_t... P>
struct permute {
  static constexpr const char* name = "permute";
  static constexpr const char* errors[] = {"permute_needs_one_axis_per_dim", "axis_out_of_range", "permute_repeats_an_axis"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::permute_needs_one_axis_per_dim<permute, S...>, tinygrad::error::axis_out_of_range<permute, S...>,
                          tinygrad::error::permute_repeats_an_axis<permute, S...>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::permute(a, std::array<int64_t, sizeof...(P)>{P...}); }
  static Tensor lower(const auto&, const Tensor& a) { return a.permute({P...}); }
};
template <int64_t... T>
struct expand {
  static constexpr const char* name = "expand";
  static constexpr const char* errors[] = {"expand_does_not_fit"};
  template <int, class... S> using error = tinygrad::error::expand_does_not_fit<expand, S..., shape<T...>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::expand<sizeof...(T)>(a, dims<sizeof...(T)>{T...}); }
  static Tensor lower(const auto& n, const Tensor& a) { return a.expand(target_of(n, a, true)); }
};
TINYGRAD_API std::vector<std::pair<int64_t, int64_t>> pairs(std::initializer_list<int64_t> v) TINYGRAD_DEF({
  std::vector<std::pair<int64_t, int64_t>> r;
  for (auto it = v.begin(); it != v.end(); it += 2) r.push_back({it[0], it[1]});
  return r;
})
template <int64_t... P>
struct pad {
  static constexpr const char* name = "pad";
  static constexpr const char* errors[] = {"needs_two_values_per_dim", "pad_removes_more_than_the_dim"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::needs_two_values_per_dim<pad, S...>, tinygrad::error::pad_removes_more_than_the_dim<pad, S...>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::pad(a, std::array<int64_t, sizeof...(P)>{P...}); }
  static Tensor lower(const auto&, const Tensor& a) { return a.pad(pairs({P...})); }
};
template <int64_t... P>
struct shrink {
  static constexpr const char* name = "shrink";
  static constexpr const char* errors[] = {"needs_two_values_per_dim", "shrink_out_of_bounds"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::needs_two_values_per_dim<shrink, S...>, tinygrad::error::shrink_out_of_bounds<shrink, S...>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::shrink(a, std::array<int64_t, sizeof...(P)>{P...}); }
  static Tensor lower(const auto&, const Tensor& a) { return a.shrink(pairs({P...})); }
};
template <int64_t... Ax>
struct flip {
  static constexpr const char* name = "flip";
  static constexpr const char* errors[] = {"axis_out_of_range"};
  template <int, class... S> using error = tinygrad::error::axis_out_of_range<flip, S...>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::axes_in_range(a, std::array<int64_t, sizeof...(Ax)>{Ax...}); }
  static Tensor lower(const auto&, const Tensor& a) { return a.flip(std::vector<int64_t>{Ax...}); }
};
template <int64_t Ax, int64_t Start, int64_t Stop>
struct slice {
  static constexpr const char* name = "slice";
  static constexpr const char* errors[] = {"axis_out_of_range", "slice_out_of_bounds"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::axis_out_of_range<slice, S...>, tinygrad::error::slice_out_of_bounds<slice, S...>>;
  template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::slice(a, Ax, Start, Stop); }
  static Tensor lower(const auto&, const Tensor& a) {
    std::vector<std::pair<int64_t, int64_t>> r;
    for (auto n : a.shape()) r.push_back({0, n});
    r[size_t(st::norm_axis(Ax, a.ndim()))] = {Start, Stop};
    return a.shrink(r);
  }
};
template <int64_t Ax>
struct cat {
  static constexpr const char* name = "cat";
  static constexpr const char* errors[] = {"ranks_differ", "axis_out_of_range", "shapes_differ"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::ranks_differ<cat, S...>, tinygrad::error::axis_out_of_range<cat, S...>,
                          tinygrad::error::shapes_differ<cat, S...>>;
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& a, const dims<B>& b) { return st::cat(a, b, Ax); }
  static Tensor lower(const auto&, const Tensor& a, const Tensor& b) { return Tensor::cat({a, b}, Ax); }
};

struct matmul {
  static constexpr const char* name = "matmul";
  static constexpr const char* errors[] = {"needs_at_least_1_dim", "inner_dims_differ", "shapes_not_broadcastable"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::needs_at_least_1_dim<matmul, S...>, tinygrad::error::inner_dims_differ<matmul, S...>,
                          tinygrad::error::shapes_not_broadcastable<matmul, S...>>;
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& a, const dims<B>& b) { return st::matmul(a, b); }
  static Tensor lower(const auto&, const Tensor& a, const Tensor& b) { return a.matmul(b); }
};
// softmax(q k^T / sqrt(d) + mask) v: q (..., Sq, D), k (..., Sk, D), v (..., Sk, Dv), a mask (bool: keep where true, or
// added to the scores) that broadcasts to (..., Sq, Sk) -> (..., Sq, Dv)
template <bool Masked>
struct scaled_dot_product_attention {
  static constexpr const char* name = "scaled_dot_product_attention";
  static constexpr const char* errors[] = {"needs_at_least_1_dim", "inner_dims_differ", "shapes_not_broadcastable", "mask_does_not_broadcast"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::needs_at_least_1_dim<scaled_dot_product_attention, S...>,
                          tinygrad::error::inner_dims_differ<scaled_dot_product_attention, S...>,
                          tinygrad::error::shapes_not_broadcastable<scaled_dot_product_attention, S...>,
                          tinygrad::error::mask_does_not_broadcast<scaled_dot_product_attention, S...>>;
  template <size_t Q, size_t K, size_t V, size_t... M>
  static constexpr auto rule(const dims<Q>& q, const dims<K>& k, const dims<V>& v, const dims<M>&... m) {
    return st::attention(q, k, v, m...);
  }
  static Tensor lower(const auto&, const Tensor& q, const Tensor& k, const Tensor& v) { return q.scaled_dot_product_attention(k, v); }
  static Tensor lower(const auto&, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
    return q.scaled_dot_product_attention(k, v, m);
  }
};
// torch's F.layer_norm over the last dim: x (..., N), weight and bias (N), eps a scalar leaf (part of the plan key).
// One node, so x is lowered once (x - mean(x) written with static ops would copy x's expression into both uses)
struct layer_norm {
  static constexpr const char* name = "layer_norm";
  static constexpr const char* errors[] = {"shapes_differ"};
  template <int, class... S> using error = tinygrad::error::shapes_differ<layer_norm, S...>;
  template <size_t A, size_t W> static constexpr auto rule(const dims<A>& x, const dims<W>& w, const dims<W>& b, const dims<0>&) {
    st::res<A> r{0, x};
    int64_t n = A ? x[A - 1] : 0;
    if (A == 0 || w != b || (n != dyn && w[0] != dyn && n != w[0])) r.code = 1;
    return r;
  }
  static Tensor lower(const auto& n, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor&) {
    return x.layernorm({-1}, boost::hana::at_c<3>(n.ch).value) * w + b;
  }
};
template <int64_t Stride, int64_t Padding, int64_t Dilation, int64_t Groups>
struct conv2d {
  static constexpr const char* name = "conv2d";
  static constexpr const char* errors[] = {"conv2d_needs_4d_input_and_weight", "out_channels_not_divisible_by_groups", "channels_differ",
                                           "kernel_larger_than_input"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::conv2d_needs_4d_input_and_weight<conv2d, S...>,
                          tinygrad::error::out_channels_not_divisible_by_groups<conv2d, S...>,
                          tinygrad::error::channels_differ<conv2d, S...>, tinygrad::error::kernel_larger_than_input<conv2d, S...>>;
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& x, const dims<B>& w) {
    return st::conv2d(x, w, Stride, Padding, Dilation, Groups);
  }
  static Tensor lower(const auto&, const Tensor& x, const Tensor& w) { return x.conv2d(w, std::nullopt, Stride, Padding, Dilation, Groups); }
};
#define TG_POOL(NAME)                                                                                                        \
  template <int64_t K, int64_t Stride>                                                                                       \
  struct NAME {                                                                                                              \
    static constexpr const char* name = #NAME;                                                                               \
    static constexpr const char* errors[] = {"pool_needs_2_dims", "window_larger_than_input"};                               \
    template <int C, class... S>                                                                                             \
    using error = st::nth_t<C, tinygrad::error::pool_needs_2_dims<NAME, S...>, tinygrad::error::window_larger_than_input<NAME, S...>>; \
    template <size_t A> static constexpr auto rule(const dims<A>& a) { return st::pool2d(a, K, Stride); }                   \
    static Tensor lower(const auto&, const Tensor& a) { return a.NAME({K, K}, {Stride, Stride}); }                           \
  };
TG_POOL(max_pool2d) TG_POOL(avg_pool2d)
#undef TG_POOL

struct sparse_categorical_crossentropy {
  static constexpr const char* name = "sparse_categorical_crossentropy";
  static constexpr const char* errors[] = {"needs_logits_n_c_and_labels_n", "batch_sizes_differ"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::needs_logits_n_c_and_labels_n<sparse_categorical_crossentropy, S...>,
                          tinygrad::error::batch_sizes_differ<sparse_categorical_crossentropy, S...>>;
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& x, const dims<B>& y) { return st::sparse_xent(x, y); }
  static Tensor lower(const auto&, const Tensor& x, const Tensor& y) { return x.sparse_categorical_crossentropy(y); }
};
template <class Self>
struct same_shape_loss {  // input and target of one shape -> a scalar
  static constexpr const char* errors[] = {"shapes_differ"};
  template <int, class... S> using error = tinygrad::error::shapes_differ<Self, S...>;
  template <size_t A, size_t B> static constexpr st::res<0> rule(const dims<A>& x, const dims<B>& y) { return {st::same(x, y).code, {}}; }
};
template <class Self, bool Probs>
struct class_loss {  // logits (C) or (N, C, ...) and class indices or (Probs) class probabilities -> a scalar
  static constexpr const char* errors[] = {"target_rank_does_not_fit", "shapes_differ", "batch_sizes_differ"};
  template <int C, class... S>
  using error = st::nth_t<C, tinygrad::error::target_rank_does_not_fit<Self, S...>, tinygrad::error::shapes_differ<Self, S...>,
                          tinygrad::error::batch_sizes_differ<Self, S...>>;
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& x, const dims<B>& y) { return st::class_target(x, y, Probs); }
};
template <class Self> using probs_or_labels_loss = class_loss<Self, true>;
template <class Self> using labels_loss = class_loss<Self, false>;
#define TG_LOSS(NAME, BASE)                                                                               \
  struct NAME : BASE<NAME> {                                                                              \
    static constexpr const char* name = #NAME;                                                            \
    static Tensor lower(const auto&, const Tensor& x, const Tensor& y) { return x.NAME(y); }               \
  };
TG_LOSS(binary_crossentropy, same_shape_loss) TG_LOSS(binary_crossentropy_logits, same_shape_loss)
TG_LOSS(cross_entropy, probs_or_labels_loss) TG_LOSS(nll_loss, labels_loss)
#undef TG_LOSS

// assigning an expression to a static tensor (shapes: the tensor's, the expression's)
struct assign {
  static constexpr const char* name = "assign";
  static constexpr const char* errors[] = {"shapes_differ"};
  template <size_t A, size_t B> static constexpr auto rule(const dims<A>& t, const dims<B>& a) { return st::same(a, t); }
};
}  // namespace op

namespace detail::st {
constexpr DType promote(DType a, DType b) { return least_upper_dtype(a, b); }
constexpr DType sum_dtype(DType d) {
  return kind(d) == 'f' ? d : DType::Int64;  // bools and ints sum in int64, as Tensor::sum (and torch)
}
// the dtype a C++ number takes next to a tensor of dtype d (weak, like tinygrad's python scalars)
template <class S> constexpr DType weak(DType d) {
  if constexpr (std::is_floating_point_v<S>) return float_of(d);
  else if constexpr (std::is_same_v<S, bool>) return d;
  else return d == DType::Bool ? DType::Int32 : d;
}
// class labels are integers (not bool)
template <class Op, DType D> constexpr void check_labels() {
  if constexpr (float_dt(D) || D == DType::Bool) fail<error::needs_integer_dtype<Op, scalar_type<D>>>();
}
template <class Op>
constexpr bool is_cmp = std::is_same_v<Op, op::lt> || std::is_same_v<Op, op::gt> || std::is_same_v<Op, op::le> || std::is_same_v<Op, op::ge> ||
                                             std::is_same_v<Op, op::eq> || std::is_same_v<Op, op::ne>;
template <class Op>
constexpr bool is_bitwise = std::is_same_v<Op, op::bitwise_and> || std::is_same_v<Op, op::bitwise_or> || std::is_same_v<Op, op::bitwise_xor>;
template <class Op> constexpr DType binary_dtype(DType a, DType b) {
  if constexpr (is_cmp<Op>) return DType::Bool;
  else if constexpr (std::is_same_v<Op, op::div> || std::is_same_v<Op, op::pow>) return float_of(promote(a, b));
  else return promote(a, b);
}
template <class Op, class A, class B>
auto binary(const A& a, const B& b) {
  if constexpr (is_bitwise<Op>)
    if constexpr (float_dt(A::dtype) || float_dt(B::dtype)) fail<error::needs_integer_dtype<Op, scalar_type<A::dtype>, scalar_type<B::dtype>>>();
  return make<Op, binary_dtype<Op>(A::dtype, B::dtype)>(Op{}, a, b);
}
template <class Op, bool Left, class A, class S>
auto binary_scalar(const A& a, S s) {
  if constexpr (is_bitwise<Op>)
    if constexpr (float_dt(A::dtype) || std::is_floating_point_v<S>) fail<error::needs_integer_dtype<Op, scalar_type<A::dtype>, S>>();
  scalar_leaf<weak<S>(A::dtype)> c{double(s)};
  if constexpr (Left) return make<Op, binary_dtype<Op>(A::dtype, weak<S>(A::dtype))>(Op{}, c, a);
  else return make<Op, binary_dtype<Op>(A::dtype, weak<S>(A::dtype))>(Op{}, a, c);
}
}  // namespace detail::st

// ---- the methods every static expression has ----
template <class Derived>
struct static_ops {
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  // evaluation (detail/plan.hpp): realized through the plan cache, or lazy when a leaf needs gradients
  auto realize() const { return static_tensor_of<Derived>(detail::st::evaluate(self(), true), static_tensor_of<Derived>::unchecked); }
  operator Tensor() const { return detail::st::evaluate(self(), false); }
  template <class U> std::vector<U> to_vector() const { return detail::st::evaluate(self(), true).template to_vector<U>(); }
  template <class U> U item() const { return detail::st::evaluate(self(), true).template item<U>(); }
  // the expression as a lazy Tensor graph (nothing runs; autograd sees every op)
  Tensor lazy() const { return detail::st::lazy(self()); }
  void backward() const { lazy().backward(); }
  static constexpr auto shape() { return Derived::shape_type::value; }

#define TG_UNARY(NAME, DT) auto NAME() const { return detail::st::make<op::NAME, DT>(op::NAME{}, self()); }
  TG_UNARY(neg, Derived::dtype) TG_UNARY(relu, Derived::dtype) TG_UNARY(abs, Derived::dtype) TG_UNARY(square, Derived::dtype)
  TG_UNARY(trunc, Derived::dtype) TG_UNARY(floor, Derived::dtype) TG_UNARY(ceil, Derived::dtype)
#define TG_F(NAME) TG_UNARY(NAME, detail::st::float_of(Derived::dtype))
  TG_F(exp) TG_F(log) TG_F(exp2) TG_F(log2) TG_F(sqrt) TG_F(rsqrt) TG_F(reciprocal) TG_F(sin) TG_F(cos) TG_F(tan) TG_F(sigmoid) TG_F(tanh) TG_F(gelu)
  TG_F(silu) TG_F(erf) TG_F(gelu_tanh)  // gelu: exact, like torch; gelu_tanh: gelu(approximate="tanh")
#undef TG_F
#undef TG_UNARY
  template <class U> auto cast() const { return detail::st::make<op::cast<static_dtype<U>>, static_dtype<U>>({}, self()); }

  // reductions over compile-time axes (none: all)
  template <int64_t... Ax> auto sum() const { return detail::st::make<op::sum<false, Ax...>, detail::st::sum_dtype(Derived::dtype)>({}, self()); }
  template <int64_t... Ax> auto sum_keepdim() const {
    return detail::st::make<op::sum<true, Ax...>, detail::st::sum_dtype(Derived::dtype)>({}, self());
  }
  template <int64_t... Ax> auto max() const { return detail::st::make<op::max<false, Ax...>, Derived::dtype>({}, self()); }
  template <int64_t... Ax> auto max_keepdim() const { return detail::st::make<op::max<true, Ax...>, Derived::dtype>({}, self()); }
  template <int64_t... Ax> auto min() const { return detail::st::make<op::min<false, Ax...>, Derived::dtype>({}, self()); }
  template <int64_t... Ax> auto mean() const { return detail::st::make<op::mean<false, Ax...>, detail::st::float_of(Derived::dtype)>({}, self()); }
  template <int64_t... Ax> auto mean_keepdim() const {
    return detail::st::make<op::mean<true, Ax...>, detail::st::float_of(Derived::dtype)>({}, self());
  }
  // int64 index of the first max (min) along Ax, Ax removed; no Ax: of the flattened tensor, a scalar
  template <int64_t... Ax> requires(sizeof...(Ax) <= 1) auto argmax() const {
    return detail::st::make<op::argmax<false, Ax...>, DType::Int64>({}, self());
  }
  template <int64_t... Ax> requires(sizeof...(Ax) <= 1) auto argmin() const {
    return detail::st::make<op::argmin<false, Ax...>, DType::Int64>({}, self());
  }
  template <int64_t Ax = -1> auto softmax() const { return detail::st::make<op::softmax<Ax>, detail::st::float_of(Derived::dtype)>({}, self()); }
  template <int64_t Ax = -1> auto log_softmax() const {
    return detail::st::make<op::log_softmax<Ax>, detail::st::float_of(Derived::dtype)>({}, self());
  }

  // movement
  template <int64_t... N> auto reshape() const { return detail::st::make<op::reshape<N...>, Derived::dtype>({}, self()); }
  template <int64_t S = 0, int64_t E = -1> auto flatten() const { return detail::st::make<op::flatten<S, E>, Derived::dtype>({}, self()); }
  // axis Ax split into N... (torch's unflatten): (B, S, 384).unflatten<2, 12, 32>() keeps B and S dyn
  template <int64_t Ax, int64_t... N> auto unflatten() const { return detail::st::make<op::unflatten<Ax, N...>, Derived::dtype>({}, self()); }
  template <int64_t... P> auto permute() const { return detail::st::make<op::permute<P...>, Derived::dtype>({}, self()); }
  template <int64_t A = -2, int64_t B = -1> auto transpose() const {
    constexpr size_t n = Derived::shape_type::rank;
    return [&]<size_t... I>(std::index_sequence<I...>) {
      constexpr int64_t a = detail::st::norm_axis(A, n), b = detail::st::norm_axis(B, n);
      return permute<(int64_t(I) == a ? b : int64_t(I) == b ? a : int64_t(I))...>();
    }(std::make_index_sequence<n>{});
  }
  auto T() const { return transpose<-2, -1>(); }
  template <int64_t... N> auto expand() const { return detail::st::make<op::expand<N...>, Derived::dtype>({}, self()); }
  template <int64_t... P> auto pad() const { return detail::st::make<op::pad<P...>, Derived::dtype>({}, self()); }
  template <int64_t... P> auto shrink() const { return detail::st::make<op::shrink<P...>, Derived::dtype>({}, self()); }
  template <int64_t... Ax> auto flip() const { return detail::st::make<op::flip<Ax...>, Derived::dtype>({}, self()); }
  // [Start, Stop) of axis Ax
  template <int64_t Ax, int64_t Start, int64_t Stop> auto slice() const {
    return detail::st::make<op::slice<Ax, Start, Stop>, Derived::dtype>({}, self());
  }

  template <static_expr W> auto matmul(const W& w) const {
    return detail::st::make<op::matmul, detail::st::promote(Derived::dtype, W::dtype)>({}, self(), w);
  }
  template <static_expr A, static_expr B> auto where(const A& a, const B& b) const {
    return detail::st::make<op::where, detail::st::promote(A::dtype, B::dtype)>({}, self(), a, b);
  }
  template <static_expr B> auto maximum(const B& b) const { return detail::st::binary<op::maximum>(self(), b); }
  template <static_expr B> auto minimum(const B& b) const { return detail::st::binary<op::minimum>(self(), b); }
  template <class S> requires std::is_arithmetic_v<S> auto maximum(S s) const { return detail::st::binary_scalar<op::maximum, false>(self(), s); }
  template <class S> requires std::is_arithmetic_v<S> auto minimum(S s) const { return detail::st::binary_scalar<op::minimum, false>(self(), s); }
  template <static_expr B> auto pow(const B& b) const { return detail::st::binary<op::pow>(self(), b); }
};

#define TG_OP(SYM, OP)                                                                                                                              \
  template <static_expr A, static_expr B> auto operator SYM(const A& a, const B& b) { return detail::st::binary<op::OP>(a, b); }                    \
  template <static_expr A, class S> requires std::is_arithmetic_v<S>                                                                                \
  auto operator SYM(const A& a, S s) { return detail::st::binary_scalar<op::OP, false>(a, s); }                                                     \
  template <static_expr A, class S> requires std::is_arithmetic_v<S>                                                                                \
  auto operator SYM(S s, const A& a) { return detail::st::binary_scalar<op::OP, true>(a, s); }
TG_OP(+, add) TG_OP(-, sub) TG_OP(*, mul) TG_OP(/, div) TG_OP(<, lt) TG_OP(>, gt) TG_OP(<=, le) TG_OP(>=, ge) TG_OP(==, eq) TG_OP(!=, ne)
TG_OP(&, bitwise_and) TG_OP(|, bitwise_or) TG_OP(^, bitwise_xor)
#undef TG_OP
template <static_expr A> auto operator-(const A& a) { return a.neg(); }
// prints the Tensor it evaluates to, as torch does (tensor/print.hpp)
template <static_expr A> std::ostream& operator<<(std::ostream& os, const A& a) { return os << Tensor(a); }

template <static_expr A, static_expr B> auto matmul(const A& a, const B& b) { return a.matmul(b); }
template <static_expr C, static_expr A, static_expr B> auto where(const C& c, const A& a, const B& b) { return c.where(a, b); }
template <static_expr X, static_expr W, static_expr B>
requires(W::shape_type::rank == 1) auto layer_norm(const X& x, const W& weight, const B& bias, double eps = 1e-5) {
  return detail::st::make<op::layer_norm, detail::st::float_of(X::dtype)>({}, x, weight, bias,
                                                                          detail::st::scalar_leaf<detail::st::float_of(X::dtype)>(eps));
}
template <static_expr Q, static_expr K, static_expr V> auto scaled_dot_product_attention(const Q& q, const K& k, const V& v) {
  return detail::st::make<op::scaled_dot_product_attention<false>, detail::st::float_of(detail::st::promote(Q::dtype, K::dtype))>({}, q, k, v);
}
template <static_expr Q, static_expr K, static_expr V, static_expr M>
auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, const M& mask) {
  return detail::st::make<op::scaled_dot_product_attention<true>, detail::st::float_of(detail::st::promote(Q::dtype, K::dtype))>({}, q, k, v, mask);
}
template <int64_t Ax = 0, static_expr A, static_expr B> auto cat(const A& a, const B& b) {
  return detail::st::make<op::cat<Ax>, detail::st::promote(A::dtype, B::dtype)>({}, a, b);
}
// x (N, Cin, H, W), w (Cout, Cin/Groups, KH, KW) -> (N, Cout, OH, OW)
template <int64_t Stride = 1, int64_t Padding = 0, int64_t Dilation = 1, int64_t Groups = 1, static_expr X, static_expr W>
auto conv2d(const X& x, const W& w) {
  return detail::st::make<op::conv2d<Stride, Padding, Dilation, Groups>, detail::st::promote(X::dtype, W::dtype)>({}, x, w);
}
template <int64_t Stride = 1, int64_t Padding = 0, int64_t Dilation = 1, int64_t Groups = 1, static_expr X, static_expr W, static_expr B>
auto conv2d(const X& x, const W& w, const B& b) {
  return conv2d<Stride, Padding, Dilation, Groups>(x, w) + b.template reshape<W::shape_type::value[0], 1, 1>();
}
template <int64_t K = 2, int64_t Stride = K, static_expr X> auto max_pool2d(const X& x) {
  return detail::st::make<op::max_pool2d<K, Stride>, X::dtype>({}, x);
}
template <int64_t K = 2, int64_t Stride = K, static_expr X> auto avg_pool2d(const X& x) {
  return detail::st::make<op::avg_pool2d<K, Stride>, detail::st::float_of(X::dtype)>({}, x);
}
// mean over the batch of -log softmax(logits)[label]; labels must be integers
template <static_expr X, static_expr Y> auto sparse_categorical_crossentropy(const X& logits, const Y& labels) {
  using O = op::sparse_categorical_crossentropy;
  detail::st::check_labels<O, Y::dtype>();
  return detail::st::make<O, detail::st::float_of(X::dtype)>({}, logits, labels);
}
// the mean binary cross-entropy of probabilities p against targets y of the same shape
template <static_expr P, static_expr Y> auto binary_crossentropy(const P& p, const Y& y) {
  return detail::st::make<op::binary_crossentropy, detail::st::promote(detail::st::float_of(P::dtype), detail::st::float_of(Y::dtype))>({}, p, y);
}
// binary_crossentropy(sigmoid(x), y), computed from the logits x
template <static_expr X, static_expr Y> auto binary_crossentropy_logits(const X& x, const Y& y) {
  return detail::st::make<op::binary_crossentropy_logits,
                          detail::st::promote(detail::st::float_of(X::dtype), detail::st::float_of(Y::dtype))>({}, x, y);
}
// the mean of -sum(target * log softmax(logits)) over the class dim (1; 0 for 1-D logits). target: class probabilities of the
// logits' shape, or integer class indices of the logits' shape without the class dim
template <static_expr X, static_expr Y> auto cross_entropy(const X& logits, const Y& target) {
  using O = op::cross_entropy;
  constexpr bool labels = Y::shape_type::rank + 1 == X::shape_type::rank;
  if constexpr (labels) detail::st::check_labels<O, Y::dtype>();
  // NOTE: the one-hot of labels is default_float (float32), as in Tensor::cross_entropy
  return detail::st::make<O,
      detail::st::promote(detail::st::float_of(X::dtype), labels ? DType::Float32 : detail::st::float_of(Y::dtype))>({}, logits, target);
}
// the mean of -log_probs[label] over the batch: log_probs (C) or (N, C, ...), integer labels without the class dim
template <static_expr X, static_expr Y> auto nll_loss(const X& log_probs, const Y& labels) {
  using O = op::nll_loss;
  detail::st::check_labels<O, Y::dtype>();
  return detail::st::make<O, detail::st::float_of(X::dtype)>({}, log_probs, labels);
}
template <static_expr X, static_expr W> auto linear(const X& x, const W& w) { return x.matmul(w); }
template <static_expr X, static_expr W, static_expr B> auto linear(const X& x, const W& w, const B& b) { return x.matmul(w) + b; }

// ---- the tensor: a Tensor handle plus the actual values of its dyn extents ----
template <class T, int64_t... E>
class static_tensor : public static_ops<static_tensor<T, E...>> {
 public:
  using shape_type = shape<E...>;
  using value_type = T;
  static constexpr DType dtype = static_dtype<T>;
  static constexpr size_t rank = sizeof...(E), n_leaves = 1, n_key = detail::st::count_dyn(shape_type::value);
  detail::st::dims<n_key> dyn_dims{};  // the actual values of the dyn extents, in order

  static_tensor() requires(n_key == 0) : t_(Tensor::zeros(Shape{E...}, dtype)) {}
  // a Tensor of the right shape and dtype; throws ShapeError / DTypeError
  explicit static_tensor(Tensor t) : t_(std::move(t)) {
    if (t_.dtype() != dtype) throw DTypeError("tinygrad::" + name() + ": the Tensor has dtype " + to_string(t_.dtype()));
    bool ok = t_.ndim() == rank;
    for (size_t i = 0; ok && i < rank; i++) ok = shape_type::value[i] == dyn || shape_type::value[i] == t_.shape()[i];
    if (!ok) throw ShapeError("tinygrad::" + name() + ": the Tensor has shape " + to_string(t_.shape()));
    size_t j = 0;
    for (size_t i = 0; i < rank; i++) if (shape_type::value[i] == dyn) dyn_dims[j++] = t_.shape()[i];
  }
  // an expression: shapes and dtype checked at compile time (dyn extents at run time), then evaluated
  template <static_expr X>
    requires(!std::is_same_v<std::remove_cvref_t<X>, static_tensor>)
  static_tensor(const X& x) { *this = x; }
  template <static_expr X>
    requires(!std::is_same_v<std::remove_cvref_t<X>, static_tensor>)
  static_tensor& operator=(const X& x) {
    using A = op::assign;
    if constexpr (X::dtype != dtype) detail::st::fail<error::dtypes_differ<A, T, scalar_type<X::dtype>>>();
    if constexpr (A::rule(shape_type::value, X::shape_type::value).code != 0)
      detail::st::fail<error::shapes_differ<A, shape_type, typename X::shape_type>>();
    auto r = A::rule(shape_type::value, x.rt_shape());
    if (r.code) detail::st::throw_shape_error<A>(r.code, shape_type::value, x.rt_shape());
    dyn_dims = detail::st::pick_dyn<shape_type>(r.out);
    if constexpr (detail::st::is_leaf_t<X>::value) t_ = x.tensor();
    else t_ = detail::st::evaluate(x, false);
    return *this;
  }
  // from host data; the dyn extents follow, in order
  template <class U, class... D>
    requires(sizeof...(D) == n_key)
  static static_tensor from(const std::vector<U>& data, D... dyn_extents) {
    return static_tensor(Tensor(data, shape_of(dyn_extents...)).cast(dtype).realize());
  }
  template <class... D>
  requires(sizeof...(D) == n_key) static static_tensor full(double v, D... d) { return make(Tensor::full(shape_of(d...), v, dtype), d...); }
  template <class... D> requires(sizeof...(D) == n_key) static static_tensor zeros(D... d) { return full(0, d...); }
  template <class... D> requires(sizeof...(D) == n_key) static static_tensor ones(D... d) { return full(1, d...); }
  template <class... D> requires(sizeof...(D) == n_key) static static_tensor rand(D... d) { return make(Tensor::rand(shape_of(d...), dtype), d...); }
  template <class... D>
  requires(sizeof...(D) == n_key) static static_tensor randn(D... d) { return make(Tensor::randn(shape_of(d...), dtype), d...); }
  // uniform in [-bound, bound), the usual layer init
  template <class... D> requires(sizeof...(D) == n_key) static static_tensor uniform(double bound, D... d) {
    return make((Tensor::rand(shape_of(d...), dtype) * (2 * bound) - bound).realize(), d...);
  }

  const Tensor& tensor() const { return t_; }
  detail::st::dims<rank> rt_shape() const { return detail::st::fill<shape_type>(dyn_dims); }
  static_tensor& realize() { t_.realize(); return *this; }
  template <class U> std::vector<U> to_vector() const { return t_.template to_vector<U>(); }
  template <class U> U item() const { return t_.template item<U>(); }
  operator Tensor() const { return t_; }
  static_tensor& requires_grad_(bool r = true) { t_.requires_grad_(r); return *this; }
  bool requires_grad() const { return t_.requires_grad(); }
  // the gradient, with this tensor's static type; throws GradientError when there is none
  static_tensor grad() const {
    auto g = t_.grad();
    if (!g) throw GradientError("tinygrad::" + name() + "::grad: no gradient; call backward() on a loss that depends on this tensor");
    return static_tensor(*g, unchecked);
  }
  void zero_grad() { t_.zero_grad(); }
  // replace the value in place (every handle sees it): an optimizer step
  template <static_expr X> static_tensor& assign(const X& x) {
    static_tensor v = x;
    if (v.dyn_dims != dyn_dims) throw ShapeError("tinygrad::" + name() + "::assign: dyn extents differ");
    t_.assign(v.t_);
    return *this;
  }

  // as an expression leaf
  Tensor lower(detail::st::lower_ctx& cx) const { return *cx.leaves[cx.next++]; }
  template <class F, class G> void visit(F& leaf, G&) const { leaf(*this); }

  static std::string name() {
    std::string s = "static_tensor<" +
        std::string(std::is_same_v<T, half_t> ? "half" : std::is_same_v<T, bfloat16_t> ? "bfloat16" : detail::kDTypeInfo[size_t(dtype)].cname);
    ((s += ", " + std::to_string(E)), ...);
    return s + ">";
  }

  struct unchecked_t {};
  static constexpr unchecked_t unchecked{};
  static_tensor(Tensor t, unchecked_t) : t_(std::move(t)) {
    size_t j = 0;
    for (size_t i = 0; i < rank; i++) if (shape_type::value[i] == dyn) dyn_dims[j++] = t_.shape()[i];
  }

 private:
  Tensor t_;
  template <class... D> static Shape shape_of(D... d) {
    std::array<int64_t, n_key> v{int64_t(d)...};
    auto s = detail::st::fill<shape_type>(v);
    return Shape(s.begin(), s.end());
  }
  template <class... D> static static_tensor make(Tensor t, D...) { return static_tensor(t.realize(), unchecked); }
};

// gradients of a scalar loss with respect to static tensors, each with its tensor's static type
template <static_expr L, class... P>
std::tuple<P...> gradient(const L& loss, const P&... params) {
  auto gs = gradient(loss.lazy(), std::vector<Tensor>{params.tensor()...});
  return [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<P...>{P(gs[I], P::unchecked)...}; }(std::index_sequence_for<P...>{});
}

}  // namespace tinygrad
