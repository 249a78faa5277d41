// Variables (include/tinygrad/tensor/variable.hpp): an integer that kernels take as an argument. Checked against the
// same computation with the value as a plain constant, for values across the range (its ends included), on the
// default device (and on OpenCL through the [cl] tag): the results agree, and after the first value nothing compiles.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

using Catch::Matchers::Contains;
using tinygrad::BoundVariable;
using tinygrad::DType;
using tinygrad::Tensor;
using tinygrad::TinyJit;
using tinygrad::Variable;
using tinygrad::run_stats;

namespace {
std::vector<float> host(const Tensor& t) { return t.cast(DType::Float32).to_vector<float>(); }
}  // namespace

TEST_CASE("variable: names and ranges are checked, and a value outside its range is an error naming both", "[variable]") {
  Variable n("n", 1, 64);
  CHECK(n.name() == "n");
  CHECK(n.min() == 1);
  CHECK(n.max() == 64);
  CHECK(n.bind(1).value() == 1);
  CHECK(n.bind(64).value() == 64);
  CHECK_THROWS_WITH(n.bind(65), "tinygrad::Variable::bind: n = 65 is outside [1, 64]");
  CHECK_THROWS_WITH(n.bind(0), "tinygrad::Variable::bind: n = 0 is outside [1, 64]");
  CHECK_THROWS_AS(Variable("n", 5, 4), tinygrad::VariableError);
  CHECK_THROWS_WITH(Variable("n", 0, int64_t(1) << 40), Contains("leaves int32"));
  CHECK_THROWS_WITH(Variable("2n", 0, 4), Contains("no C identifier"));
  CHECK_THROWS_WITH(Variable("a-b", 0, 4), Contains("no C identifier"));
  CHECK_THROWS_WITH(Variable("", 0, 4), Contains("no C identifier"));
  // the same name and range is the same variable; another range is another
  CHECK(Variable("n", 1, 64) == n);
  CHECK(!(Variable("n", 1, 65) == n));
  // the library stays usable after the errors
  CHECK(Tensor(n.bind(7)).item<int>() == 7);
}

TEST_CASE("variable: elementwise, masks, reduces and matmul with a bound value equal the constant's, one kernel for all values",
          "[variable][cl]") {
  Variable pos("pos", 0, 47);
  Tensor x = Tensor::arange(48).cast(DType::Float32).reshape({6, 8}).contiguous().realize();
  Tensor w = (Tensor::arange(8 * 5).cast(DType::Float32).reshape({8, 5}) * 0.25).contiguous().realize();
  // the computations, from the position as a tensor (a bound variable, or the plain constant to compare with)
  auto run = [&](const Tensor& p) {
    Tensor idx = Tensor::arange(48).reshape({6, 8});
    Tensor seen = idx <= p;  // the prefix 0..p
    Tensor masked = seen.where(x, 0.0);
    return std::vector<Tensor>{masked.sum(), (x * p.cast(DType::Float32) + 1).max(1), masked.matmul(w), seen.cast(DType::Int32).sum(0),
                               (idx == p).where(-x, x).sum(1)};
  };
  int64_t compiled = -1;
  for (int64_t v : {0, 1, 17, 46, 47}) {
    INFO("pos = " << v);
    auto got = run(Tensor(pos.bind(v)));
    Tensor::realize_all(got);
    if (compiled >= 0) CHECK(run_stats().kernels_compiled == compiled);  // the first value compiles; no other does
    // the same with the value in a buffer (its kernels are compiled once too)
    auto want = run(Tensor(std::vector<int32_t>{int32_t(v)}, {}));
    for (size_t i = 0; i < got.size(); i++) {
      CHECK(got[i].shape() == want[i].shape());
      CHECK(host(got[i]) == host(want[i]));
    }
    compiled = run_stats().kernels_compiled;
  }
}

