// Movement and indexing methods (tensor/movement.hpp) against plain-loop references, in several layouts,
// with float64 finite-difference gradients and every error path.
#include "api_shape_ref.hpp"

using namespace api_ref;
using tinygrad::Ellipsis;
using tinygrad::NewAxis;
using tinygrad::Slice;
using tinygrad::Tensor;
using tinygrad::TensorIndex;
using std::nullopt;

namespace {
using Pads = std::vector<std::pair<int64_t, int64_t>>;
int64_t wrap(int64_t i, int64_t n) { return ((i % n) + n) % n; }
// a 1-D tensor (Tensor({x}) with one element is 0-d)
template <class V>
Tensor vec(std::initializer_list<V> v) { return Tensor(std::vector<V>(v), {int64_t(v.size())}); }
}  // namespace

TEST_CASE("api: view, unflatten", "[api][api_shape][cl]") {
  Arr a = rnd({2, 3, 4});
  for (auto& t : layouts(a)) {
    check(t.view({6, 4}), Arr{{6, 4}, a.v});
    check(t.unflatten(2, {2, -1}), Arr{{2, 3, 2, 2}, a.v});
    check(t.unflatten(-3, {1, 2}), Arr{{1, 2, 3, 4}, a.v});
  }
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).unflatten(1, {2, 2}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).unflatten(2, {3}), IndexError);
}

TEST_CASE("api: pad modes", "[api][api_shape]") {
  auto ref = [](const Arr& a, const Pads& p, const std::string& mode, double value) {
    Shape s;
    for (size_t d = 0; d < p.size(); d++) s.push_back(a.s[d] + p[d].first + p[d].second);
    return gen(s, [&](const Shape& i) {
      Shape j(i.size());
      for (size_t d = 0; d < i.size(); d++) {
        int64_t k = i[d] - p[d].first, n = a.s[d];
        if (k < 0 || k >= n) {
          if (mode == "constant") return value;
          if (mode == "reflect") k = k < 0 ? -k : 2 * (n - 1) - k;
          if (mode == "replicate") k = std::clamp<int64_t>(k, 0, n - 1);
          if (mode == "circular") k = wrap(k, n);
        }
        j[d] = k;
      }
      return a(j);
    });
  };
  for (std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    INFO(mode);
    Arr a = rnd({3, 4}, 2);
    for (auto& t : layouts(a)) {
      check(t.pad({{1, 2}, {3, 0}}, mode, 1.5), ref(a, {{1, 2}, {3, 0}}, mode, 1.5));
      check(t.pad({{0, 0}, {2, 3}}, mode), ref(a, {{0, 0}, {2, 3}}, mode, 0));
      // torch-style flat list: last dim first
      check(t.pad(std::vector<int64_t>{1, 2}, mode), ref(a, {{0, 0}, {1, 2}}, mode, 0));
      check(t.pad(std::vector<int64_t>{0, 1, 2, 0}, mode, -1), ref(a, {{2, 0}, {0, 1}}, mode, -1));
    }
    Arr b = rnd({2, 1, 3}, 3);
    if (mode != "reflect") check(layouts(b)[1].pad({{1, 1}, {1, 1}, {0, 2}}, mode), ref(b, {{1, 1}, {1, 1}, {0, 2}}, mode, 0));
    check_grad([&](auto& x) { return x[0].pad({{1, 2}, {2, 1}}, mode, 0.5); }, {rnd({3, 4}, 5, -2, 2, false)});
  }
  // int dtype keeps its dtype
  Tensor i = Tensor::arange(4).reshape({2, 2});
  CHECK(i.pad({{1, 0}, {0, 1}}, "reflect").dtype() == DType::Int32);
  CHECK(i.pad({{1, 0}, {0, 1}}, "reflect").to_vector<int>() == std::vector<int>{2, 3, 2, 0, 1, 0, 2, 3, 2});
  // errors
  Tensor t = Tensor::zeros({3, 4});
  CHECK(has(thrown<ShapeError>([&] { (void)t.pad({{3, 0}, {0, 0}}, "reflect"); }), "pad(reflect)"));
  CHECK_THROWS_AS(t.pad({{4, 0}, {0, 0}}, "circular"), ShapeError);
  CHECK_THROWS_AS(t.pad({{-1, 0}, {0, 0}}, "replicate"), ShapeError);
  CHECK_THROWS_AS(t.pad({{1, 0}}, "reflect"), ShapeError);
  CHECK_THROWS_AS(t.pad({{1, 0}, {0, 0}}, "wrap"), Error);
  CHECK_THROWS_AS(t.pad(std::vector<int64_t>{1, 1, 1}, "constant"), ShapeError);
  CHECK_THROWS_AS(t.pad(std::vector<int64_t>{1, 1, 1, 1, 1, 1}, "constant"), ShapeError);
  CHECK(t.sum().item<double>() == 0);
}

