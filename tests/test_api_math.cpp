// Tensor API math (elementwise.hpp, reduce.hpp, creation.hpp): every op against an independent reference
// (std:: math and plain loops over row-major host arrays) on several layouts (contiguous, permuted, sliced
// with a step, expanded, size-1 dims, scalar) and broadcasts; every differentiable op's gradient against
// central finite differences in float64; losses, logsumexp and softmax-style ops also against analytic
// gradients; random ops by statistics and determinism per seed; every error path.
//
// Tolerances (|got - want| <= atol + rtol * |want|): exact ops 0; float32 math 1e-5; float32 reductions 1e-4.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include "ref_index.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

using tinygrad::DType;
using tinygrad::Shape;
using tinygrad::Slice;
using tinygrad::Tensor;
using std::nullopt;

namespace {
using V = std::vector<double>;
using Fn1 = std::function<Tensor(const Tensor&)>;

int64_t numel(const Shape& s) { int64_t n = 1; for (auto x : s) n *= x; return n; }

// float32-representable uniform values, so float32 tensors and the double reference start equal
V rnd(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  V v(static_cast<size_t>(n));
  for (auto& x : v) x = double(float(d(g)));
  return v;
}
V rndi(int64_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  V v(static_cast<size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}
Tensor mk(const V& v, const Shape& s, DType dt = DType::Float32) { return Tensor(v, s).cast(dt).realize(); }

bool close(double got, double want, double atol, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}
void check(const Tensor& t, const Shape& s, const V& want, double atol = 0, double rtol = 0) {
  INFO("shape got " << tinygrad::to_string(t.shape()) << " want " << tinygrad::to_string(s));
  REQUIRE(t.shape() == s);
  auto got = t.to_vector<double>();
  REQUIRE(got.size() == want.size());
  int64_t bad = -1, nbad = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (!close(got[i], want[i], atol, rtol)) { nbad++; if (bad < 0) bad = int64_t(i); }
  std::string msg = bad < 0 ? "" : Catch::StringMaker<double>::convert(got[size_t(bad)]) + " want " +
      Catch::StringMaker<double>::convert(want[size_t(bad)]);
  INFO("first mismatch at " << bad << ": got " << msg << "; " << nbad << " of " << got.size() << " differ");
  CHECK(bad == -1);
}

// ---- layouts: a view of a fresh buffer, and where each of its elements comes from in the buffer ----
struct Layout {
  const char* name;
  Shape base, shape;
  Fn1 view;
  std::function<int64_t(int64_t)> src;  // flat view index -> flat base index
};
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> ls = {
      {"contiguous (2,3,4)", {2, 3, 4}, {2, 3, 4}, [](const Tensor& t) { return t; }, [](int64_t i) { return i; }},
      {"permuted (2,3,4)->(4,2,3)", {2, 3, 4}, {4, 2, 3}, [](const Tensor& t) { return t.permute({2, 0, 1}); },
       [](int64_t i) { int64_t a = i / 6, b = i / 3 % 2, c = i % 3; return (b * 3 + c) * 4 + a; }},
      {"sliced (5,6)[1:5:2, 3:]", {5, 6}, {2, 3}, [](const Tensor& t) { return t.slice({Slice{1, 5, 2}, Slice{3, nullopt}}); },
       [](int64_t i) { return (1 + 2 * (i / 3)) * 6 + 3 + i % 3; }},
      {"expanded (3,1)->(3,4)", {3, 1}, {3, 4}, [](const Tensor& t) { return t.expand({3, 4}); }, [](int64_t i) { return i / 4; }},
      {"size-1 dims (1,5,1)", {1, 5, 1}, {1, 5, 1}, [](const Tensor& t) { return t; }, [](int64_t i) { return i; }},
      {"scalar ()", {}, {}, [](const Tensor& t) { return t; }, [](int64_t i) { return i; }},
  };
  return ls;
}

// a float unary op on every layout
void check_unary(const char* name, const Fn1& op, const std::function<double(double)>& ref, double lo, double hi,
                 double atol = 1e-5, double rtol = 1e-5) {
  uint32_t seed = 1;
  for (auto& l : layouts()) {
    DYNAMIC_SECTION(name << " on " << l.name) {
      V base = rnd(numel(l.base), lo, hi, seed);
      Tensor y = op(l.view(mk(base, l.base)));
      V want;
      for (int64_t i = 0; i < numel(l.shape); i++) want.push_back(ref(base[size_t(l.src(i))]));
      CHECK(y.dtype() == DType::Float32);
      check(y, l.shape, want, atol, rtol);
    }
    seed++;
  }
}

// broadcasting reference: out[i] = f(a[ia], b[ib])
using ref_index::bshape;
V bcast(const V& v, const Shape& s, const Shape& out) {
  V r;
  size_t off = out.size() - s.size();
  for (int64_t i = 0; i < numel(out); i++) {
    int64_t rem = i, src = 0, stride = 1;
    for (size_t k = out.size(); k-- > 0;) {
      int64_t idx = rem % out[k];
      rem /= out[k];
      if (k >= off) { int64_t d = s[k - off]; src += (d == 1 ? 0 : idx) * stride; stride *= d; }
    }
    r.push_back(v[size_t(src)]);
  }
  return r;
}
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;
using Ref2 = std::function<double(double, double)>;
// a binary op on broadcasting shape pairs, and with a transposed (non-contiguous) left operand
void check_binary(const char* name, const Fn2& op, const Ref2& ref, V (*gen)(int64_t, uint32_t), DType dt = DType::Float32,
                  double atol = 1e-5, double rtol = 1e-5) {
  const std::vector<std::pair<Shape, Shape>> pairs = {{{2, 3}, {2, 3}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{2, 1, 3}, {4, 1}},
                                                      {{}, {3}}, {{1, 5, 1}, {1}}};
  uint32_t seed = 10;
  for (auto& [sa, sb] : pairs) {
    DYNAMIC_SECTION(name << " " << tinygrad::to_string(sa) << " with " << tinygrad::to_string(sb)) {
      V a = gen(numel(sa), seed), b = gen(numel(sb), seed + 1);
      Shape o = bshape(sa, sb);
      V ea = bcast(a, sa, o), eb = bcast(b, sb, o), want;
      for (size_t i = 0; i < ea.size(); i++) want.push_back(ref(ea[i], eb[i]));
      check(op(mk(a, sa, dt), mk(b, sb, dt)), o, want, atol, rtol);
    }
    seed += 2;
  }
  DYNAMIC_SECTION(name << " transposed (4,3).T with (4,)") {
    V a = gen(12, 99), b = gen(4, 98), want;
    for (int64_t i = 0; i < 3; i++) for (int64_t j = 0; j < 4; j++) want.push_back(ref(a[size_t(j * 3 + i)], b[size_t(j)]));
    check(op(mk(a, {4, 3}, dt).T(), mk(b, {4}, dt)), {3, 4}, want, atol, rtol);
  }
}
V gen_f(int64_t n, uint32_t s) { return rnd(n, -3, 3, s); }
V gen_pos(int64_t n, uint32_t s) { return rnd(n, 0.5, 3, s); }
V gen_i(int64_t n, uint32_t s) { return rndi(n, -20, 20, s); }
V gen_nz(int64_t n, uint32_t s) { V v = rndi(n, -9, 9, s); for (auto& x : v) if (x == 0) x = 3; return v; }  // no zero divisors
V gen_small(int64_t n, uint32_t s) { return rndi(n, 0, 5, s); }

// d(sum(f(xs)))/dxs against central differences in float64
using FnN = std::function<Tensor(const std::vector<Tensor>&)>;
void check_grad(const FnN& f, const std::vector<Shape>& shapes, double lo = -2, double hi = 2, double tol = 1e-6) {
  std::vector<V> vals;
  uint32_t seed = 777;
  for (auto& s : shapes) vals.push_back(rnd(numel(s), lo, hi, seed++));
  auto make = [&](const std::vector<V>& vs) {
    std::vector<Tensor> ts;
    for (size_t i = 0; i < vs.size(); i++) ts.push_back(Tensor(vs[i], shapes[i]).reshape(shapes[i]));
    return ts;
  };
  auto xs = make(vals);
  auto grads = tinygrad::gradient(f(xs).sum(), xs);
  for (size_t i = 0; i < xs.size(); i++) {
    REQUIRE(grads[i].shape() == shapes[i]);
    auto g = grads[i].to_vector<double>();
    for (size_t j = 0; j < vals[i].size(); j++) {
      const double h = 1e-6;
      auto vp = vals, vm = vals;
      vp[i][j] += h;
      vm[i][j] -= h;
      double num = (f(make(vp)).sum().item<double>() - f(make(vm)).sum().item<double>()) / (2 * h);
      INFO("input " << i << " element " << j << " at " << vals[i][j]);
      CHECK(g[j] == Approx(num).margin(tol).epsilon(1e-4));
    }
  }
}
void check_grad1(const Fn1& f, const Shape& s, double lo, double hi) { check_grad([&](auto& x) { return f(x[0]); }, {s}, lo, hi); }

// apply f to every line along axis (f may return a line of any length m; the result has m at axis)
std::pair<Shape, V> along(const V& v, const Shape& s, int axis, const std::function<V(const V&)>& f) {
  int64_t n = s[size_t(axis)], outer = 1, inner = 1;
  for (int k = 0; k < axis; k++) outer *= s[size_t(k)];
  for (size_t k = size_t(axis) + 1; k < s.size(); k++) inner *= s[k];
  std::vector<V> res;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      V line;
      for (int64_t k = 0; k < n; k++) line.push_back(v[size_t((o * n + k) * inner + i)]);
      res.push_back(f(line));
    }
  int64_t m = res.empty() ? 0 : int64_t(res[0].size());
  Shape os = s;
  os[size_t(axis)] = m;
  V out(size_t(outer * m * inner));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      for (int64_t k = 0; k < m; k++) out[size_t((o * m + k) * inner + i)] = res[size_t(o * inner + i)][size_t(k)];
  return {os, out};
}
Shape drop(Shape s, int axis) { s.erase(s.begin() + axis); return s; }
// (3,5) permuted from a (5,3) buffer, and its values in row-major order
std::pair<Tensor, V> permuted35(const V& base) {
  V v;
  for (int i = 0; i < 3; i++) for (int j = 0; j < 5; j++) v.push_back(base[size_t(j * 3 + i)]);
  return {mk(base, {5, 3}).T(), v};
}

template <class E, class F>
std::string thrown(F&& f) {
  try { f(); } catch (const E& e) { return e.what(); } catch (...) { return "<other exception>"; }
  return "<no exception>";
}
using Catch::Matchers::Contains;

double sigm(double x) { return 1 / (1 + std::exp(-x)); }
}  // namespace

// ============================================================================================
// elementwise: unary math
// ============================================================================================

