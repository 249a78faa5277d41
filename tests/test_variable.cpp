// Variables (include/tinygrad/tensor/variable.hpp): an integer that kernels take as an argument. Checked against the
// same computation with the value as a plain constant, for values across the range (its ends included), on the
// default device (and on OpenCL through the [cl] tag): the results agree, and after the first value nothing compiles.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include "one_kernel.hpp"
#include <functional>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#endif

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

TEST_CASE("symbolic dims: a GPU kernel launches the workgroups of its dim's extent at each value, not of its bound", "[variable]") {
  Variable n("rows", 1, 4096);
  Tensor big = Tensor::empty({4096, 64});
  Tensor t = (big.shrink({{0, n.bind(100)}, {0, 64}}) * 2 + 1).contiguous();
  std::unordered_map<const tinygrad::UOp*, int> slots;
  int k = 0;
  for (auto& u : tinygrad::detail::toposort(t.uop()))
    if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = k++;
  auto ks = tinygrad::detail::create_schedule({t.uop()}, slots, k).kernels;
  REQUIRE(ks.size() == 1);
  tinygrad::CUDARenderer cuda(true, true);
  tinygrad::OpenCLRenderer cl(true);
  for (tinygrad::Renderer* r : std::initializer_list<tinygrad::Renderer*>{&cuda, &cl}) {
    auto p = tinygrad::detail::to_program(ks[0].ast, *r);
    INFO(p.src << p.launch.str());
    REQUIRE(p.vars.size() == 1);
    REQUIRE(p.launch.varies());
    int64_t all = p.launch.global[0] * p.launch.global[1] * p.launch.global[2], local = p.launch.local[0] * p.launch.local[1] * p.launch.local[2];
    int64_t per = 4096 * 64 / (all * local);  // elements a thread writes (UPCAST)
    for (int64_t v : {1, 7, 100, 1000, 4096}) {
      auto g = p.launch.global_at({v});
      int64_t got = g[0] * g[1] * g[2];
      CHECK(got * local * per >= v * 64);  // every element has a thread
      CHECK(got <= std::max<int64_t>(1, all * v / 4096 + all / 64));  // and not many more workgroups than it needs
    }
    CHECK(p.launch.global_at({4096}) == p.launch.global);
  }
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

// ---- symbolic dims: a shrink by a variable gives a dim whose extent varies; the buffers are at its bound, the kernels
// touch the extent only, and every value runs the same kernels ----

namespace {
using tinygrad::SInt;
// a (rows, cols) float tensor of distinct values, realized
Tensor grid(int64_t rows, int64_t cols, double scale = 0.125) {
  return ((Tensor::arange(double(rows * cols)) * scale).sin() * 4).reshape({rows, cols}).contiguous().realize();
}
void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); i++) CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-5));
}
// run with n bound to each value against run at the value: the same shapes and values, nothing compiled after the first
void check_sym_vs_concrete(const Variable& n, std::initializer_list<int64_t> values,
                           const std::function<std::vector<Tensor>(const SInt&)>& run) {
  for (int64_t v : values) {
    INFO("n = " << v);
    auto got = run(n.bind(v));
    int64_t before = run_stats().kernels_compiled;
    Tensor::realize_all(got);
    if (v != *values.begin()) CHECK(run_stats().kernels_compiled == before);
    auto want = run(v);
    for (size_t i = 0; i < got.size(); i++) {
      INFO("output " << i);
      auto gs = got[i].sym_shape();
      REQUIRE(gs.size() == want[i].ndim());
      for (size_t d = 0; d < gs.size(); d++) CHECK(gs[d].value() == want[i].shape()[d]);
      check_close(got[i].to_vector<float>(), want[i].to_vector<float>());
    }
  }
}
}  // namespace

