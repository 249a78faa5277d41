#pragma once
// Static shapes: each extent a number or dyn (-1). Every shape rule is one constexpr function over
// std::array<int64_t, N>: run on the static extents at compile time (dyn stays dyn, or becomes known)
// and on the actual extents at run time. It returns an error code (0 = fits) and the result shape.
#include <array>
#include <cstdint>
#include <string>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/range.hpp>
#include <boost/hana/unpack.hpp>

namespace tinygrad {

// an extent known only at run time (-1); an enumerator, so that diagnostics print its name
enum dyn_extent : int64_t { dyn = -1 };

// a static shape; diagnostics print it as error::shape<2, 3, tinygrad::dyn> (detail::st::fail)
template <int64_t... E>
struct shape {
  static constexpr size_t rank = sizeof...(E);
  static constexpr std::array<int64_t, rank> value{E...};
};
namespace error {
// a shape as compile errors show it: int extents (no 2L), dyn by name
template <auto... E> struct shape {};
}  // namespace error
template <int64_t A> struct axis {};     // names an axis in diagnostics
template <size_t I> struct layer {};     // names a layer's position in a chain

namespace detail::st {
namespace hana = boost::hana;

template <size_t N> using dims = std::array<int64_t, N>;
template <size_t N>
struct res {
  int code = 0;  // 0: the shapes fit; k: the op's k-th error
  dims<N> out{};
};

template <size_t N> constexpr size_t count_dyn(const dims<N>& a) { size_t n = 0; for (auto x : a) n += x == dyn; return n; }
constexpr int64_t norm_axis(int64_t a, size_t rank) { return a < 0 ? a + int64_t(rank) : a; }
constexpr bool axis_ok(int64_t a, size_t rank) { return norm_axis(a, rank) >= 0 && norm_axis(a, rank) < int64_t(rank); }
constexpr int64_t mul_ext(int64_t a, int64_t b) { return a == dyn || b == dyn ? dyn : a * b; }
constexpr int64_t add_ext(int64_t a, int64_t b) { return a == dyn || b == dyn ? dyn : a + b; }

// the variadic shape of R::value.out (R: a type with a constexpr `value` of type res<N>)
template <class R>
constexpr auto to_shape() {
  constexpr size_t n = R::value.out.size();
  return hana::unpack(hana::make_range(hana::size_c<0>, hana::size_c<n>), [](auto... i) { return shape<R::value.out[i]...>{}; });
}

template <size_t N>
inline std::string shape_str(const dims<N>& a) {
  std::string s = "shape<";
  for (size_t i = 0; i < N; i++) s += (i ? ", " : "") + (a[i] == dyn ? std::string("dyn") : std::to_string(a[i]));
  return s + ">";
}

// ---- the rules ----

// numpy broadcasting; 1 stretches, dyn meets n gives n (checked at run time)
template <size_t A, size_t B>
constexpr auto broadcast(const dims<A>& a, const dims<B>& b) {
  constexpr size_t N = A > B ? A : B;
  res<N> r;
  for (size_t i = 0; i < N; i++) {
    int64_t x = i < N - A ? 1 : a[i - (N - A)], y = i < N - B ? 1 : b[i - (N - B)];
    if (x == 1) r.out[i] = y;
    else if (y == 1 || y == dyn || x == y) r.out[i] = x;
    else if (x == dyn) r.out[i] = y;
    else r.code = 1;
  }
  return r;
}

// reduce over Ax (none: all); keep leaves 1s
template <bool Keep, size_t A, size_t NA>
constexpr size_t reduce_rank(const std::array<int64_t, NA>& ax) {
  if (Keep) return A;
  size_t n = 0;
  for (size_t i = 0; i < A; i++) {
    bool hit = NA == 0;
    for (auto x : ax) hit |= axis_ok(x, A) && norm_axis(x, A) == int64_t(i);
    n += !hit;
  }
  return n;
}
template <bool Keep, size_t N, size_t A, size_t NA>
constexpr res<N> reduce(const dims<A>& a, const std::array<int64_t, NA>& ax) {
  res<N> r;
  size_t j = 0;
  for (auto x : ax) if (!axis_ok(x, A)) r.code = 1;
  for (size_t i = 0; i < A; i++) {
    bool hit = NA == 0;
    for (auto x : ax) hit |= norm_axis(x, A) == int64_t(i);
    if (j == N) break;  // NOTE: only when an axis is out of range (code 1)
    if (!hit) r.out[j++] = a[i];
    else if (Keep) r.out[j++] = 1;
  }
  return r;
}

// one axis (for softmax, log_softmax): shape unchanged
template <size_t A>
constexpr res<A> check_axis(const dims<A>& a, int64_t ax) { return {axis_ok(ax, A) ? 0 : 1, a}; }

// reshape: element counts must match; one dyn in the target is inferred. 1: counts differ, 2: negative, 3: two dyns
template <size_t N, size_t A>
constexpr res<N> reshape(const dims<A>& a, const dims<N>& t) {
  res<N> r{0, t};
  int64_t ps = 1, pt = 1;
  size_t nds = 0, ndt = 0, at = 0;
  for (auto x : a) { if (x == dyn) nds++; else ps *= x; }
  for (size_t i = 0; i < N; i++) {
    if (t[i] == dyn) { ndt++; at = i; }
    else if (t[i] < 0) r.code = 2;
    else pt *= t[i];
  }
  if (r.code) return r;
  if (ndt > 1) r.code = 3;
  else if (nds == 0 && ndt == 0) r.code = ps == pt ? 0 : 1;
  else if (nds == 0) { if (pt == 0 || ps % pt) r.code = 1; else r.out[at] = ps / pt; }
  else if (ndt == 0 && ps != 0 && pt % ps) r.code = 1;  // the static part alone cannot fit
  return r;
}

// unflatten: axis ax split into t, one of which may be dyn (inferred); 1: bad axis, 2: t does not fit the extent
template <size_t A, size_t N>
constexpr res<A + N - 1> unflatten(const dims<A>& a, int64_t ax, const dims<N>& t) {
  res<A + N - 1> r;
  if (!axis_ok(ax, A)) { r.code = 1; return r; }
  size_t k = size_t(norm_axis(ax, A)), j = 0, nd = 0;
  int64_t p = 1, inferred = dyn;
  for (auto x : t) { if (x == dyn) nd++; else if (x < 0) r.code = 2; else p *= x; }
  if (nd > 1) r.code = 2;
  else if (a[k] != dyn && (nd ? (p == 0 || a[k] % p) : a[k] != p)) r.code = 2;
  else if (a[k] != dyn && nd) inferred = a[k] / p;
  for (size_t i = 0; i < A; i++) {
    if (i != k) { r.out[j++] = a[i]; continue; }
    for (auto x : t) r.out[j++] = x == dyn ? inferred : x;
  }
  return r;
}

// flatten dims [S, E] into one
template <size_t N, size_t A>
constexpr res<N> flatten(const dims<A>& a, int64_t s, int64_t e) {
  res<N> r;
  if (!axis_ok(s, A) || !axis_ok(e, A) || norm_axis(s, A) > norm_axis(e, A)) { r.code = 1; return r; }
  size_t j = 0;
  int64_t m = 1;
  for (size_t i = 0; i < A; i++) {
    if (int64_t(i) < norm_axis(s, A) || int64_t(i) > norm_axis(e, A)) r.out[j++] = a[i];
    else { m = mul_ext(m, a[i]); if (int64_t(i) == norm_axis(e, A)) r.out[j++] = m; }
  }
  return r;
}

// permute: 1: wrong count, 2: axis out of range, 3: repeated axis
template <size_t A, size_t NP>
constexpr res<A> permute(const dims<A>& a, const std::array<int64_t, NP>& p) {
  res<A> r;
  if (NP != A) { r.code = 1; return r; }
  for (size_t i = 0; i < NP; i++) {
    if (!axis_ok(p[i], A)) { r.code = 2; return r; }
    for (size_t j = 0; j < i; j++) if (norm_axis(p[j], A) == norm_axis(p[i], A)) r.code = 3;
    r.out[i] = a[size_t(norm_axis(p[i], A))];
  }
  return r;
}

// expand to t (dyn in t: keep the extent); 1: does not fit
template <size_t N, size_t A>
constexpr res<N> expand(const dims<A>& a, const dims<N>& t) {
  res<N> r;
  if (N < A) { r.code = 1; return r; }
  for (size_t i = 0; i < N; i++) {
    int64_t x = i < N - A ? 1 : a[i - (N - A)];
    if (t[i] == dyn || x == t[i]) r.out[i] = x;
    else if (x == 1 || x == dyn) r.out[i] = t[i];
    else r.code = 1;
  }
  return r;
}

// pad (before, after) per dim, negative removes; 1: wrong count, 2: removes more than the dim
template <size_t A, size_t NP>
constexpr res<A> pad(const dims<A>& a, const std::array<int64_t, NP>& p) {
  res<A> r;
  if (NP != 2 * A) { r.code = 1; return r; }
  for (size_t i = 0; i < A; i++) {
    r.out[i] = add_ext(a[i], p[2 * i] + p[2 * i + 1]);
    if (a[i] != dyn && (r.out[i] < 0 || -p[2 * i] > a[i] || -p[2 * i + 1] > a[i])) r.code = 2;
  }
  return r;
}

// shrink to [begin, end) per dim; 1: wrong count, 2: out of bounds
template <size_t A, size_t NP>
constexpr res<A> shrink(const dims<A>& a, const std::array<int64_t, NP>& p) {
  res<A> r;
  if (NP != 2 * A) { r.code = 1; return r; }
  for (size_t i = 0; i < A; i++) {
    if (p[2 * i] < 0 || p[2 * i] > p[2 * i + 1] || (a[i] != dyn && p[2 * i + 1] > a[i])) r.code = 2;
    r.out[i] = p[2 * i + 1] - p[2 * i];
  }
  return r;
}

// axes in range; 1: out of range
template <size_t A, size_t NA>
constexpr res<A> axes_in_range(const dims<A>& a, const std::array<int64_t, NA>& ax) {
  res<A> r{0, a};
  for (auto x : ax) if (!axis_ok(x, A)) r.code = 1;
  return r;
}

// [start, stop) of one axis; 1: axis out of range, 2: bounds out of range
template <size_t A>
constexpr res<A> slice(const dims<A>& a, int64_t ax, int64_t start, int64_t stop) {
  res<A> r{0, a};
  if (!axis_ok(ax, A)) { r.code = 1; return r; }
  int64_t n = a[size_t(norm_axis(ax, A))];
  if (start < 0 || start > stop || (n != dyn && stop > n)) r.code = 2;
  r.out[size_t(norm_axis(ax, A))] = stop - start;
  return r;
}

// concatenate along ax; 1: ranks differ, 2: axis out of range, 3: other dims differ
template <size_t A, size_t B>
constexpr res<A> cat(const dims<A>& a, const dims<B>& b, int64_t ax) {
  res<A> r{0, a};
  if (A != B) { r.code = 1; return r; }
  if (!axis_ok(ax, A)) { r.code = 2; return r; }
  for (size_t i = 0; i < A; i++) {
    if (int64_t(i) == norm_axis(ax, A)) r.out[i] = add_ext(a[i], b[i]);
    else if (a[i] == dyn) r.out[i] = b[i];
    else if (b[i] != dyn && a[i] != b[i]) r.code = 3;
  }
  return r;
}

// matmul (..., n, k) @ (..., k, m); 1-D operands as in numpy. 1: a 0-D operand, 2: k differs, 3: batch dims do not broadcast
constexpr size_t matmul_rank(size_t A, size_t B) {
  size_t ba = A >= 2 ? A - 2 : 0, bb = B >= 2 ? B - 2 : 0;
  return (ba > bb ? ba : bb) + (A >= 2) + (B >= 2);
}
template <size_t A, size_t B>
constexpr auto matmul(const dims<A>& a, const dims<B>& b) {
  constexpr size_t BA = A >= 2 ? A - 2 : 0, BB = B >= 2 ? B - 2 : 0, NB = BA > BB ? BA : BB;
  res<matmul_rank(A, B)> r;
  if (A == 0 || B == 0) { r.code = 1; return r; }
  int64_t k = a[A - 1], kb = b[B >= 2 ? B - 2 : 0];
  if (k != dyn && kb != dyn && k != kb) r.code = 2;
  dims<BA> xa{};
  dims<BB> xb{};
  for (size_t i = 0; i < BA; i++) xa[i] = a[i];
  for (size_t i = 0; i < BB; i++) xb[i] = b[i];
  auto bc = broadcast(xa, xb);
  if (bc.code && !r.code) r.code = 3;
  size_t j = 0;
  for (size_t i = 0; i < NB; i++) r.out[j++] = bc.out[i];
  if (A >= 2) r.out[j++] = a[A - 2];
  if (B >= 2) r.out[j++] = b[B - 1];
  return r;
}

// attention: scores = q @ k^T (..., Sq, Sk), then scores @ v; the mask (if any) broadcasts to the scores.
// 1: an input under 2 dims, 2: head dims (or key and value lengths) differ, 3: batch dims, 4: the mask
template <size_t Q, size_t K, size_t V, size_t... M>
constexpr auto attention(const dims<Q>& q, const dims<K>& k, const dims<V>& v, const dims<M>&... m) {
  dims<K> kt = k;
  if constexpr (K >= 2) { kt[K - 2] = k[K - 1]; kt[K - 1] = k[K - 2]; }
  auto s = matmul(q, kt);
  auto r = matmul(s.out, v);
  if (Q < 2 || K < 2 || V < 2) r.code = 1;
  else if (s.code) r.code = s.code;
  [[maybe_unused]] auto mask_fits = [&]<size_t N>(const dims<N>& mk) {  // NOTE: unused without a mask
    if constexpr (N > matmul_rank(Q, K)) return false;
    else { auto b = broadcast(s.out, mk); return !b.code && b.out == s.out; }
  };
  if (!r.code && !(mask_fits(m) && ...)) r.code = 4;
  return r;
}

// conv2d x (N, Cin, H, W) * w (Cout, Cin/G, KH, KW) -> (N, Cout, OH, OW)
// 1: ranks, 2: Cout not divisible by groups, 3: channels differ, 4: kernel larger than the padded input
template <size_t A, size_t B>
constexpr res<4> conv2d(const dims<A>& x, const dims<B>& w, int64_t stride, int64_t pad, int64_t dil, int64_t groups) {
  res<4> r;
  if (A != 4 || B != 4) { r.code = 1; return r; }
  if (w[0] != dyn && w[0] % groups) r.code = 2;
  else if (x[1] != dyn && w[1] != dyn && x[1] != w[1] * groups) r.code = 3;
  r.out[0] = x[0];
  r.out[1] = w[0];
  for (size_t i = 2; i < 4; i++) {
    int64_t span = w[i] == dyn ? dyn : dil * (w[i] - 1) + 1;
    if (x[i] == dyn || span == dyn) { r.out[i] = dyn; continue; }
    if (span > x[i] + 2 * pad) { if (!r.code) r.code = 4; r.out[i] = 0; }
    else r.out[i] = (x[i] + 2 * pad - span) / stride + 1;
  }
  return r;
}

// 2-D pooling over the last two dims; 1: fewer than 2 dims, 2: window larger than the input
template <size_t A>
constexpr res<A> pool2d(const dims<A>& x, int64_t k, int64_t stride) {
  res<A> r{0, x};
  if (A < 2) { r.code = 1; return r; }
  for (size_t i = A - 2; i < A; i++) {
    if (x[i] == dyn) continue;
    if (k > x[i]) { r.code = 2; r.out[i] = 0; }
    else r.out[i] = (x[i] - k) / stride + 1;
  }
  return r;
}

// logits (N, C) and integer labels (N) -> a scalar; 1: ranks, 2: batch sizes differ
template <size_t A, size_t B>
constexpr res<0> sparse_xent(const dims<A>& x, const dims<B>& y) {
  res<0> r;
  if (A != 2 || B != 1) r.code = 1;
  else if (x[0] != dyn && y[0] != dyn && x[0] != y[0]) r.code = 2;
  return r;
}

// logits (C) or (N, C, ...) with the class dim 1 (0 when 1-D), and a target: class indices (the logits' shape without the class
// dim) or, when probs, class probabilities (the logits' shape) -> a scalar. 1: the target's rank fits neither, 2: the
// probabilities' extents differ, 3: the indices' extents differ
template <size_t A, size_t B>
constexpr res<0> class_target(const dims<A>& x, const dims<B>& y, bool probs) {
  res<0> r;
  bool same_rank = probs && B == A;
  if (A == 0 || !(same_rank || B + 1 == A)) { r.code = 1; return r; }
  size_t cd = A == 1 ? 0 : 1;
  for (size_t i = 0, j = 0; i < A; i++) {
    if (!same_rank && i == cd) continue;
    if (x[i] != dyn && y[j] != dyn && x[i] != y[j]) r.code = same_rank ? 2 : 3;
    j++;
  }
  return r;
}

// assigning a of shape a to a tensor of shape t: equal where both are static; 1: differ
template <size_t N, size_t A>
constexpr res<N> same(const dims<A>& a, const dims<N>& t) {
  res<N> r{0, t};
  if (A != N) { r.code = 1; return r; }
  for (size_t i = 0; i < N; i++) {
    if (a[i] != dyn && t[i] != dyn && a[i] != t[i]) r.code = 1;
    if (t[i] == dyn) r.out[i] = a[i];
  }
  return r;
}

}  // namespace detail::st
}  // namespace tinygrad
