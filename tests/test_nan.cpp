// NaN, infinities and empty dims in max/min, argmax/argmin, sort/argsort/topk, cummax/cummin, maximum/minimum.
// Expected values are PyTorch 2.x's (torch.sort with stable=True), hard-coded: NaN counts as the largest value
// (max propagates it, argmax finds the first one, sort puts it last ascending and first descending), and a max or
// min over an empty dim raises. Only selections are compared, so equality is exact (NaN equal to NaN).
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>

using tinygrad::DType;
using tinygrad::Shape;
using tinygrad::Tensor;
using std::nullopt;

namespace {
using V = std::vector<double>;
constexpr double NA = NAN, INF = INFINITY;

void check(const Tensor& t, const Shape& s, const V& want) {
  INFO("shape got " << tinygrad::to_string(t.shape()) << " want " << tinygrad::to_string(s));
  REQUIRE(t.shape() == s);
  auto got = t.to_vector<double>();
  REQUIRE(got.size() == want.size());
  std::string g, w;
  bool ok = true;
  for (size_t i = 0; i < got.size(); i++) {
    ok = ok && (std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]);
    g += std::to_string(got[i]) + " ";
    w += std::to_string(want[i]) + " ";
  }
  INFO("got  " << g << "\nwant " << w);
  CHECK(ok);
}
Tensor mk(const V& v, const Shape& s, DType dt = DType::Float32) { return Tensor(v, s).cast(dt).realize(); }
V head(const V& v, int64_t rows, int64_t n, int64_t k) {  // the first k of each row of n
  V r;
  for (int64_t i = 0; i < rows; i++) r.insert(r.end(), v.begin() + i * n, v.begin() + i * n + k);
  return r;
}

// (3, 5): a row with two NaNs, an all-NaN row, a row with ties at +inf
const V A = {1, NA, 3, -INF, NA, NA, NA, NA, NA, NA, 2, INF, -1, INF, 0};
// (5, 3): NaNs in every column, ties, -inf ties
const V E = {1, NA, -INF, 2, 2, NA, NA, 5, -INF, 0, 7, 3, -1, 7, -INF};
// (13,): four NaNs, ties, both infinities, a length that is not a power of two
const V B = {3, NA, -2, NA, 3, INF, -INF, NA, 0, -2, 5, NA, 1};

struct Case {
  const V* x;
  Shape s;
  int axis;
  V max, min, argmax, argmin, sort_v, sort_i, sortd_v, sortd_i, cummax_v, cummax_i, cummin_v, cummin_i;
};
const std::vector<Case> cases = {
    {&A, {3, 5}, 1, {NA, NA, INF}, {NA, NA, -1}, {1, 0, 1}, {1, 0, 2},
     {-INF, 1, 3, NA, NA, NA, NA, NA, NA, NA, -1, 0, 2, INF, INF}, {3, 0, 2, 1, 4, 0, 1, 2, 3, 4, 2, 4, 0, 1, 3},
     {NA, NA, 3, 1, -INF, NA, NA, NA, NA, NA, INF, INF, 2, 0, -1}, {1, 4, 2, 0, 3, 0, 1, 2, 3, 4, 1, 3, 0, 4, 2},
     {1, NA, NA, NA, NA, NA, NA, NA, NA, NA, 2, INF, INF, INF, INF}, {0, 1, 1, 1, 4, 0, 1, 2, 3, 4, 0, 1, 1, 3, 3},
     {1, NA, NA, NA, NA, NA, NA, NA, NA, NA, 2, 2, -1, -1, -1}, {0, 1, 1, 1, 4, 0, 1, 2, 3, 4, 0, 0, 2, 2, 2}},
    {&E, {5, 3}, 0, {NA, NA, NA}, {NA, NA, NA}, {2, 0, 1}, {2, 0, 1},
     {-1, 2, -INF, 0, 5, -INF, 1, 7, -INF, 2, 7, 3, NA, NA, NA}, {4, 1, 0, 3, 2, 2, 0, 3, 4, 1, 4, 3, 2, 0, 1},
     {NA, NA, NA, 2, 7, 3, 1, 7, -INF, 0, 5, -INF, -1, 2, -INF}, {2, 0, 1, 1, 3, 3, 0, 4, 0, 3, 2, 2, 4, 1, 4},
     {1, NA, -INF, 2, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA}, {0, 0, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1},
     {1, NA, -INF, 1, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA, NA}, {0, 0, 0, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1}},
};
Shape drop(Shape s, int a) { s.erase(s.begin() + a); return s; }
Shape one(Shape s, int a) { s[size_t(a)] = 1; return s; }
}  // namespace