TEST_CASE("symbolic dims: shapes, sizes and the errors of shapes that do not fit", "[variable]") {
  Variable n("n", 1, 16);
  Tensor x = grid(16, 8);
  Tensor s = x.shrink({{0, n.bind(5)}, {0, 8}});
  CHECK(s.is_symbolic());
  CHECK(s.shape() == tinygrad::Shape{16, 8});  // its bound
  CHECK(s.sym_str() == "(n, 8)");
  CHECK(s.sym_shape()[0].str() == "n");
  CHECK(s.sym_shape()[0].value() == 5);
  CHECK(s.sym_shape()[1] == SInt(8));
  SInt e = SInt(n.bind(5)) + 1;
  CHECK(e.str() == "n+1");
  CHECK(e.min() == 2);
  CHECK(e.max() == 17);
  CHECK(e.value() == 6);
  CHECK((e - SInt(n.bind(5))).is_int());  // n+1-n folds
  CHECK((SInt(n.bind(5)) * 2).max() == 32);
  // a count that varies has no int
  CHECK_THROWS_WITH(s.numel(), Contains("(n, 8) is symbolic"));
  // a range that may leave the dim, or end before it begins
  CHECK_THROWS_WITH(x.shrink({{0, SInt(n.bind(5)) + 1}, {0, 8}}), Contains("the end may pass the dim's size 16 (its max is 17)"));
  CHECK_THROWS_WITH(x.shrink({{n.bind(5), 8}, {0, 8}}), Contains("the end may be before the begin"));
  CHECK_THROWS_AS(x.shrink({{n.bind(5), 8}, {0, 8}}), tinygrad::IndexError);
  // a symbolic dim meets a concrete one, another symbolic one, or a reshape that would merge it
  Variable m("m", 1, 16);
  Tensor t = x.shrink({{0, m.bind(5)}, {0, 8}});
  CHECK_THROWS_WITH(s + x, Contains("cannot be broadcast together (dim 0: n against 16)"));
  CHECK_THROWS_WITH(s + t, Contains("(dim 0: n against m)"));
  CHECK_THROWS_WITH(s.reshape({128}), Contains("a reshape keeps it a dim of its own"));
  CHECK_THROWS_WITH(s.pad({{-1, 0}, {0, 0}}), Contains("tinygrad::pad: dim 0 of (n, 8) is symbolic (n): a negative pad would cut into it"));
  CHECK_THROWS_AS(s.pad({{0, -2}, {0, 0}}), tinygrad::ShapeError);
  CHECK_THROWS_WITH(s.var(0), Contains("symbolic"));
  CHECK_THROWS_AS(s.shrink({{0, 2}, {0, 8}}), tinygrad::IndexError);
  // an unbound variable has no value to run with
  Tensor u = x.shrink({{0, SInt(n)}, {0, 8}});
  CHECK_THROWS_AS(u.sum(0).realize(), tinygrad::Error);
  // the library stays usable
  CHECK(s.sum().item<float>() == Approx(x.shrink({{0, 5}, {0, 8}}).sum().item<float>()));
}

TEST_CASE("symbolic dims: movement, reduces, softmax and matmul over a symbolic dim equal the concrete sizes, one compile",
          "[variable][cl]") {
  Variable n("n", 1, 24);
  Tensor x = grid(24, 8), w = grid(8, 6, 0.3), q = grid(3, 8, 0.7);
  auto run = [&](const SInt& len) {
    Tensor s = x.shrink({{0, len}, {0, 8}});  // (n, 8): rows 0..n
    Tensor r = s.reshape({SInt(1), len, SInt(8)});
    Tensor k = s * 0.5 + 1;
    return std::vector<Tensor>{
        s.contiguous(),                             // a copy of the rows
        s.sum(0),                                   // a reduce over the symbolic dim
        s.max(0),                                   // its max
        s.sum(1),                                   // a reduce beside it: (n,)
        s.mean(0),                                  // divided by n
        q.matmul(s.transpose()).softmax(-1),        // (3, n): attention scores over the prefix
        q.matmul(k.transpose()).softmax(-1).matmul(k),  // (3, 8): the symbolic dim is the matmul's inner dim
        s.matmul(w).relu(),                         // (n, 6): the symbolic dim is the outer dim
        r.permute({2, 0, 1}).sum(2),               // a reshape and a permute keep it
        s.exp().sum(0, true) / s.shrink({{0, len}, {0, 1}}).sum()};
  };
  check_sym_vs_concrete(n, {1, 2, 7, 23, 24}, run);
}