TEST_CASE("api: cat, stack, split, chunk", "[api][api_shape]") {
  Arr a = rnd({2, 3}, 1), b = rnd({2, 5}, 2), c = rnd({2, 1}, 3);
  auto la = layouts(a), lb = layouts(b), lc = layouts(c);
  Arr want = gen({2, 9}, [&](const Shape& i) { return i[1] < 3 ? a({i[0], i[1]}) : i[1] < 8 ? b({i[0], i[1] - 3}) : c({i[0], 0}); });
  for (size_t k = 0; k < 3; k++) check(Tensor::cat({la[k], lb[(k + 1) % 3], lc[(k + 2) % 3]}, -1), want);
  check(Tensor::cat({la[1].T(), la[2].T()}), gen({6, 2}, [&](const Shape& i) { return a({i[1], i[0] % 3}); }));
  check(Tensor::cat({la[0]}, 1), a);
  // dtype promotion and bools
  Tensor ci = Tensor::cat({Tensor({1, 2}), vec({0.5f})});
  CHECK(ci.dtype() == DType::Float32);
  CHECK(ci.to_vector<float>() == std::vector<float>{1, 2, 0.5f});
  CHECK(Tensor::cat({Tensor({true, false}), vec({true})}).to_vector<bool>() == std::vector<bool>{true, false, true});
  // stack
  Arr d = rnd({2, 3}, 4);
  auto ld = layouts(d);
  check(Tensor::stack({la[0], ld[1]}), gen({2, 2, 3}, [&](const Shape& i) { return (i[0] ? d : a)({i[1], i[2]}); }));
  check(Tensor::stack({la[2], ld[0]}, -1), gen({2, 3, 2}, [&](const Shape& i) { return (i[2] ? d : a)({i[0], i[1]}); }));
  check(Tensor::stack({Tensor::full({}, 1.0), Tensor::full({}, 2.0)}), Arr{{2}, {1, 2}});
  // split and chunk
  Arr e = rnd({7, 2}, 5);
  for (auto& t : layouts(e)) {
    auto parts = t.split(3);
    REQUIRE(parts.size() == 3);
    check(parts[2], gen({1, 2}, [&](const Shape& i) { return e({6, i[1]}); }));
    auto p2 = t.split({2, 0, 5}, 0);
    CHECK(p2[1].shape() == Shape{0, 2});
    check(p2[2], gen({5, 2}, [&](const Shape& i) { return e({i[0] + 2, i[1]}); }));
    auto ch = t.chunk(3);
    REQUIRE(ch.size() == 3);
    CHECK(ch[0].shape() == Shape{3, 2});
    CHECK(ch[2].shape() == Shape{1, 2});
    auto c2 = t.chunk(2, 1);
    check(c2[1], gen({7, 1}, [&](const Shape& i) { return e({i[0], 1}); }));
  }
  CHECK(Tensor::arange(6).chunk(4).size() == 3);  // like torch: ceil(6/4)=2 per chunk
  check_grad([](auto& x) { return Tensor::cat({x[0] * 2.0, x[1], x[0]}, 1); }, {rnd({2, 3}, 1, -2, 2, false), rnd({2, 2}, 2, -2, 2, false)});
  check_grad([](auto& x) { return Tensor::stack({x[0], x[1]}, 1); }, {rnd({2, 3}, 1, -2, 2, false), rnd({2, 3}, 2, -2, 2, false)});
  check_grad([](auto& x) { auto p = x[0].split({1, 3}, 1); return p[1] * p[0]; }, {rnd({2, 4}, 3, -2, 2, false)});
  // errors
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::cat({la[0], Tensor::zeros({3, 3})}, 1); }), "(2, 3) and (3, 3)"));
  CHECK_THROWS_AS(Tensor::cat({}), ShapeError);
  CHECK_THROWS_AS(Tensor::cat({la[0], Tensor::zeros({2})}), ShapeError);
  CHECK_THROWS_AS(Tensor::cat({la[0], la[0]}, 2), IndexError);
  CHECK_THROWS_AS(Tensor::cat({Tensor::full({}, 1.0)}), ShapeError);
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::stack({la[0], lb[0]}); }), "stack"));
  CHECK_THROWS_AS(Tensor::stack({}), ShapeError);
  CHECK(has(thrown<ShapeError>([&] { (void)la[0].split({1, 1}, 1); }), "do not add up"));
  CHECK_THROWS_AS(la[0].split(0), ShapeError);
  CHECK_THROWS_AS(la[0].split({-1, 4}, 1), ShapeError);
  CHECK_THROWS_AS(la[0].chunk(0), ShapeError);
  check(la[0], a);
}

