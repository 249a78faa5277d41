// Every Tensor op against an independent reference: a tiny row-major host array (`Ref`) with its
// own index arithmetic, plain loops, or Eigen. Inputs come in many layouts (permuted, sliced with
// steps, flipped, padded, shrunk, expanded, size-1 and zero-size dims, scalars), so the scheduler's
// view lowering is exercised by every op, not just by the movement tests.
//
// Tolerances (|got - want| <= atol + rtol * |want|; NaN matches NaN, inf matches same-signed inf):
//   exact ops (movement, int math, casts, add/mul/max on floats) ....... 0
//   float32 transcendental / div .............................................. atol 1e-5, rtol 1e-5
//   float32 reductions, matmul, conv (k-term sums of O(1) values) ........ atol 1e-4, rtol 1e-4
#include <catch2/catch.hpp>
#include <Eigen/Dense>
#include <tinygrad.hpp>

#include "ref_index.hpp"

#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

using tinygrad::DType;
using tinygrad::Ellipsis;
using tinygrad::NewAxis;
using tinygrad::Shape;
using tinygrad::Slice;
using tinygrad::Tensor;
using std::nullopt;

namespace {

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (auto x : s) n *= x;
  return n;
}
using ref_index::ravel;
using ref_index::unravel;

// the reference: a row-major host array of doubles with its own (obvious) movement ops
struct Ref {
  Shape shape;
  std::vector<double> v;

  static Ref make(const Shape& s, const std::function<double(const Shape&)>& f) {
    Ref r{s, {}};
    int64_t n = numel_of(s);
    r.v.reserve(size_t(n));
    for (int64_t i = 0; i < n; i++) r.v.push_back(f(unravel(i, s)));
    return r;
  }
  double at(const Shape& idx) const { return v[size_t(ravel(idx, shape))]; }
  Ref reshape(const Shape& s) const { REQUIRE(numel_of(s) == numel_of(shape)); return Ref{s, v}; }
  Ref permute(const std::vector<int64_t>& order) const {
    Shape ns;
    for (auto o : order) ns.push_back(shape[size_t(o)]);
    return make(ns, [&](const Shape& i) {
      Shape src(shape.size());
      for (size_t k = 0; k < order.size(); k++) src[size_t(order[k])] = i[k];
      return at(src);
    });
  }
  Ref flip(const std::vector<int64_t>& axes) const {
    return make(shape, [&](const Shape& i) { Shape s = i; for (auto a : axes) s[size_t(a)] = shape[size_t(a)] - 1 - i[size_t(a)]; return at(s); });
  }
  Ref shrink(const std::vector<std::pair<int64_t, int64_t>>& r) const {
    Shape ns;
    for (auto& [b, e] : r) ns.push_back(e - b);
    return make(ns, [&](const Shape& i) { Shape s = i; for (size_t k = 0; k < r.size(); k++) s[k] += r[k].first; return at(s); });
  }
  Ref pad(const std::vector<std::pair<int64_t, int64_t>>& p, double value = 0) const {
    Shape ns;
    for (size_t k = 0; k < p.size(); k++) ns.push_back(shape[k] + p[k].first + p[k].second);
    return make(ns, [&](const Shape& i) {
      Shape s = i;
      for (size_t k = 0; k < p.size(); k++) { s[k] -= p[k].first; if (s[k] < 0 || s[k] >= shape[k]) return value; }
      return at(s);
    });
  }
  Ref expand(const Shape& ns) const {
    size_t off = ns.size() - shape.size();
    return make(ns, [&](const Shape& i) {
      Shape s(shape.size());
      for (size_t k = 0; k < shape.size(); k++) s[k] = shape[k] == 1 ? 0 : i[k + off];
      return at(s);
    });
  }
  // strided pick: out[i] = in[start[k] + step[k] * i[k]]
  Ref strided(const Shape& ns, const Shape& start, const Shape& step) const {
    return make(ns, [&](const Shape& i) { Shape s(i.size()); for (size_t k = 0; k < i.size(); k++) s[k] = start[k] + step[k] * i[k]; return at(s); });
  }
  Ref map(const std::function<double(double)>& f) const { Ref r{shape, v}; for (auto& x : r.v) x = f(x); return r; }
  // reduce `axes` (sorted, non-negative) with (init, f)
  Ref reduce(const std::vector<int64_t>& axes, bool keepdim, double init, const std::function<double(double, double)>& f) const {
    Shape ks = shape;
    for (auto a : axes) ks[size_t(a)] = 1;
    Ref r = make(ks, [&](const Shape&) { return init; });
    for (int64_t i = 0; i < numel_of(shape); i++) {
      Shape idx = unravel(i, shape);
      for (auto a : axes) idx[size_t(a)] = 0;
      double& acc = r.v[size_t(ravel(idx, ks))];
      acc = f(acc, v[size_t(i)]);
    }
    if (keepdim) return r;
    Shape s;
    for (size_t k = 0; k < shape.size(); k++) if (std::find(axes.begin(), axes.end(), int64_t(k)) == axes.end()) s.push_back(shape[k]);
    return r.reshape(s);
  }
};

using ref_index::bshape;
Ref zip(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Shape s = bshape(a.shape, b.shape);
  Ref x = a.expand(s), y = b.expand(s);
  Ref r{s, x.v};
  for (size_t i = 0; i < r.v.size(); i++) r.v[i] = f(x.v[i], y.v[i]);
  return r;
}

Ref rnd(const Shape& s, double lo, double hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  // float32-representable, so the tensor and the reference start from the same numbers
  return Ref::make(s, [&](const Shape&) { return double(float(d(g))); });
}
Ref rndi(const Shape& s, int lo, int hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  return Ref::make(s, [&](const Shape&) { return double(d(g)); });
}

template <class T>
Tensor tensor_as(const Ref& r) {
  std::vector<T> d;
  for (double x : r.v) d.push_back(T(x));
  return Tensor(d, r.shape);
}
// a realized tensor holding r's values in dtype dt (half types go through float32)
Tensor T(const Ref& r, DType dt = DType::Float32) {
  Tensor t;
  switch (dt) {
    case DType::Float32: t = tensor_as<float>(r); break;
    case DType::Float64: t = tensor_as<double>(r); break;
    case DType::Int32: t = tensor_as<int32_t>(r); break;
    case DType::Int64: t = tensor_as<int64_t>(r); break;
    case DType::Int8: t = tensor_as<int8_t>(r); break;
    case DType::UInt8: t = tensor_as<uint8_t>(r); break;
    case DType::Int16: t = tensor_as<int16_t>(r); break;
    case DType::UInt32: t = tensor_as<uint32_t>(r); break;
    case DType::Bool: t = tensor_as<bool>(r); break;
    default: t = tensor_as<float>(r).cast(dt).realize(); break;
  }
  REQUIRE(t.dtype() == dt);
  REQUIRE(t.shape() == r.shape);
  return t;
}

bool close(double got, double want, double atol, double rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}
// shape, then every element; reports the first mismatch and the total count
void check(const Tensor& t, const Ref& want, double atol = 0, double rtol = 0) {
  INFO("shape got " << tinygrad::to_string(t.shape()) << " want " << tinygrad::to_string(want.shape));
  REQUIRE(t.shape() == want.shape);
  auto got = t.to_vector<double>();
  REQUIRE(got.size() == want.v.size());
  int64_t bad = -1, nbad = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (!close(got[i], want.v[i], atol, rtol)) { nbad++; if (bad < 0) bad = int64_t(i); }
  if (bad >= 0) {
    INFO("first mismatch at flat index " << bad << " (" << tinygrad::to_string(unravel(bad, want.shape)) << "): got " << got[size_t(bad)] << " want "
                                         << want.v[size_t(bad)] << "; " << nbad << " of " << got.size() << " differ (atol " << atol <<
                                             ", rtol " << rtol << ")");
    CHECK(bad == -1);
  } else {
    CHECK(bad == -1);
  }
}

// ---- input layouts: each builds a view of a fresh buffer and the same view of its reference ----
struct Layout {
  std::string name;
  Shape base;
  std::function<Tensor(const Tensor&)> tv;
  std::function<Ref(const Ref&)> rv;
};
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> ls = {
      {"contiguous (3,4,5)", {3, 4, 5}, [](const Tensor& t) { return t; }, [](const Ref& r) { return r; }},
      {"permuted (3,4,5)->(5,3,4)", {3, 4, 5}, [](const Tensor& t) { return t.permute({2, 0, 1}); },
       [](const Ref& r) { return r.permute({2, 0, 1}); }},
      {"transposed (4,7).T", {4, 7}, [](const Tensor& t) { return t.T(); }, [](const Ref& r) { return r.permute({1, 0}); }},
      {"sliced with steps (6,7,5)[1:6:2, ::3]", {6, 7, 5},
       [](const Tensor& t) { return t.slice({Slice{1, 6, 2}, Slice{nullopt, nullopt, 3}}); },
       [](const Ref& r) { return r.strided({3, 3, 5}, {1, 0, 0}, {2, 3, 1}); }},
      {"negative steps (5,6)[::-2, 4:0:-1]", {5, 6},
       [](const Tensor& t) { return t.slice({Slice{nullopt, nullopt, -2}, Slice{4, 0, -1}}); },
       [](const Ref& r) { return r.strided({3, 4}, {4, 4}, {-2, -1}); }},
      {"flipped (3,4,5) axes 0,2", {3, 4, 5}, [](const Tensor& t) { return t.flip({0, 2}); }, [](const Ref& r) { return r.flip({0, 2}); }},
      {"padded (3,4) with 1.5", {3, 4}, [](const Tensor& t) { return t.pad({{1, 2}, {0, 3}}, 1.5); },
       [](const Ref& r) { return r.pad({{1, 2}, {0, 3}}, 1.5); }},
      {"shrunk (5,6)", {5, 6}, [](const Tensor& t) { return t.shrink({{1, 4}, {2, 6}}); }, [](const Ref& r) { return r.shrink({{1, 4}, {2, 6}}); }},
      {"expanded (3,1,5)->(2,3,4,5)", {3, 1, 5}, [](const Tensor& t) { return t.expand({2, 3, 4, 5}); },
       [](const Ref& r) { return r.expand({2, 3, 4, 5}); }},
      {"size-1 dims (1,5,1)", {1, 5, 1}, [](const Tensor& t) { return t; }, [](const Ref& r) { return r; }},
      {"permute+reshape (4,6)->(6,4)->(3,8)", {4, 6}, [](const Tensor& t) { return t.T().reshape({3, 8}); },
       [](const Ref& r) { return r.permute({1, 0}).reshape({3, 8}); }},
      {"zero-size (0,4)", {0, 4}, [](const Tensor& t) { return t; }, [](const Ref& r) { return r; }},
      {"zero-size (3,0,2)", {3, 0, 2}, [](const Tensor& t) { return t; }, [](const Ref& r) { return r; }},
      {"scalar ()", {}, [](const Tensor& t) { return t; }, [](const Ref& r) { return r; }},
  };
  return ls;
}

// whether an op test runs layout i: all of them, but on OpenCL (DEV=CL in CI: PoCL builds a kernel in about 0.4 s, 5x
// the CPU's) the contiguous one and a third of the others, rotated over the ops by name, so there each layout still
// meets a third of the ops, and each op several kinds of index
bool runs_layout(size_t i, const std::string& op) {
  return i == 0 || tinygrad::default_device().rfind("CL", 0) != 0 || (i + std::hash<std::string>{}(op)) % 3 == 0;
}

// a unary op on every layout
void check_unary(const char* name, const std::function<Tensor(const Tensor&)>& op, const std::function<double(double)>& ref,
                 double lo, double hi, double atol, double rtol) {
  uint32_t seed = 1;
  for (size_t i = 0; i < layouts().size(); i++) {
    auto& l = layouts()[i];
    if (runs_layout(i, name)) DYNAMIC_SECTION(name << " on " << l.name) {
      Ref base = rnd(l.base, lo, hi, seed);
      Tensor x = l.tv(T(base));
      Ref rx = l.rv(base);
      Tensor y = op(x);
      CHECK(y.dtype() == DType::Float32);
      check(y, rx.map(ref), atol, rtol);
    }
    seed++;
  }
}