TEST_CASE("symbolic dims: a jitted decode step attends over a cache prefix of symbolic length: one capture, 200 steps",
          "[variable][jit][cl]") {
  // a cache of L positions, H heads of width D; step p writes its key/value at p and attends over positions 0..p
  constexpr int64_t L = 208, H = 2, D = 8, STEPS = 200;
  Variable pos("dec_pos", 0, L - 1);
  auto kv_of = [](int64_t p, int64_t salt) {
    std::vector<float> r(H * D);
    for (int64_t i = 0; i < H * D; i++) r[size_t(i)] = float(((p + 3) * (i + salt) * 37) % 17) / 8.0f - 1.0f;
    return r;
  };
  auto attend = [](const Tensor& q, const Tensor& k, const Tensor& v) {  // q (H, 1, D), k and v (H, n, D)
    return (q.matmul(k.transpose(-1, -2)) / std::sqrt(double(D))).softmax(-1).matmul(v).reshape({H * D});
  };
  auto step_fn = [&](Tensor& kc, Tensor& vc, const Tensor& q, const Tensor& k, const Tensor& v, const BoundVariable& p) {
    SInt n = SInt(p) + 1;
    kc.shrink({{0, H}, {p, n}, {0, D}}).assign(k.reshape({H, 1, D}));  // the KV-cache update: writes the row in place
    vc.shrink({{0, H}, {p, n}, {0, D}}).assign(v.reshape({H, 1, D}));
    return attend(q.reshape({H, 1, D}), kc.shrink({{0, H}, {0, n}, {0, D}}), vc.shrink({{0, H}, {0, n}, {0, D}}));
  };
  Tensor kc = Tensor::zeros({H, L, D}).contiguous().realize(), vc = Tensor::zeros({H, L, D}).contiguous().realize();
  TinyJit step([&](const Tensor& q, const Tensor& k, const Tensor& v, const BoundVariable& p) { return step_fn(kc, vc, q, k, v, p); },
               "sym_decode");
  std::vector<float> keys, vals;  // the reference: concrete shapes, no jit
  for (int64_t p = 0; p < STEPS; p++) {
    auto q = kv_of(p, 1), k = kv_of(p, 2), v = kv_of(p, 3);
    Tensor tq = Tensor(q, {H * D}).realize(), tk = Tensor(k, {H * D}).realize(), tv = Tensor(v, {H * D}).realize();
    int64_t before = run_stats().kernels_compiled;
    Tensor got = step(tq, tk, tv, pos.bind(p));
    if (p > 1) CHECK(run_stats().kernels_compiled == before);  // captured at the second call; nothing compiles after
    keys.insert(keys.end(), k.begin(), k.end());
    vals.insert(vals.end(), v.begin(), v.end());
    if (p % 37 != 0 && p != STEPS - 1) continue;
    auto cache = [&](const std::vector<float>& rows) {  // (p+1, H, D) -> (H, p+1, D)
      return Tensor(rows, {p + 1, H, D}).permute({1, 0, 2});
    };
    auto want = attend(Tensor(q, {H, 1, D}), cache(keys), cache(vals)).to_vector<float>();
    INFO("pos = " << p);
    check_close(got.to_vector<float>(), want);
  }
  CHECK(step.captured());
}