TEST_CASE("nan: the issue's example", "[nan]") {
  Tensor x = Tensor(std::vector<float>{1, NAN, 3, -INFINITY});
  check(x.argmax(), {}, {1});  // was 4: past the end
  check(x.argmin(), {}, {1});
  check(x.max(), {}, {NA});
  check(x.min(), {}, {NA});
  auto [v, i] = x.sort();  // was all NaN
  check(v, {4}, {-INF, 1, 3, NA});
  check(i, {4}, {3, 0, 2, 1});
  auto [vd, id] = x.sort(0, true);
  check(vd, {4}, {NA, 3, 1, -INF});
  check(id, {4}, {1, 2, 0, 3});
}

TEST_CASE("nan: max, min, argmax, argmin along each axis", "[nan][reduce]") {
  for (auto& c : cases) {
    DYNAMIC_SECTION("shape " << tinygrad::to_string(c.s) << " axis " << c.axis) {
      Tensor x = mk(*c.x, c.s);
      check(x.max(c.axis), drop(c.s, c.axis), c.max);
      check(x.min(c.axis, true), one(c.s, c.axis), c.min);
      check(x.argmax(c.axis), drop(c.s, c.axis), c.argmax);
      check(x.argmin(c.axis, true), one(c.s, c.axis), c.argmin);
      check(mk(*c.x, c.s).T().argmax(1 - c.axis), drop(c.s, c.axis), c.argmax);  // a permuted view
    }
  }
  SECTION("all axes, size-1 dims, all-NaN, infinities") {
    check(mk(A, {3, 5}).argmax(), {}, {1});
    check(mk(A, {3, 5}).argmin(nullopt, true), {1, 1}, {1});
    check(mk(E, {5, 3}).max(), {}, {NA});
    check(mk(E, {5, 3}).min({}, true), {1, 1}, {NA});
    Tensor col = mk({NA, 2, NA, -INF}, {4, 1});
    check(col.argmax(0), {1}, {0});
    check(col.argmin(0), {1}, {0});
    check(col.argmax(1), {4}, {0, 0, 0, 0});
    check(col.max(1), {4}, {NA, 2, NA, -INF});
    check(col.min(0, true), {1, 1}, {NA});
    check(mk({NA, NA, NA}, {3}).argmax(), {}, {0});
    check(mk({-INF, INF, INF, -INF}, {4}).argmax(), {}, {1});
    check(mk({-INF, INF, INF, -INF}, {4}).argmin(), {}, {0});
    check(mk(B, {13}).argmax(), {}, {1});
    check(mk(B, {13}).argmin(), {}, {1});
  }
  SECTION("long rows (split reduce): the NaN is found wherever it is") {
    V l(5000, 1.0);
    l[10] = 7;
    check(mk(l, {5000}).argmax(), {}, {10});
    l[3777] = NA;
    l[4000] = NA;
    Tensor x = mk(l, {5000});
    check(x.max(), {}, {NA});
    check(x.min(), {}, {NA});
    check(x.argmax(), {}, {3777});
    check(x.argmin(), {}, {3777});
    check(mk(l, {2, 2500}).argmax(1), {2}, {10, 1277});
  }
  SECTION("float16") {
    Tensor h = mk({1, NA, 3, -INF}, {4}, DType::Float16);
    check(h.argmax(), {}, {1});
    check(h.argmin(), {}, {1});
    check(h.max(), {}, {NA});
    check(mk(A, {3, 5}, DType::Float16).min(1), {3}, {NA, NA, -1});
    CHECK(h.max().dtype() == DType::Float16);
  }
}