TEST_CASE("api: repeat, repeat_interleave, roll", "[api][api_shape]") {
  Arr a = rnd({2, 3}, 7);
  for (auto& t : layouts(a)) {
    check(t.repeat({2, 3}), gen({4, 9}, [&](const Shape& i) { return a({i[0] % 2, i[1] % 3}); }));
    check(t.repeat({2, 1, 1}), gen({2, 2, 3}, [&](const Shape& i) { return a({i[1], i[2]}); }));
    check(t.repeat_interleave(2, 1), gen({2, 6}, [&](const Shape& i) { return a({i[0], i[1] / 2}); }));
    check(t.repeat_interleave(3), gen({18}, [&](const Shape& i) { return a.v[size_t(i[0] / 3)]; }));
    check(t.roll(1, 1), gen({2, 3}, [&](const Shape& i) { return a({i[0], wrap(i[1] - 1, 3)}); }));
    check(t.roll({-4, 5}, {1, 0}), gen({2, 3}, [&](const Shape& i) { return a({wrap(i[0] - 5, 2), wrap(i[1] + 4, 3)}); }));
    check(t.roll(2), gen({2, 3}, [&](const Shape& i) { return a.v[size_t(wrap(i[0] * 3 + i[1] - 2, 6))]; }));
  }
  CHECK(Tensor::zeros({2, 3}).repeat({0, 1}).shape() == Shape{0, 3});
  check_grad([](auto& x) { return x[0].repeat({2, 2}) + x[0].repeat_interleave(2, 0).repeat({1, 2}); }, {rnd({2, 3}, 1, -2, 2, false)});
  check_grad([](auto& x) { return x[0].roll({1, -1}, {0, 1}); }, {rnd({3, 3}, 1, -2, 2, false)});
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).repeat({2}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).repeat({2, -1}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).repeat_interleave(-1), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).repeat_interleave(2, 2), IndexError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).roll({1, 2}, {0}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).roll({1, 2}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({2, 3}).roll(1, 3), IndexError);
}