// a binary op on every layout (other operand contiguous, same shape), then on broadcasting shape pairs
void check_binary(const char* name, const std::function<Tensor(const Tensor&, const Tensor&)>& op,
                  const std::function<double(double, double)>& ref, double lo, double hi, double atol, double rtol) {
  uint32_t seed = 100;
  for (size_t i = 0; i < layouts().size(); i++) {
    auto& l = layouts()[i];
    if (runs_layout(i, name)) DYNAMIC_SECTION(name << " on " << l.name) {
      Ref base = rnd(l.base, lo, hi, seed);
      Ref rx = l.rv(base), ry = rnd(rx.shape, lo, hi, seed + 1000);
      check(op(l.tv(T(base)), T(ry)), zip(rx, ry, ref), atol, rtol);
      check(op(T(ry), l.tv(T(base))), zip(ry, rx, ref), atol, rtol);  // the view on the right
    }
    seed++;
  }
  const std::vector<std::pair<Shape, Shape>> pairs = {{{3, 4}, {4}},    {{3, 1}, {1, 4}}, {{2, 1, 5}, {3, 1}}, {{}, {3}},
                                                      {{0, 3}, {1, 3}}, {{4}, {}},        {{2, 3, 1}, {2, 1, 4}}};
  for (auto& [sa, sb] : pairs) {
    DYNAMIC_SECTION(name << " broadcast " << tinygrad::to_string(sa) << " with " << tinygrad::to_string(sb)) {
      Ref a = rnd(sa, lo, hi, seed++), b = rnd(sb, lo, hi, seed++);
      check(op(T(a), T(b)), zip(a, b, ref), atol, rtol);
    }
  }
}

const double kExact = 0, kFA = 1e-5, kFR = 1e-5, kSumA = 1e-4, kSumR = 1e-4;

}  // namespace

// ============================================================================================
// creation
// ============================================================================================

TEST_CASE("creation: from std::vector keeps dtype, shape and values", "[ops][creation]") {
  SECTION("float32 with a shape") {
    Tensor t(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(t.dtype() == DType::Float32);
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.ndim() == 2);
    CHECK(t.numel() == 6);
    CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  }
  SECTION("no shape: 1-D, or a scalar for one element") {
    CHECK(Tensor(std::vector<float>{1, 2, 3}).shape() == Shape{3});
    Tensor s(std::vector<float>{7.5f});
    CHECK(s.shape() == Shape{});
    CHECK(s.item<float>() == 7.5f);
    CHECK(Tensor(std::vector<float>{7.5f}, {1}).shape() == Shape{1});
  }
  SECTION("every element type maps to its dtype and round-trips") {
    CHECK(Tensor(std::vector<double>{1.25, -2}).dtype() == DType::Float64);
    CHECK(Tensor(std::vector<double>{1.25, -2}).to_vector<double>() == std::vector<double>{1.25, -2});
    CHECK(Tensor(std::vector<int32_t>{1, -2}).dtype() == DType::Int32);
    CHECK(Tensor(std::vector<int64_t>{int64_t(1) << 40, -2}).to_vector<int64_t>() == std::vector<int64_t>{int64_t(1) << 40, -2});
    CHECK(Tensor(std::vector<int64_t>{1}).dtype() == DType::Int64);
    CHECK(Tensor(std::vector<int8_t>{-128, 127}).dtype() == DType::Int8);
    CHECK(Tensor(std::vector<int8_t>{-128, 127}).to_vector<int8_t>() == std::vector<int8_t>{-128, 127});
    CHECK(Tensor(std::vector<uint8_t>{0, 255}).dtype() == DType::UInt8);
    CHECK(Tensor(std::vector<uint8_t>{0, 255}).to_vector<int>() == std::vector<int>{0, 255});
    CHECK(Tensor(std::vector<int16_t>{-300}).dtype() == DType::Int16);
    CHECK(Tensor(std::vector<uint16_t>{65535}).dtype() == DType::UInt16);
    CHECK(Tensor(std::vector<uint32_t>{4000000000u}).to_vector<uint32_t>() == std::vector<uint32_t>{4000000000u});
    CHECK(Tensor(std::vector<uint64_t>{1}).dtype() == DType::UInt64);
    Tensor b(std::vector<bool>{true, false, true});
    CHECK(b.dtype() == DType::Bool);
    CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, true});
    CHECK(b.to_vector<int>() == std::vector<int>{1, 0, 1});
  }
  SECTION("zero elements") {
    Tensor t(std::vector<float>{}, {0, 3});
    CHECK(t.shape() == Shape{0, 3});
    CHECK(t.to_vector<float>().empty());
  }
  SECTION("a data/shape size mismatch is a ShapeError") {
    CHECK_THROWS_AS(Tensor(std::vector<float>{1, 2, 3}, {2, 2}), tinygrad::ShapeError);
    CHECK_THROWS_AS(Tensor(std::vector<float>{1, 2}, {-1, -2}), tinygrad::ShapeError);
  }
}

TEST_CASE("creation: initializer lists, from_data and the default tensor", "[ops][creation]") {
  Tensor a{1, 2, 3};
  CHECK(a.dtype() == DType::Int32);
  CHECK(a.shape() == Shape{3});
  CHECK(a.to_vector<int>() == std::vector<int>{1, 2, 3});
  Tensor f{1.5f, -2.f};
  CHECK(f.dtype() == DType::Float32);
  CHECK(f.to_vector<float>() == std::vector<float>{1.5f, -2.f});
  Tensor m{{1, 2, 3}, {4, 5, 6}};
  CHECK(m.shape() == Shape{2, 3});
  CHECK(m.to_vector<int>() == std::vector<int>{1, 2, 3, 4, 5, 6});
  Tensor md{{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}};
  CHECK(md.dtype() == DType::Float64);
  CHECK(md.shape() == Shape{3, 2});
  CHECK_THROWS_AS((Tensor{{1, 2, 3}, {4, 5}}), tinygrad::ShapeError);

  const float raw[] = {1, 2, 3, 4, 5, 6, 7, 8};
  Tensor d = Tensor::from_data(raw, {2, 2, 2});
  CHECK(d.shape() == Shape{2, 2, 2});
  CHECK(d.dtype() == DType::Float32);
  CHECK(d.to_vector<float>() == std::vector<float>(raw, raw + 8));
  const int16_t raw16[] = {-1, 2, -3};
  CHECK(Tensor::from_data(raw16, {3}).to_vector<int>() == std::vector<int>{-1, 2, -3});

  Tensor z;
  CHECK(z.shape() == Shape{});
  CHECK(z.item<float>() == 0.f);
}

TEST_CASE("creation: zeros, ones, full, empty", "[ops][creation]") {
  auto all = [](const Tensor& t, double v) { for (double x : t.to_vector<double>()) if (x != v) return false; return true; };
  CHECK(Tensor::zeros({2, 3}).shape() == Shape{2, 3});
  CHECK(Tensor::zeros({2, 3}).dtype() == DType::Float32);
  CHECK(all(Tensor::zeros({2, 3}), 0));
  CHECK(Tensor::zeros({4}, DType::Int32).dtype() == DType::Int32);
  CHECK(all(Tensor::zeros({4}, DType::Int32), 0));
  CHECK(all(Tensor::ones({3, 1, 2}), 1));
  CHECK(Tensor::ones({3, 1, 2}).numel() == 6);
  CHECK(all(Tensor::ones({5}, DType::Int8), 1));
  CHECK(Tensor::ones({5}, DType::Int8).dtype() == DType::Int8);
  CHECK(all(Tensor::full({2, 2}, 3.5), 3.5));
  CHECK(all(Tensor::full({3}, -2, DType::Int8), -2));
  CHECK(Tensor::full({3}, -2, DType::Int8).dtype() == DType::Int8);
  CHECK(Tensor::full({2}, 7, DType::Bool).to_vector<bool>() == std::vector<bool>{true, true});
  CHECK(Tensor::full({}, 7).shape() == Shape{});
  CHECK(Tensor::full({}, 7).item<float>() == 7.f);
  CHECK(Tensor::full({2, 0}, 1).to_vector<float>().empty());
  CHECK(Tensor::full({2}, INFINITY).to_vector<float>() == std::vector<float>{INFINITY, INFINITY});
  CHECK(std::isnan(Tensor::full({}, NAN).item<float>()));
  CHECK(Tensor::full({2}, 0.1, DType::Float64).to_vector<double>() == std::vector<double>{0.1, 0.1});
  CHECK_THROWS_AS(Tensor::zeros({2, -1}), tinygrad::ShapeError);

  // empty: only shape and dtype are defined
  Tensor e = Tensor::empty({3, 4}, DType::Int16);
  CHECK(e.shape() == Shape{3, 4});
  CHECK(e.dtype() == DType::Int16);
  CHECK(e.to_vector<int16_t>().size() == 12);
  CHECK(Tensor::empty({0, 5}).to_vector<float>().empty());
  CHECK(Tensor::empty({2}).dtype() == DType::Float32);
}

TEST_CASE("creation: arange", "[ops][creation]") {
  auto ref = [](double start, double stop, double step) {
    std::vector<double> r;
    int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
    for (int64_t i = 0; i < n; i++) r.push_back(start + double(i) * step);
    return r;
  };
  struct C { double start, stop, step; DType dt; };
  for (auto c : std::vector<C>{{0, 5, 1, DType::Int32},      {2, 7, 1, DType::Int32},       {0, 10, 3, DType::Int32},     {10, 0, -3, DType::Int32},
                               {-4, 4, 2, DType::Int32},     {3, 3, 1, DType::Int32},       {5, 2, 1, DType::Int32},
                               {0, 1, 0.25, DType::Float32},
                               {5, 0, -1.5, DType::Float32}, {-1, 1, 0.3, DType::Float32}, {0.5, 3, 1, DType::Float32},
                               {0, -1, 0.1, DType::Float32}}) {
    DYNAMIC_SECTION("arange(" << c.start << ", " << c.stop << ", " << c.step << ")") {
      Tensor t = Tensor::arange(c.start, c.stop, c.step);
      CHECK(t.dtype() == c.dt);
      auto want = ref(c.start, c.stop, c.step);
      check(t, Ref{{int64_t(want.size())}, want}, 1e-6, 1e-6);
    }
  }
  CHECK(Tensor::arange(4).to_vector<int>() == std::vector<int>{0, 1, 2, 3});
  CHECK(Tensor::arange(4).dtype() == DType::Int32);
  CHECK(Tensor::arange(0, 3, 1, DType::Float32).dtype() == DType::Float32);
  CHECK(Tensor::arange(0, 3, 1, DType::Float32).to_vector<float>() == std::vector<float>{0, 1, 2});
  CHECK(Tensor::arange(0, 3, 1, DType::Int8).to_vector<int8_t>() == std::vector<int8_t>{0, 1, 2});
  CHECK_THROWS_AS(Tensor::arange(0, 3, 0), tinygrad::Error);
}

TEST_CASE("creation: eye", "[ops][creation]") {
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 3}, {2, 4}, {5, 2}, {0, 0}}) {
    DYNAMIC_SECTION("eye(" << n << ", " << m << ")") {
      check(Tensor::eye(n, m), Ref::make({n, m}, [](const Shape& i) { return i[0] == i[1] ? 1.0 : 0.0; }));
    }
  }
  CHECK(Tensor::eye(3).shape() == Shape{3, 3});
  CHECK(Tensor::eye(3).dtype() == DType::Float32);
  CHECK(Tensor::eye(2, nullopt, DType::Int32).to_vector<int>() == std::vector<int>{1, 0, 0, 1});
}