TEST_CASE("assign into a view writes the buffer in place: concrete and symbolic views, one kernel for every position",
          "[variable][cl]") {
  auto iota = [](int64_t r, int64_t c) {
    std::vector<float> v(size_t(r * c));
    for (size_t i = 0; i < v.size(); i++) v[i] = float(i);
    return v;
  };
  SECTION("a window of a matrix, a transposed window, and a value that reads the buffer it overwrites") {
    Tensor x = Tensor(iota(4, 6), {4, 6}).contiguous().realize();
    Tensor other = x;  // another handle of the same tensor
    std::vector<float> want = iota(4, 6);
    x.shrink({{1, 3}, {2, 5}}).assign(Tensor::full({2, 3}, 7.0));
    for (int r = 1; r < 3; r++) for (int c = 2; c < 5; c++) want[size_t(r * 6 + c)] = 7;
    CHECK(other.to_vector<float>() == want);
    x.transpose().shrink({{0, 2}, {0, 1}}).assign(Tensor(std::vector<float>{-1, -2}, {2, 1}));  // x[0, 0:2]
    want[0] = -1; want[1] = -2;
    CHECK(x.to_vector<float>() == want);
    x.shrink({{0, 2}, {0, 6}}).assign(x.shrink({{2, 4}, {0, 6}}) * 2);  // rows 0..1 = 2 * rows 2..3
    for (int i = 0; i < 12; i++) want[size_t(i)] = 2 * want[size_t(12 + i)];
    CHECK(x.to_vector<float>() == want);
    x.reshape({24}).shrink({{23, 24}}).assign(Tensor(std::vector<float>{100}, {1}));
    want[23] = 100;
    CHECK(other.to_vector<float>() == want);
  }
  SECTION("the errors: a broadcast or padded view, a shape that differs") {
    Tensor x = Tensor::zeros({4, 6}).contiguous().realize();
    CHECK_THROWS_WITH(x.shrink({{0, 1}, {0, 6}}).expand({3, 6}).assign(Tensor::ones({3, 6})), Contains("EXPAND view"));
    CHECK_THROWS_WITH(x.pad({{1, 0}, {0, 0}}).assign(Tensor::ones({5, 6})), Contains("PAD view"));
    CHECK_THROWS_AS(x.shrink({{0, 2}, {0, 6}}).assign(Tensor::ones({3, 6})), tinygrad::ShapeError);
    CHECK(x.to_vector<float>() == std::vector<float>(24, 0.0f));  // untouched, still usable
  }
  SECTION("a KV-cache row at a symbolic position, and a chunk of symbolic length at it") {
    constexpr int64_t H = 2, L = 40, D = 4;
    Variable pos("asg_pos", 0, L - 1), len("asg_len", 1, 8);
    Tensor cache = Tensor::zeros({H, L, D}).contiguous().realize();
    std::vector<float> want(size_t(H * L * D), 0.0f);
    int64_t before = 0;
    for (int64_t p : {0, 1, 5, 17, 38, 39}) {
      std::vector<float> row(size_t(H * D));
      for (size_t i = 0; i < row.size(); i++) row[i] = float(p * 10 + int64_t(i));
      auto bp = pos.bind(p);
      cache.shrink({{0, H}, {bp, SInt(bp) + 1}, {0, D}}).assign(Tensor(row, {H, 1, D}));
      if (p == 1) before = run_stats().kernels_compiled;
      if (p > 1) CHECK(run_stats().kernels_compiled == before);
      for (int64_t h = 0; h < H; h++) for (int64_t d = 0; d < D; d++) want[size_t((h * L + p) * D + d)] = row[size_t(h * D + d)];
      CHECK(cache.to_vector<float>() == want);
    }
    Variable at("asg_at", 0, L - 8);  // a chunk of up to 8 rows starts at L - 8 at most (the end must stay in the cache)
    Tensor src = Tensor(iota(H * 8, D), {H, 8, D}).realize();
    for (auto [p, n] : std::vector<std::pair<int64_t, int64_t>>{{3, 1}, {9, 8}, {32, 8}, {30, 5}}) {
      auto bp = at.bind(p), bn = len.bind(n);
      Tensor chunk = src.shrink({{0, H}, {0, bn}, {0, D}}) + 1000;
      cache.shrink({{0, H}, {bp, SInt(bp) + bn}, {0, D}}).assign(chunk);
      for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < n; i++)
          for (int64_t d = 0; d < D; d++) want[size_t((h * L + p + i) * D + d)] = float((h * 8 + i) * D + d) + 1000;
      INFO("p = " << p << ", n = " << n);
      CHECK(cache.to_vector<float>() == want);
    }
  }
}