TEST_CASE("nan: sort, argsort, topk", "[nan][sort]") {
  for (auto& c : cases) {
    DYNAMIC_SECTION("shape " << tinygrad::to_string(c.s) << " axis " << c.axis) {
      Tensor x = mk(*c.x, c.s);
      auto [v, i] = x.sort(c.axis);
      check(v, c.s, c.sort_v);
      check(i, c.s, c.sort_i);
      auto [vd, id] = x.sort(c.axis, true);
      check(vd, c.s, c.sortd_v);
      check(id, c.s, c.sortd_i);
      check(x.argsort(c.axis - 2, true), c.s, c.sortd_i);
      // topk: torch's values; its order among equal values (NaN ties) is unspecified, ours is the stable sort's
      if (c.axis == 1) {
        int64_t r = c.s[0], n = c.s[1];
        auto [tv, ti] = x.topk(2, 1);
        check(tv, {r, 2}, head(c.sortd_v, r, n, 2));
        check(ti, {r, 2}, head(c.sortd_i, r, n, 2));
        auto [sv, si] = x.topk(2, 1, false);
        check(sv, {r, 2}, head(c.sort_v, r, n, 2));
        check(si, {r, 2}, head(c.sort_i, r, n, 2));
      }
    }
  }
  SECTION("four NaNs, ties, not a power of two") {
    auto [v, i] = mk(B, {13}).sort();
    check(v, {13}, {-INF, -2, -2, 0, 1, 3, 3, 5, INF, NA, NA, NA, NA});
    check(i, {13}, {6, 2, 9, 8, 12, 0, 4, 10, 5, 1, 3, 7, 11});
    auto [vd, id] = mk(B, {13}).sort(-1, true);
    check(vd, {13}, {NA, NA, NA, NA, INF, 5, 3, 3, 1, 0, -2, -2, -INF});
    check(id, {13}, {1, 3, 7, 11, 5, 10, 0, 4, 12, 8, 2, 9, 6});
    check(mk(B, {13}).topk(5).first, {5}, {NA, NA, NA, NA, INF});
    auto [sv, si] = mk(B, {13}).topk(5, 0, false);
    check(sv, {5}, {-INF, -2, -2, 0, 1});
    check(si, {5}, {6, 2, 9, 8, 12});
  }
  SECTION("size-1 dims") {
    Tensor col = mk({NA, 2, NA, -INF}, {4, 1});
    check(col.argsort(0), {4, 1}, {3, 1, 0, 2});
    check(col.argsort(0, true), {4, 1}, {0, 2, 1, 3});
    check(col.sort(1).first, {4, 1}, {NA, 2, NA, -INF});
    check(col.sort(1).second, {4, 1}, {0, 0, 0, 0});
  }
  SECTION("float16") {
    Tensor h = mk({1, NA, 3, -INF}, {4}, DType::Float16);
    auto [v, i] = h.sort();
    check(v, {4}, {-INF, 1, 3, NA});
    check(i, {4}, {3, 0, 2, 1});
    check(h.argsort(0, true), {4}, {1, 2, 0, 3});
  }
}

TEST_CASE("nan: cummax, cummin and their indices", "[nan][scan]") {
  for (auto& c : cases) {
    DYNAMIC_SECTION("shape " << tinygrad::to_string(c.s) << " axis " << c.axis) {
      Tensor x = mk(*c.x, c.s);
      check(x.cummax(c.axis), c.s, c.cummax_v);
      check(x.cummin(c.axis), c.s, c.cummin_v);
      auto [mv, mi] = x.cummax_indices(c.axis);
      check(mv, c.s, c.cummax_v);
      check(mi, c.s, c.cummax_i);
      check(x.cummin_indices(c.axis).second, c.s, c.cummin_i);
    }
  }
  SECTION("1-D, and a long row (two-level scan)") {
    V w(13, NA);
    w[0] = 3;
    check(mk(B, {13}).cummax(), {13}, w);
    check(mk(B, {13}).cummin_indices().second, {13}, {0, 1, 1, 3, 3, 3, 3, 7, 7, 7, 7, 11, 11});
    V l(700, 0.0);
    l[600] = NA;
    l[5] = 9;
    V wm(700, 0.0);
    for (size_t i = 5; i < 700; i++) wm[i] = i < 600 ? 9 : NA;
    check(mk(l, {700}).cummax(), {700}, wm);
    check(mk(l, {700, 1}).cummin(0).shrink({{598, 601}, {0, 1}}), {3, 1}, {0, 0, NA});
  }
}