TEST_CASE("api: unfold, diag, diagonal", "[api][api_shape]") {
  Arr a = rnd({3, 8}, 8);
  for (auto& t : layouts(a)) {
    check(t.unfold(1, 3, 2), gen({3, 3, 3}, [&](const Shape& i) { return a({i[0], i[1] * 2 + i[2]}); }));
    check(t.unfold(0, 2, 1), gen({2, 8, 2}, [&](const Shape& i) { return a({i[0] + i[2], i[1]}); }));
    check(t.unfold(-1, 8, 5), gen({3, 1, 8}, [&](const Shape& i) { return a({i[0], i[2]}); }));
    check(t.diagonal(), gen({3}, [&](const Shape& i) { return a({i[0], i[0]}); }));
    check(t.diagonal(2), gen({3}, [&](const Shape& i) { return a({i[0], i[0] + 2}); }));
    check(t.diagonal(6), gen({2}, [&](const Shape& i) { return a({i[0], i[0] + 6}); }));
    check(t.diagonal(-1), gen({2}, [&](const Shape& i) { return a({i[0] + 1, i[0]}); }));
    check(t.diagonal(0, 1, 0), gen({3}, [&](const Shape& i) { return a({i[0], i[0]}); }));
    check(t.diag(1), gen({3}, [&](const Shape& i) { return a({i[0], i[0] + 1}); }));
  }
  CHECK(Tensor::zeros({3, 8}).unfold(1, 0, 3).shape() == Shape{3, 3, 0});
  Arr b = rnd({2, 3, 4}, 9);
  check(layouts(b)[1].diagonal(1, 0, 2), gen({3, 2}, [&](const Shape& i) { return b({i[1], i[0], i[1] + 1}); }));
  Arr v = rnd({4}, 10);
  for (auto& t : layouts(v)) {
    check(t.diag(), gen({4, 4}, [&](const Shape& i) { return i[0] == i[1] ? v({i[0]}) : 0.0; }));
    check(t.diag(2), gen({6, 6}, [&](const Shape& i) { return i[1] - i[0] == 2 ? v({i[0]}) : 0.0; }));
    check(t.diag(-1), gen({5, 5}, [&](const Shape& i) { return i[0] - i[1] == 1 ? v({i[1]}) : 0.0; }));
  }
  check_grad([](auto& x) { return x[0].unfold(1, 3, 2) * 2.0; }, {rnd({2, 7}, 1, -2, 2, false)});
  check_grad([](auto& x) { return x[0].diagonal(1) + x[1].diag(); }, {rnd({4, 4}, 1, -2, 2, false), rnd({3}, 2, -2, 2, false)});
  CHECK_THROWS_AS(Tensor::zeros({3, 4}).unfold(1, 5, 1), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3, 4}).unfold(1, 2, 0), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3, 4}).unfold(2, 2, 1), IndexError);
  CHECK_THROWS_AS(Tensor::zeros({3}).diagonal(), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3, 3}).diagonal(0, 1, 1), ShapeError);
  CHECK(has(thrown<ShapeError>([] { (void)Tensor::zeros({2, 2, 2}).diag(); }), "(2, 2, 2)"));
}