TEST_CASE("creation: rand is uniform on 0 to 1 (1 excluded) and deterministic per seed", "[ops][random]") {
  Tensor::manual_seed(7);
  Tensor a = Tensor::rand({100, 100});
  CHECK(a.shape() == Shape{100, 100});
  CHECK(a.dtype() == DType::Float32);
  auto va = a.to_vector<float>();
  double sum = 0, sq = 0;
  int hist[10] = {};
  int outside = 0;
  for (float x : va) {
    outside += !(x >= 0.f && x < 1.f);
    sum += x;
    sq += double(x) * x;
    hist[int(x * 10)]++;
  }
  CHECK(outside == 0);
  double mean = sum / 1e4, var = sq / 1e4 - mean * mean;
  CHECK(mean == Approx(0.5).margin(0.02));      // sigma of the mean: 0.0029
  CHECK(var == Approx(1.0 / 12).margin(0.005));  // uniform variance
  for (int h : hist) CHECK(std::abs(h - 1000) < 150);  // sigma 30 per bin

  // same seed -> same numbers; later calls continue the stream; another seed differs
  Tensor::manual_seed(7);
  CHECK(Tensor::rand({100, 100}).to_vector<float>() == va);
  auto next = Tensor::rand({100, 100}).to_vector<float>();
  Tensor::manual_seed(8);
  auto other = Tensor::rand({100, 100}).to_vector<float>();
  int same_next = 0, same_other = 0;
  for (size_t i = 0; i < va.size(); i++) { same_next += va[i] == next[i]; same_other += va[i] == other[i]; }
  CHECK(same_next < 10);
  CHECK(same_other < 10);
  // a lazy rand tensor is fixed once built: realizing twice gives the same values
  Tensor::manual_seed(9);
  Tensor r = Tensor::rand({16});
  CHECK(r.to_vector<float>() == r.to_vector<float>());
  CHECK(Tensor::rand({3}, DType::Float16).dtype() == DType::Float16);
  CHECK(Tensor::rand({0, 3}).to_vector<float>().empty());
}

TEST_CASE("creation: randn has mean 0 and std 1", "[ops][random]") {
  Tensor::manual_seed(1234);
  auto v = Tensor::randn({100000}).to_vector<float>();
  REQUIRE(v.size() == 100000);
  double sum = 0, sq = 0;
  int within1 = 0, nonfinite = 0;
  for (float x : v) { nonfinite += !std::isfinite(x); sum += x; sq += double(x) * x; within1 += std::abs(x) < 1; }
  CHECK(nonfinite == 0);
  double mean = sum / 1e5, sd = std::sqrt(sq / 1e5 - mean * mean);
  CHECK(mean == Approx(0).margin(0.02));  // sigma of the mean: 0.0032
  CHECK(sd == Approx(1).margin(0.02));
  CHECK(within1 / 1e5 == Approx(0.6827).margin(0.01));
  Tensor::manual_seed(1234);
  CHECK(Tensor::randn({100000}).to_vector<float>() == v);
  CHECK(Tensor::randn({2, 3, 4}).shape() == Shape{2, 3, 4});
}

// ============================================================================================
// elementwise
// ============================================================================================