TEST_CASE("api unary math vs std::", "[api][unary]") {
  check_unary("abs", [](auto& x) { return x.abs(); }, [](double x) { return std::abs(x); }, -3, 3, 0, 0);
  check_unary("sign", [](auto& x) { return x.sign(); }, [](double x) { return double((x > 0) - (x < 0)); }, -3, 3, 0, 0);
  check_unary("neg", [](auto& x) { return x.neg(); }, [](double x) { return -x; }, -3, 3, 0, 0);
  check_unary("exp", [](auto& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -5, 5);
  check_unary("exp2", [](auto& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -5, 5);
  check_unary("log", [](auto& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.05, 10);
  check_unary("log2", [](auto& x) { return x.log2(); }, [](double x) { return std::log2(x); }, 0.05, 10);
  check_unary("log10", [](auto& x) { return x.log10(); }, [](double x) { return std::log10(x); }, 0.05, 10);
  check_unary("sqrt", [](auto& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 10);
  check_unary("rsqrt", [](auto& x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 10);
  check_unary("reciprocal", [](auto& x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, 0.1, 10);
  check_unary("square", [](auto& x) { return x.square(); }, [](double x) { return x * x; }, -3, 3);
  check_unary("sin", [](auto& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -6, 6);
  check_unary("cos", [](auto& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -6, 6);
  check_unary("tan", [](auto& x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.2, 1.2);
  check_unary("asin", [](auto& x) { return x.asin(); }, [](double x) { return std::asin(x); }, -1, 1);
  check_unary("acos", [](auto& x) { return x.acos(); }, [](double x) { return std::acos(x); }, -1, 1);
  check_unary("atan", [](auto& x) { return x.atan(); }, [](double x) { return std::atan(x); }, -5, 5);
  check_unary("sinh", [](auto& x) { return x.sinh(); }, [](double x) { return std::sinh(x); }, -3, 3);
  check_unary("cosh", [](auto& x) { return x.cosh(); }, [](double x) { return std::cosh(x); }, -3, 3);
  check_unary("tanh", [](auto& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -4, 4);
  check_unary("asinh", [](auto& x) { return x.asinh(); }, [](double x) { return std::asinh(x); }, -20, 20);
  check_unary("acosh", [](auto& x) { return x.acosh(); }, [](double x) { return std::acosh(x); }, 1.01, 20);
  check_unary("atanh", [](auto& x) { return x.atanh(); }, [](double x) { return std::atanh(x); }, -0.95, 0.95);
  check_unary("erf", [](auto& x) { return x.erf(); }, [](double x) { return std::erf(x); }, -3, 3, 3e-7, 0);
  check_unary("trunc", [](auto& x) { return x.trunc(); }, [](double x) { return std::trunc(x); }, -5, 5, 0, 0);
  check_unary("floor", [](auto& x) { return x.floor(); }, [](double x) { return std::floor(x); }, -5, 5, 0, 0);
  check_unary("ceil", [](auto& x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -5, 5, 0, 0);
  check_unary("round", [](auto& x) { return x.round(); }, [](double x) { return std::nearbyint(x); }, -5, 5, 0, 0);
}

TEST_CASE("api activations vs formulas", "[api][unary][activation]") {
  check_unary("relu", [](auto& x) { return x.relu(); }, [](double x) { return std::max(0.0, x); }, -3, 3, 0, 0);
  check_unary("relu6", [](auto& x) { return x.relu6(); }, [](double x) { return std::clamp(x, 0.0, 6.0); }, -8, 8, 0, 0);
  check_unary("leaky_relu", [](auto& x) { return x.leaky_relu(0.1); }, [](double x) { return x < 0 ? 0.1 * x : x; }, -3, 3);
  check_unary("elu", [](auto& x) { return x.elu(0.7); }, [](double x) { return x > 0 ? x : 0.7 * (std::exp(x) - 1); }, -3, 3);
  check_unary("celu", [](auto& x) { return x.celu(0.5); },
              [](double x) { return std::max(0.0, x) + std::min(0.0, 0.5 * (std::exp(x / 0.5) - 1)); }, -3, 3);
  check_unary("selu", [](auto& x) { return x.selu(); }, [](double x) { return 1.0507 * (x >= 0 ? x : 1.67326 * (std::exp(x) - 1)); }, -3, 3);
  check_unary("gelu tanh", [](auto& x) { return x.gelu("tanh"); },
              [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -4, 4);
  check_unary("quick_gelu", [](auto& x) { return x.quick_gelu(); }, [](double x) { return x * sigm(1.702 * x); }, -4, 4);
  check_unary("silu", [](auto& x) { return x.silu(); }, [](double x) { return x * sigm(x); }, -4, 4);
  check_unary("swish", [](auto& x) { return x.swish(); }, [](double x) { return x * sigm(x); }, -4, 4);
  check_unary("sigmoid", [](auto& x) { return x.sigmoid(); }, sigm, -6, 6);
  check_unary("hardsigmoid", [](auto& x) { return x.hardsigmoid(); }, [](double x) { return std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5);
  check_unary("hardswish", [](auto& x) { return x.hardswish(); }, [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; }, -5, 5);
  check_unary("hardtanh", [](auto& x) { return x.hardtanh(-0.5, 2); }, [](double x) { return std::clamp(x, -0.5, 2.0); }, -3, 3, 0, 0);
  check_unary("logsigmoid", [](auto& x) { return x.logsigmoid(); }, [](double x) { return -std::log1p(std::exp(-x)); }, -6, 6);
  check_unary("mish", [](auto& x) { return x.mish(); }, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -4, 4);
  check_unary("softplus", [](auto& x) { return x.softplus(2.0); }, [](double x) { return std::log1p(std::exp(2 * x)) / 2; }, -4, 4);
  check_unary("softsign", [](auto& x) { return x.softsign(); }, [](double x) { return x / (1 + std::abs(x)); }, -4, 4);
}

TEST_CASE("api unary: special values, rounding, ints", "[api][unary]") {
  const float inf = INFINITY, nan = NAN;
  Tensor s = Tensor(std::vector<float>{-inf, -2.5f, -0.5f, 0, 0.5f, 1.5f, 2.5f, inf, nan});
  Shape sh{9};
  check(s.isinf(), sh, {1, 0, 0, 0, 0, 0, 0, 1, 0});
  check(s.isinf(true, false), sh, {0, 0, 0, 0, 0, 0, 0, 1, 0});
  check(s.isinf(false, true), sh, {1, 0, 0, 0, 0, 0, 0, 0, 0});
  check(s.isnan(), sh, {0, 0, 0, 0, 0, 0, 0, 0, 1});
  check(s.isfinite(), sh, {0, 1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(s.isnan().dtype() == DType::Bool);
  // half to even, like torch and numpy
  check(s.round(), sh, {-inf, -2, -0.0, 0, 0, 2, 2, inf, nan});
  check(Tensor(std::vector<float>{3.5f, 4.5f, -3.5f, 0.49999997f, 8388609.f, -1e9f}).round(), {6}, {4, 4, -4, 0, 8388609, -1e9});
  check(Tensor(std::vector<double>{4503599627370497.0, 2.5, -0.5000000000000001}).round(), {3}, {4503599627370497.0, 2, -1});
  check(s.sign(), sh, {-1, -1, -1, 0, 1, 1, 1, 1, nan});
  check(s.floor(), sh, {-inf, -3, -1, 0, 0, 1, 2, inf, nan});
  check(s.ceil(), sh, {-inf, -2, -0.0, 0, 1, 2, 3, inf, nan});
  // ints: rounding ops are identities, math promotes to float, abs/sign keep the dtype
  Tensor i = Tensor({-3, 0, 4});
  CHECK(i.floor().dtype() == DType::Int32);
  CHECK(i.round().to_vector<int>() == std::vector<int>{-3, 0, 4});
  CHECK(i.abs().to_vector<int>() == std::vector<int>{3, 0, 4});
  CHECK(i.abs().dtype() == DType::Int32);
  CHECK(i.sign().to_vector<int>() == std::vector<int>{-1, 0, 1});
  CHECK(i.exp().dtype() == DType::Float32);
  CHECK(i.sqrt().dtype() == DType::Float32);
  Tensor u = Tensor(std::vector<uint8_t>{0, 7, 255});
  CHECK(u.abs().to_vector<int>() == std::vector<int>{0, 7, 255});
  CHECK(u.sign().to_vector<int>() == std::vector<int>{0, 1, 1});
  // logical_not / bitwise_not / ~
  CHECK((~i).to_vector<int>() == std::vector<int>{2, -1, -5});
  CHECK((~u).to_vector<int>() == std::vector<int>{255, 248, 0});
  CHECK((~Tensor(std::vector<uint32_t>{0u, 5u})).to_vector<uint32_t>() == std::vector<uint32_t>{0xffffffffu, 0xfffffffau});
  CHECK((~Tensor(std::vector<int64_t>{0, -6})).to_vector<int64_t>() == std::vector<int64_t>{-1, 5});
  Tensor b = Tensor(std::vector<bool>{true, false});
  CHECK((~b).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(b.logical_not().to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(i.logical_not().to_vector<bool>() == std::vector<bool>{false, true, false});
  // domain edges
  auto e = Tensor(std::vector<float>{-1, 0, 1, 2}).log().to_vector<float>();
  CHECK(std::isnan(e[0]));
  CHECK(e[1] == -inf);
  CHECK(e[2] == 0);
  CHECK(Tensor(std::vector<float>{-1, 1}).asin().to_vector<float>()[1] == Approx(M_PI / 2).margin(1e-6));
  CHECK(Tensor(std::vector<float>{-1, 1}).atanh().to_vector<float>()[1] == inf);
}

TEST_CASE("api unary: gradients vs finite differences", "[api][unary][gradient]") {
  const std::vector<std::tuple<const char*, Fn1, double, double>> ops = {
      {"abs", [](auto& x) { return x.abs(); }, -2, 2},         {"sign", [](auto& x) { return x.sign() * x; }, -2, 2},
      {"exp", [](auto& x) { return x.exp(); }, -2, 2},          {"exp2", [](auto& x) { return x.exp2(); }, -2, 2},
      {"log", [](auto& x) { return x.log(); }, 0.2, 3},         {"log2", [](auto& x) { return x.log2(); }, 0.2, 3},
      {"log10", [](auto& x) { return x.log10(); }, 0.2, 3},     {"sqrt", [](auto& x) { return x.sqrt(); }, 0.2, 3},
      {"rsqrt", [](auto& x) { return x.rsqrt(); }, 0.2, 3},     {"reciprocal", [](auto& x) { return x.reciprocal(); }, 0.2, 3},
      {"square", [](auto& x) { return x.square(); }, -2, 2},    {"sin", [](auto& x) { return x.sin(); }, -3, 3},
      {"cos", [](auto& x) { return x.cos(); }, -3, 3},          {"tan", [](auto& x) { return x.tan(); }, -1, 1},
      {"asin", [](auto& x) { return x.asin(); }, -0.9, 0.9},    {"acos", [](auto& x) { return x.acos(); }, -0.9, 0.9},
      {"atan", [](auto& x) { return x.atan(); }, -3, 3},        {"sinh", [](auto& x) { return x.sinh(); }, -2, 2},
      {"cosh", [](auto& x) { return x.cosh(); }, -2, 2},        {"tanh", [](auto& x) { return x.tanh(); }, -2, 2},
      {"asinh", [](auto& x) { return x.asinh(); }, -3, 3},      {"acosh", [](auto& x) { return x.acosh(); }, 1.2, 3},
      {"atanh", [](auto& x) { return x.atanh(); }, -0.9, 0.9},  {"erf", [](auto& x) { return x.erf(); }, -2, 2},
      {"round*x", [](auto& x) { return x.round() * x + x.floor() + x.ceil() + x.trunc(); }, -2, 2},
      {"relu", [](auto& x) { return x.relu(); }, -2, 2},        {"relu6", [](auto& x) { return x.relu6(); }, -3, 9},
      {"leaky_relu", [](auto& x) { return x.leaky_relu(0.2); }, -2, 2}, {"elu", [](auto& x) { return x.elu(0.5); }, -2, 2},
      {"celu", [](auto& x) { return x.celu(0.5); }, -2, 2},     {"selu", [](auto& x) { return x.selu(); }, -2, 2},
      {"gelu", [](auto& x) { return x.gelu(); }, -3, 3},        {"quick_gelu", [](auto& x) { return x.quick_gelu(); }, -3, 3},
      {"silu", [](auto& x) { return x.silu(); }, -3, 3},        {"sigmoid", [](auto& x) { return x.sigmoid(); }, -3, 3},
      {"hardsigmoid", [](auto& x) { return x.hardsigmoid(); }, -5, 5}, {"hardswish", [](auto& x) { return x.hardswish(); }, -5, 5},
      {"hardtanh", [](auto& x) { return x.hardtanh(); }, -2, 2}, {"logsigmoid", [](auto& x) { return x.logsigmoid(); }, -3, 3},
      {"mish", [](auto& x) { return x.mish(); }, -3, 3},        {"softplus", [](auto& x) { return x.softplus(1.5); }, -3, 3},
      {"softsign", [](auto& x) { return x.softsign(); }, -3, 3},
  };
  for (auto& [name, f, lo, hi] : ops) DYNAMIC_SECTION(name) { check_grad1(f, {2, 3}, lo, hi); }
  SECTION("analytic: d sigmoid = s(1-s), d softplus = sigmoid, d abs = sign") {
    Tensor x = Tensor(std::vector<double>{-1.5, -0.2, 0.7, 2.0});
    auto xs = x.to_vector<double>();
    auto g = tinygrad::gradient(x.sigmoid().sum(), {x})[0].to_vector<double>();
    auto gs = tinygrad::gradient(x.softplus().sum(), {x})[0].to_vector<double>();
    auto ga = tinygrad::gradient(x.abs().sum(), {x})[0].to_vector<double>();
    for (size_t i = 0; i < xs.size(); i++) {
      CHECK(g[i] == Approx(sigm(xs[i]) * (1 - sigm(xs[i]))).epsilon(1e-12));
      CHECK(gs[i] == Approx(sigm(xs[i])).epsilon(1e-12));
      CHECK(ga[i] == (xs[i] > 0 ? 1 : -1));
    }
    Tensor z = Tensor(std::vector<double>{0.0});
    CHECK(tinygrad::gradient(z.abs().sum(), {z})[0].item<double>() == 0);
  }
}

// ============================================================================================
// elementwise: binary
// ============================================================================================

TEST_CASE("api binary float ops vs std:: with broadcasting", "[api][binary]") {
  auto pymod = [](double a, double b) { double r = std::fmod(a, b); return r != 0 && ((r < 0) != (b < 0)) ? r + b : r; };
  check_binary("add", [](auto& a, auto& b) { return a.add(b); }, [](double a, double b) { return double(float(a + b)); },
               gen_f, DType::Float32, 0, 0);
  check_binary("sub", [](auto& a, auto& b) { return a.sub(b); }, [](double a, double b) { return double(float(a - b)); },
               gen_f, DType::Float32, 0, 0);
  check_binary("mul", [](auto& a, auto& b) { return a.mul(b); }, [](double a, double b) { return double(float(a * b)); },
               gen_f, DType::Float32, 0, 0);
  check_binary("div", [](auto& a, auto& b) { return a.div(b); }, [](double a, double b) { return a / b; }, gen_pos);
  check_binary("div trunc", [](auto& a, auto& b) { return (a * 3.0).div(b, "trunc"); },
               [](double a, double b) { return std::trunc(double(float(a * 3)) / b); }, gen_pos);
  check_binary("div floor", [](auto& a, auto& b) { return (a - 1.7).div(b, "floor"); },
               [](double a, double b) { return std::floor(double(float(a - 1.7)) / b); }, gen_pos);
  check_binary("mod", [](auto& a, auto& b) { return (a - 1.7) % b; }, [&](double a, double b) { return pymod(double(float(a - 1.7)), b); }, gen_pos,
               DType::Float32, 1e-5, 0);
  check_binary("mod negative divisor", [](auto& a, auto& b) { return a.mod(-b); }, [&](double a, double b) { return pymod(a, -b); }, gen_f,
               DType::Float32, 1e-5, 0);
  check_binary("fmod", [](auto& a, auto& b) { return (a - 1.7).fmod(b); }, [](double a, double b) { return std::fmod(double(float(a - 1.7)), b); },
               gen_pos, DType::Float32, 1e-5, 0);
  check_binary("pow", [](auto& a, auto& b) { return a.pow(b - 1.5); },
               [](double a, double b) { return std::pow(a, double(float(b - 1.5))); }, gen_pos);
  check_binary("maximum", [](auto& a, auto& b) { return a.maximum(b); }, [](double a, double b) { return std::max(a, b); },
               gen_f, DType::Float32, 0, 0);
  check_binary("minimum", [](auto& a, auto& b) { return a.minimum(b); }, [](double a, double b) { return std::min(a, b); },
               gen_f, DType::Float32, 0, 0);
  check_binary("copysign", [](auto& a, auto& b) { return a.copysign(b); }, [](double a, double b) { return std::copysign(a, b); },
               gen_f, DType::Float32, 0, 0);
  check_binary("logaddexp", [](auto& a, auto& b) { return (a * 10.0).logaddexp(b); },
               [](double a, double b) {
                 double x = double(float(a * 10)), m = std::max(x, b);
                 return m + std::log(std::exp(x - m) + std::exp(b - m));
               },
               gen_f);
  check_binary("lerp", [](auto& a, auto& b) { return a.lerp(b, 0.3); }, [](double a, double b) { return a + (b - a) * 0.3; }, gen_f);
  check_binary("lerp tensor weight", [](auto& a, auto& b) { return a.lerp(b, b.sigmoid()); },
               [](double a, double b) { return a + (b - a) * sigm(b); }, gen_f);
}

TEST_CASE("api binary int ops, comparisons, bit ops", "[api][binary][int]") {
  auto pymod = [](double a, double b) { int x = int(a), y = int(b), r = x % y; return double(r != 0 && ((r < 0) != (y < 0)) ? r + y : r); };
  auto I = DType::Int32;
  check_binary("int div trunc", [](auto& a, auto& b) { return a.div(b, "trunc"); },
               [](double a, double b) { return double(int(a) / int(b)); }, gen_nz, I, 0, 0);
  check_binary("int div floor", [](auto& a, auto& b) { return a.div(b, "floor"); },
               [](double a, double b) { return std::floor(a / b); }, gen_nz, I, 0, 0);
  check_binary("int true div", [](auto& a, auto& b) { return a / b; }, [](double a, double b) { return a / b; }, gen_nz, I);
  check_binary("int mod", [](auto& a, auto& b) { return a % b; }, pymod, gen_nz, I, 0, 0);
  check_binary("int fmod", [](auto& a, auto& b) { return a.fmod(b); }, [](double a, double b) { return double(int(a) % int(b)); }, gen_nz, I, 0, 0);
  check_binary("int pow", [](auto& a, auto& b) { return a.pow(b.abs().minimum(4)); },
               [](double a, double b) { return std::pow(a, std::min(std::abs(b), 4.0)); }, gen_nz, I, 0, 0);
  check_binary("int minimum", [](auto& a, auto& b) { return a.minimum(b); }, [](double a, double b) { return std::min(a, b); }, gen_i, I, 0, 0);
  check_binary("eq", [](auto& a, auto& b) { return a.eq(b); }, [](double a, double b) { return double(a == b); }, gen_small, I, 0, 0);
  check_binary("ne", [](auto& a, auto& b) { return a.ne(b); }, [](double a, double b) { return double(a != b); }, gen_small, I, 0, 0);
  check_binary("lt", [](auto& a, auto& b) { return a.lt(b); }, [](double a, double b) { return double(a < b); }, gen_small, I, 0, 0);
  check_binary("le", [](auto& a, auto& b) { return a.le(b); }, [](double a, double b) { return double(a <= b); }, gen_small, I, 0, 0);
  check_binary("gt", [](auto& a, auto& b) { return a.gt(b); }, [](double a, double b) { return double(a > b); }, gen_small, I, 0, 0);
  check_binary("ge", [](auto& a, auto& b) { return a.ge(b); }, [](double a, double b) { return double(a >= b); }, gen_small, I, 0, 0);
  check_binary("bitwise_and", [](auto& a, auto& b) { return a.bitwise_and(b); },
               [](double a, double b) { return double(int(a) & int(b)); }, gen_i, I, 0, 0);
  check_binary("bitwise_or", [](auto& a, auto& b) { return a.bitwise_or(b); },
               [](double a, double b) { return double(int(a) | int(b)); }, gen_i, I, 0, 0);
  check_binary("bitwise_xor", [](auto& a, auto& b) { return a.bitwise_xor(b); },
               [](double a, double b) { return double(int(a) ^ int(b)); }, gen_i, I, 0, 0);
  check_binary("lshift", [](auto& a, auto& b) { return a.lshift(b); },
               [](double a, double b) { return double(int(a) << int(b)); }, gen_small, I, 0, 0);
  check_binary("rshift", [](auto& a, auto& b) { return (a * 37) >> b; },
               [](double a, double b) { return double((int(a) * 37) >> int(b)); }, gen_small, I, 0, 0);
  SECTION("uint8 minimum and mod (no sign), scalar forms, compound assignment") {
    Tensor u = Tensor(std::vector<uint8_t>{0, 200, 255}), v = Tensor(std::vector<uint8_t>{3, 100, 7});
    CHECK(u.minimum(v).to_vector<int>() == std::vector<int>{0, 100, 7});
    CHECK((u % v).to_vector<int>() == std::vector<int>{0, 0, 3});
    Tensor i = Tensor({-7, 5, 12});
    CHECK((i % 4).to_vector<int>() == std::vector<int>{1, 1, 0});
    CHECK((20 % i).to_vector<int>() == std::vector<int>{-1, 0, 8});
    CHECK((i << 2).to_vector<int>() == std::vector<int>{-28, 20, 48});
    CHECK((i >> 1).to_vector<int>() == std::vector<int>{-4, 2, 6});
    CHECK((i & 6).to_vector<int>() == std::vector<int>{0, 4, 4});
    CHECK((i | 1).to_vector<int>() == std::vector<int>{-7, 5, 13});
    CHECK((i ^ 3).to_vector<int>() == std::vector<int>{-6, 6, 15});
    CHECK((i & 6).dtype() == DType::Int32);
    Tensor b = Tensor(std::vector<bool>{true, false});
    CHECK((b & 1).dtype() == DType::Bool);
    CHECK((b | 1).to_vector<bool>() == std::vector<bool>{true, true});
    Tensor c = i;
    c += 1; c *= 2; c -= 3; c %= 5;
    CHECK(c.to_vector<int>() == std::vector<int>{0, 4, 3});
    c <<= 1; c >>= 1; c |= Tensor({8, 8, 8}); c &= Tensor({12, 12, 12}); c ^= Tensor({1, 1, 1});
    CHECK(c.to_vector<int>() == std::vector<int>{9, 13, 9});
    CHECK(i.to_vector<int>() == std::vector<int>{-7, 5, 12});  // the copy kept the old value
    Tensor f = Tensor(std::vector<float>{1, 2});
    f /= 4.0;
    CHECK(f.to_vector<float>() == std::vector<float>{0.25f, 0.5f});
    CHECK(Tensor({2, 3}).pow(3).to_vector<int>() == std::vector<int>{8, 27});
    CHECK(Tensor({2, 3}).pow(3).dtype() == DType::Int32);
    CHECK(Tensor({4, 9}).pow(0.5).dtype() == DType::Float32);
    CHECK(Tensor({-7, 7}).div(2, "floor").to_vector<int>() == std::vector<int>{-4, 3});
  }
  SECTION("pow with negative bases and integer exponents") {
    check(Tensor(std::vector<float>{-2, -2, -2, -8, 0, 0}).pow(Tensor(std::vector<float>{3, 2, -1, 1.0f / 3, 0, 2})), {6},
          {-8, 4, -0.5, NAN, 1, 0}, 1e-6, 1e-6);
  }
}

TEST_CASE("api where, clip, masked_fill, isclose", "[api][binary]") {
  Tensor x = mk({-3, -1, 0, 2, 5, 9}, {2, 3});
  check(x.clip(-1, 4), {2, 3}, {-1, -1, 0, 2, 4, 4});
  check(x.clamp(0.5), {2, 3}, {0.5, 0.5, 0.5, 2, 5, 9});
  check(x.clip(nullopt, 1), {2, 3}, {-3, -1, 0, 1, 1, 1});
  check(x.clip(mk({-2, 0, 1}, {3}), mk({0}, {1})), {2, 3}, {-2, 0, 0, 0, 0, 0});
  check(x.T().clip(0, 3), {3, 2}, {0, 2, 0, 3, 0, 3});
  check(Tensor({-5, 3, 12}).clip(0, 10), {3}, {0, 3, 10});
  CHECK(Tensor({-5, 3, 12}).clip(0, 10).dtype() == DType::Int32);
  Tensor m = Tensor(std::vector<bool>{true, false, true});
  check(x.masked_fill(m, 7.5), {2, 3}, {7.5, -1, 7.5, 7.5, 5, 7.5});
  check(x.masked_fill(m.reshape({1, 3}), mk({1, 2}, {2, 1})), {2, 3}, {1, -1, 1, 2, 5, 2});
  check(x.T().masked_fill(x.T() > 1.0, 0.0), {3, 2}, {-3, 0, -1, 0, 0, 0});
  check(x.where(1.0, 0.0), {2, 3}, {1, 1, 0, 1, 1, 1});
  // isclose / allclose
  const double nan = NAN, inf = INFINITY;
  Tensor a = Tensor(std::vector<double>{1.0, 1.0, 1.0, nan, inf, -inf, 0.0});
  Tensor b = Tensor(std::vector<double>{1.0 + 1e-6, 1.0 + 1e-4, 1.0 - 2e-5, nan, inf, inf, 1e-9});
  check(a.isclose(b), {7}, {1, 0, 0, 0, 1, 0, 1});
  check(a.isclose(b, 1e-5, 1e-8, true), {7}, {1, 0, 0, 1, 1, 0, 1});
  check(a.isclose(b, 1e-3), {7}, {1, 1, 1, 0, 1, 0, 1});
  CHECK(Tensor({1.0, 2.0}).allclose(Tensor({1.0, 2.0 + 1e-7})));
  CHECK_FALSE(Tensor({1.0, 2.0}).allclose(Tensor({1.0, 2.1})));
  CHECK(Tensor({1.0, 2.0}).allclose(Tensor({1.0, 2.1}), 0, 0.2));
  CHECK(Tensor({nan}).allclose(Tensor({nan}), 1e-5, 1e-8, true));
}

TEST_CASE("api binary: gradients vs finite differences", "[api][binary][gradient]") {
  using X = const std::vector<Tensor>;
  check_grad([](X& x) { return x[0].add(x[1]) * x[0].sub(x[1]).mul(x[0]); }, {{2, 3}, {3}});
  check_grad([](X& x) { return x[0].div(x[1]); }, {{2, 3}, {2, 1}}, 0.5, 2);
  check_grad([](X& x) { return x[0].pow(x[1]); }, {{2, 3}, {2, 3}}, 0.5, 2);
  check_grad([](X& x) { return x[0].pow(2.5) + x[0].pow(-1.0); }, {{4}}, 0.5, 2);
  check_grad([](X& x) { return x[0].maximum(x[1]) + x[0].minimum(x[1] * 0.5); }, {{2, 3}, {3}});
  check_grad([](X& x) { return x[0].copysign(x[1]); }, {{2, 3}, {2, 3}});
  check_grad([](X& x) { return x[0].logaddexp(x[1]); }, {{2, 3}, {1, 3}});
  check_grad([](X& x) { return x[0].lerp(x[1], x[2]); }, {{4}, {4}, {4}});
  check_grad([](X& x) { return x[0].clip(-0.5, 0.7) + x[0].masked_fill(x[1] > 0.0, 2.0) * x[1]; }, {{2, 3}, {2, 3}});
  check_grad([](X& x) { return x[0].mod(x[1].abs() + 0.5) + x[0].fmod(1.3); }, {{2, 3}, {2, 3}});
}

// ============================================================================================
// reductions, scans, sort
// ============================================================================================

TEST_CASE("api var, std, var_mean, std_mean", "[api][reduce]") {
  V base = rnd(15, -3, 3, 5);
  auto [x, v] = permuted35(base);
  auto var_ref = [](double corr) {
    return [corr](const V& l) {
      double m = 0, s = 0;
      for (double a : l) m += a;
      m /= double(l.size());
      for (double a : l) s += (a - m) * (a - m);
      return V{s / std::max(0.0, double(l.size()) - corr)};
    };
  };
  for (int axis : {0, 1}) {
    for (double corr : {1.0, 0.0, 2.0}) {
      auto [s, want] = along(v, {3, 5}, axis, var_ref(corr));
      check(x.var(axis, true, corr), s, want, 1e-5, 1e-5);
      check(x.var(axis, false, corr), drop(s, axis), want, 1e-5, 1e-5);
      V sw;
      for (double w : want) sw.push_back(std::sqrt(w));
      check(x.std(axis, true, corr), s, sw, 1e-5, 1e-5);
      auto [vv, mm] = x.var_mean({axis}, false, corr);
      check(vv, drop(s, axis), want, 1e-5, 1e-5);
      auto [ss, m2] = x.std_mean({axis}, true, corr);
      check(ss, s, sw, 1e-5, 1e-5);
      auto [ms, mw] = along(v, {3, 5}, axis, [](const V& l) { double m = 0; for (double a : l) m += a; return V{m / double(l.size())}; });
      check(mm, drop(ms, axis), mw, 1e-5, 1e-5);
      check(m2, ms, mw, 1e-5, 1e-5);
    }
  }
  // all axes, and a single element with correction 1 is NaN (like torch)
  double m = 0, s = 0;
  for (double a : v) m += a;
  m /= 15;
  for (double a : v) s += (a - m) * (a - m);
  check(x.var(), {}, {s / 14}, 1e-5, 1e-5);
  check(x.std(std::vector<int64_t>{}, false, 0), {}, {std::sqrt(s / 15)}, 1e-5, 1e-5);
  // `{}` is "all axes" (not axis 0) in every reduction that also takes one int axis
  check(x.var({}, true), {1, 1}, {s / 14}, 1e-5, 1e-5);
  check(x.sum({}, true), {1, 1}, {m * 15}, 1e-5, 1e-5);
  check(x.mean({}, true) + x.max({}, true) * 0, {1, 1}, {m}, 1e-5, 1e-5);
  CHECK(std::isnan(Tensor(std::vector<float>{3}).var().item<float>()));
  check(Tensor({1, 2, 3, 4}).var(), {}, {5.0 / 3}, 1e-6, 1e-6);  // ints promote
  check_grad([](auto& x) { return x[0].var(1).sum() + x[0].std(0, true, 0); }, {{3, 4}});
}

TEST_CASE("api any, all, argmax, argmin", "[api][reduce]") {
  V bits = {0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1};
  Tensor b = mk(bits, {3, 4}, DType::Bool);
  check(b.any(1), {3}, {0, 1, 1});
  check(b.all(1), {3}, {0, 0, 1});
  check(b.any(0, true), {1, 4}, {1, 1, 1, 1});
  check(b.all(0), {4}, {0, 0, 0, 0});
  check(b.T().all(1), {4}, {0, 0, 0, 0});
  check(b.T().any(1), {4}, {1, 1, 1, 1});
  check(mk({1, 2, 0, 3}, {2, 2}).all(1), {2}, {1, 0});
  CHECK(b.any().item<bool>());
  CHECK_FALSE(b.all().item<bool>());
  CHECK(b.any(1).dtype() == DType::Bool);
  check(Tensor(std::vector<float>{0, 0.5f}).any(), {}, {1});
  CHECK(Tensor::zeros({0}).all().item<bool>());
  CHECK_FALSE(Tensor::zeros({0}).any().item<bool>());
  // argmax: first occurrence of ties, on a permuted view, with and without keepdim, flattened
  V base = rndi(15, 0, 3, 11);
  auto [x, v] = permuted35(base);
  auto first = [](bool mx) {
    return [mx](const V& l) { size_t k = 0; for (size_t i = 1; i < l.size(); i++) if (mx ? l[i] > l[k] : l[i] < l[k]) k = i; return V{double(k)}; };
  };
  for (int axis : {0, 1, -1}) {
    int a = axis < 0 ? axis + 2 : axis;
    auto [s, wmax] = along(v, {3, 5}, a, first(true));
    auto [s2, wmin] = along(v, {3, 5}, a, first(false));
    check(x.argmax(axis), drop(s, a), wmax);
    check(x.argmax(axis, true), s, wmax);
    check(x.argmin(axis), drop(s, a), wmin);
    check((x - 2.0).argmin(axis, true), s2, wmin);
    CHECK(x.argmax(axis).dtype() == DType::Int64);
  }
  check(x.argmax(), {}, first(true)(v));
  check(x.argmin(nullopt, true), {1, 1}, first(false)(v));
  check(Tensor(std::vector<uint8_t>{3, 0, 250, 250}).argmin(), {}, {1});
  check(Tensor(std::vector<uint8_t>{3, 0, 250, 250}).argmax(), {}, {2});
  check(Tensor(std::vector<float>{-INFINITY, -INFINITY}).argmax(), {}, {0});
  check(Tensor::full({}, 4.0).argmax(), {}, {0});
}

TEST_CASE("api logsumexp, softmax, log_softmax, softmin", "[api][reduce][softmax]") {
  V base = rnd(15, -3, 3, 21);
  auto [x, v] = permuted35(base);
  auto lse = [](const V& l) {
    double m = -INFINITY, s = 0;
    for (double a : l) m = std::max(m, a);
    for (double a : l) s += std::exp(a - m);
    return V{m + std::log(s)};
  };
  for (int axis : {0, 1}) {
    auto [s, want] = along(v, {3, 5}, axis, lse);
    check(x.logsumexp(axis, true), s, want, 1e-5, 1e-5);
    check(x.logsumexp(axis), drop(s, axis), want, 1e-5, 1e-5);
    auto [s2, sm] = along(v, {3, 5}, axis, [&](const V& l) { V r; double z = lse(l)[0]; for (double a : l) r.push_back(std::exp(a - z)); return r; });
    check(x.softmax(axis), s2, sm, 1e-6, 1e-5);
    V lsm;
    auto [s3, mins] = along(v, {3, 5}, axis, [&](const V& l) {
      V n, r;
      for (double a : l) n.push_back(-a);
      double z = lse(n)[0];
      for (double a : n) r.push_back(std::exp(a - z));
      return r;
    });
    for (size_t i = 0; i < sm.size(); i++) lsm.push_back(std::log(sm[i]));
    check(x.log_softmax(axis), s2, lsm, 1e-5, 1e-5);
    check(x.softmin(axis), s3, mins, 1e-6, 1e-5);
  }
  check(x.logsumexp(), {}, lse(v), 1e-5, 1e-5);
  // large values do not overflow; an all -inf row gives -inf
  check(mk({1000, 1000, -INFINITY, -INFINITY}, {2, 2}).logsumexp(1), {2}, {1000 + std::log(2.0), -INFINITY}, 1e-3, 0);
  // gradients: finite differences, and analytic d logsumexp = softmax
  check_grad([](auto& x) { return x[0].logsumexp(1) * 1.5 + x[0].logsumexp(); }, {{3, 4}});
  check_grad([](auto& x) { return x[0].softmin(0) * x[1]; }, {{3, 4}, {3, 4}});
  Tensor xd = Tensor(rnd(8, -2, 2, 3), {2, 4});
  auto g = tinygrad::gradient(xd.logsumexp(1).sum(), {xd})[0];
  check(g, {2, 4}, xd.softmax(1).to_vector<double>(), 1e-12, 1e-12);
}

TEST_CASE("api cumsum, cumprod, cummax, cummin", "[api][reduce][scan]") {
  V base = rnd(15, -2, 2, 31);
  auto [x, v] = permuted35(base);
  auto scan = [](int op) {
    return [op](const V& l) {
      V r;
      double acc = op == 0 ? 0 : op == 1 ? 1 : op == 2 ? -INFINITY : INFINITY;
      for (double a : l) { acc = op == 0 ? acc + a : op == 1 ? acc * a : op == 2 ? std::max(acc, a) : std::min(acc, a); r.push_back(acc); }
      return r;
    };
  };
  for (int axis : {0, 1, -1}) {
    int a = axis < 0 ? axis + 2 : axis;
    DYNAMIC_SECTION("axis " << axis) {
      auto [s, w0] = along(v, {3, 5}, a, scan(0));
      check(x.cumsum(axis), s, w0, 1e-5, 1e-5);
      check(x.cumprod(axis), s, along(v, {3, 5}, a, scan(1)).second, 1e-5, 1e-5);
      check(x.cummax(axis), s, along(v, {3, 5}, a, scan(2)).second);
      check(x.cummin(axis), s, along(v, {3, 5}, a, scan(3)).second);
    }
  }
  SECTION("ints, bools, scalars, size-1") {
    check(Tensor({3, -1, 4, -1, 5}).cumsum(), {5}, {3, 2, 6, 5, 10});
    check(Tensor({3, -1, 4, -1, 5}).cummin(), {5}, {3, -1, -1, -1, -1});
    check(Tensor(std::vector<uint8_t>{3, 1, 4, 1, 5}).cummin(), {5}, {3, 1, 1, 1, 1});
    check(Tensor(std::vector<uint8_t>{3, 1, 4, 1, 5}).cummax(), {5}, {3, 3, 4, 4, 5});
    Tensor bs = Tensor(std::vector<bool>{true, false, true});
    CHECK(bs.cumsum().dtype() == DType::Int64);
    check(bs.cumsum(), {3}, {1, 1, 2});
    check(Tensor::full({}, 2.5).cumsum(), {}, {2.5});
    check(mk({1, 2, 3}, {3, 1}).cumsum(1), {3, 1}, {1, 2, 3});
    CHECK(Tensor::zeros({0, 3}).cumsum(0).shape() == Shape{0, 3});
  }
  SECTION("long rows take the two-level split (n > 512)") {
    V l = rndi(1100, -3, 3, 5), w;
    double acc = 0, mx = -INFINITY;
    V wm;
    for (double a : l) { acc += a; w.push_back(acc); mx = std::max(mx, a); wm.push_back(mx); }
    Tensor t = mk(l, {1100}, DType::Int32);
    check(t.cumsum(), {1100}, w);
    check(t.cummax(), {1100}, wm);
    check(mk(l, {1100, 1}).cumsum(0), {1100, 1}, w);
  }
  SECTION("indices of the running max / min (last occurrence, like torch)") {
    Tensor t = Tensor({1, 3, 3, 2, 5, 0});
    auto [mv, mi] = t.cummax_indices();
    check(mv, {6}, {1, 3, 3, 3, 5, 5});
    check(mi, {6}, {0, 1, 2, 2, 4, 4});
    auto [nv, ni] = t.cummin_indices(0);
    check(nv, {6}, {1, 1, 1, 1, 1, 0});
    check(ni, {6}, {0, 0, 0, 0, 0, 5});
    auto [pv, pi] = x.cummax_indices(1);
    auto want = along(v, {3, 5}, 1,
        [](const V& l) { V r; size_t k = 0; for (size_t i = 0; i < l.size(); i++) { if (l[i] >= l[k]) k = i; r.push_back(double(k)); } return r; });
    check(pi, {3, 5}, want.second);
  }
  SECTION("gradients") {
    check_grad([](auto& x) { return x[0].cumsum(1) * x[1] + x[0].cumprod(0); }, {{3, 4}, {3, 4}}, 0.5, 1.5);
    check_grad([](auto& x) { return x[0].cummax(1) + x[0].cummin(0); }, {{3, 4}});
    check_grad([](auto& x) { return x[0].cumsum(0) * x[0]; }, {{520}});
  }
}

TEST_CASE("api sort, argsort, topk", "[api][reduce][sort]") {
  // reference: a stable sort of (value, index)
  auto sorted = [](const V& l, bool desc) {
    std::vector<size_t> idx(l.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return desc ? l[a] > l[b] : l[a] < l[b]; });
    return idx;
  };
  auto vals = [&](bool desc) { return [&, desc](const V& l) { V r; for (auto i : sorted(l, desc)) r.push_back(l[i]); return r; }; };
  auto inds = [&](bool desc) { return [&, desc](const V& l) { V r; for (auto i : sorted(l, desc)) r.push_back(double(i)); return r; }; };
  for (int n : {2, 5, 8, 13}) {
    for (bool desc : {false, true}) {
      DYNAMIC_SECTION("n " << n << (desc ? " descending" : " ascending")) {
        // a (3, n) view permuted from (n, 3), with ties
        V base = rndi(3 * n, -4, 4, uint32_t(n));
        V v;
        for (int i = 0; i < 3; i++) for (int j = 0; j < n; j++) v.push_back(base[size_t(j * 3 + i)]);
        Tensor x = mk(base, {n, 3}).T();
        auto [sv, si] = x.sort(1, desc);
        check(sv, {3, n}, along(v, {3, int64_t(n)}, 1, vals(desc)).second);
        check(si, {3, n}, along(v, {3, int64_t(n)}, 1, inds(desc)).second);
        CHECK(si.dtype() == DType::Int64);
        check(x.argsort(0, desc), {3, n}, along(v, {3, int64_t(n)}, 0, inds(desc)).second);
        auto [tv, ti] = x.topk(2, -1, !desc);
        auto tvw = along(v, {3, int64_t(n)}, 1, [&](const V& l) { auto r = vals(!desc)(l); return V(r.begin(), r.begin() + 2); });
        auto tiw = along(v, {3, int64_t(n)}, 1, [&](const V& l) { auto r = inds(!desc)(l); return V(r.begin(), r.begin() + 2); });
        check(tv, {3, 2}, tvw.second);
        check(ti, {3, 2}, tiw.second);
      }
    }
  }
  SECTION("floats with infinities, int8/uint8/int64 extremes, size-1 dims and scalars") {
    const float inf = INFINITY;
    auto [a, ai] = Tensor(std::vector<float>{2, -inf, inf, 0.5f, -3}).sort();
    check(a, {5}, {-inf, -3, 0.5, 2, inf});
    check(ai, {5}, {1, 4, 3, 0, 2});
    check(Tensor(std::vector<int8_t>{127, -128, 0}).sort(0, true).first, {3}, {127, 0, -128});
    check(Tensor(std::vector<uint8_t>{255, 0, 7}).sort().first, {3}, {0, 7, 255});
    check(Tensor(std::vector<int64_t>{int64_t(1) << 40, -5, 3}).sort().first, {3}, {-5, 3, double(int64_t(1) << 40)});
    check(mk({4, 1, 3}, {3, 1}).sort(1).first, {3, 1}, {4, 1, 3});
    check(mk({4, 1, 3}, {3, 1}).sort(1).second, {3, 1}, {0, 0, 0});
    check(Tensor::full({}, 3.0).sort().first, {}, {3});
    check(Tensor({5, 1, 4}).topk(3, 0, false).first, {3}, {1, 4, 5});
    CHECK(Tensor({5, 1, 4}).topk(0).first.shape() == Shape{0});
  }
  SECTION("gradients") {
    check_grad([](auto& x) { return x[0].sort(1).first * x[1]; }, {{3, 5}, {3, 5}});
    check_grad([](auto& x) { return x[0].topk(2, 0).first * x[1]; }, {{4, 3}, {2, 3}});
  }
}

// ============================================================================================
// losses
// ============================================================================================

TEST_CASE("api losses vs loops", "[api][loss]") {
  const int N = 4, C = 3;
  V logits = rnd(N * C, -2, 2, 41);
  V lab = {2, 0, 1, 2};
  Tensor x = mk(logits, {N, C}), y = mk(lab, {N}, DType::Int32);
  auto logp = [&](int n, int c) {
    double m = -INFINITY, s = 0;
    for (int k = 0; k < C; k++) m = std::max(m, logits[size_t(n * C + k)]);
    for (int k = 0; k < C; k++) s += std::exp(logits[size_t(n * C + k)] - m);
    return logits[size_t(n * C + c)] - m - std::log(s);
  };
  SECTION("sparse_categorical_crossentropy: reductions, ignore_index, label_smoothing") {
    for (double ls : {0.0, 0.2}) {
      V per;
      for (int n = 0; n < N; n++) {
        double mean = 0;
        for (int c = 0; c < C; c++) mean += logp(n, c) / C;
        per.push_back(-((1 - ls) * logp(n, int(lab[size_t(n)])) + ls * mean));
      }
      double tot = 0;
      for (double p : per) tot += p;
      check(x.sparse_categorical_crossentropy(y, -1, ls), {}, {tot / N}, 1e-5, 1e-5);
      check(x.sparse_categorical_crossentropy(y, -1, ls, "sum"), {}, {tot}, 1e-5, 1e-5);
      check(x.sparse_categorical_crossentropy(y, -1, ls, "none"), {N}, per, 1e-5, 1e-5);
      // ignore label 2: rows 0 and 3 drop out of sum and count
      check(x.sparse_categorical_crossentropy(y, 2, ls), {}, {(per[1] + per[2]) / 2}, 1e-5, 1e-5);
    }
    // (2, 2, C) logits, permuted
    Tensor x3 = mk(logits, {N, C}).reshape({2, 2, C}).permute({1, 0, 2});
    Tensor y3 = mk(lab, {2, 2}, DType::Int32).T();
    double tot = 0;
    for (int n = 0; n < N; n++) tot -= logp(n, int(lab[size_t(n)]));
    check(x3.sparse_categorical_crossentropy(y3), {}, {tot / N}, 1e-5, 1e-5);
  }
  SECTION("cross_entropy: indices and probabilities, (N, C, d) layout, 1-D") {
    V hot;
    for (int n = 0; n < N; n++) for (int c = 0; c < C; c++) hot.push_back(c == lab[size_t(n)]);
    for (double ls : {0.0, 0.3}) {
      V per;
      for (int n = 0; n < N; n++) {
        double l = 0;
        for (int c = 0; c < C; c++) l -= logp(n, c) * ((1 - ls) * (c == lab[size_t(n)]) + ls / C);
        per.push_back(l);
      }
      double tot = per[0] + per[1] + per[2] + per[3];
      check(x.cross_entropy(y, nullopt, -100, "mean", ls), {}, {tot / N}, 1e-5, 1e-5);
      check(x.cross_entropy(y, nullopt, -100, "none", ls), {N}, per, 1e-5, 1e-5);
      check(x.cross_entropy(mk(hot, {N, C}), nullopt, -100, "sum", ls), {}, {tot}, 1e-5, 1e-5);
      // (1, C, N): classes on dim 1
      check(x.T().unsqueeze(0).cross_entropy(y.unsqueeze(0), nullopt, -100, "none", ls), {1, N}, per, 1e-5, 1e-5);
    }
    check(x[1].cross_entropy(Tensor::full({}, 0.0, DType::Int32)), {}, {-logp(1, 0)}, 1e-5, 1e-5);
  }
  SECTION("nll_loss: weight, ignore_index, reductions") {
    Tensor lp = x.log_softmax(1);
    V w = {0.5, 2.0, 1.5};
    double num = 0, den = 0, numi = 0, deni = 0;
    V per;
    for (int n = 0; n < N; n++) {
      int c = int(lab[size_t(n)]);
      per.push_back(-logp(n, c) * w[size_t(c)]);
      num += per.back(); den += w[size_t(c)];
      if (c != 0) { numi += per.back(); deni += w[size_t(c)]; }
    }
    check(lp.nll_loss(y), {}, {-(logp(0, 2) + logp(1, 0) + logp(2, 1) + logp(3, 2)) / N}, 1e-5, 1e-5);
    check(lp.nll_loss(y, mk(w, {C})), {}, {num / den}, 1e-5, 1e-5);
    check(lp.nll_loss(y, mk(w, {C}), nullopt, "none"), {N}, per, 1e-5, 1e-5);
    check(lp.nll_loss(y, mk(w, {C}), nullopt, "sum"), {}, {num}, 1e-5, 1e-5);
    check(lp.nll_loss(y, mk(w, {C}), 0), {}, {numi / deni}, 1e-5, 1e-5);
    per[1] = 0;
    check(lp.nll_loss(y, mk(w, {C}), 0, "none"), {N}, per, 1e-5, 1e-5);
  }
  SECTION("binary_crossentropy and binary_crossentropy_logits (pos_weight)") {
    V p = rnd(6, 0.05, 0.95, 3), t = {0, 1, 1, 0, 0.3, 1};
    V lg = rnd(6, -3, 3, 4);
    Tensor tp = mk(p, {2, 3}), tt = mk(t, {2, 3}), tl = mk(lg, {2, 3});
    V per, perl, perw;
    V pw = {2.0, 0.5, 1.0};
    for (size_t i = 0; i < 6; i++) {
      per.push_back(-(t[i] * std::log(p[i]) + (1 - t[i]) * std::log(1 - p[i])));
      double ls = std::log(sigm(lg[i])), l1 = std::log(1 - sigm(lg[i]));
      perl.push_back(-(t[i] * ls + (1 - t[i]) * l1));
      perw.push_back(-(pw[i % 3] * t[i] * ls + (1 - t[i]) * l1));
    }
    double tot = 0, totl = 0, totw = 0;
    for (size_t i = 0; i < 6; i++) { tot += per[i]; totl += perl[i]; totw += perw[i]; }
    check(tp.binary_crossentropy(tt), {}, {tot / 6}, 1e-5, 1e-5);
    check(tp.binary_crossentropy(tt, "none"), {2, 3}, per, 1e-5, 1e-5);
    check(tl.binary_crossentropy_logits(tt), {}, {totl / 6}, 1e-5, 1e-5);
    check(tl.binary_crossentropy_logits(tt, "sum"), {}, {totl}, 1e-5, 1e-5);
    check(tl.binary_crossentropy_logits(tt, "mean", mk(pw, {3})), {}, {totw / 6}, 1e-5, 1e-5);
    // log clamped at -100 (like torch): a certain wrong answer costs 100, not inf
    check(mk({0, 1}, {2}).binary_crossentropy(mk({1, 0}, {2}), "none"), {2}, {100, 100});
    // large logits stay finite
    check(mk({100, -100}, {2}).binary_crossentropy_logits(mk({0, 1}, {2}), "none"), {2}, {100, 100}, 1e-4, 1e-6);
  }
}

TEST_CASE("api losses: gradients, numeric and analytic", "[api][loss][gradient]") {
  Tensor y = Tensor(std::vector<int32_t>{2, 0, 1}), y3 = Tensor(std::vector<int32_t>{1, 1, 0, 2}, {2, 2});
  SECTION("finite differences") {
    check_grad([&](auto& x) { return x[0].sparse_categorical_crossentropy(y, -1, 0.1); }, {{3, 4}});
    check_grad([&](auto& x) { return x[0].sparse_categorical_crossentropy(y, 0, 0.0, "sum"); }, {{3, 4}});
    check_grad([&](auto& x) { return x[0].cross_entropy(y, nullopt, -100, "mean", 0.2); }, {{3, 4}});
    check_grad([&](auto& x) { return x[0].cross_entropy(y3); }, {{2, 3, 2}});
    check_grad([&](auto& x) { return x[0].cross_entropy(x[1].softmax(1), nullopt, -100, "sum"); }, {{3, 4}, {3, 4}});
    check_grad([&](auto& x) { return x[0].log_softmax(1).nll_loss(y, x[1].abs() + 0.5, 1); }, {{3, 4}, {4}});
    check_grad([&](auto& x) { return x[0].sigmoid().binary_crossentropy(x[1].sigmoid()); }, {{2, 3}, {2, 3}});
    check_grad([&](auto& x) { return x[0].binary_crossentropy_logits(x[1].sigmoid(), "sum", x[2].abs()); }, {{2, 3}, {2, 3}, {3}});
  }
  SECTION("analytic: d CE / d logits = (softmax - onehot) / N; d BCE-logits = (sigmoid - y) / N") {
    V lg = rnd(12, -2, 2, 9);
    Tensor x = Tensor(lg, {3, 4});
    auto g = tinygrad::gradient(x.sparse_categorical_crossentropy(y), {x})[0].to_vector<double>();
    auto g2 = tinygrad::gradient(x.cross_entropy(y), {x})[0].to_vector<double>();
    auto sm = x.softmax(1).to_vector<double>();
    std::vector<int> lab = {2, 0, 1};
    for (int n = 0; n < 3; n++)
      for (int c = 0; c < 4; c++) {
        double want = (sm[size_t(n * 4 + c)] - (c == lab[size_t(n)])) / 3;
        CHECK(g[size_t(n * 4 + c)] == Approx(want).margin(1e-12));
        CHECK(g2[size_t(n * 4 + c)] == Approx(want).margin(1e-12));
      }
    V t = {0, 1, 1, 0, 0.5, 1, 0, 0, 1, 1, 0, 0.25};
    auto gb = tinygrad::gradient(x.binary_crossentropy_logits(Tensor(t, {3, 4})), {x})[0].to_vector<double>();
    for (size_t i = 0; i < 12; i++) CHECK(gb[i] == Approx((sigm(lg[i]) - t[i]) / 12).margin(1e-12));
  }
}

// ============================================================================================
// creation and random
// ============================================================================================

TEST_CASE("api creation: *_like, linspace, meshgrid, from_blob", "[api][creation]") {
  Tensor x = Tensor({1, 2, 3, 4, 5, 6}).reshape({2, 3});
  CHECK(x.zeros_like().dtype() == DType::Int32);
  check(x.zeros_like(), {2, 3}, V(6, 0));
  check(x.ones_like(DType::Float16), {2, 3}, V(6, 1));
  CHECK(x.ones_like(DType::Float16).dtype() == DType::Float16);
  check(x.full_like(2.5, DType::Float32), {2, 3}, V(6, 2.5));
  CHECK(x.empty_like().shape() == Shape{2, 3});
  CHECK(x.empty_like(DType::Float64).dtype() == DType::Float64);
  CHECK(x.rand_like().dtype() == DType::Float32);
  CHECK(x.T().randn_like(DType::Float64).shape() == Shape{3, 2});
  CHECK(x.T().randn_like(DType::Float64).dtype() == DType::Float64);
  // linspace
  check(Tensor::linspace(0, 1, 5), {5}, {0, 0.25, 0.5, 0.75, 1}, 1e-7, 0);
  check(Tensor::linspace(-2, 2, 3, DType::Int32), {3}, {-2, 0, 2});
  check(Tensor::linspace(5, 1, 1), {1}, {5});
  CHECK(Tensor::linspace(0, 1, 0).shape() == Shape{0});
  check(Tensor::linspace(1, 2, 11, DType::Float64), {11}, {1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2}, 1e-12, 0);
  // meshgrid
  Tensor a = Tensor({1, 2, 3}), b = Tensor({10, 20});
  auto ij = Tensor::meshgrid({a, b});
  REQUIRE(ij.size() == 2);
  check(ij[0], {3, 2}, {1, 1, 2, 2, 3, 3});
  check(ij[1], {3, 2}, {10, 20, 10, 20, 10, 20});
  auto xy = Tensor::meshgrid({a, b}, "xy");
  check(xy[0], {2, 3}, {1, 2, 3, 1, 2, 3});
  check(xy[1], {2, 3}, {10, 10, 10, 20, 20, 20});
  auto three = Tensor::meshgrid({a, b, Tensor({7, 8})}, "xy");
  CHECK(three[2].shape() == Shape{2, 3, 2});
  check(three[2], {2, 3, 2}, {7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8});
  check(three[0], {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  CHECK(Tensor::meshgrid({a}).size() == 1);
  // from_blob: no copy, so later writes to the memory are seen by the next realize
  std::vector<float> mem = {1, 2, 3, 4, 5, 6};
  Tensor blob = Tensor::from_blob(mem.data(), {2, 3}, DType::Float32);
  check(blob.T() * 2.0, {3, 2}, {2, 8, 4, 10, 6, 12});
  mem[0] = 100;
  check(blob.sum(), {}, {120});
  CHECK(blob.is_realized());
  CHECK(Tensor::from_blob(nullptr, {0}, DType::Int32).numel() == 0);
}

TEST_CASE("api random: determinism per seed, statistics", "[api][random]") {
  auto stats = [](const std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= double(v.size());
    for (double x : v) s += (x - m) * (x - m);
    return std::pair{m, std::sqrt(s / double(v.size()))};
  };
  SECTION("determinism: the same seed gives the same tensors, the next draw differs") {
    auto draw = [] {
      return std::vector<std::vector<double>>{Tensor::uniform({50}, -1, 1).to_vector<double>(), Tensor::normal({50}).to_vector<double>(),
                                              Tensor::randint(0, 100, {50}).to_vector<double>(), Tensor::randperm(20).to_vector<double>(),
                                              Tensor({0.2, 0.3, 0.5}).multinomial(10, true).to_vector<double>(),
                                              Tensor::kaiming_normal({4, 5}).to_vector<double>()};
    };
    Tensor::manual_seed(42);
    auto a = draw();
    Tensor::manual_seed(42);
    auto b = draw();
    auto c = draw();
    CHECK(a == b);
    CHECK(a[0] != c[0]);
    CHECK(a[3] != c[3]);
  }
  Tensor::manual_seed(1234);
  SECTION("uniform, normal, randint, initialisers") {
    auto u = Tensor::uniform({20000}, -2, 3).to_vector<double>();
    auto [um, us] = stats(u);
    CHECK(um == Approx(0.5).margin(0.05));
    CHECK(us == Approx(5 / std::sqrt(12.0)).margin(0.03));
    CHECK(*std::min_element(u.begin(), u.end()) >= -2);
    CHECK(*std::max_element(u.begin(), u.end()) < 3);
    auto n = Tensor::normal({20000}, 3, 0.5).to_vector<double>();
    auto [nm, ns] = stats(n);
    CHECK(nm == Approx(3).margin(0.02));
    CHECK(ns == Approx(0.5).margin(0.02));
    Tensor ri = Tensor::randint(-3, 4, {3000});
    CHECK(ri.dtype() == DType::Int64);
    std::map<int, int> cnt;
    for (int v : ri.to_vector<int>()) cnt[v]++;
    CHECK(cnt.size() == 7);
    CHECK(cnt.begin()->first == -3);
    CHECK(cnt.rbegin()->first == 3);
    for (auto& [k, c] : cnt) CHECK(c == Approx(3000 / 7.0).margin(80));
    CHECK(Tensor::randint(0, 5, {4}, DType::Int32).dtype() == DType::Int32);
    auto su = Tensor::scaled_uniform({100, 100}).to_vector<double>();
    CHECK(*std::max_element(su.begin(), su.end()) <= 0.01);
    CHECK(stats(su).second == Approx(0.01 / std::sqrt(3.0)).margin(3e-4));
    double gb = std::sqrt(6.0 / (64 + 32 * 3));  // fan_in + fan_out
    auto gu = Tensor::glorot_uniform({64, 32, 3}).to_vector<double>();
    CHECK(*std::max_element(gu.begin(), gu.end()) <= gb);
    CHECK(stats(gu).second == Approx(gb / std::sqrt(3.0)).margin(0.03 * gb));
    double kb = std::sqrt(3.0) * std::sqrt(2.0 / (1 + 0.01 * 0.01)) / std::sqrt(64.0);
    auto ku = Tensor::kaiming_uniform({128, 64}).to_vector<double>();
    CHECK(*std::max_element(ku.begin(), ku.end()) <= kb);
    CHECK(stats(ku).second == Approx(kb / std::sqrt(3.0)).margin(0.02 * kb));
    auto kn = Tensor::kaiming_normal({128, 64}, 0.5).to_vector<double>();
    CHECK(stats(kn).second == Approx(std::sqrt(2.0 / 1.25) / 8).margin(0.01));
    CHECK(Tensor::uniform({2}, 0, 1, DType::Float16).dtype() == DType::Float16);
    CHECK(Tensor::normal({2}, 0, 1, DType::Float64).dtype() == DType::Float64);
  }
  SECTION("randperm is a permutation") {
    for (int n : {1, 7, 100}) {
      auto p = Tensor::randperm(n).to_vector<int>();
      std::vector<int> s = p;
      std::sort(s.begin(), s.end());
      std::vector<int> want(static_cast<size_t>(n));
      std::iota(want.begin(), want.end(), 0);
      CHECK(s == want);
      if (n == 100) CHECK(p != want);
    }
    CHECK(Tensor::randperm(5, DType::Int64).dtype() == DType::Int64);
    CHECK(Tensor::randperm(0).numel() == 0);
  }
  SECTION("multinomial: frequencies with replacement, distinct draws without") {
    Tensor w = Tensor({1.0, 0.0, 3.0, 6.0});  // unnormalised
    Tensor s = w.multinomial(5000, true);
    CHECK(s.shape() == Shape{5000});
    CHECK(s.dtype() == DType::Int64);
    std::vector<int> cnt(4);
    for (int v : s.to_vector<int>()) cnt[size_t(v)]++;
    CHECK(cnt[1] == 0);
    CHECK(cnt[0] / 5000.0 == Approx(0.1).margin(0.02));
    CHECK(cnt[2] / 5000.0 == Approx(0.3).margin(0.025));
    CHECK(cnt[3] / 5000.0 == Approx(0.6).margin(0.025));
    // 2-D: one row per distribution
    Tensor w2 = Tensor({{0.0, 1.0, 0.0}, {0.5, 0.0, 0.5}});
    auto s2 = w2.multinomial(100, true);
    CHECK(s2.shape() == Shape{2, 100});
    auto v2 = s2.to_vector<int>();
    for (int i = 0; i < 100; i++) { CHECK(v2[size_t(i)] == 1); CHECK(v2[size_t(100 + i)] != 1); }
    // without replacement: distinct, zero weights only when nothing else is left, first draw ~ w
    std::vector<int> first(4);
    for (int t = 0; t < 300; t++) {
      auto d = w.multinomial(3, false).to_vector<int>();
      CHECK(std::set<int>(d.begin(), d.end()).size() == 3);
      CHECK(std::find(d.begin(), d.end(), 1) == d.end());
      first[size_t(d[0])]++;
    }
    CHECK(first[3] / 300.0 == Approx(0.6).margin(0.1));
    auto all = Tensor({{1.0, 2.0, 0.0}}).multinomial(3, false).to_vector<int>();
    CHECK(all[2] == 2);
    CHECK(w.multinomial().shape() == Shape{1});
  }
  SECTION("dropout: identity unless training, then zeros ~p and scales the rest") {
    Tensor x = Tensor::ones({4000});
    CHECK_FALSE(tinygrad::training());
    CHECK(x.dropout(0.3).uop() == x.uop());
    tinygrad::training() = true;
    auto d = x.dropout(0.25).to_vector<double>();
    tinygrad::training() = false;
    int zeros = 0;
    for (double v : d) { if (v == 0) zeros++; else CHECK(v == Approx(1 / 0.75)); }
    CHECK(zeros / 4000.0 == Approx(0.25).margin(0.03));
    tinygrad::training() = true;
    CHECK(x.dropout(0).uop() == x.uop());
    CHECK(x.dropout(1).sum().item<double>() == 0);
    // gradient flows through the kept elements only
    Tensor p = Tensor(std::vector<double>(50, 2.0));
    Tensor out = p.dropout(0.5);
    auto g = tinygrad::gradient(out.sum(), {p})[0].to_vector<double>();
    auto o = out.to_vector<double>();
    tinygrad::training() = false;
    for (size_t i = 0; i < 50; i++) CHECK(g[i] == (o[i] == 0 ? 0 : 2));
  }
}

// ============================================================================================
// errors: each names the op and the shapes/dtypes; tensors stay usable
// ============================================================================================

TEST_CASE("api errors name the op and the inputs", "[api][errors][cl]") {
  using tinygrad::DTypeError;
  using tinygrad::Error;
  using tinygrad::IndexError;
  using tinygrad::ShapeError;
  Tensor f = Tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor i = Tensor({1, 2, 3});
  Tensor lab = Tensor(std::vector<int32_t>{0, 2});
  CHECK_THAT(thrown<Error>([&] { (void)f.div(f, "round"); }), Contains("tinygrad::div") && Contains("round"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)f.bitwise_not(); }), Contains("bitwise_not") && Contains("float32"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)(~f); }), Contains("bitwise_not"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)f.lshift(1); }), Contains("lshift") && Contains("float32"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)(f >> i); }), Contains("rshift"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)f.bitwise_and(1); }), Contains("bitwise_and"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)Tensor(std::vector<bool>{true}).fmod(Tensor(std::vector<bool>{true})); }),
             Contains("fmod") && Contains("bool"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.mod(Tensor({1.0, 2.0})); }), Contains("tinygrad::mod") && Contains("(2, 3)") && Contains("(2,)"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.pow(Tensor({1.0, 2.0})); }), Contains("pow"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.logaddexp(Tensor({1.0, 2.0})); }), Contains("logaddexp"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.isclose(Tensor({1.0, 2.0})); }), Contains("isclose"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.minimum(Tensor({1.0, 2.0})); }), Contains("minimum"));
  CHECK_THAT(thrown<Error>([&] { (void)f.clip(nullopt, nullopt); }), Contains("clip"));
  // reductions
  CHECK_THAT(thrown<IndexError>([&] { (void)f.var(2); }), Contains("var") && Contains("axis 2"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.argmax(-3); }), Contains("argmax"));
  CHECK_THAT(thrown<IndexError>([&] { (void)Tensor::zeros({2, 0}).argmax(1); }), Contains("argmax") && Contains("(2, 0)"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.cumsum(5); }), Contains("cumsum"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.sort(2); }), Contains("sort"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.topk(5); }), Contains("tinygrad::topk: k=5") && Contains("dim 1 of shape (2, 3)"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.topk(-1, 0); }), Contains("topk"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.logsumexp(4); }), Contains("logsumexp"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.softmax(2); }), Contains("softmax"));
  CHECK_THAT(thrown<IndexError>([&] { (void)f.log_softmax(-3); }), Contains("log_softmax"));
  // losses
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.sparse_categorical_crossentropy(Tensor({0, 1, 2})); }),
             Contains("sparse_categorical_crossentropy") && Contains("(3,)") && Contains("(2, 3)"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)f.sparse_categorical_crossentropy(Tensor({0.0, 1.0})); }),
             Contains("sparse_categorical_crossentropy") && Contains("float"));
  CHECK_THAT(thrown<Error>([&] { (void)f.sparse_categorical_crossentropy(lab, -1, 1.5); }), Contains("label_smoothing"));
  CHECK_THAT(thrown<Error>([&] { (void)f.sparse_categorical_crossentropy(lab, -1, 0, "avg"); }), Contains("reduction") && Contains("avg"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.cross_entropy(Tensor({0, 1, 2})); }), Contains("cross_entropy") && Contains("(3,)"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)f.cross_entropy(Tensor({0.0, 1.0})); }), Contains("cross_entropy"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)Tensor::full({}, 1.0).cross_entropy(lab); }), Contains("cross_entropy"));
  CHECK_THAT(thrown<Error>([&] { (void)f.cross_entropy(lab, nullopt, -100, "max"); }), Contains("cross_entropy") && Contains("reduction"));
  CHECK_THAT(thrown<Error>([&] { (void)f.cross_entropy(lab, nullopt, -100, "mean", -0.1); }), Contains("label_smoothing"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.nll_loss(Tensor({0, 1, 2})); }), Contains("nll_loss") && Contains("(3,)"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.nll_loss(lab, Tensor({1.0, 2.0})); }), Contains("nll_loss") && Contains("weight"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)f.nll_loss(Tensor({0.0, 1.0})); }), Contains("nll_loss"));
  CHECK_THAT(thrown<Error>([&] { (void)f.nll_loss(lab, nullopt, nullopt, "all"); }), Contains("nll_loss"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.binary_crossentropy(Tensor({0.0, 1.0})); }),
             Contains("binary_crossentropy") && Contains("(2, 3)") && Contains("(2,)"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)f.binary_crossentropy_logits(Tensor({0.0, 1.0})); }), Contains("binary_crossentropy_logits"));
  CHECK_THAT(thrown<Error>([&] { (void)f.binary_crossentropy(f, "x"); }), Contains("binary_crossentropy") && Contains("reduction"));
  // creation / random
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::linspace(0, 1, -1); }), Contains("linspace"));
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::meshgrid({i, i}, "ji"); }), Contains("meshgrid") && Contains("ji"));
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::from_blob(nullptr, {2}, DType::Float32); }), Contains("from_blob"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)Tensor::from_blob(nullptr, {-1}, DType::Float32); }), Contains("from_blob"));
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::randint(5, 5, {3}); }), Contains("randint"));
  CHECK_THAT(thrown<DTypeError>([&] { (void)Tensor::randint(0, 5, {3}, DType::Float32); }), Contains("randint") && Contains("float32"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)Tensor::glorot_uniform({}); }), Contains("glorot_uniform"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)Tensor::kaiming_uniform({}); }), Contains("kaiming_uniform"));
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::randperm(-2); }), Contains("randperm"));
  CHECK_THAT(thrown<ShapeError>([&] { (void)Tensor::ones({2, 2, 2}).multinomial(); }), Contains("multinomial") && Contains("(2, 2, 2)"));
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::ones({3}).multinomial(4, false); }), Contains("multinomial") && Contains("without replacement"));
  CHECK_THAT(thrown<Error>([&] { (void)Tensor::ones({3}).multinomial(0, true); }), Contains("multinomial"));
  CHECK_THAT(thrown<Error>([&] { (void)f.dropout(1.5); }), Contains("dropout"));
  // still usable
  CHECK(f.sum().item<float>() == 21);
  CHECK(f.argmax().item<int>() == 5);
}