TEST_CASE("api: rearrange", "[api][api_shape]") {
  Arr a = rnd({2, 3, 6}, 11);
  for (auto& t : layouts(a)) {
    check(t.rearrange("b c (h w) -> b h w c", {{"h", 2}}), gen({2, 2, 3, 3}, [&](const Shape& i) { return a({i[0], i[3], i[1] * 3 + i[2]}); }));
    check(t.rearrange("b c (h w) -> (b h) (c w)", {{"w", 3}}),
          gen({4, 9}, [&](const Shape& i) { return a({i[0] / 2, i[1] / 3, (i[0] % 2) * 3 + i[1] % 3}); }));
    check(t.rearrange("b ... -> ... b"), gen({3, 6, 2}, [&](const Shape& i) { return a({i[2], i[0], i[1]}); }));
    check(t.rearrange("... w -> w ..."), gen({6, 2, 3}, [&](const Shape& i) { return a({i[1], i[2], i[0]}); }));
    check(t.rearrange("b c w -> b 1 (c w)"), Arr{{2, 1, 18}, a.v});
    check(t.rearrange("b c w->(b c w)"), Arr{{36}, a.v});
  }
  check(Tensor(std::vector<double>{1, 2}, {2, 1}).rearrange("a () -> a"), Arr{{2}, {1, 2}});
  check_grad([](auto& x) { return x[0].rearrange("a (b c) -> c a b", {{"b", 2}}); }, {rnd({2, 4}, 1, -2, 2, false)});
  Tensor t = Tensor::zeros({2, 3, 6});
  auto msg = thrown<ShapeError>([&] { (void)t.rearrange("b c (h w) -> b h w c"); });
  CHECK(has(msg, "rearrange(\"b c (h w) -> b h w c\")"));
  CHECK(has(msg, "position 4"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w - b c w"); }), "exactly one"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c w -> b"); }), "exactly one"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c (w -> b c w"); }), "unclosed"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w) -> b c w"); }), "position 5"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c ((w)) -> b c w"); }), "nested"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w$ -> b c w"); }), "position 5"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c -> b c"); }), "has 2 dims"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c"); }), "\"w\" is missing"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c x"); }), "\"x\" is not on the left"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b b w -> b w"); }), "twice"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c w w"); }), "twice"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c (h w) -> b c h w", {{"h", 4}}); }), "does not split"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c (h w) -> b c h w", {{"h", 2}, {"w", 2}}); }), "multiply to 4"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c w", {{"q", 2}}); }), "\"q\""));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("... c ... -> c"); }), "more than one"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b (c ...) -> b c"); }), "inside parentheses"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b ... -> (b ...)"); }), "on the right"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c (w 1)"); }), "\"1\" inside"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.rearrange("b c w -> b c 2w"); }), "starts with a digit"));
  CHECK(t.rearrange("b c w -> w c b").shape() == Shape{6, 3, 2});
}

// numpy-style advanced indexing, written out with loops
TEST_CASE("api: tensor indexing", "[api][api_shape]") {
  Arr a = rnd({4, 3, 5}, 12);
  auto la = layouts(a);
  Tensor i1({2, 0, -1, 2});            // (4,)
  Tensor i2 = Tensor({1, 0}).reshape({2, 1});  // (2, 1)
  Tensor i3({4, 0, 3});                // (3,)
  auto n = [](int64_t i, int64_t s) { return i < 0 ? i + s : i; };
  std::vector<int64_t> v1{2, 0, -1, 2}, v2{1, 0}, v3{4, 0, 3};
  for (auto& t : la) {
    check(t[i1], gen({4, 3, 5}, [&](const Shape& i) { return a({n(v1[size_t(i[0])], 4), i[1], i[2]}); }));
    // two index tensors broadcast (2,1) x (3,) -> (2, 3), consecutive: result dims stay in place
    check(t[{Slice{}, i2, i3}], gen({4, 2, 3}, [&](const Shape& i) { return a({i[0], v2[size_t(i[1])], v3[size_t(i[2])]}); }));
    // separated by a slice: the broadcast dims go first
    check(t[{i2, Slice{}, i3}], gen({2, 3, 3}, [&](const Shape& i) { return a({v2[size_t(i[0])], i[2], v3[size_t(i[1])]}); }));
    // an int drops its dim before the tensors apply (torch and tinygrad; numpy would move the index dims first)
    check(t[{1, Slice{}, Tensor({4, 0})}], gen({3, 2}, [&](const Shape& i) { return a({1, i[0], i[1] ? 0 : 4}); }));
    check(t[{Ellipsis{}, i3}], gen({4, 3, 3}, [&](const Shape& i) { return a({i[0], i[1], v3[size_t(i[2])]}); }));
    check(t[{Slice{1, 3}, NewAxis{}, Slice{}, vec({-1})}], gen({2, 1, 3, 1}, [&](const Shape& i) { return a({i[0] + 1, i[2], 4}); }));
    check(t[{Slice{std::nullopt, std::nullopt, -2}, vec({2})}], gen({2, 1, 5}, [&](const Shape& i) { return a({3 - 2 * i[0], 2, i[2]}); }));
    // 0-d index drops the dim
    check(t[{Slice{1, 3}, NewAxis{}, Slice{}, Tensor({-1})}], gen({2, 1, 3}, [&](const Shape& i) { return a({i[0] + 1, i[2], 4}); }));
    // a 2-D index tensor
    Tensor m = Tensor({0, 3, 3, 1}).reshape({2, 2});
    check(t[m], gen({2, 2, 3, 5}, [&](const Shape& i) { int64_t r[2][2]{{0, 3}, {3, 1}}; return a({r[i[0]][i[1]], i[2], i[3]}); }));
  }
  // int64 and uint8 indices
  check(la[0][Tensor({1, 3}).cast(DType::Int64)], gen({2, 3, 5}, [&](const Shape& i) { return a({1 + 2 * i[0], i[1], i[2]}); }));
  check(la[0][{Slice{}, vec({2}).cast(DType::UInt8)}], gen({4, 1, 5}, [&](const Shape& i) { return a({i[0], 2, i[2]}); }));
  // gradients: repeated indices accumulate
  check_grad([](auto& x) { return x[0][{Tensor({1, 1, 0}), Slice{}}] * 2.0 + x[0][{Slice{}, Tensor({2, 0})}].sum(); },
             {rnd({2, 3}, 3, -2, 2, false)});
  // errors: float / bool index, broadcast failure, too many indices
  CHECK(has(thrown<DTypeError>([&] { (void)la[0][vec({1.0f})]; }), "integers"));
  CHECK_THROWS_AS(la[0][vec({true})], DTypeError);
  CHECK(has(thrown<IndexError>([&] { (void)la[0][{Tensor({0, 1}), Tensor({0, 1, 2})}]; }), "broadcast"));
  CHECK_THROWS_AS((la[0][{0, 0, 0, vec({0})}]), IndexError);
  CHECK_THROWS_AS((la[0][{Ellipsis{}, vec({0}), Ellipsis{}}]), IndexError);
  check(la[1], a);
}

