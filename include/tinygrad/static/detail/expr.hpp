#pragma once
// Expression-template nodes: an op tag, the static result shape and dtype, the children by value,
// and the actual values of the result's dyn extents. lower() builds the same Tensor ops the dynamic
// path would.
#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/unpack.hpp>
#include "../../tensor/gradient.hpp"
#include "shape.hpp"

namespace tinygrad {

template <class Derived> struct static_ops;  // the methods every static expression has (static/tensor.hpp)

namespace detail::st {

constexpr char kind(DType d) { return kDTypeInfo[size_t(d)].kind; }
constexpr bool float_dt(DType d) { return kind(d) == 'f'; }
constexpr DType float_of(DType d) { return float_dt(d) ? d : DType::Float32; }  // NOTE: dtypes::default_float at compile time

// leaves of one lowering: the tensors that stand for the expression's leaves, in depth-first order
struct lower_ctx {
  const Tensor* const* leaves;
  size_t next = 0;
  const std::string* device;
  const Tensor* scalars = nullptr;  // a plan's: the 0-d tensors its C++ numbers read (null: numbers are constants)
  size_t next_scalar = 0;
};

template <class E> constexpr bool has_dyn() { return count_dyn(E::shape_type::value) > 0; }

// the actual extents of a shape S whose dyn extents are d
template <class S, size_t ND>
constexpr dims<S::rank> fill(const dims<ND>& d) {
  dims<S::rank> r = S::value;
  size_t j = 0;
  for (auto& x : r) if (x == dyn) x = d[j++];
  return r;
}
template <class S, size_t N>
constexpr dims<count_dyn(S::value)> pick_dyn(const dims<N>& full) {
  dims<count_dyn(S::value)> r{};
  size_t j = 0;
  for (size_t i = 0; i < N; i++) if (S::value[i] == dyn) r[j++] = full[i];
  return r;
}

template <class Op, class S, DType D, class... C>
struct node : static_ops<node<Op, S, D, C...>> {
  using shape_type = S;
  static constexpr DType dtype = D;
  static constexpr size_t n_leaves = (C::n_leaves + ... + 0), n_key = (C::n_key + ... + 0);
  Op op;
  hana::tuple<C...> ch;
  dims<count_dyn(S::value)> dyn_dims{};

  node(Op o, const C&... c) : op(o), ch(c...) {}
  dims<S::rank> rt_shape() const { return fill<S>(dyn_dims); }
  template <class F, class G> void visit(F& leaf, G& scalar) const { hana::for_each(ch, [&](const auto& c) { c.visit(leaf, scalar); }); }
  Tensor lower(lower_ctx& cx) const {
    return hana::unpack(ch, [&](const auto&... c) {
      std::array<Tensor, sizeof...(C)> in{c.lower(cx)...};  // braced: left to right, the leaves' order
      return call(in, std::make_index_sequence<sizeof...(C)>{});
    });
  }

 private:
  template <size_t... I>
  Tensor call(const std::array<Tensor, sizeof...(C)>& in, std::index_sequence<I...>) const { return Op::lower(*this, in[I]...); }
};

// a C++ number in an expression: a 0-d leaf of the result's dtype; a plan reads it from a buffer, so every value runs
// the same plan (a learning rate that changes every step)
template <DType D>
struct scalar_leaf : static_ops<scalar_leaf<D>> {
  using shape_type = shape<>;
  static constexpr DType dtype = D;
  static constexpr size_t n_leaves = 0, n_key = 1;
  double value;
  explicit scalar_leaf(double v) : value(v) {}
  dims<0> rt_shape() const { return {}; }
  template <class F, class G> void visit(F&, G& scalar) const { scalar(value, D); }
  Tensor lower(lower_ctx& cx) const { return cx.scalars ? cx.scalars[cx.next_scalar++] : Tensor::full({}, value, D, *cx.device); }
};

// Err with each shape<...> in its arguments as diagnostics show it: error::shape<2, tinygrad::dyn>, not shape<2, -1>
template <int64_t E> constexpr auto shown_extent() {
  if constexpr (E == dyn) return dyn;
  else if constexpr (E >= INT32_MIN && E <= INT32_MAX) return int(E);
  else return E;
}
template <class T> struct shown { using type = T; };
template <int64_t... E> struct shown<shape<E...>> { using type = error::shape<shown_extent<E>()...>; };
template <template <class...> class Tmpl, class... A> struct shown<Tmpl<A...>> { using type = Tmpl<typename shown<A>::type...>; };
// instantiating the undefined error template puts its name (op and shapes) on the error's first line
template <class Err> constexpr void fail_as() { Err{}; }
// NOTE: through fail_as, so that the first line (the innermost instantiation) shows the shapes with dyn
template <class Err> constexpr void fail() { fail_as<typename shown<Err>::type>(); }

// the run-time twin of an error template: the same name, the actual extents
template <class Op, size_t... N>
[[noreturn]] inline void throw_shape_error(int code, const dims<N>&... s) {
  std::string m = std::string("tinygrad::error::") + Op::errors[code - 1] + "<op::" + Op::name;
  ((m += ", " + shape_str(s)), ...);
  throw ShapeError(m + ">");
}

// the static result of Op on children C
template <class Op, class... C>
struct rule_of {
  static constexpr auto value = Op::rule(C::shape_type::value...);
  using shape = decltype(to_shape<rule_of>());
};

// build the node for Op on c...: a compile error if the static extents do not fit, else the node, with the
// same rule checked on the actual extents when any is dyn
template <class Op, DType D, class... C>
auto make(Op op, const C&... c) {
  using R = rule_of<Op, C...>;
  if constexpr (R::value.code != 0) fail<typename Op::template error<R::value.code, typename C::shape_type...>>();
  node<Op, typename R::shape, D, C...> n(op, c...);
  if constexpr ((has_dyn<C>() || ...)) {
    auto r = Op::rule(c.rt_shape()...);
    if (r.code) throw_shape_error<Op>(r.code, c.rt_shape()...);
    n.dyn_dims = pick_dyn<typename R::shape>(r.out);
  }
  return n;
}

// the n-th type of a list (error templates of an op, by code)
template <int N, class T, class... Ts> struct nth { using type = typename nth<N - 1, Ts...>::type; };
template <class T, class... Ts> struct nth<1, T, Ts...> { using type = T; };
template <int N, class... Ts> using nth_t = typename nth<N, Ts...>::type;

}  // namespace detail::st
}  // namespace tinygrad