// erf and the exact GELU keep a relative error of a few ulp at every magnitude (the Abramowitz-Stegun form they
// replace had an absolute bound: erf(1e-8) was 0), and so do their gradients; the reference is long double.
// Measured on x86-64 CPU: float32 erf 2.0 ulp, gradient 3.9; gelu 3.5, gradient 5.1 (of the larger of its terms
// Phi(x) and x phi(x), which cancel near x = -0.75); float64 erf 1.2, gradient 3.3, gelu 3.4, gradient 5.3.
// Results below the normal range (gradients past |x| ~ 9.2 in float32) are checked in steps of the smallest denormal.
TEST_CASE("api: erf and gelu and their gradients within a few ulp from 1e-30 to 30, float32 and float64", "[api][math][erf]") {
  V xs;
  for (int e = -30; e <= 1; e++) for (double m : {1.0, 1.37, 2.5, 4.9, 7.3}) xs.push_back(m * std::pow(10.0, e));
  for (double v = 0.01; v < 30; v *= 1.013) xs.push_back(v);
  for (double v : {0.75, 1.0606601717798212, 3.0, 3.92, 5.9, 10.5, 14.85}) xs.push_back(v);  // branch ends
  size_t n = xs.size();
  for (size_t i = 0; i < n; i++) xs.push_back(-xs[i]);
  for (DType dt : {DType::Float32, DType::Float64}) {
    bool f64 = dt == DType::Float64;
    V in;
    for (double x : xs) in.push_back(f64 ? x : double(float(x)));
    // |got - want| in ulps of max(|want|, scale) in dt (steps of the smallest denormal below the normal range)
    auto ulps = [&](double got, long double want, long double scale) {
      long double aw = std::max(std::fabs(want), scale);
      int lo = f64 ? -1022 : -126, mant = f64 ? 52 : 23;
      long double u = std::ldexp(1.0L, (aw == 0 ? lo : std::max(std::ilogb(aw), lo)) - mant);
      return double(std::fabs((long double)got - want) / u);
    };
    int bound = tinygrad::default_device() == "CPU" ? 4 : 6;  // NOTE: CUDA's exp2: 4.1 ulp measured for float32 gelu on an H200
    for (int gelu = 0; gelu < 2; gelu++) {
      INFO((f64 ? "float64 " : "float32 ") << (gelu ? "gelu" : "erf"));
      Tensor x = Tensor(in, {int64_t(in.size())}).cast(dt).realize().requires_grad_();
      Tensor y = gelu ? x.gelu() : x.erf();
      y.sum().backward();
      V got = y.to_vector<double>(), g = x.grad()->to_vector<double>();
      double worst = 0, worst_g = 0;
      for (size_t i = 0; i < in.size(); i++) {
        const long double pi = 3.14159265358979323846264338L;
        long double v = in[i], s2 = std::sqrt(2.0L), phi = std::exp(-v * v / 2) / std::sqrt(2 * pi);
        long double want = gelu ? 0.5L * v * std::erfc(-v / s2) : std::erf(v);
        long double dwant = gelu ? 0.5L * std::erfc(-v / s2) + v * phi : 2 / std::sqrt(pi) * std::exp(-v * v);
        long double scale = gelu ? 0.5L * std::erfc(-v / s2) + std::fabs(v * phi) : 0;
        double e = ulps(got[i], want, 0), eg = ulps(g[i], dwant, scale);
        INFO("x = " << in[i] << ": got " << got[i] << " (" << e << " ulp), gradient " << g[i] << " (" << eg << " ulp)");
        long double tiny = f64 ? 2.2250738585072014e-308L : 1.17549435e-38L;  // below it: steps of the smallest denormal
        CHECK(e <= (std::fabs(want) < tiny ? 64 : bound));
        CHECK(eg <= (std::fabs(dwant) < tiny ? 64 : 8));
        if (std::fabs(want) >= tiny) worst = std::max(worst, e);
        if (std::fabs(dwant) >= tiny) worst_g = std::max(worst_g, eg);
      }
      UNSCOPED_INFO("max " << worst << " ulp, gradient " << worst_g << " ulp");
    }
  }
  // the values, signed zeros and the specials (torch: erf'(+-inf) = 0, gelu(-inf) = NaN)
  Tensor t = Tensor(V{1e-6, 1e-8, -0.0, 0.0, INFINITY, -INFINITY, NAN}).realize().requires_grad_();
  Tensor e = t.erf();
  e.sum().backward();
  V ev = e.to_vector<double>(), eg = t.grad()->to_vector<double>();
  CHECK(ev[0] == Approx(1.1283791670578999e-06).epsilon(3e-7));
  CHECK(ev[1] == Approx(1.1283791670955126e-08).epsilon(3e-7));
  CHECK((ev[2] == 0 && std::signbit(ev[2])));
  CHECK((ev[3] == 0 && !std::signbit(ev[3])));
  CHECK(ev[4] == 1);
  CHECK(ev[5] == -1);
  CHECK(std::isnan(ev[6]));
  CHECK(eg[2] == Approx(2 / std::sqrt(M_PI)));
  CHECK((eg[4] == 0 && eg[5] == 0 && std::isnan(eg[6])));
  V gv = t.gelu().to_vector<double>();
  CHECK(gv[4] == INFINITY);
  CHECK(std::isnan(gv[5]));
  CHECK(std::isnan(gv[6]));
  // float16 and bfloat16 compute in float32 and round once
  for (DType h : {DType::Float16, DType::BFloat16}) {
    Tensor th = Tensor(V{1e-4, 0.3, -2.5}).cast(h);
    V hv = th.erf().to_vector<double>(), in = th.to_vector<double>();
    for (size_t i = 0; i < 3; i++) CHECK(hv[i] == Approx(std::erf(in[i])).epsilon(h == DType::Float16 ? 1e-3 : 8e-3));
    CHECK(th.erf().dtype() == h);
  }
}