TEST_CASE("symbolic dims: TinyJit takes arguments of symbolic shape and replays one capture for every size", "[variable][jit][cl]") {
  // a batch of n rows, 1 <= n <= 48: a linear layer, softmax over the features, and a mean over the batch
  constexpr int64_t F = 16, O = 8, MAXN = 48;
  Variable n("jit_rows", 1, MAXN);
  Tensor w = grid(F, O, 0.37);
  auto f = [&](const Tensor& x) { return std::vector<Tensor>{(x.matmul(w).relu() + 0.5).softmax(-1), x.mean(0)}; };
  TinyJit step([&](const Tensor& x) { auto r = f(x); return std::tuple{r[0], r[1]}; }, "sym_args");
  Tensor big = grid(MAXN, F, 0.21);  // a buffer of the bound's size, viewed by a shrink
  int64_t calls = 0;
  for (int64_t rows : {3, 7, 1, 48, 20, 5, 33, 1, 12}) {
    for (bool view : {false, true}) {
      INFO("rows = " << rows << (view ? ", a shrink of a bigger buffer" : ", a concrete tensor named symbolic"));
      Tensor x = view ? big.shrink({{0, n.bind(rows)}, {0, F}}) : grid(rows, F, 0.29 + double(rows)).reshape({n.bind(rows), F});
      Tensor xc = view ? big.shrink({{0, rows}, {0, F}}) : grid(rows, F, 0.29 + double(rows));
      int64_t before = run_stats().kernels_compiled;
      auto [y, m] = step(x);
      if (++calls > 2) CHECK(run_stats().kernels_compiled == before);  // captured at the second call: nothing compiles after
      REQUIRE(y.sym_shape()[0].value() == rows);
      CHECK(y.sym_shape()[0].str() == "jit_rows");
      auto want = f(xc);
      check_close(y.to_vector<float>(), want[0].to_vector<float>());
      check_close(m.to_vector<float>(), want[1].to_vector<float>());
    }
  }
  CHECK(step.captured());
  // the capture is for n: a concrete argument, another variable or other concrete dims are errors naming both shapes
  Variable other("jit_other", 1, MAXN);
  CHECK_THROWS_WITH(step(grid(5, F)), Contains("captured with dtypes.float32 (jit_rows, 16)"));
  CHECK_THROWS_AS(step(grid(5, F).reshape({other.bind(5), F})), tinygrad::JitError);
  // naming dims: only the outermost can vary, at the tensor's own extent
  CHECK_THROWS_WITH(grid(5, F).reshape({n.bind(6), F}), Contains("dim 0 is 5, the size asked is 6"));
  CHECK_THROWS_WITH(grid(5, F).reshape({5, Variable("cols", 1, 32).bind(F)}), Contains("only the outermost dim"));
}