TEST_CASE("nan: maximum, minimum and clip propagate NaN", "[nan][elementwise]") {
  Tensor x = mk(A, {3, 5}), r = mk({NA, 0, 5, NA, -INF}, {5});
  V mx = {NA, NA, 5, NA, NA, NA, NA, NA, NA, NA, NA, INF, 5, NA, 0};
  V mn = {NA, NA, 3, NA, NA, NA, NA, NA, NA, NA, NA, 0, -1, NA, -INF};
  check(x.maximum(r), {3, 5}, mx);
  check(r.maximum(x), {3, 5}, mx);
  check(x.minimum(r), {3, 5}, mn);
  check(r.minimum(x), {3, 5}, mn);
  // constants are folded before any kernel runs: the folder must agree with the kernels
  Tensor one = Tensor::full({2}, 1.0), nan = Tensor::full({2}, NA);
  check(one.maximum(nan), {2}, {NA, NA});
  check(nan.maximum(one), {2}, {NA, NA});
  check(one.minimum(nan), {2}, {NA, NA});
  check(nan.minimum(1.0), {2}, {NA, NA});
  check(one.clip(0.0, NA), {2}, {NA, NA});
  check(mk({1, NA, 5}, {3}).clip(0.0, 3.0), {3}, {1, NA, 3});
  check(mk({1, NA, 5}, {3}, DType::Float16).maximum(2.0), {3}, {2, NA, 5});
}

// rows of 16 and 8: the CPU kernels take max over whole vectors of lanes (a bitwise select on the comparison mask),
// with NaN, infinities and -0.0 in every lane position of either operand
TEST_CASE("nan: maximum, relu and max over vector lanes, float32 and float64", "[nan][elementwise][reduce]") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    DYNAMIC_SECTION(tinygrad::to_string(dt)) {
      V a, b, mx, relu, colmax(16, -INF);
      for (int i = 0; i < 64; i++) {
        double x = i % 5 == 0 ? NA : i % 7 == 0 ? INF : i % 11 == 0 ? -INF : (i * 37 % 19) - 9.5;
        double y = i % 6 == 0 ? NA : i % 13 == 0 ? -0.0 : (i * 23 % 17) - 8.0;
        a.push_back(x), b.push_back(y);
        mx.push_back(std::isnan(x) || std::isnan(y) ? NA : std::max(x, y));
        relu.push_back(std::isnan(x) ? NA : std::max(x, 0.0));
        colmax[size_t(i % 16)] = std::isnan(colmax[size_t(i % 16)]) || std::isnan(x) ? NA : std::max(colmax[size_t(i % 16)], x);
      }
      Tensor x = mk(a, {4, 16}, dt), y = mk(b, {4, 16}, dt);
      check(x.maximum(y), {4, 16}, mx);
      check(y.maximum(x), {4, 16}, mx);
      check(x.relu(), {4, 16}, relu);
      check(x.max(0), {16}, colmax);
      check(x.reshape({8, 8}).maximum(y.reshape({8, 8})), {8, 8}, mx);
    }
  }
}