TEST_CASE("api: set (setitem)", "[api][api_shape][cl]") {
  Arr a = rnd({4, 6}, 13);
  auto fresh = [&] { return layouts(a)[1].contiguous(); };
  // basic: strided slice, negative step, int
  {
    Tensor t = fresh();
    Tensor alias = t;
    Arr v = rnd({2, 3}, 14);
    t.set({Slice{1, std::nullopt, 2}, Slice{std::nullopt, std::nullopt, -2}}, Tensor(v.v, v.s));
    Arr want = a;
    for (int64_t i = 0; i < 2; i++) for (int64_t j = 0; j < 3; j++) want({1 + 2 * i, 5 - 2 * j}) = v({i, j});
    check(t, want);
    check(alias, want);  // in place: every handle sees the write
    t.set({2}, Tensor::full({}, 7.0));
    for (int64_t j = 0; j < 6; j++) want({2, j}) = 7;
    check(t, want);
    t.set({Ellipsis{}, Slice{-1, std::nullopt}}, Tensor({1.0, 2.0, 3.0, 4.0}).reshape({4, 1}));
    for (int64_t i = 0; i < 4; i++) want({i, 5}) = double(i + 1);
    check(t, want);
    t.set({NewAxis{}, 0, Slice{0, 2}}, Tensor({-1.0, -2.0}));  // NewAxis: value broadcasts
    want({0, 0}) = -1; want({0, 1}) = -2;
    check(t, want);
  }
  // tensor indices; a duplicate index takes the last value
  {
    Tensor t = fresh();
    t.set({Tensor({3, 0, 3}), Tensor({1, 2, 1})}, Tensor({5.0, 6.0, 8.0}));
    Arr want = a;
    want({0, 2}) = 6; want({3, 1}) = 8;
    check(t, want);
    t.set({Slice{}, vec({-1})}, Tensor::full({}, 0.0));
    for (int64_t i = 0; i < 4; i++) want({i, 5}) = 0;
    check(t, want);
  }
  // int tensor gets a float value cast
  Tensor it = Tensor::arange(4);
  it.set({Slice{1, 3}}, Tensor({9.7f, -2.2f}));
  CHECK(it.to_vector<int>() == std::vector<int>{0, 9, -2, 3});
  // errors leave the tensor untouched
  Tensor t = fresh();
  CHECK(has(thrown<ShapeError>([&] { t.set({Slice{0, 2}}, Tensor({1.0, 2.0, 3.0})); }), "(2, 6)"));
  CHECK_THROWS_AS(t.set({0, 0, 0}, Tensor::full({}, 1.0)), IndexError);
  CHECK_THROWS_AS(t.set({vec({0.5f})}, Tensor::full({}, 1.0)), DTypeError);
  check(t, a);
}