TEST_CASE("symbolic dims: large matmuls with a symbolic outer or inner dim (GPU tiles) equal the concrete ones", "[variable][cl]") {
  constexpr int64_t B = 1024, K = 512;
  Variable n("mm_n", 1, B);
  Tensor a = grid(B, K, 0.011), w = grid(K, K, 0.017), bt = grid(K, B, 0.013), w2 = grid(B, K, 0.019);
  for (int64_t v : {1, 77, 600, 1024}) {
    INFO("n = " << v);
    Tensor outer = a.shrink({{0, n.bind(v)}, {0, K}}).matmul(w);
    Tensor inner = bt.shrink({{0, K}, {0, n.bind(v)}}).matmul(w2.shrink({{0, n.bind(v)}, {0, K}}));
    auto want_o = a.shrink({{0, v}, {0, K}}).matmul(w).to_vector<float>(), got_o = outer.to_vector<float>();
    auto want_i = bt.shrink({{0, K}, {0, v}}).matmul(w2.shrink({{0, v}, {0, K}})).to_vector<float>(), got_i = inner.to_vector<float>();
    REQUIRE(got_o.size() == want_o.size());
    REQUIRE(got_i.size() == want_i.size());
    for (size_t i = 0; i < got_o.size(); i += 7) CHECK(got_o[i] == Approx(want_o[i]).epsilon(1e-4).margin(1e-3));
    for (size_t i = 0; i < got_i.size(); i += 7) CHECK(got_i[i] == Approx(want_i[i]).epsilon(1e-4).margin(1e-3));
  }
  // a symbolic column dim (an attention's keys), and bounds of no tile's multiple: the GPU tiles cover the bound, their
  // copies past the extent read nothing and their stores past it are gated (a row of a symbolic length is written
  // before the next: a store past the extent would land in the next row)
  Variable c("mm_c", 1, 999);
  Tensor wc = grid(K, 999, 0.023), ac = grid(999, K, 0.029), bc = grid(K, 999, 0.031);
  for (int64_t v : {1, 77, 600, 999}) {
    INFO("c = " << v);
    Tensor cols = a.matmul(wc.shrink({{0, K}, {0, c.bind(v)}})) * 0.5, rows = ac.shrink({{0, c.bind(v)}, {0, K}}).matmul(w);
    Tensor inner = bc.shrink({{0, K}, {0, c.bind(v)}}).matmul(ac.shrink({{0, c.bind(v)}, {0, K}}));
    std::pair<Tensor, Tensor> sides[] = {{cols, a.matmul(wc.shrink({{0, K}, {0, v}})) * 0.5},
                                         {rows, ac.shrink({{0, v}, {0, K}}).matmul(w)},
                                         {inner, bc.shrink({{0, K}, {0, v}}).matmul(ac.shrink({{0, v}, {0, K}}))}};
    for (auto& [got_t, want_t] : sides) {
      auto got = got_t.to_vector<float>(), want = want_t.to_vector<float>();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); i += 37) CHECK(got[i] == Approx(want[i]).epsilon(1e-4).margin(1e-3));
    }
  }
  // on CUDA the three take TILE (NVRTC where there is one: the tiles compile)
  tinygrad::CUDARenderer cuda(true, true);
  for (const Tensor& t : {a.matmul(wc.shrink({{0, K}, {0, c.bind(5)}})), ac.shrink({{0, c.bind(5)}, {0, K}}).matmul(w),
                          bc.shrink({{0, K}, {0, c.bind(5)}}).matmul(ac.shrink({{0, c.bind(5)}, {0, K}}))}) {
    auto ks = kernels_of(t);
    REQUIRE(ks.size() == 1);
    auto p = tinygrad::detail::to_program(ks[0].ast, cuda);
    bool tiled = false;
    for (auto& o : p.opts) tiled |= o.op == tinygrad::OptOp::TILE;
    CHECK(tiled);
    if (tinygrad::detail::nvrtc()) CHECK_THAT(tinygrad::detail::NVRTCCompiler("compute_80").compile(p.src), Contains("cp.async"));
  }
}

TEST_CASE("symbolic creation: zeros, ones, full, empty and arange of symbolic sizes equal the concrete sizes, one compile",
          "[variable][cl]") {
  Variable n("cr_n", 1, 16);
  Tensor x = grid(16, 8);
  // an init list of ints is still the concrete shape
  CHECK(Tensor::zeros({2, 3}).shape() == tinygrad::Shape{2, 3});
  CHECK(!Tensor::ones({2, 3}, DType::Int32).is_symbolic());
  CHECK(Tensor::full({}, 4.0).item<float>() == 4.0f);
  Tensor z = Tensor::zeros({n, 8});  // unbound: a shape, no value to run with
  CHECK(z.sym_str() == "(cr_n, 8)");
  CHECK(z.shape() == tinygrad::Shape{16, 8});  // its bound
  Tensor e = Tensor::empty({n.bind(3), 4}, DType::Int32);
  CHECK(e.sym_str() == "(cr_n, 4)");
  CHECK(e.buffer()->size == 64);  // allocated at the bound
  CHECK(Tensor::arange(n.bind(3)).sym_str() == "(cr_n,)");
  CHECK(Tensor::arange(SInt(n.bind(3)) + 2).dtype() == DType::Int32);
  auto run = [&](const SInt& len) {
    Tensor s = x.shrink({{0, len}, {0, 8}});
    return std::vector<Tensor>{
        Tensor::zeros({len, 8}) + s,                                         // broadcasts with a shrink of the same extent
        Tensor::full(std::vector<SInt>{len, 8}, 2.5) * s,                    // a vector of SInts
        Tensor::ones({len + 1}).sum().reshape({1}),                          // a count of the extent
        Tensor::ones(s.sym_shape(), DType::Int32).sum(0).cast(DType::Float32),
        Tensor::arange(len).cast(DType::Float32),                            // 0..n-1
        (Tensor::arange(len).reshape({len, SInt(1)}).cast(DType::Float32) * s).sum(0),
        Tensor::arange(3, len + 5, 2).cast(DType::Float32),                  // 3, 5, ... below n+5
        Tensor::arange(len, 20, 3).cast(DType::Float32),                     // a symbolic start
        Tensor::arange(len + 4, 2, -2).cast(DType::Float32)};                // a negative step
  };
  check_sym_vs_concrete(n, {1, 2, 9, 16}, run);
  // an extent that may be negative, a step of 0
  CHECK_THROWS_WITH(Tensor::zeros({SInt(n.bind(3)) - 2, 4}), Contains("tinygrad::full: dim 0 (cr_n+-2) may be negative (its range is [-1, 14])"));
  CHECK_THROWS_WITH(Tensor::arange(0, n.bind(3), 0), Contains("step must not be 0"));
}