TEST_CASE("variable: the kernel takes the value as an argument on C, CUDA and OpenCL, and folds with the range", "[variable]") {
  Variable pos("pos", 0, 63);
  auto kernels_of = [](const Tensor& t) {
    std::unordered_map<const tinygrad::UOp*, int> slots;
    int n = 0;
    for (auto& u : tinygrad::detail::toposort(t.uop()))
      if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
    return tinygrad::detail::create_schedule({t.uop()}, slots, n).kernels;
  };
  Tensor t = (Tensor::arange(64) < Tensor(pos.bind(5)) + 1).cast(DType::Float32).sum();
  auto ks = kernels_of(t);
  REQUIRE(ks.size() == 1);
  tinygrad::CRenderer c(1);
  tinygrad::CUDARenderer cuda(true, true);
  tinygrad::OpenCLRenderer cl(true);
  for (tinygrad::Renderer* r : std::initializer_list<tinygrad::Renderer*>{&c, &cuda, &cl}) {
    auto p = tinygrad::detail::to_program(ks[0].ast, *r);
    INFO(p.src);
    REQUIRE(p.vars.size() == 1);
    CHECK(tinygrad::detail::var_name(*p.vars[0]) == "pos");
    CHECK_THAT(p.src, Contains("var_pos"));
  }
  CHECK_THAT(tinygrad::detail::to_program(ks[0].ast, cuda).src, Contains("(const int var_pos, "));
  CHECK_THAT(tinygrad::detail::to_program(ks[0].ast, c).src, Contains("const int var_pos = (int)vals[0];"));
  // a comparison the range decides folds away: the kernel does not read the variable at all
  auto folded = kernels_of((Tensor(pos.bind(5)) < 64).where(1.0f, 2.0f).contiguous());
  REQUIRE(folded.size() == 1);
  CHECK(tinygrad::detail::to_program(folded[0].ast, c).vars.empty());
  CHECK((Tensor(pos.bind(5)) < 64).where(1.0f, 2.0f).item<float>() == 1.0f);
}

TEST_CASE("variable: two values of one variable in one graph are an error, two variables are two arguments", "[variable][cl]") {
  Variable a("a", 0, 9), b("b", 0, 9), a20("a", 0, 20);  // a20: another variable of the same name
  CHECK((Tensor(a.bind(3)) * 100 + Tensor(a20.bind(17))).item<int>() == 317);
  CHECK_THROWS_WITH((Tensor(a.bind(2)) + Tensor(a.bind(3))).item<int>(), Contains("binds a to 2 and to 3"));
  for (auto [x, y] : {std::pair{2, 7}, std::pair{9, 0}, std::pair{4, 4}}) {
    Tensor t = Tensor::arange(10);
    int got = ((t >= Tensor(a.bind(x))) * (t <= Tensor(b.bind(y)))).cast(DType::Int32).sum().item<int>();
    CHECK(got == std::max(0, y - x + 1));
  }
}

TEST_CASE("variable: a TinyJit step with a variable argument is captured once and replays every value", "[variable][jit][cl]") {
  // decode-style: a cache of 32 positions; step p writes position p and averages positions 0..p (masked)
  constexpr int64_t L = 32, D = 4;
  Variable pos("step_pos", 0, L - 1);
  auto step_fn = [](Tensor cache, const Tensor& row, const BoundVariable& p) {
    Tensor at = Tensor::arange(L).reshape({L, 1});
    Tensor now = (at == Tensor(p)).where(row.reshape({1, D}).expand({L, D}), cache);
    cache.assign(now);
    Tensor seen = (at <= Tensor(p)).cast(DType::Float32);
    return (now * seen).sum(0) / seen.sum();
  };
  Tensor cache = Tensor::zeros({L, D}).contiguous().realize();
  TinyJit step([&](const Tensor& row, const BoundVariable& p) { return step_fn(cache, row, p); }, "decode");
  std::vector<std::vector<float>> rows;
  std::vector<float> sum(D, 0);
  int64_t compiled = 0;
  for (int64_t p = 0; p < L; p++) {
    std::vector<float> r(D);
    for (int64_t d = 0; d < D; d++) r[size_t(d)] = float((p * 7 + d * 3) % 11) - 5.0f;
    Tensor got = step(Tensor(r, {D}).realize(), pos.bind(p));
    for (int64_t d = 0; d < D; d++) sum[size_t(d)] += r[size_t(d)];
    auto g = got.to_vector<float>();
    for (int64_t d = 0; d < D; d++) CHECK(g[size_t(d)] == Approx(sum[size_t(d)] / float(p + 1)));
    if (p == 2) compiled = run_stats().kernels_compiled;
    if (p > 2) CHECK(run_stats().kernels_compiled == compiled);
  }
  CHECK(step.captured());
  // the cache holds every row
  auto c = cache.to_vector<float>();
  CHECK(c[size_t((L - 1) * D)] == float(((L - 1) * 7) % 11) - 5.0f);
  // another variable, or none, is not what was captured
  Variable other("other", 0, L - 1);
  CHECK_THROWS_AS(step(Tensor::zeros({D}).realize(), other.bind(1)), tinygrad::JitError);
}