TEST_CASE("api: gather, scatter, scatter_reduce", "[api][api_shape]") {
  Arr a = rnd({3, 4}, 15);
  std::vector<std::vector<int>> ix{{0, 3, 3}, {1, 0, 2}};  // (2, 3) along dim 1
  Tensor idx = Tensor(std::vector<int>{0, 3, 3, 1, 0, 2}, {2, 3});
  for (auto& t : layouts(a)) {
    check(t.gather(1, idx), gen({2, 3}, [&](const Shape& i) { return a({i[0], ix[size_t(i[0])][size_t(i[1])]}); }));
    check(t.gather(0, Tensor(std::vector<int>{2, 0, 1, 1}, {1, 4})),
          gen({1, 4}, [&](const Shape& i) { int r[4]{2, 0, 1, 1}; return a({r[i[1]], i[1]}); }));
  }
  // scatter along dim 1: out[i][idx[i][j]] = src[i][j], last wins; along dim 0
  Arr s = rnd({2, 3}, 16);
  for (auto& t : layouts(a)) {
    Arr want = a;
    for (int64_t i = 0; i < 2; i++) for (int64_t j = 0; j < 3; j++) want({i, ix[size_t(i)][size_t(j)]}) = s({i, j});
    check(t.scatter(1, idx, Tensor(s.v, s.s).cast(DType::Float32)), want);
    Arr want0 = a;
    int i0[2][3]{{0, 0, 0}, {1, 0, 2}};
    for (int64_t i = 0; i < 2; i++) for (int64_t j = 0; j < 3; j++) want0({i0[i][j], j}) = -5;
    Tensor idx0 = Tensor(std::vector<int>{0, 0, 0, 1, 0, 2}, {2, 3});
    check(t.scatter(0, idx0, -5), want0);
  }
  // scatter_reduce, every mode, with and without self
  Arr big = rnd({4, 5}, 17);
  for (std::string mode : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool self_ : {true, false}) {
      INFO(mode << " include_self=" << self_);
      Arr want = a;
      std::vector<std::vector<double>> vals(12);
      for (int64_t i = 0; i < 2; i++) for (int64_t j = 0; j < 3; j++) vals[size_t(i * 4 + ix[size_t(i)][size_t(j)])].push_back(s({i, j}));
      for (int64_t k = 0; k < 12; k++) {
        auto v = vals[size_t(k)];
        if (v.empty()) continue;
        if (self_) v.push_back(a.v[size_t(k)]);
        double r = mode == "prod" ? 1 : mode == "amax" ? -1e300 : mode == "amin" ? 1e300 : 0;
        for (double x : v) r = mode == "prod" ? r * x : mode == "amax" ? std::max(r, x) : mode == "amin" ? std::min(r, x) : r + x;
        want.v[size_t(k)] = mode == "mean" ? r / double(v.size()) : r;
      }
      for (auto& t : layouts(a)) check(t.scatter_reduce(1, idx, Tensor(s.v, s.s).cast(DType::Float32), mode, self_), want);
    }
  }
  // int mean rounds down, like torch
  CHECK(Tensor({1, 1}).scatter_reduce(0, Tensor({0, 0}), Tensor({2, 2}), "mean").to_vector<int>() == std::vector<int>{1, 1});
  // gradients
  check_grad([&](auto& x) { return x[0].gather(1, idx); }, {rnd({3, 4}, 1, -2, 2, false)});
  check_grad([&](auto& x) { return x[0].scatter(1, idx, x[1]); }, {rnd({3, 4}, 1, -2, 2, false), rnd({2, 3}, 2, -2, 2, false)});
  for (std::string mode : {"sum", "mean", "amax", "prod"})
    check_grad([&](auto& x) { return x[0].scatter_reduce(1, idx, x[1], mode, mode != "amax"); },
               {rnd({3, 4}, 1, 0.5, 2, false), rnd({2, 3}, 2, 0.5, 2, false)});
  // errors
  Tensor t = layouts(a)[0];
  CHECK(has(thrown<ShapeError>([&] { (void)t.gather(1, Tensor({0, 1})); }), "differ in rank"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.gather(1, Tensor::zeros({4, 1}, DType::Int32)); }), "(4, 1)"));
  CHECK_THROWS_AS(t.gather(2, idx), IndexError);
  CHECK_THROWS_AS(t.gather(1, idx.cast(DType::Float32)), DTypeError);
  CHECK_THROWS_AS(t.scatter(1, idx, Tensor::zeros({2, 2})), ShapeError);
  CHECK_THROWS_AS(t.scatter(1, idx, Tensor::zeros({2})), ShapeError);
  CHECK(has(thrown<Error>([&] { (void)t.scatter_reduce(1, idx, Tensor::zeros({2, 3}), "max"); }), "\"max\""));
  CHECK_THROWS_AS(t.scatter_reduce(1, idx, Tensor::zeros({2, 3}, DType::Int32), "sum"), DTypeError);
  check(t, a);
}