TEST_CASE("symbolic dims: pad and flip of a symbolic dim equal the concrete ops, zeros past the extent, one compile", "[variable][cl]") {
  Variable n("pf_n", 1, 24);
  Tensor x = grid(24, 8);
  auto run = [&](const SInt& len) {
    Tensor s = x.shrink({{0, len}, {0, 8}});
    return std::vector<Tensor>{
        s.pad({{1, 2}, {0, 0}}).contiguous(),        // (n+3, 8): zeros in rows 0 and n+1, n+2 (past n, below the bound)
        s.pad({{2, 0}, {1, 3}}, 1.5),                // another value, and a concrete dim padded beside
        s.pad({{0, 3}, {0, 0}}).sum(0),              // a reduce over the padded dim
        s.flip(0).contiguous(),                      // row i is row n-1-i
        s.flip({0, 1}) * 2,
        s.flip(0).pad({{1, 1}, {0, 0}}).flip(0).sum(1),
        (s.flip(0) * Tensor::arange(len).reshape({len, SInt(1)}).cast(DType::Float32)).sum(0),
        s.pad({{1, 0}, {0, 0}}).flip(0).reshape({SInt(1), len + 1, SInt(8)}).max(1)};
  };
  check_sym_vs_concrete(n, {1, 2, 7, 23, 24}, run);
  Tensor p = x.shrink({{0, n.bind(5)}, {0, 8}}).pad({{1, 2}, {0, 0}});
  CHECK(p.sym_str() == "(pf_n+3, 8)");
  CHECK(p.shape() == tinygrad::Shape{27, 8});
}

TEST_CASE("symbolic dims: gradients through symbolic shapes equal the concrete sizes' gradients, the backward compiled once",
          "[variable][gradient][cl]") {
  Variable n("gr_n", 1, 24);
  Tensor x = grid(24, 8).requires_grad_(), w = grid(8, 6, 0.3).requires_grad_(), q = grid(3, 8, 0.7).requires_grad_();
  auto loss = [&](const SInt& len) {
    Tensor s = x.shrink({{0, len}, {0, 8}}) * 0.25;  // shrink -> pad back to x's rows: x's gradient is concrete
    Tensor att = (q * 0.25).matmul(s.transpose()).softmax(-1);  // (3, n): a softmax over the symbolic dim, n the outer dim
    Tensor v = s.matmul(w * 0.25);                               // (n, 6): n the outer dim
    return att.matmul(v).square().sum() +                        // n the inner dim of a matmul
           s.pad({{1, 2}, {0, 0}}).flip(0).exp().sum(0).mean() * 0.1 +
           s.reshape({SInt(1), len, SInt(8)}).permute({2, 0, 1}).max(2).sum() + (s * s.mean(0)).sum() +
           (Tensor::ones({len, 1}).matmul(q.sum(0).reshape({1, 8})) * s).sum() * 0.01;
  };
  auto grads = [&](const Tensor& l) {
    for (Tensor* t : {&x, &w, &q}) t->zero_grad();
    Tensor lc = l;
    lc.backward();
    std::vector<Tensor> g{*x.grad(), *w.grad(), *q.grad(), l};
    Tensor::realize_all(g);
    return g;
  };
  for (int64_t v : {1, 3, 12, 24}) {
    INFO("n = " << v);
    Tensor l = loss(n.bind(v));
    int64_t before = run_stats().kernels_compiled;
    auto got = grads(l);
    if (v > 1) CHECK(run_stats().kernels_compiled == before);  // forward and backward: one compile for the range
    auto want = grads(loss(v));
    for (size_t i = 0; i < got.size(); i++) {
      INFO("gradient " << i);
      CHECK(!got[i].is_symbolic());
      CHECK(got[i].shape() == want[i].shape());
      check_close(got[i].to_vector<float>(), want[i].to_vector<float>());
    }
  }
}