TEST_CASE("empty: max and min of an empty dim throw, like torch", "[nan][reduce][empty]") {
  Tensor e = Tensor::zeros({2, 0});
  CHECK_THROWS_AS(Tensor::zeros({0}).max(), tinygrad::IndexError);
  CHECK_THROWS_AS(Tensor::zeros({0}).min(), tinygrad::IndexError);
  CHECK_THROWS_WITH(e.max(1), Catch::Contains("tinygrad::max") && Catch::Contains("dim 1") && Catch::Contains("(2, 0)"));
  CHECK_THROWS_WITH(e.min({}, true), Catch::Contains("tinygrad::min") && Catch::Contains("(2, 0)"));
  CHECK_THROWS_AS(Tensor::zeros({0}, DType::Int32).max(), tinygrad::IndexError);
  CHECK_THROWS_AS(e.argmax(1), tinygrad::IndexError);
  CHECK_THROWS_AS(Tensor::zeros({0}).argmin(), tinygrad::IndexError);
  // a non-empty reduced dim of a tensor with another zero dim: an empty result
  CHECK(e.max(0).shape() == Shape{0});
  CHECK(e.min(0, true).shape() == Shape{1, 0});
  CHECK(Tensor::zeros({0, 3}).max(1).shape() == Shape{0});
  CHECK(e.argmax(0).shape() == Shape{0});
  // the tensor stays usable
  CHECK(e.sum(1).to_vector<float>() == std::vector<float>{0, 0});
  // reductions with an identity still accept empty dims, as in torch
  CHECK_FALSE(Tensor::zeros({0}).any().item<bool>());
  CHECK(Tensor::zeros({0}).all().item<bool>());
  check(e.logsumexp(1), {2}, {-INF, -INF});
  CHECK(e.softmax(1).shape() == Shape{2, 0});
  CHECK(e.log_softmax(1).shape() == Shape{2, 0});
  CHECK(e.cummax(1).shape() == Shape{2, 0});
  CHECK(e.cummin_indices(1).second.shape() == Shape{2, 0});
  CHECK(e.sort(1).first.shape() == Shape{2, 0});
  // setitem / scatter with nothing selected leave the tensor as it was
  Tensor none = Tensor::zeros({0}, DType::Int32);
  Tensor x = Tensor({1.f, 2.f, 3.f});
  x.set({none}, Tensor::ones({0}));
  check(x, {3}, {1, 2, 3});
  check(x.scatter(0, none, Tensor::ones({0})), {3}, {1, 2, 3});
  check(x.scatter_reduce(0, none, Tensor::ones({0}), "amin", false), {3}, {1, 2, 3});
  check(x.scatter_reduce(0, none, Tensor::ones({0}), "mean"), {3}, {1, 2, 3});
}

// torch.nn.functional.max_pool2d(x, (1, 3), stride=1, return_indices=True) and friends, torch 2.x on the CPU:
// a window with NaN gives NaN and the index of its last NaN; a window without gives its first maximum
TEST_CASE("nan: max_pool2d and its indices", "[nan][reduce]") {
  Tensor x = Tensor({1.f, NAN, 3.f, NAN, 2.f, 5.f}).reshape({1, 1, 1, 6});
  auto [v, i] = x.max_pool2d_with_indices({1, 3}, {1, 1});
  check(v, {1, 1, 1, 4}, {NA, NA, NA, NA});
  check(i, {1, 1, 1, 4}, {1, 3, 3, 3});
  auto [v4, i4] = x.max_pool2d_with_indices({1, 4});
  check(v4, {1, 1, 1, 1}, {NA});
  check(i4, {1, 1, 1, 1}, {3});
  // NaN in some windows only, 2-d windows, padding: the others are as before
  Tensor y = Tensor({1.f, 2.f, 9.f, 4.f, NAN, 6.f, 7.f, 8.f, -INFINITY, 0.f, 0.f, 3.f}).reshape({1, 1, 3, 4});
  auto [v2, i2] = y.max_pool2d_with_indices({2, 2}, {1, 2});
  check(v2, {1, 1, 2, 2}, {NA, 9, NA, 8});
  check(i2, {1, 1, 2, 2}, {4, 2, 4, 7});
  auto [v3, i3] = y.max_pool2d_with_indices({3, 3}, {2, 2}, 1);
  check(v3, {1, 1, 2, 2}, {NA, 9, NA, 8});
  check(i3, {1, 1, 2, 2}, {4, 2, 4, 7});
  CHECK(std::isnan(y.max_pool2d({2, 2}).to_vector<float>()[0]));
  // ints: no NaN path
  auto [vi, ii] = Tensor({3, 1, 3, 2}).reshape({1, 1, 1, 4}).max_pool2d_with_indices({1, 4});
  check(vi, {1, 1, 1, 1}, {3});
  check(ii, {1, 1, 1, 1}, {0});
}