TEST_CASE("unary: exp log sqrt sin cos neg", "[ops][unary]") {
  check_unary("exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -5, 5, kFA, kFR);
  check_unary("log", [](const Tensor& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.05, 20, kFA, kFR);
  check_unary("sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 20, kFA, kFR);
  check_unary("sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -10, 10, kFA, kFR);
  check_unary("cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -10, 10, kFA, kFR);
  check_unary("neg", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, -10, 10, kExact, kExact);
}

TEST_CASE("unary: relu sigmoid tanh and friends", "[ops][unary]") {
  check_unary("relu", [](const Tensor& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); }, -5, 5, kExact, kExact);
  check_unary("sigmoid", [](const Tensor& x) { return x.sigmoid(); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -12, 12, kFA, kFR);
  check_unary("tanh", [](const Tensor& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -6, 6, kFA, kFR);
  check_unary("exp2", [](const Tensor& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -5, 5, kFA, kFR);
  check_unary("log2", [](const Tensor& x) { return x.log2(); }, [](double x) { return std::log2(x); }, 0.05, 20, kFA, kFR);
  check_unary("reciprocal", [](const Tensor& x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, 0.1, 10, kFA, kFR);
  check_unary("rsqrt", [](const Tensor& x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 10, kFA, kFR);
  check_unary("abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::abs(x); }, -5, 5, kExact, kExact);
  check_unary("square", [](const Tensor& x) { return x.square(); }, [](double x) { return double(float(x * x)); }, -5, 5, kExact, kExact);
  check_unary("trunc", [](const Tensor& x) { return x.trunc(); }, [](double x) { return std::trunc(x); }, -5, 5, kExact, kExact);
  check_unary("clip", [](const Tensor& x) { return x.clip(-1, 2); }, [](double x) { return std::clamp(x, -1.0, 2.0); }, -5, 5, kExact, kExact);
  check_unary("tan", [](const Tensor& x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.2, 1.2, 1e-4, 1e-4);
}

// |got - want| in ulps of float at want (the smallest denormal's below the normal range); a float infinity must be
// float(want) itself and a NaN want a NaN
double float_ulps(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(got) || std::isinf(want)) return float(want) == got ? 0 : INFINITY;
  return std::fabs(double(got) - want) / std::ldexp(1.0, std::max(want == 0 ? -126 : std::ilogb(want), -126) - 23);
}

// the C renderer's exp2 and log2 are inline polynomials (vectorizable, unlike libm's calls): within 2 ulp of float64
// libm on a dense sweep of exp2's range (its denormal results, overflow) and on floats of every exponent and both
// signs, with +-0, +-inf and NaN, in a vectorized kernel (a size that is a multiple of 64) and a scalar one (a prime)
TEST_CASE("unary: exp2 and log2 of float32 within 2 ulp of libm in vector and scalar C kernels", "[ops][unary]") {
  if (tinygrad::default_device() != "CPU") return;  // the GPUs' native exp2 and log2 are their own
  std::vector<float> xs = {0.f, -0.f, INFINITY, -INFINITY, NAN, 128.f, std::nextafter(128.f, 0.f), 127.5f, -149.f, -149.5f, -150.f, -126.f,
                           1.f, -1.f, FLT_MIN, std::numeric_limits<float>::denorm_min(), FLT_MAX, -FLT_MAX};
  for (double x = -160; x <= 135; x += 1.0 / 512) xs.push_back(float(x));
  for (uint64_t b = 0; b < (1ull << 32); b += 4093) xs.push_back(std::bit_cast<float>(uint32_t(b)));
  auto prime = [](size_t n) { for (size_t d = 2; d * d <= n; d++) if (n % d == 0) return false; return true; };
  size_t vec_n = (xs.size() + 63) / 64 * 64, scalar_n = xs.size();
  while (!prime(scalar_n)) scalar_n++;
  tinygrad::detail::CRenderer ren(2);
  for (size_t n : {vec_n, scalar_n}) {
    std::vector<float> in = xs;
    in.resize(n, 1.f);
    Tensor x = Tensor(in).realize();
    for (bool lg : {false, true}) {
      INFO((lg ? "log2" : "exp2") << " of " << n << " floats");
      Tensor y = lg ? x.log2() : x.exp2();
      std::unordered_map<const tinygrad::UOp*, int> slots;
      for (auto& u : tinygrad::detail::toposort(y.uop())) if (tinygrad::detail::is_leaf(u.get())) slots.emplace(u.get(), int(slots.size()));
      auto ks = tinygrad::detail::create_schedule({y.uop()}, slots, int(slots.size())).kernels;
      REQUIRE(ks.size() == 1);
      std::string src = tinygrad::detail::to_program(ks[0].ast, ren).src, fn = lg ? "tg_log2f" : "tg_exp2f";
      CHECK(src.find(fn + (n == vec_n ? "8(" : "(")) != std::string::npos);
      std::vector<float> got = y.to_vector<float>();
      double worst = 0;
      float worst_x = 0;
      for (size_t i = 0; i < n; i++)
        if (double e = float_ulps(got[i], lg ? std::log2(double(in[i])) : std::exp2(double(in[i]))); !(e <= worst)) worst = e, worst_x = in[i];
      INFO("worst at x = " << worst_x);
      CHECK(worst <= 2);
    }
  }
}

TEST_CASE("unary: special values", "[ops][unary]") {
  Tensor x(std::vector<float>{0.f, -0.f, INFINITY, -INFINITY, 1.f});
  auto e = x.exp().to_vector<float>();
  CHECK(e[0] == 1.f);
  CHECK(e[2] == INFINITY);
  CHECK(e[3] == 0.f);
  auto l = Tensor(std::vector<float>{0.f, 1.f, -1.f, INFINITY}).log().to_vector<float>();
  CHECK(l[0] == -INFINITY);
  CHECK(l[1] == 0.f);
  CHECK(std::isnan(l[2]));
  CHECK(l[3] == INFINITY);
  auto s = Tensor(std::vector<float>{-1.f, 4.f}).sqrt().to_vector<float>();
  CHECK(std::isnan(s[0]));
  CHECK(s[1] == 2.f);
  auto sg = Tensor(std::vector<float>{-200.f, 200.f}).sigmoid().to_vector<float>();
  CHECK(sg[0] == Approx(0).margin(1e-30));
  CHECK(sg[1] == 1.f);
  auto th = Tensor(std::vector<float>{-50.f, 50.f}).tanh().to_vector<float>();
  CHECK(th[0] == -1.f);
  CHECK(th[1] == 1.f);
  // integer inputs of float-only ops become float32
  Tensor i(std::vector<int>{1, 4, 9});
  CHECK(i.sqrt().dtype() == DType::Float32);
  CHECK(i.sqrt().to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(i.exp().dtype() == DType::Float32);
  CHECK(i.relu().dtype() == DType::Int32);
  CHECK(Tensor(std::vector<int>{-3, 0, 5}).relu().to_vector<int>() == std::vector<int>{0, 0, 5});
  CHECK(Tensor(std::vector<int>{-3, 0, 5}).abs().to_vector<int>() == std::vector<int>{3, 0, 5});
  CHECK((-Tensor(std::vector<int>{-3, 0, 5})).to_vector<int>() == std::vector<int>{3, 0, -5});
}

TEST_CASE("binary: add sub mul div", "[ops][binary]") {
  check_binary("add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return double(float(a + b)); },
               -10, 10, kExact, kExact);
  check_binary("sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return double(float(a - b)); },
               -10, 10, kExact, kExact);
  check_binary("mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return double(float(a * b)); },
               -10, 10, kExact, kExact);
  check_binary("div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, 0.5, 10, kFA, kFR);
}

TEST_CASE("binary: maximum minimum", "[ops][binary]") {
  check_binary("maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }, [](double a, double b) { return std::max(a, b); },
               -10, 10, kExact, kExact);
  check_binary("minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }, [](double a, double b) { return std::min(a, b); },
               -10, 10, kExact, kExact);
}

TEST_CASE("binary: with C++ scalars on either side", "[ops][binary]") {
  Ref a = rnd({3, 4}, 0.5, 4, 11);
  Tensor t = T(a);
  check(t + 2.5, a.map([](double x) { return double(float(x + 2.5)); }));
  check(2.5 + t, a.map([](double x) { return double(float(x + 2.5)); }));
  check(t - 1, a.map([](double x) { return double(float(x - 1)); }));
  check(1 - t, a.map([](double x) { return double(float(1 - x)); }));
  check(t * 3, a.map([](double x) { return double(float(x * 3)); }));
  check(3 * t, a.map([](double x) { return double(float(x * 3)); }));
  check(t / 4, a.map([](double x) { return x / 4; }), kFA, kFR);
  check(4 / t, a.map([](double x) { return 4 / x; }), kFA, kFR);
  check(t.maximum(2), a.map([](double x) { return std::max(x, 2.0); }));
  check(t.minimum(2), a.map([](double x) { return std::min(x, 2.0); }));
  Tensor u = t;
  u += t;
  u *= t;
  u -= t;
  u /= t;
  check(u, a.map([](double x) { return double(float(float(float(float(x + x) * float(x)) - float(x)) / float(x))); }), kFA, kFR);
}

TEST_CASE("binary: integer math, wraparound and idiv", "[ops][binary][int]") {
  SECTION("int8 + 1 stays int8 and wraps") {
    Tensor a(std::vector<int8_t>{127, -128, 5, -1});
    Tensor b = a + 1;
    CHECK(b.dtype() == DType::Int8);
    CHECK(b.to_vector<int8_t>() == std::vector<int8_t>{-128, -127, 6, 0});
    CHECK((a - 1).to_vector<int8_t>() == std::vector<int8_t>{126, 127, 4, -2});
    CHECK((a * 2).to_vector<int8_t>() == std::vector<int8_t>{-2, 0, 10, -2});
  }
  SECTION("uint8 wraps modulo 256") {
    Tensor a(std::vector<uint8_t>{0, 200, 255});
    CHECK((a + 100).to_vector<uint8_t>() == std::vector<uint8_t>{100, 44, 99});
    CHECK((a - 1).to_vector<uint8_t>() == std::vector<uint8_t>{255, 199, 254});
    CHECK((a + 100).dtype() == DType::UInt8);
  }
  SECTION("int32 add/sub/mul/max on views against a loop") {
    Ref a = rndi({4, 5}, -1000, 1000, 3), b = rndi({5, 4}, -1000, 1000, 4);
    Ref bt = b.permute({1, 0});
    Tensor ta = T(a, DType::Int32), tb = T(b, DType::Int32).T();
    check(ta + tb, zip(a, bt, std::plus<double>()));
    check(ta - tb, zip(a, bt, std::minus<double>()));
    check(ta * tb, zip(a, bt, std::multiplies<double>()));
    check(ta.maximum(tb), zip(a, bt, [](double x, double y) { return std::max(x, y); }));
    check(ta.minimum(tb), zip(a, bt, [](double x, double y) { return std::min(x, y); }));
    CHECK((ta + tb).dtype() == DType::Int32);
  }
  SECTION("idiv truncates toward zero, like C") {
    Tensor a(std::vector<int>{7, -7, 7, -7, 0, 9, 100, -1});
    Tensor b(std::vector<int>{2, 2, -2, -2, 5, 3, 7, 3});
    std::vector<int> want;
    auto va = a.to_vector<int>(), vb = b.to_vector<int>();
    for (size_t i = 0; i < va.size(); i++) want.push_back(va[i] / vb[i]);
    CHECK(a.idiv(b).to_vector<int>() == want);
    CHECK(a.idiv(b).dtype() == DType::Int32);
    Ref x = rndi({3, 6}, -500, 500, 5), y = rndi({6}, 1, 20, 6);
    check(T(x, DType::Int32).idiv(T(y, DType::Int32)), zip(x, y, [](double p, double q) { return double(int(p) / int(q)); }));
    CHECK(Tensor(std::vector<int8_t>{-100, 100}).idiv(Tensor(std::vector<int8_t>{3, 3})).to_vector<int8_t>() == std::vector<int8_t>{-33, 33});
    CHECK(Tensor(std::vector<uint8_t>{250, 7}).idiv(Tensor(std::vector<uint8_t>{7, 2})).to_vector<uint8_t>() == std::vector<uint8_t>{35, 3});
  }
  SECTION("/ on ints is true division in float32") {
    Tensor q = Tensor(std::vector<int>{7, -7}) / Tensor(std::vector<int>{2, 2});
    CHECK(q.dtype() == DType::Float32);
    CHECK(q.to_vector<float>() == std::vector<float>{3.5f, -3.5f});
  }
  SECTION("bitwise and, or, xor, shr") {
    Tensor a(std::vector<int>{0b1100, 0b1010, -1}), b(std::vector<int>{0b1010, 0b0110, 0x0f0f});
    CHECK((a & b).to_vector<int>() == std::vector<int>{0b1000, 0b0010, 0x0f0f});
    CHECK((a | b).to_vector<int>() == std::vector<int>{0b1110, 0b1110, -1});
    CHECK((a ^ b).to_vector<int>() == std::vector<int>{0b0110, 0b1100, ~0x0f0f});
    CHECK(Tensor(std::vector<uint32_t>{0xF0000000u, 256}).shr(4).to_vector<uint32_t>() == std::vector<uint32_t>{0x0F000000u, 16});
    Tensor p(std::vector<bool>{true, true, false}), q(std::vector<bool>{true, false, false});
    CHECK((p & q).to_vector<bool>() == std::vector<bool>{true, false, false});
    CHECK((p | q).to_vector<bool>() == std::vector<bool>{true, true, false});
    CHECK((p ^ q).to_vector<bool>() == std::vector<bool>{false, true, false});
    CHECK(p.logical_not().to_vector<bool>() == std::vector<bool>{false, false, true});
    CHECK((-p).to_vector<bool>() == std::vector<bool>{false, false, true});
  }
}

TEST_CASE("comparisons on integer tensors", "[ops][compare]") {
  Ref a = rndi({4, 6}, -3, 3, 21), b = rndi({6}, -3, 3, 22);
  Tensor ta = T(a, DType::Int32), tb = T(b, DType::Int32);
  auto cmp = [&](const Tensor& t, const std::function<double(double, double)>& f) {
    CHECK(t.dtype() == DType::Bool);
    check(t, zip(a, b, f));
  };
  cmp(ta < tb, [](double x, double y) { return double(x < y); });
  cmp(ta > tb, [](double x, double y) { return double(x > y); });
  cmp(ta <= tb, [](double x, double y) { return double(x <= y); });
  cmp(ta >= tb, [](double x, double y) { return double(x >= y); });
  cmp(ta == tb, [](double x, double y) { return double(x == y); });
  cmp(ta != tb, [](double x, double y) { return double(x != y); });
  // against scalars, and on a flipped view
  check(ta < 0, a.map([](double x) { return double(x < 0); }));
  check(ta == 1, a.map([](double x) { return double(x == 1); }));
  check(ta.flip(1) >= 2, a.flip({1}).map([](double x) { return double(x >= 2); }));
  Tensor u(std::vector<uint8_t>{0, 1, 200}), v(std::vector<uint8_t>{1, 1, 100});
  CHECK((u < v).to_vector<bool>() == std::vector<bool>{true, false, false});
  CHECK((u != v).to_vector<bool>() == std::vector<bool>{true, false, true});
}

TEST_CASE("comparisons on float tensors", "[ops][compare]") {
  // (regression: compute_vrange once gave float comparisons an integer value range and folded them to constants)
  Ref a = rnd({4, 6}, -3, 3, 31), b = rnd({6}, -3, 3, 32);
  a.v[0] = b.v[0];  // an equal pair
  Tensor ta = T(a), tb = T(b);
  check(ta < tb, zip(a, b, [](double x, double y) { return double(x < y); }));
  check(ta > tb, zip(a, b, [](double x, double y) { return double(x > y); }));
  check(ta <= tb, zip(a, b, [](double x, double y) { return double(x <= y); }));
  check(ta >= tb, zip(a, b, [](double x, double y) { return double(x >= y); }));
  check(ta == tb, zip(a, b, [](double x, double y) { return double(x == y); }));
  check(ta != tb, zip(a, b, [](double x, double y) { return double(x != y); }));
  check(ta < 0.5, a.map([](double x) { return double(x < 0.5); }));
  check(ta.permute({1, 0}) > 0.0, a.permute({1, 0}).map([](double x) { return double(x > 0); }));
  check((ta < 0.0).where(ta, -ta), a.map([](double x) { return x < 0 ? x : -x; }));
  // IEEE semantics: NaN compares unequal to everything, itself included
  Tensor n(std::vector<float>{NAN, 1.f, INFINITY, -INFINITY});
  CHECK((n == n).to_vector<bool>() == std::vector<bool>{false, true, true, true});
  CHECK((n != n).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK((n < 2.0).to_vector<bool>() == std::vector<bool>{false, true, false, true});
  CHECK((n > 2.0).to_vector<bool>() == std::vector<bool>{false, false, true, false});
}

TEST_CASE("where", "[ops][where]") {
  SECTION("bool condition broadcast against both branches") {
    Ref c = rndi({3, 1}, 0, 1, 41), x = rnd({3, 4}, -5, 5, 42), y = rnd({4}, -5, 5, 43);
    Tensor tc = T(c, DType::Bool);
    Ref want = Ref::make({3, 4}, [&](const Shape& i) { return c.at({i[0], 0}) ? x.at(i) : y.at({i[1]}); });
    check(tc.where(T(x), T(y)), want);
  }
  SECTION("condition from an int comparison, on views") {
    Ref a = rndi({5, 4}, -5, 5, 44), x = rnd({4, 5}, -5, 5, 45), y = rnd({5, 4}, -5, 5, 46);
    Tensor cond = T(a, DType::Int32) > 0;
    Ref want = Ref::make({5, 4}, [&](const Shape& i) { return a.at(i) > 0 ? x.at({i[1], i[0]}) : y.flip({0}).at(i); });
    check(cond.where(T(x).T(), T(y).flip(0)), want);
  }
  SECTION("scalar branches and non-bool conditions") {
    Tensor c(std::vector<int>{0, 2, -1, 0});
    CHECK(c.where(1.5, -2.0).to_vector<float>() == std::vector<float>{-2.f, 1.5f, 1.5f, -2.f});
    Tensor x(std::vector<float>{1, 2, 3, 4});
    CHECK(c.where(x, 0.0).to_vector<float>() == std::vector<float>{0, 2, 3, 0});
    CHECK(c.where(0.0, x).to_vector<float>() == std::vector<float>{1, 0, 0, 4});
    CHECK(c.where(Tensor(std::vector<int>{5}), Tensor(std::vector<int>{6})).to_vector<int>() == std::vector<int>{6, 5, 5, 6});
  }
  SECTION("branches of different dtypes promote") {
    Tensor c(std::vector<bool>{true, false});
    Tensor r = c.where(Tensor(std::vector<int>{1, 2}), Tensor(std::vector<float>{0.5f, 0.25f}));
    CHECK(r.dtype() == DType::Float32);
    CHECK(r.to_vector<float>() == std::vector<float>{1.f, 0.25f});
  }
}

TEST_CASE("pow", "[ops][pow]") {
  SECTION("positive bases, real exponents") {
    check_binary("pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); },
                 [](double a, double b) { return std::pow(a, b); }, 0.2, 3, 1e-5, 1e-5);
  }
  SECTION("negative base with integer exponents, zero exponent") {
    Tensor b(std::vector<float>{-2, -2, -3, -0.5f, 2, 0, 0, -2, 4});
    Tensor e(std::vector<float>{3, 2, 0, -1, 0.5f, 0, 2, 0.5f, -0.5f});
    auto got = b.pow(e).to_vector<float>();
    std::vector<double> want{-8, 4, 1, -2, std::sqrt(2.0), 1, 0, NAN, 0.5};
    for (size_t i = 0; i < want.size(); i++) {
      INFO("pow(" << b.to_vector<float>()[i] << ", " << e.to_vector<float>()[i] << ")");
      CHECK(close(got[i], want[i], 1e-5, 1e-5));
    }
    CHECK(Tensor(std::vector<float>{-3, 2}).pow(2).to_vector<float>() == std::vector<float>{9, 4});
    CHECK(Tensor(std::vector<float>{-3, 2}).pow(0).to_vector<float>() == std::vector<float>{1, 1});
    // an integer base with an integer exponent stays integer (tinygrad's rule)
    CHECK(Tensor(std::vector<int>{2, 3}).pow(2).dtype() == DType::Int32);
    CHECK(Tensor(std::vector<int>{2, 3}).pow(2).to_vector<int>() == std::vector<int>{4, 9});
  }
}

TEST_CASE("cast", "[ops][cast]") {
  SECTION("float -> int truncates toward zero") {
    Tensor f(std::vector<float>{1.7f, -1.7f, 2.5f, -0.2f, 0.f, 100.99f, -2147483520.f});
    CHECK(f.cast(DType::Int32).dtype() == DType::Int32);
    CHECK(f.cast(DType::Int32).to_vector<int>() == std::vector<int>{1, -1, 2, 0, 0, 100, -2147483520});
    CHECK(f.cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{1, -1, 2, 0, 0, 100, -2147483520});
    CHECK(Tensor(std::vector<float>{127.9f, -128.9f, 3.5f}).cast(DType::Int8).to_vector<int8_t>() == std::vector<int8_t>{127, -128, 3});
    CHECK(Tensor(std::vector<float>{255.5f, 0.9f}).cast(DType::UInt8).to_vector<uint8_t>() == std::vector<uint8_t>{255, 0});
    Ref r = rnd({4, 5}, -1000, 1000, 51);
    check(T(r).T().cast(DType::Int32), r.permute({1, 0}).map([](double x) { return std::trunc(x); }));
  }
  SECTION("int -> float") {
    Tensor i(std::vector<int>{1, -2, 16777216, 16777217});
    CHECK(i.cast(DType::Float32).to_vector<float>() == std::vector<float>{1, -2, 16777216.f, float(16777217)});
    CHECK(i.cast(DType::Float64).to_vector<double>() == std::vector<double>{1, -2, 16777216, 16777217});
    CHECK(Tensor(std::vector<int8_t>{-128, 127}).cast(DType::Float32).to_vector<float>() == std::vector<float>{-128, 127});
    CHECK(Tensor(std::vector<uint8_t>{255}).cast(DType::Float32).item<float>() == 255.f);
    CHECK(Tensor(std::vector<uint32_t>{4000000000u}).cast(DType::Float64).item<double>() == 4000000000.0);
  }
  SECTION("int -> narrower int wraps modulo 2^bits") {
    CHECK(Tensor(std::vector<int>{300, -1, 255, 256}).cast(DType::UInt8).to_vector<uint8_t>() == std::vector<uint8_t>{44, 255, 255, 0});
    CHECK(Tensor(std::vector<int>{70000, -70000}).cast(DType::UInt16).to_vector<uint16_t>() ==
          std::vector<uint16_t>{uint16_t(70000), uint16_t(-70000)});
    CHECK(Tensor(std::vector<int>{-1}).cast(DType::UInt32).item<uint32_t>() == 0xFFFFFFFFu);
    CHECK(Tensor(std::vector<int>{-5}).cast(DType::Int64).item<int64_t>() == -5);
  }
  SECTION("to and from float16 rounds to nearest even (checked with Eigen::half)") {
    std::vector<float> v{1.7f, -1.7f, 65504.f, 1e-5f, 3.14159f, 0.1f, -0.f, 2049.f, 2051.f, 70000.f, 6e-8f};
    Tensor h = Tensor(v).cast(DType::Float16);
    CHECK(h.dtype() == DType::Float16);
    auto got = h.to_vector<float>();
    for (size_t i = 0; i < v.size(); i++) {
      INFO("float16(" << v[i] << ")");
      CHECK(got[i] == float(Eigen::half(v[i])));
    }
    auto back = h.cast(DType::Float32);
    CHECK(back.dtype() == DType::Float32);
    CHECK(back.to_vector<float>() == got);
    // half arithmetic stays half
    Tensor s = h + h;
    CHECK(s.dtype() == DType::Float16);
    CHECK(s.to_vector<float>()[0] == float(Eigen::half(float(Eigen::half(1.7f)) * 2)));
    CHECK(Tensor(std::vector<int>{3, -2048}).cast(DType::Float16).to_vector<float>() == std::vector<float>{3, -2048});
    CHECK(Tensor(std::vector<float>{2.5f, -3.75f}).cast(DType::Float16).cast(DType::Int32).to_vector<int>() == std::vector<int>{2, -3});
  }
  SECTION("to and from bfloat16 rounds to nearest even (checked with Eigen::bfloat16)") {
    std::vector<float> v{1.7f, -1.7f, 3e38f, 1e-30f, 3.14159f, 0.1f, 257.f, 259.f, -0.f};
    Tensor b = Tensor(v).cast(DType::BFloat16);
    CHECK(b.dtype() == DType::BFloat16);
    auto got = b.to_vector<float>();
    for (size_t i = 0; i < v.size(); i++) {
      INFO("bfloat16(" << v[i] << ")");
      CHECK(got[i] == float(Eigen::bfloat16(v[i])));
    }
    CHECK(b.cast(DType::Float32).to_vector<float>() == got);
    CHECK((b * b).dtype() == DType::BFloat16);
    CHECK(b.cast(DType::Float16).dtype() == DType::Float16);
  }
  SECTION("bool") {
    Tensor f(std::vector<float>{0.f, -0.5f, 2.f, -0.f});
    CHECK(f.cast(DType::Bool).to_vector<bool>() == std::vector<bool>{false, true, true, false});
    CHECK(Tensor(std::vector<int>{0, 3, -1}).cast(DType::Bool).to_vector<bool>() == std::vector<bool>{false, true, true});
    Tensor b(std::vector<bool>{true, false});
    CHECK(b.cast(DType::Float32).to_vector<float>() == std::vector<float>{1, 0});
    CHECK(b.cast(DType::Int32).to_vector<int>() == std::vector<int>{1, 0});
    CHECK(b.cast(DType::Float16).to_vector<float>() == std::vector<float>{1, 0});
  }
  SECTION("cast to the same dtype is the same tensor; bitcast reinterprets") {
    Tensor f(std::vector<float>{1.f});
    CHECK(f.cast(DType::Float32).uop() == f.uop());
    CHECK(f.bitcast(DType::UInt32).item<uint32_t>() == 0x3f800000u);
    CHECK(Tensor(std::vector<int>{0x40490fdb}).bitcast(DType::Float32).item<float>() == Approx(3.14159265f));
    CHECK_THROWS_AS(f.bitcast(DType::Int8), tinygrad::DTypeError);
  }
}

// ============================================================================================
// reductions
// ============================================================================================

namespace {
struct RedOp {
  const char* name;
  std::function<Tensor(const Tensor&, std::vector<int64_t>, bool)> op;
  double init;
  std::function<double(double, double)> f;
  double lo, hi;
};
const std::vector<RedOp>& red_ops() {
  static const std::vector<RedOp> r = {
      {"sum", [](const Tensor& t, std::vector<int64_t> a, bool k) { return t.sum(a, k); }, 0.0, std::plus<double>(), -2, 2},
      {"max", [](const Tensor& t, std::vector<int64_t> a, bool k) { return t.max(a, k); }, -INFINITY,
       [](double x, double y) { return std::max(x, y); }, -5, 5},
      {"min", [](const Tensor& t, std::vector<int64_t> a, bool k) { return t.min(a, k); }, INFINITY,
       [](double x, double y) { return std::min(x, y); }, -5, 5},
      {"prod", [](const Tensor& t, std::vector<int64_t> a, bool k) { return t.prod(a, k); }, 1.0, std::multiplies<double>(), 0.6, 1.4},
  };
  return r;
}
std::vector<int64_t> norm_axes(std::vector<int64_t> axes, size_t nd) {
  if (axes.empty()) { for (size_t i = 0; i < nd; i++) axes.push_back(int64_t(i)); }
  for (auto& a : axes) if (a < 0) a += int64_t(nd);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}
}  // namespace

TEST_CASE("reductions: sum max min prod over axes, keepdim, negative axes, on views", "[ops][reduce]") {
  const std::vector<std::vector<int64_t>> axis_sets = {{0}, {1}, {-1}, {0, 2}, {-3, -1}, {2, 0, 2}, {}};
  uint32_t seed = 300;
  for (auto& r : red_ops()) {
    for (size_t i : {0, 1, 3, 5, 8}) {
      auto& l = layouts()[i];
      if (runs_layout(i, r.name)) DYNAMIC_SECTION(r.name << " on " << l.name) {
        Ref base = rnd(l.base, r.lo, r.hi, seed);
        Ref rx = l.rv(base);
        Tensor x = l.tv(T(base));
        for (auto axes : axis_sets) {
          if (axes.size() && int64_t(rx.shape.size()) <= *std::max_element(axes.begin(), axes.end())) continue;
          for (bool keep : {false, true}) {
            INFO(r.name << " axes " << tinygrad::to_string(axes) << " keepdim " << keep);
            check(r.op(x, axes, keep), rx.reduce(norm_axes(axes, rx.shape.size()), keep, r.init, r.f), kSumA, kSumR);
          }
        }
      }
      seed++;
    }
  }
}

TEST_CASE("reductions: mean, single int axis overloads, size-1 and full reduce", "[ops][reduce]") {
  Ref a = rnd({4, 5, 6}, -3, 3, 401);
  Tensor t = T(a);
  auto mean_ref = [&](std::vector<int64_t> axes, bool keep) {
    auto ax = norm_axes(axes, 3);
    double n = 1;
    for (auto x : ax) n *= double(a.shape[size_t(x)]);
    return a.reduce(ax, keep, 0, std::plus<double>()).map([n](double s) { return s / n; });
  };
  check(t.mean(), mean_ref({}, false), kSumA, kSumR);
  check(t.mean(1), mean_ref({1}, false), kSumA, kSumR);
  check(t.mean(-1, true), mean_ref({2}, true), kSumA, kSumR);
  check(t.mean({0, 2}), mean_ref({0, 2}, false), kSumA, kSumR);
  check(t.mean({0, 1, 2}, true), mean_ref({}, true), kSumA, kSumR);
  CHECK(t.mean().shape() == Shape{});
  // NOTE: t.mean({}, true) would pick the int64_t overload (axis 0): spell the empty axis list out
  CHECK(t.mean(std::vector<int64_t>{}, true).shape() == Shape{1, 1, 1});
  CHECK(Tensor(std::vector<int>{1, 2, 4}).mean().dtype() == DType::Float32);
  CHECK(Tensor(std::vector<int>{1, 2, 4}).mean().item<float>() == Approx(7.0 / 3));
  check(t.sum(1), a.reduce({1}, false, 0, std::plus<double>()), kSumA, kSumR);
  check(t.max(-2, true), a.reduce({1}, true, -INFINITY, [](double x, double y) { return std::max(x, y); }));
  check(t.min(0), a.reduce({0}, false, INFINITY, [](double x, double y) { return std::min(x, y); }));
  // a reduce over size-1 dims, and of a scalar, is the input
  Ref one = rnd({1, 5, 1}, -1, 1, 402);
  check(T(one).sum({0, 2}), one.reshape({5}));
  check(T(one).max({0, 2}, true), one);
  Tensor s = Tensor::full({}, 3.5);
  CHECK(s.sum().item<float>() == 3.5f);
  CHECK(s.max().item<float>() == 3.5f);
  // large full reduce
  Ref big = rnd({1000, 37}, -1, 1, 403);
  check(T(big).sum(), big.reduce({0, 1}, false, 0, std::plus<double>()), 1e-3, 1e-4);
  check(T(big).max(0), big.reduce({0}, false, -INFINITY, [](double x, double y) { return std::max(x, y); }));
}

TEST_CASE("reductions: zero-size inputs", "[ops][reduce]") {
  Tensor e = Tensor::zeros({0, 3});
  CHECK(e.sum(0).shape() == Shape{3});
  CHECK(e.sum(0).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(e.sum().item<float>() == 0.f);
  CHECK(Tensor(std::vector<float>{}).sum().item<float>() == 0.f);
  CHECK(e.sum(1).shape() == Shape{0});
  CHECK(e.sum(1, true).shape() == Shape{0, 1});
  CHECK(e.prod(0).to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK_THROWS_AS(e.max(0), tinygrad::IndexError);  // no identity to return, as torch (test_nan.cpp)
  CHECK_THROWS_AS(e.min(0), tinygrad::IndexError);
  for (float m : e.mean(0).to_vector<float>()) CHECK(std::isnan(m));
  CHECK(Tensor::zeros({0}, DType::Int32).sum().item<int>() == 0);
  CHECK(Tensor::zeros({2, 0, 4}).sum({1}).to_vector<float>() == std::vector<float>(8, 0.f));
}

TEST_CASE("reductions: accumulation dtypes", "[ops][reduce][dtype]") {
  // ints and bools sum in int64 (as torch; tinygrad keeps 32 bits): the [parity] tests below
  Tensor i8 = Tensor::full({1000}, 100, DType::Int8);
  CHECK(i8.sum().dtype() == DType::Int64);
  CHECK(i8.sum().item<int>() == 100000);
  Tensor u8 = Tensor::full({1000}, 200, DType::UInt8);
  CHECK(u8.sum().dtype() == DType::Int64);
  CHECK(u8.sum().item<uint32_t>() == 200000u);
  Tensor b(std::vector<bool>{true, true, false, true});
  CHECK(b.sum().dtype() == DType::Int64);
  CHECK(b.sum().item<int>() == 3);
  // max keeps the dtype
  CHECK(i8.max().dtype() == DType::Int8);
  CHECK(Tensor(std::vector<uint8_t>{200, 3}).max().item<int>() == 200);
  CHECK(Tensor(std::vector<uint8_t>{200, 3}).min().item<int>() == 3);
  CHECK(Tensor(std::vector<int>{3, -5, 7}).min().item<int>() == -5);
  CHECK(b.max().item<bool>());
  // half sums accumulate in float32 and return half: 4096 ones would get stuck at 2048 in half
  Tensor h = Tensor::ones({4096}, DType::Float16);
  CHECK(h.sum().dtype() == DType::Float16);
  CHECK(h.sum().item<float>() == 4096.f);
  CHECK(Tensor::ones({4096}, DType::BFloat16).sum().item<float>() == 4096.f);
}

// ============================================================================================
// movement
// ============================================================================================

// reference values from torch 2.15 (CPU)
TEST_CASE("parity: integer sums, products and scans are int64", "[ops][reduce][dtype][parity]") {
  Tensor i = Tensor(std::vector<int32_t>{2000000000, 2000000000});
  CHECK(i.sum().dtype() == DType::Int64);
  CHECK(i.sum().item<int64_t>() == 4000000000);  // int32 wrapped to -294967296
  CHECK(i.cumsum().dtype() == DType::Int64);
  CHECK(i.cumsum().to_vector<int64_t>() == std::vector<int64_t>{2000000000, 4000000000});
  CHECK(i.prod().item<int64_t>() == 4000000000000000000);
  CHECK(Tensor(std::vector<int32_t>{100000, 100000}).cumprod().to_vector<int64_t>() == std::vector<int64_t>{100000, 10000000000});
  CHECK(Tensor(std::vector<uint8_t>{200, 200}).sum().item<int64_t>() == 400);
  CHECK(Tensor(std::vector<int8_t>{100, 100, 100}).prod().item<int64_t>() == 1000000);
  CHECK(Tensor(std::vector<uint32_t>{4000000000u, 4000000000u}).sum().item<int64_t>() == 8000000000);
  CHECK(Tensor(std::vector<int64_t>{3000000000, 3000000000}).sum().item<int64_t>() == 6000000000);
  Tensor b(std::vector<bool>{true, true, false});
  CHECK(b.cumsum().to_vector<int64_t>() == std::vector<int64_t>{1, 2, 2});
  for (DType d : {DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64}) {
    Tensor x = Tensor::ones({3}, d);
    for (const Tensor& r : {x.sum(), x.prod(), x.cumsum(), x.cumprod()}) CHECK(r.dtype() == DType::Int64);
    CHECK(x.max().dtype() == d);
    // NOTE: torch's mean of ints and bools is an error; ours is the float mean (as tinygrad and numpy)
    CHECK(x.mean().dtype() == DType::Float32);
  }
}

TEST_CASE("parity: indices are int64", "[ops][reduce][dtype][parity]") {
  Tensor x = Tensor::from_data(std::vector<float>{3, 1, 4, 1, 5, 9, 2, 6}.data(), {2, 4});
  auto i64 = [](const Tensor& t) { REQUIRE(t.dtype() == DType::Int64); return t.to_vector<int64_t>(); };
  using V = std::vector<int64_t>;
  CHECK(i64(x.argmax(1)) == V{2, 1});
  CHECK(i64(x.argmin()) == V{1});
  CHECK(i64(x.topk(2, 1).second) == V{2, 0, 1, 3});
  CHECK(i64(x.sort(1).second) == V{1, 3, 0, 2, 2, 0, 3, 1});
  CHECK(i64(x.argsort(1, true)) == V{2, 0, 1, 3, 1, 3, 0, 2});
  CHECK(i64(x.cummax_indices(1).second) == V{0, 0, 2, 2, 0, 1, 1, 1});
  CHECK(i64(Tensor(std::vector<int64_t>{0, 2}).one_hot(3)) == V{1, 0, 0, 0, 0, 1});
  CHECK(i64(Tensor::from_data(std::vector<int32_t>{0, 1, 2, 0}.data(), {2, 2}).nonzero()) == V{0, 1, 1, 0});
  CHECK(i64(Tensor(std::vector<float>{0, 1}).multinomial()) == V{1});
}

// float sums: the error stays bounded as the length grows (the scheduler splits a long sum into stages)
TEST_CASE("parity: long float sums", "[ops][reduce][parity]") {
  auto rel = [](double n) { return std::abs(Tensor::full({int64_t(n)}, 0.1).sum().item<double>() / (double(0.1f) * n) - 1); };
  CHECK(rel(1e7) < 1e-6);  // torch: 999999.56 (4e-7); was 999904.31 (1e-4)
  CHECK(rel(1e8) < 1e-6);  // torch: 9999992 (8e-7); was 1.6e-4
  CHECK(rel(1e9) < 1e-5);  // torch: 99999680 (3e-6); was 3.8% low
  double ones = Tensor::ones({int64_t(1e10)}).sum().item<double>();  // was 4294967296: each partial stuck at 2^24
  CHECK(std::abs(ones / 1e10 - 1) < 1e-5);
}

TEST_CASE("movement: reshape", "[ops][movement]") {
  Ref a = rnd({2, 3, 4}, -1, 1, 501);
  Tensor t = T(a);
  check(t.reshape({6, 4}), a.reshape({6, 4}));
  check(t.reshape({-1}), a.reshape({24}));
  check(t.reshape({4, -1}), a.reshape({4, 6}));
  check(t.reshape({2, -1, 3}), a.reshape({2, 4, 3}));
  check(t.reshape({1, 24, 1}), a.reshape({1, 24, 1}));
  CHECK(t.reshape({2, 3, 4}).uop() == t.uop());
  // reshape of a non-contiguous view reads in logical order
  check(t.permute({2, 1, 0}).reshape({4, 6}), a.permute({2, 1, 0}).reshape({4, 6}));
  check(t.flip(1).reshape({-1}), a.flip({1}).reshape({24}));
  check(t.shrink({{0, 2}, {1, 3}, {0, 4}}).reshape({4, 4}), a.shrink({{0, 2}, {1, 3}, {0, 4}}).reshape({4, 4}));
  // scalars and zero sizes
  check(Tensor::full({}, 2).reshape({1, 1}), Ref{{1, 1}, {2}});
  check(T(Ref{{1}, {5}}).reshape({}), Ref{{}, {5}});
  CHECK(Tensor::zeros({0, 4}).reshape({4, 0}).shape() == Shape{4, 0});
  CHECK(Tensor::zeros({0, 4}).reshape({-1, 2}).shape() == Shape{0, 2});
}

TEST_CASE("movement: permute, transpose, T", "[ops][movement]") {
  Ref a = rnd({2, 3, 4, 5}, -1, 1, 511);
  Tensor t = T(a);
  for (auto order : std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {0, 2, 1, 3}, {-1, 0, 1, 2}}) {
    std::vector<int64_t> o = order;
    for (auto& x : o) if (x < 0) x += 4;
    INFO("permute " << tinygrad::to_string(order));
    check(t.permute(order), a.permute(o));
  }
  check(t.transpose(0, 3), a.permute({3, 1, 2, 0}));
  check(t.transpose(-1, -2), a.permute({0, 1, 3, 2}));
  check(t.T(), a.permute({0, 1, 3, 2}));
  Ref m = rnd({3, 7}, -1, 1, 512);
  check(T(m).transpose(), m.permute({1, 0}));
  check(T(m).T().T(), m);
  check(T(m).T().permute({1, 0}).T(), m.permute({1, 0}));
}

TEST_CASE("movement: expand", "[ops][movement]") {
  Ref a = rnd({3, 1}, -1, 1, 521);
  check(T(a).expand({3, 4}), a.expand({3, 4}));
  check(T(a).expand({2, 3, 4}), a.expand({2, 3, 4}));
  check(T(a).expand({-1, 5}), a.expand({3, 5}));
  check(T(a).expand({3, 1}), a);
  check(Tensor::full({}, 1.5).expand({2, 2}), Ref{{2, 2}, {1.5, 1.5, 1.5, 1.5}});
  check(T(a).expand({0, 3, 4}), Ref{{0, 3, 4}, {}});
  Ref b = rnd({1, 4}, -1, 1, 522);
  check(T(b).T().expand({4, 3}), b.permute({1, 0}).expand({4, 3}));
  check(T(a).expand_as(Tensor::zeros({3, 6})), a.expand({3, 6}));
  // an expanded view in arithmetic: each element is read many times
  check(T(a).expand({3, 4}) + T(b).expand({3, 4}), zip(a, b, [](double x, double y) { return double(float(x + y)); }));
}

TEST_CASE("movement: pad incl. negative pads and a value", "[ops][movement]") {
  Ref a = rnd({3, 4}, -1, 1, 531);
  Tensor t = T(a);
  using P = std::vector<std::pair<int64_t, int64_t>>;
  for (auto p : std::vector<P>{{{1, 1}, {2, 0}}, {{0, 0}, {0, 0}}, {{0, 3}, {1, 1}}, {{-1, 0}, {0, -2}}, {{1, -1}, {-1, 2}},
                               {{-3, 0}, {0, 0}}, {{2, 2}, {-4, 1}}}) {
    for (double v : {0.0, -7.5, double(INFINITY)}) {
      INFO("pad " << p[0].first << "," << p[0].second << " " << p[1].first << "," << p[1].second << " value " << v);
      check(t.pad(p, v), a.pad(p, v));
    }
  }
  // pad of views, and of ints
  check(t.T().pad({{1, 0}, {0, 2}}, 3), a.permute({1, 0}).pad({{1, 0}, {0, 2}}, 3));
  check(t.flip(0).pad({{0, 1}, {1, 0}}), a.flip({0}).pad({{0, 1}, {1, 0}}));
  Ref i = rndi({2, 3}, -9, 9, 532);
  Tensor ti = T(i, DType::Int32).pad({{1, 1}, {1, 1}}, -1);
  CHECK(ti.dtype() == DType::Int32);
  check(ti, i.pad({{1, 1}, {1, 1}}, -1));
  // padding feeds arithmetic: the pad value is used, not garbage
  check(t.pad({{1, 1}, {1, 1}}, 2).exp(), a.pad({{1, 1}, {1, 1}}, 2).map([](double x) { return std::exp(x); }), kFA, kFR);
  check(Tensor::zeros({0, 2}).pad({{1, 1}, {0, 0}}, 4), Ref{{2, 2}, {4, 4, 4, 4}});
}

TEST_CASE("movement: shrink and flip", "[ops][movement]") {
  Ref a = rnd({4, 5, 6}, -1, 1, 541);
  Tensor t = T(a);
  check(t.shrink({{1, 3}, {0, 5}, {2, 6}}), a.shrink({{1, 3}, {0, 5}, {2, 6}}));
  check(t.shrink({{0, 4}, {4, 5}, {0, 1}}), a.shrink({{0, 4}, {4, 5}, {0, 1}}));
  check(t.shrink({{2, 2}, {0, 5}, {0, 6}}), Ref{{0, 5, 6}, {}});
  check(t.shrink({{0, 4}, {0, 5}, {0, 6}}), a);
  check(t.flip(0), a.flip({0}));
  check(t.flip({-1}), a.flip({2}));
  check(t.flip({0, 1, 2}), a.flip({0, 1, 2}));
  check(t.flip({1, 1}), a);  // flipping twice is the identity
  check(t.flip(1).shrink({{0, 2}, {1, 4}, {0, 6}}).flip(2), a.flip({1}).shrink({{0, 2}, {1, 4}, {0, 6}}).flip({2}));
  check(t.permute({2, 0, 1}).flip(0).shrink({{1, 5}, {0, 4}, {2, 3}}), a.permute({2, 0, 1}).flip({0}).shrink({{1, 5}, {0, 4}, {2, 3}}));
}

TEST_CASE("movement: slice with steps, Ellipsis, NewAxis, int indices", "[ops][movement][slice]") {
  Ref a = rnd({5, 6, 7}, -1, 1, 551);
  Tensor t = T(a);
  // python-style reference for one dim: indices picked by start:stop:step
  auto pick = [](int64_t n, std::optional<int64_t> b, std::optional<int64_t> e, int64_t s) {
    std::vector<int64_t> r;
    auto norm = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
    if (s > 0) { for (int64_t i = b ? norm(*b, 0, n) : 0, end = e ? norm(*e, 0, n) : n; i < end; i += s) r.push_back(i); }
    else { for (int64_t i = b ? norm(*b, -1, n - 1) : n - 1, end = e ? norm(*e, -1, n - 1) : -1; i > end; i += s) r.push_back(i); }
    return r;
  };
  struct S3 { Slice s0, s1, s2; };
  std::vector<S3> cases = {
      {{}, {}, {}},
      {{1, 4, 1}, {nullopt, nullopt, 2}, {2, nullopt, 3}},
      {{nullopt, nullopt, -1}, {}, {}},
      {{4, 0, -2}, {-1, nullopt, -3}, {nullopt, 2, -1}},
      {{-3, -1, 1}, {1, 100, 4}, {-100, 100, 5}},
      {{3, 1, 1}, {}, {}},  // empty (stop < start)
      {{nullopt, nullopt, 7}, {5, nullopt, -5}, {6, 5, 1}},
  };
  for (auto& c : cases) {
    std::vector<int64_t> p0 = pick(5, c.s0.start, c.s0.stop, c.s0.step), p1 = pick(6, c.s1.start, c.s1.stop, c.s1.step),
        p2 = pick(7, c.s2.start, c.s2.stop, c.s2.step);
    Ref want = Ref::make({int64_t(p0.size()), int64_t(p1.size()), int64_t(p2.size())},
                         [&](const Shape& i) { return a.at({p0[size_t(i[0])], p1[size_t(i[1])], p2[size_t(i[2])]}); });
    INFO("slice steps " << c.s0.step << "," << c.s1.step << "," << c.s2.step);
    check(t.slice({c.s0, c.s1, c.s2}), want);
    check(t[{c.s0, c.s1, c.s2}], want);
  }
  // int indices drop the dim; negative ints count from the end
  check(t[2], a.shrink({{2, 3}, {0, 6}, {0, 7}}).reshape({6, 7}));
  check(t[-1], a.shrink({{4, 5}, {0, 6}, {0, 7}}).reshape({6, 7}));
  check(t[{1, -2, 3}], Ref{{}, {a.at({1, 4, 3})}});
  check(t[{Slice{}, 0}], a.shrink({{0, 5}, {0, 1}, {0, 7}}).reshape({5, 7}));
  // Ellipsis fills the middle, NewAxis inserts a 1
  check(t[{Ellipsis{}, 1}], a.shrink({{0, 5}, {0, 6}, {1, 2}}).reshape({5, 6}));
  check(t[{2, Ellipsis{}}], a.shrink({{2, 3}, {0, 6}, {0, 7}}).reshape({6, 7}));
  check(t[{Ellipsis{}}], a);
  check(t[{NewAxis{}}], a.reshape({1, 5, 6, 7}));
  check(t[{Slice{}, NewAxis{}, Slice{}, NewAxis{}}], a.reshape({5, 1, 6, 1, 7}));
  check(t[{NewAxis{}, 1, Ellipsis{}, Slice{nullopt, nullopt, -2}}],
        Ref::make({1, 6, 4}, [&](const Shape& i) { return a.at({1, i[1], 6 - 2 * i[2]}); }));
  check(t[{Ellipsis{}, NewAxis{}}], a.reshape({5, 6, 7, 1}));
  // slicing a view
  check(t.permute({2, 0, 1})[{Slice{1, 6, 2}, -1}], a.permute({2, 0, 1}).strided({3, 1, 6}, {1, 4, 0}, {2, 1, 1}).reshape({3, 6}));
  check(t.flip(0)[{Slice{nullopt, nullopt, 2}, 0, Slice{1, 3}}], a.flip({0}).strided({3, 1, 2}, {0, 0, 1}, {2, 1, 1}).reshape({3, 2}));
}

TEST_CASE("movement: flatten, squeeze, unsqueeze", "[ops][movement]") {
  Ref a = rnd({2, 1, 3, 1}, -1, 1, 561);
  Tensor t = T(a);
  check(t.flatten(), a.reshape({6}));
  check(t.flatten(1), a.reshape({2, 3}));
  check(t.flatten(1, 2), a.reshape({2, 3, 1}));
  check(t.flatten(0, -2), a.reshape({6, 1}));
  check(Tensor::full({}, 4).flatten(), Ref{{1}, {4}});
  check(t.squeeze(), a.reshape({2, 3}));
  check(t.squeeze(1), a.reshape({2, 3, 1}));
  check(t.squeeze(-1), a.reshape({2, 1, 3}));
  check(t.squeeze(0), a);  // not size 1: unchanged
  check(t.unsqueeze(0), a.reshape({1, 2, 1, 3, 1}));
  check(t.unsqueeze(2), a.reshape({2, 1, 1, 3, 1}));
  check(t.unsqueeze(-1), a.reshape({2, 1, 3, 1, 1}));
  check(t.unsqueeze(4), a.reshape({2, 1, 3, 1, 1}));
  check(t.T().flatten(), a.permute({0, 1, 3, 2}).reshape({6}));
}

// ============================================================================================
// matmul
// ============================================================================================

namespace {
Eigen::MatrixXd eig(const Ref& r) {  // 2-D Ref -> Eigen
  Eigen::MatrixXd m(r.shape[0], r.shape[1]);
  for (int64_t i = 0; i < r.shape[0]; i++) for (int64_t j = 0; j < r.shape[1]; j++) m(i, j) = r.at({i, j});
  return m;
}
Ref ref_of(const Eigen::MatrixXd& m) { return Ref::make({m.rows(), m.cols()}, [&](const Shape& i) { return m(i[0], i[1]); }); }
}  // namespace

TEST_CASE("matmul: 2-D against Eigen at several sizes", "[ops][matmul]") {
  uint32_t seed = 600;
  for (auto [n, k, m] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {2, 3, 4}, {17, 33, 9}, {64, 64, 64}, {5, 1, 7}, {1, 50, 1}, {31, 7, 129}, {3, 0, 4}, {0, 3, 4}}) {
    DYNAMIC_SECTION("(" << n << "x" << k << ") @ (" << k << "x" << m << ")") {
      Ref a = rnd({n, k}, -1, 1, seed), b = rnd({k, m}, -1, 1, seed + 1);
      Tensor c = T(a).matmul(T(b));
      CHECK(c.dtype() == DType::Float32);
      check(c, ref_of(eig(a) * eig(b)), kSumA, kSumR);
    }
    seed += 2;
  }
}

TEST_CASE("matmul: transposed and sliced operands, dot, linear", "[ops][matmul]") {
  Ref a = rnd({9, 17}, -1, 1, 611), b = rnd({33, 9}, -1, 1, 612);
  // (17x9) @ (9x33) from transposed views
  check(T(a).T().matmul(T(b).T()), ref_of(eig(a).transpose() * eig(b).transpose()), kSumA, kSumR);
  // a strided slice as the left operand
  Ref as = a.strided({5, 9}, {0, 0}, {2, 1});
  check(T(a)[{Slice{nullopt, nullopt, 2}, Slice{0, 9}}].matmul(T(b).T()), ref_of(eig(as) * eig(b).transpose()), kSumA, kSumR);
  check(T(a).T().dot(T(b).T()), ref_of(eig(a).transpose() * eig(b).transpose()), kSumA, kSumR);
  Ref bias = rnd({33}, -1, 1, 613);
  Eigen::MatrixXd lin = eig(a).transpose() * eig(b).transpose();
  lin.rowwise() += eig(bias.reshape({1, 33})).row(0);
  check(T(a).T().linear(T(b).T(), T(bias)), ref_of(lin), kSumA, kSumR);
}

TEST_CASE("matmul: batched, vector-matrix, matrix-vector, 1-D dot", "[ops][matmul]") {
  SECTION("batched 3-D") {
    Ref a = rnd({3, 4, 5}, -1, 1, 621), b = rnd({3, 5, 6}, -1, 1, 622);
    Ref want = Ref::make({3, 4, 6},
        [&](const Shape& i) { double s = 0; for (int64_t k = 0; k < 5; k++) s += a.at({i[0], i[1], k}) * b.at({i[0], k, i[2]}); return s; });
    check(T(a).matmul(T(b)), want, kSumA, kSumR);
  }
  SECTION("batched @ 2-D broadcasts the matrix") {
    Ref a = rnd({2, 4, 5}, -1, 1, 623), b = rnd({5, 3}, -1, 1, 624);
    Ref want = Ref::make({2, 4, 3},
        [&](const Shape& i) { double s = 0; for (int64_t k = 0; k < 5; k++) s += a.at({i[0], i[1], k}) * b.at({k, i[2]}); return s; });
    check(T(a).matmul(T(b)), want, kSumA, kSumR);
  }
  SECTION("batch dims broadcast against each other") {
    Ref a = rnd({2, 1, 3, 4}, -1, 1, 625), b = rnd({5, 4, 2}, -1, 1, 626);
    Ref want = Ref::make({2, 5, 3, 2},
        [&](const Shape& i) { double s = 0; for (int64_t k = 0; k < 4; k++) s += a.at({i[0], 0, i[2], k}) * b.at({i[1], k, i[3]}); return s; });
    check(T(a).matmul(T(b)), want, kSumA, kSumR);
  }
  SECTION("vector @ matrix") {
    Ref v = rnd({7}, -1, 1, 627), m = rnd({7, 4}, -1, 1, 628);
    Eigen::RowVectorXd r = eig(v.reshape({1, 7})) * eig(m);
    check(T(v).matmul(T(m)), ref_of(r).reshape({4}), kSumA, kSumR);
  }
  SECTION("matrix @ vector") {
    Ref m = rnd({4, 7}, -1, 1, 629), v = rnd({7}, -1, 1, 630);
    Eigen::VectorXd r = eig(m) * eig(v.reshape({7, 1}));
    check(T(m).matmul(T(v)), ref_of(r).reshape({4}), kSumA, kSumR);
  }
  SECTION("batched @ vector") {
    Ref m = rnd({2, 3, 7}, -1, 1, 631), v = rnd({7}, -1, 1, 632);
    Ref want = Ref::make({2, 3},
                         [&](const Shape& i) { double s = 0; for (int64_t k = 0; k < 7; k++) s += m.at({i[0], i[1], k}) * v.at({k}); return s; });
    check(T(m).matmul(T(v)), want, kSumA, kSumR);
  }
  SECTION("1-D . 1-D is a scalar") {
    Ref u = rnd({33}, -1, 1, 633), v = rnd({33}, -1, 1, 634);
    double s = 0;
    for (int64_t k = 0; k < 33; k++) s += u.at({k}) * v.at({k});
    Tensor d = T(u).dot(T(v));
    CHECK(d.shape() == Shape{});
    check(d, Ref{{}, {s}}, kSumA, kSumR);
  }
  SECTION("integer matmul is exact and stays int32") {
    Ref a = rndi({6, 5}, -20, 20, 635), b = rndi({5, 3}, -20, 20, 636);
    Tensor c = T(a, DType::Int32).matmul(T(b, DType::Int32));
    CHECK(c.dtype() == DType::Int32);
    check(c, ref_of(eig(a) * eig(b)));
  }
  SECTION("mixed dtypes promote") {
    Tensor c = Tensor(std::vector<int>{1, 2}).matmul(Tensor(std::vector<float>{0.5f, 0.25f}));
    CHECK(c.dtype() == DType::Float32);
    CHECK(c.item<float>() == 1.f);
  }
}

// ============================================================================================
// conv2d
// ============================================================================================

namespace {
struct ConvCase {
  std::string name;
  Shape x, w;
  int64_t groups = 1;
  std::vector<int64_t> stride{1}, dilation{1}, padding{0};
  bool bias = false;
};
// padding: 1 value (all sides), 2 (per dim) or 4 (dim0 before/after, dim1 before/after)
Ref conv_ref(const Ref& x, const Ref& w, const Ref* b, const ConvCase& c) {
  int64_t N = x.shape[0], CI = x.shape[1], H = x.shape[2], W = x.shape[3], CO = w.shape[0], CG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  auto v2 = [](const std::vector<int64_t>& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  int64_t sh = v2(c.stride, 0), sw = v2(c.stride, 1), dh = v2(c.dilation, 0), dw = v2(c.dilation, 1);
  int64_t pt, pb, pl, pr;
  if (c.padding.size() == 4) { pt = c.padding[0]; pb = c.padding[1]; pl = c.padding[2]; pr = c.padding[3]; }
  else { pt = pb = v2(c.padding, 0); pl = pr = v2(c.padding, 1); }
  int64_t OH = (H + pt + pb - dh * (KH - 1) - 1) / sh + 1, OW = (W + pl + pr - dw * (KW - 1) - 1) / sw + 1;
  int64_t cout_g = CO / c.groups;
  (void)CI;
  return Ref::make({N, CO, OH, OW}, [&](const Shape& o) {
    int64_t n = o[0], co = o[1], g = co / cout_g;
    double s = b ? b->at({co}) : 0;
    for (int64_t ci = 0; ci < CG; ci++)
      for (int64_t ky = 0; ky < KH; ky++)
        for (int64_t kx = 0; kx < KW; kx++) {
          int64_t iy = o[2] * sh + ky * dh - pt, ix = o[3] * sw + kx * dw - pl;
          if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
          s += x.at({n, g * CG + ci, iy, ix}) * w.at({co, ci, ky, kx});
        }
    return s;
  });
}
}  // namespace

TEST_CASE("conv2d against a plain-loop reference", "[ops][conv]") {
  std::vector<ConvCase> cases = {
      {"3x3 basic", {2, 3, 7, 7}, {4, 3, 3, 3}},
      {"stride 2", {1, 2, 9, 9}, {3, 2, 3, 3}, 1, {2}},
      {"padding 1", {2, 2, 5, 5}, {3, 2, 3, 3}, 1, {1}, {1}, {1}},
      {"dilation 2", {1, 2, 9, 8}, {2, 2, 3, 3}, 1, {1}, {2}},
      {"groups 2", {2, 4, 6, 6}, {6, 2, 3, 3}, 2},
      {"depthwise (groups = channels)", {1, 3, 6, 5}, {3, 1, 3, 3}, 3, {1}, {1}, {1}},
      {"bias", {2, 3, 5, 5}, {4, 3, 3, 3}, 1, {1}, {1}, {0}, true},
      {"1x1 kernel", {2, 5, 4, 6}, {7, 5, 1, 1}, 1, {1}, {1}, {0}, true},
      {"1x1 kernel, stride 2", {1, 3, 5, 5}, {2, 3, 1, 1}, 1, {2}},
      {"non-square kernel 2x3 on non-square input", {2, 2, 5, 7}, {3, 2, 2, 3}},
      {"non-square stride (2,1), padding (1,2)", {1, 2, 7, 6}, {3, 2, 3, 2}, 1, {2, 1}, {1}, {1, 2}},
      {"asymmetric padding (t,b,l,r)=(1,0,2,1)", {1, 2, 5, 5}, {2, 2, 3, 3}, 1, {1}, {1}, {1, 0, 2, 1}},
      {"everything: groups, stride, dilation, padding, bias", {2, 4, 10, 9}, {6, 2, 3, 2}, 2, {2, 3}, {2, 1}, {2, 1}, true},
      {"kernel as large as the input", {1, 2, 4, 4}, {3, 2, 4, 4}},
  };
  uint32_t seed = 700;
  for (auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      Ref x = rnd(c.x, -1, 1, seed), w = rnd(c.w, -1, 1, seed + 1), b = rnd({c.w[0]}, -1, 1, seed + 2);
      std::optional<Tensor> tb;
      if (c.bias) tb = T(b);
      Tensor y = T(x).conv2d(T(w), tb, c.stride, c.padding, c.dilation, c.groups);
      check(y, conv_ref(x, w, c.bias ? &b : nullptr, c), kSumA, kSumR);
    }
    seed += 3;
  }
  SECTION("non-contiguous input and weight") {
    ConvCase c{"views", {1, 3, 6, 5}, {2, 3, 3, 3}};
    Ref x = rnd({1, 3, 5, 6}, -1, 1, 790), w = rnd({3, 2, 3, 3}, -1, 1, 791);
    Ref xr = x.permute({0, 1, 3, 2}), wr = w.permute({1, 0, 2, 3}).flip({3});
    check(T(x).transpose(2, 3).conv2d(T(w).transpose(0, 1).flip(3)), conv_ref(xr, wr, nullptr, c), kSumA, kSumR);
  }
  SECTION("conv2d + relu") {
    ConvCase c{"relu", {2, 3, 6, 6}, {4, 3, 3, 3}, 1, {1}, {1}, {1}, true};
    Ref x = rnd(c.x, -1, 1, 792), w = rnd(c.w, -1, 1, 793), b = rnd({4}, -1, 1, 794);
    check(T(x).conv2d(T(w), T(b), 1, 1).relu(), conv_ref(x, w, &b, c).map([](double v) { return std::max(v, 0.0); }), kSumA, kSumR);
  }
}

// ============================================================================================
// chains
// ============================================================================================

TEST_CASE("chains: matmul + bias + relu, softmax, log_softmax, MLP", "[ops][chain]") {
  SECTION("matmul + bias + relu") {
    Ref x = rnd({8, 17}, -1, 1, 801), w = rnd({17, 12}, -1, 1, 802), b = rnd({12}, -1, 1, 803);
    Eigen::MatrixXd y = eig(x) * eig(w);
    y.rowwise() += eig(b.reshape({1, 12})).row(0);
    check((T(x).matmul(T(w)) + T(b)).relu(), ref_of(y.cwiseMax(0.0)), kSumA, kSumR);
  }
  auto softmax_ref = [](const Ref& x, int64_t axis, bool log) {
    Ref m = x.reduce({axis}, true, -INFINITY, [](double a, double b) { return std::max(a, b); });
    Ref e = zip(x, m, [](double a, double b) { return std::exp(a - b); });
    Ref s = e.reduce({axis}, true, 0, std::plus<double>());
    if (log) return zip(zip(x, m, std::minus<double>()), s, [](double a, double b) { return a - std::log(b); });
    return zip(e, s, std::divides<double>());
  };
  SECTION("softmax over the last and the first axis, with large logits") {
    Ref x = rnd({6, 10}, -30, 30, 804);
    check(T(x).softmax(), softmax_ref(x, 1, false), 1e-6, 1e-5);
    check(T(x).softmax(0), softmax_ref(x, 0, false), 1e-6, 1e-5);
    Ref big = rnd({3, 5}, 500, 1000, 805);  // exp would overflow without the max subtraction
    check(T(big).softmax(-1), softmax_ref(big, 1, false), 1e-6, 1e-5);
    // rows sum to one
    for (float s : T(x).softmax().sum(-1).to_vector<float>()) CHECK(s == Approx(1).margin(1e-5));
  }
  SECTION("softmax of a 3-D permuted view") {
    Ref x = rnd({4, 3, 5}, -5, 5, 806);
    check(T(x).permute({1, 2, 0}).softmax(1), softmax_ref(x.permute({1, 2, 0}), 1, false), 1e-6, 1e-5);
  }
  SECTION("log_softmax") {
    Ref x = rnd({6, 10}, -30, 30, 807);
    check(T(x).log_softmax(), softmax_ref(x, 1, true), 1e-4, 1e-5);
    check(T(x).log_softmax(0), softmax_ref(x, 0, true), 1e-4, 1e-5);
  }
  SECTION("2-layer MLP forward") {
    Ref x = rnd({4, 9}, -1, 1, 808), w1 = rnd({9, 16}, -1, 1, 809), b1 = rnd({16}, -1, 1, 810), w2 = rnd({16, 3}, -1, 1, 811),
        b2 = rnd({3}, -1, 1, 812);
    Eigen::MatrixXd h = eig(x) * eig(w1);
    h.rowwise() += eig(b1.reshape({1, 16})).row(0);
    h = h.cwiseMax(0.0);
    Eigen::MatrixXd y = h * eig(w2);
    y.rowwise() += eig(b2.reshape({1, 3})).row(0);
    check((T(x).matmul(T(w1)) + T(b1)).relu().matmul(T(w2)) + T(b2), ref_of(y), kSumA, kSumR);
  }
  SECTION("a long elementwise chain on a view") {
    Ref x = rnd({5, 7}, -2, 2, 813);
    Tensor t = T(x).flip(1);
    Tensor y = ((t * 0.5 + 1.0).exp() - t.sigmoid()).maximum(t.tanh() * 3.0) / (t.abs() + 1.0);
    check(y,
          x.flip({1}).map([](double v) { return std::max(std::exp(v * 0.5 + 1) - 1 / (1 + std::exp(-v)), std::tanh(v) * 3) / (std::abs(v) + 1); }),
          1e-5, 1e-5);
  }
}

TEST_CASE("realize, item, to_vector and lazy semantics", "[ops][realize]") {
  Tensor a(std::vector<float>{1, 2, 3});
  Tensor b = a * 2;
  CHECK_FALSE(b.is_realized());
  b.realize();
  CHECK(b.is_realized());
  CHECK(b.to_vector<float>() == std::vector<float>{2, 4, 6});
  Tensor c = b + 1;  // builds on a realized tensor
  CHECK(c.to_vector<float>() == std::vector<float>{3, 5, 7});
  CHECK(c.to_vector<int>() == std::vector<int>{3, 5, 7});  // converting readback
  CHECK(c.sum().item<float>() == 15.f);
  CHECK(c.sum().item<double>() == 15.0);
  CHECK(Tensor(std::vector<float>{4}, {1, 1}).item<float>() == 4.f);
  // copies alias: realizing one handle realizes the other's graph node too
  Tensor d = a + 10;
  Tensor e = d;
  d.realize();
  CHECK(e.to_vector<float>() == std::vector<float>{11, 12, 13});
  CHECK(Tensor(std::vector<float>{1, 2}).shape(-1) == 2);
  CHECK(Tensor::zeros({2, 3}).shape(0) == 2);
  CHECK(a.device() == tinygrad::default_device());
  // contiguous and detach keep values
  CHECK(Tensor(std::vector<float>{1, 2, 3, 4}, {2, 2}).T().contiguous().to_vector<float>() == std::vector<float>{1, 3, 2, 4});
  CHECK(a.detach().to_vector<float>() == std::vector<float>{1, 2, 3});
}