TEST_CASE("api: masked_select, nonzero", "[api][api_shape][cl]") {
  Arr a = rnd({3, 4}, 18);
  for (auto& t : layouts(a)) {
    Arr want{{0}, {}};
    for (double x : a.v) if (x > 0) want.v.push_back(x);
    want.s = {int64_t(want.v.size())};
    check(t.masked_select(t > 0.0), want);
    // a broadcast mask (4,) selects per column
    Arr want2{{0}, {}};
    for (int64_t i = 0; i < 3; i++) for (int64_t j : {1, 3}) want2.v.push_back(a({i, j}));
    want2.s = {6};
    check(t.masked_select(Tensor({false, true, false, true})), want2);
    Arr nz{{0, 2}, {}};
    for (int64_t i = 0; i < 3; i++) for (int64_t j = 0; j < 4; j++) if (a({i, j}) > 0) {
      nz.v.push_back(double(i));
      nz.v.push_back(double(j));
      nz.s[0]++;
    }
    check((t > 0.0).nonzero(), nz);
  }
  CHECK(Tensor::zeros({2, 2}).masked_select(Tensor::zeros({2, 2}, DType::Bool)).shape() == Shape{0});
  CHECK(Tensor({1.0, 2.0}).masked_select(Tensor({false, true})).to_vector<double>() == std::vector<double>{2});
  CHECK(Tensor({1.0, 2.0}).masked_select(Tensor({false, true})).shape() == Shape{1});
  CHECK(Tensor::zeros({2, 3}).nonzero().shape() == Shape{0, 2});
  check_grad([](auto& x) { return x[0].masked_select(Tensor({true, false, true, true}).reshape({2, 2})); }, {rnd({2, 2}, 1, -2, 2, false)});
  CHECK_THROWS_AS(Tensor::zeros({2}).masked_select(Tensor({1, 0})), DTypeError);
  CHECK_THROWS_AS(Tensor::zeros({2}).masked_select(Tensor({true, false, true})), ShapeError);
}

TEST_CASE("api: operator[] overloads", "[api][api_shape][cl]") {
  Tensor t = Tensor::arange(12).reshape({3, 4});
  CHECK(t[{1, -2}].item<int>() == 6);          // braces of ints: basic indexing, not a tensor
  CHECK(t[1].to_vector<int>() == std::vector<int>{4, 5, 6, 7});
  CHECK(t[vec({2, 0})].shape() == Shape{2, 4});  // a tensor
  CHECK(t[{vec({2, 0}), 1}].to_vector<int>() == std::vector<int>{9, 1});
}