// a logit of -inf is a class with probability 0. Values and gradients are PyTorch 2.x's F.cross_entropy on logits
// [[0, -inf, 0]]: without smoothing the loss of label 0 is log 2 (the smoothing term, 0 * -inf, is not there);
// with smoothing it is inf, as torch's formula says; gradients stay finite in every case.
TEST_CASE("nan: cross-entropy with a -inf logit matches torch, with and without label smoothing", "[nan][loss]") {
  const double L2 = std::log(2.0);
  struct Case { const char* name; double ls; bool probs; int label; double loss; V grad; };
  std::vector<Case> cases = {
      {"label 0", 0, false, 0, L2, {-0.5, 0, 0.5}},
      {"label 1 (the -inf one)", 0, false, 1, INF, {0.5, -1, 0.5}},
      {"probabilities [1, 0, 0] (0 * -inf)", 0, true, 0, NA, {-0.5, 0, 0.5}},
      {"label 0, smoothing 0.1", 0.1, false, 0, INF, {-0.4333333333, -0.0333333333, 0.4666666667}},
      {"probabilities, smoothing 0.1", 0.1, true, 0, INF, {-0.4333333333, -0.0333333333, 0.4666666667}},
      {"label 1, smoothing 0.1", 0.1, false, 1, INF, {0.4666666667, -0.9333333333, 0.4666666667}},
      {"label 0, smoothing 1", 1, false, 0, INF, {1.0 / 6, -1.0 / 3, 1.0 / 6}},
      {"label 1, smoothing 1 (0 * inf)", 1, false, 1, NA, {1.0 / 6, -1.0 / 3, 1.0 / 6}},
  };
  auto same = [](double got, double want) {
    return std::isnan(want) ? std::isnan(got) : std::isinf(want) ? got == want : std::abs(got - want) <= 1e-6;
  };
  for (auto& c : cases)
    for (int sparse = 0; sparse < 2; sparse++) {
      if (sparse && c.probs) continue;
      INFO(c.name << (sparse ? " (sparse_categorical_crossentropy)" : " (cross_entropy)"));
      Tensor x = Tensor(V{0, -INF, 0}, {1, 3}).realize().requires_grad_();
      Tensor y = Tensor(std::vector<int32_t>{c.label}, {1});
      Tensor loss = sparse ? x.sparse_categorical_crossentropy(y, -1, c.ls)
                           : x.cross_entropy(c.probs ? Tensor(V{1, 0, 0}, {1, 3}) : y, nullopt, -100, "mean", c.ls);
      loss.backward();
      double l = loss.item<double>();
      CHECK(same(l, c.loss));
      auto g = x.grad()->to_vector<double>();
      for (size_t i = 0; i < 3; i++) { INFO("grad " << i << " = " << g[i]); CHECK(same(g[i], c.grad[i])); }
    }
  // a row without -inf is unchanged; ignore_index drops a row whose label logit is -inf
  Tensor x = Tensor(V{0, -INF, 0, 1, 2, 3}, {2, 3});
  Tensor y = Tensor(std::vector<int32_t>{1, 2}, {2});
  CHECK(x.sparse_categorical_crossentropy(y, 1).item<double>() == Approx(std::log(1 + std::exp(-1.0) + std::exp(-2.0))));
  CHECK(x.cross_entropy(Tensor(std::vector<int32_t>{0, 2}, {2}), nullopt, -100, "none").to_vector<double>()[0] == Approx(L2));
}