#if defined(__unix__) || defined(__APPLE__)
namespace {
// n floats that end where an inaccessible page begins: a kernel that reads one element past them faults
struct GuardedFloats {
  size_t len = 0;
  void* map = nullptr;
  float* data = nullptr;
  explicit GuardedFloats(size_t n) {
    size_t page = size_t(sysconf(_SC_PAGESIZE)), bytes = n * sizeof(float);
    len = (bytes + page - 1) / page * page + page;
    map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED);
    REQUIRE(mprotect(static_cast<char*>(map) + len - page, page, PROT_NONE) == 0);
    data = reinterpret_cast<float*>(static_cast<char*>(map) + len - page - bytes);
  }
  ~GuardedFloats() { munmap(map, len); }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
};
}  // namespace

TEST_CASE("symbolic dims: kernels read nothing past a symbolic dim's extent (a buffer of the values' rows before a guard page)",
          "[variable][static]") {
  // a static plan and a symbolic view pass the user's buffer of exactly the values' rows to kernels compiled for the
  // bound: the lanes of a split's last group (UPCAST, UNROLL, VECTOR) past the extent keep their loads gated there
  using tinygrad::dyn;
  using tinygrad::static_tensor;
  constexpr int64_t F = 36, O = 10;
  Variable n("guard_rows", 1, 64);
  const std::string dev = tinygrad::host_device();  // (from_blob's: host memory)
  Tensor w = grid(F, O, 0.31).to(dev);
  static_tensor<float, F, O> sw(w);
  for (int64_t rows : {1, 2, 3, 5, 7, 9, 31, 33, 64}) {
    INFO("rows = " << rows);
    auto want = grid(rows, F, 0.23 + double(rows)).to_vector<float>();
    GuardedFloats mat{size_t(rows * F)}, vec{size_t(rows)};
    std::copy(want.begin(), want.end(), mat.data);
    std::copy(want.begin(), want.begin() + rows, vec.data);
    Tensor x = Tensor::from_blob(mat.data, {rows, F}, DType::Float32), v = Tensor::from_blob(vec.data, {rows}, DType::Float32);
    Tensor xc = Tensor(want).reshape({rows, F}).to(dev), vc = Tensor(std::vector<float>(want.begin(), want.begin() + rows)).to(dev);
    // static plans (one for every rows): a matmul, a reduce over the rows, a 1-d elementwise and its sum
    static_tensor<float, dyn, F> sx(x);
    static_tensor<float, dyn> sv(v);
    static_tensor<float, dyn, O> y = (sx.matmul(sw) + 1.0f).relu();
    static_tensor<float, F> s = sx.sum<0>();
    static_tensor<float, dyn> e = sv * 2.0f + 1.0f;
    static_tensor<float> t = sv.sum<>();
    check_close(Tensor(y).to_vector<float>(), (xc.matmul(w) + 1.0f).relu().to_vector<float>());
    check_close(Tensor(s).to_vector<float>(), xc.sum(0).to_vector<float>());
    check_close(Tensor(e).to_vector<float>(), (vc * 2.0f + 1.0f).to_vector<float>());
    check_close(Tensor(t).to_vector<float>(), vc.sum().to_vector<float>());
    // symbolic views of the same buffers: a softmax over the rows, a matmul, a 1-d cumulative sum
    Tensor xs = x.reshape({n.bind(rows), F}), vs = v.reshape({n.bind(rows)});
    check_close(xs.softmax(0).matmul(w).to_vector<float>(), xc.softmax(0).matmul(w).to_vector<float>());
    check_close((vs * vs).sum().to_vector<float>(), (vc * vc).sum().to_vector<float>());
  }
}
#endif
