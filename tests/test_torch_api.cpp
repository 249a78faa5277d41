// The everyday spellings of a PyTorch user (issue 40), each against what PyTorch 2 (CPU) gives: printing (the strings
// are torch's repr, pasted), max/min(dim) unpacking into (values, indices), variadic reshape/view/permute, randint's
// order, pad without a mode, std_mean/var_mean over one dim, clone and NoGrad.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <sstream>

using tinygrad::DType;
using tinygrad::Shape;
using tinygrad::Tensor;

namespace {
std::string printed(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
}  // namespace

TEST_CASE("printing a tensor is torch's repr", "[parity]") {
  const double nan = std::nan(""), inf = INFINITY;
  CHECK(printed(Tensor(std::vector<float>{3.5f}, Shape{})) == "tensor(3.5000)");
  CHECK(printed(Tensor({1.f, 2.f, 3.f})) == "tensor([1., 2., 3.])");
  CHECK(printed(Tensor({{1.f, 2.f}, {3.f, 4.f}})) == "tensor([[1., 2.],\n        [3., 4.]])");
  CHECK(printed(Tensor::arange(12, std::nullopt, 1, DType::Float32).reshape(2, 3, 2) / 4) ==
        "tensor([[[0.0000, 0.2500],\n         [0.5000, 0.7500],\n         [1.0000, 1.2500]],\n\n"
        "        [[1.5000, 1.7500],\n         [2.0000, 2.2500],\n         [2.5000, 2.7500]]])");
  CHECK(printed(Tensor(std::vector<int64_t>{1, -20, 300, 4}, {2, 2})) == "tensor([[  1, -20],\n        [300,   4]])");
  CHECK(printed(Tensor(std::vector<int32_t>{1, 2, 3})) == "tensor([1, 2, 3], dtype=torch.int32)");
  CHECK(printed(Tensor(std::vector<bool>{true, false, true})) == "tensor([ True, False,  True])");
  CHECK(printed(Tensor({-1.5f, 2.25f, -0.125f})) == "tensor([-1.5000,  2.2500, -0.1250])");
  CHECK(printed(Tensor(std::vector<double>{nan, inf, -inf, 1.0}).cast(DType::Float32)) == "tensor([nan, inf, -inf, 1.])");
  CHECK(printed(Tensor(std::vector<double>{-nan, 2.0}).cast(DType::Float32)) == "tensor([nan, 2.])");
  CHECK(printed(Tensor({1e9f, 1.5f, -2.f})) == "tensor([ 1.0000e+09,  1.5000e+00, -2.0000e+00])");
  CHECK(printed(Tensor({1e-5f, 0.5f})) == "tensor([1.0000e-05, 5.0000e-01])");
  CHECK(printed(Tensor({1.f, 1e5f})) == "tensor([1.0000e+00, 1.0000e+05])");
  CHECK(printed(Tensor({1.5f, 2.f, 3.25f}).cast(DType::Float16)) == "tensor([1.5000, 2.0000, 3.2500], dtype=torch.float16)");
  CHECK(printed(Tensor(std::vector<double>{0.1, 0.2})) == "tensor([0.1000, 0.2000], dtype=torch.float64)");
  CHECK(printed(Tensor::arange(30, std::nullopt, 1, DType::Float32) / 7) ==
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
        "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
        "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
        "        3.8571, 4.0000, 4.1429])");
  CHECK(printed(Tensor::zeros({0, 3})) == "tensor([], size=(0, 3))");
  Tensor w({1.f, 2.f});
  w.requires_grad_();
  CHECK(printed(w) == "tensor([1., 2.], requires_grad=True)");
  SECTION("more than 1000 elements: the first and last 3 of each dim") {
    CHECK(printed(Tensor::arange(2000, std::nullopt, 1, DType::Float32)) ==
          "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
    CHECK(printed(Tensor::arange(1100, std::nullopt, 1, DType::Int64).reshape(44, 25)) ==
          "tensor([[   0,    1,    2,  ...,   22,   23,   24],\n        [  25,   26,   27,  ...,   47,   48,   49],\n"
          "        [  50,   51,   52,  ...,   72,   73,   74],\n        ...,\n"
          "        [1025, 1026, 1027,  ..., 1047, 1048, 1049],\n        [1050, 1051, 1052,  ..., 1072, 1073, 1074],\n"
          "        [1075, 1076, 1077,  ..., 1097, 1098, 1099]])");
  }
  SECTION("to_string, shifts and static tensors") {
    CHECK(tinygrad::to_string(Tensor({1.f, 2.f})) == "tensor([1., 2.])");
    Tensor i(std::vector<int64_t>{1, 2});
    CHECK(ints(i << 2) == std::vector<int64_t>{4, 8});  // a << b with tensors is still a shift
    CHECK(ints(i << i) == std::vector<int64_t>{2, 8});
    tinygrad::static_tensor<float, 2> s(Tensor({1.f, 2.f}));
    std::ostringstream os;
    os << s * 2.f;
    CHECK(os.str() == "tensor([2., 4.])");
  }
}

TEST_CASE("max(dim) and min(dim) unpack into (values, indices)", "[parity]") {
  Tensor x({{1.f, 5.f, 5.f}, {7.f, -2.f, 7.f}});
  auto [v, i] = x.max(1);
  CHECK(vals(v) == std::vector<float>{5, 7});
  CHECK(ints(i) == std::vector<int64_t>{1, 0});  // the first max, as torch
  auto [mv, mi] = x.min(1);
  CHECK(vals(mv) == std::vector<float>{1, -2});
  CHECK(ints(mi) == std::vector<int64_t>{0, 1});
  auto [kv, ki] = x.max(0, true);
  CHECK(kv.shape() == Shape{1, 3});
  CHECK(ki.shape() == Shape{1, 3});
  CHECK(ints(ki) == std::vector<int64_t>{1, 0, 1});
  // NaN is the max and the min, at its index
  Tensor y = Tensor(std::vector<double>{1, std::nan(""), 3}, {1, 3}).cast(DType::Float32);
  CHECK(std::isnan(vals(y.max(1))[0]));
  CHECK(ints(y.max(1).indices()) == std::vector<int64_t>{1});
  CHECK(ints(y.min(1).indices()) == std::vector<int64_t>{1});
  // still a Tensor where one is wanted
  Tensor m = x.max(1);
  CHECK(vals(m + x.min(-1)) == std::vector<float>{6, 5});
  CHECK(vals(x.max({0, 1})) == std::vector<float>{7});
  SECTION("sort, topk, std_mean, var_mean unpack too") {
    Tensor z({3.f, 1.f, 2.f, 5.f});
    auto [tv, ti] = z.topk(2);
    CHECK(vals(tv) == std::vector<float>{5, 3});
    CHECK(ints(ti) == std::vector<int64_t>{3, 0});
    auto [sv, si] = z.sort(-1, true);
    CHECK(vals(sv) == std::vector<float>{5, 3, 2, 1});
    CHECK(ints(si) == std::vector<int64_t>{3, 0, 2, 1});
    Tensor a({{1.f, 2.f}, {3.f, 5.f}, {4.f, 9.f}});
    auto [s, mean] = a.std_mean(0);  // correction 1 (unbiased), as torch
    CHECK(vals(s)[0] == Approx(1.5275252316519468));
    CHECK(vals(s)[1] == Approx(3.5118845842842465));
    CHECK(vals(mean)[0] == Approx(8.0 / 3));
    CHECK(vals(mean)[1] == Approx(16.0 / 3));
    auto [var, mean2] = a.var_mean(0);
    CHECK(vals(var)[0] == Approx(7.0 / 3));
    CHECK(vals(var)[1] == Approx(37.0 / 3));
    CHECK(vals(mean2)[1] == Approx(16.0 / 3));
    CHECK(vals(a.std(0))[1] == Approx(3.5118845842842465));
    auto [s1, m1] = a.std_mean(1, true, 0);
    CHECK(s1.shape() == Shape{3, 1});
    CHECK(vals(s1) == std::vector<float>{0.5f, 1.f, 2.5f});
    CHECK(vals(m1) == std::vector<float>{1.5f, 4.f, 6.5f});
  }
}

TEST_CASE("variadic reshape, view and permute", "[parity]") {
  Tensor b = Tensor::arange(6, std::nullopt, 1, DType::Float32).reshape(2, 3);
  CHECK(b.shape() == Shape{2, 3});
  CHECK(b.view(-1).shape() == Shape{6});
  CHECK(b.reshape(6).shape() == Shape{6});
  CHECK(b.reshape(3, -1).shape() == Shape{3, 2});
  CHECK(b.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(b.view({-1, 2}).shape() == Shape{3, 2});
  CHECK(b.view(Shape{1, 6}).shape() == Shape{1, 6});
  CHECK(vals(b.permute(1, 0)) == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(vals(b.permute({1, 0})) == std::vector<float>{0, 3, 1, 4, 2, 5});
  // torch's view refuses a non-contiguous input; ours is a lazy reshape (a copy where one is needed)
  CHECK(vals(b.permute(1, 0).view(-1)) == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(b.reshape(4, -1), tinygrad::ShapeError);
}

TEST_CASE("randint(low, high, shape) and pad(flat)", "[parity]") {
  Tensor::manual_seed(7);
  Tensor r = Tensor::randint(-3, 4, {1000});
  CHECK(r.dtype() == DType::Int64);  // torch's default
  auto v = ints(r);
  CHECK(*std::min_element(v.begin(), v.end()) == -3);
  CHECK(*std::max_element(v.begin(), v.end()) == 3);
  Tensor::manual_seed(7);
  CHECK(ints(Tensor::randint(-3, 4, {1000})) == v);  // the seed of rand
  auto h = ints(Tensor::randint(5, {200}));  // torch.randint(high, size)
  CHECK(*std::min_element(h.begin(), h.end()) == 0);
  CHECK(*std::max_element(h.begin(), h.end()) == 4);
  CHECK(Tensor::randint(0, 5, {3}, DType::Int32).dtype() == DType::Int32);

  Tensor b = Tensor::arange(6, std::nullopt, 1, DType::Float32).reshape(2, 3);
  Tensor p = b.pad({1, 1, 1, 1});  // F.pad(b, (1, 1, 1, 1)): the last dim first
  CHECK(p.shape() == Shape{4, 5});
  CHECK(vals(p) == std::vector<float>{0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 5, 0, 0, 0, 0, 0, 0});
  CHECK(vals(b.pad({1, 2}, 9.0)) == std::vector<float>{9, 0, 1, 2, 9, 9, 9, 3, 4, 5, 9, 9});
  CHECK(vals(b.pad(std::vector<int64_t>{0, 0, 1, 0})) == std::vector<float>{0, 0, 0, 0, 1, 2, 3, 4, 5});
  CHECK(b.pad({{1, 0}, {0, 0}}).shape() == Shape{3, 3});  // the (before, after) pairs of every dim, as before
}

TEST_CASE("clone does not alias, NoGrad builds no backward graph", "[parity]") {
  Tensor x({1.f, 2.f, 3.f});
  x.realize();
  Tensor alias = x, c = x.clone(), c2 = x.clone();
  c.assign(Tensor({7.f, 8.f, 9.f}));
  CHECK(vals(x) == std::vector<float>{1, 2, 3});
  CHECK(vals(c) == std::vector<float>{7, 8, 9});
  c2.realize();
  c2.shrink({{0, 1}}).assign(Tensor(std::vector<float>{5.f}, {1}));  // writes into c2's own buffer
  CHECK(vals(c2) == std::vector<float>{5, 2, 3});
  CHECK(vals(x) == std::vector<float>{1, 2, 3});
  CHECK(vals(x.clone()) == std::vector<float>{1, 2, 3});
  alias.assign(Tensor({0.f, 0.f, 0.f}));  // a copy of a Tensor is the same tensor, as in torch
  CHECK(vals(x) == std::vector<float>{0, 0, 0});

  Tensor w({1.f, 2.f});
  w.requires_grad_();
  (w.clone() * 2).sum().backward();  // clone is differentiable: torch gives [2, 2]
  CHECK(vals(*w.grad()) == std::vector<float>{2, 2});
  w.zero_grad();
  Tensor q;
  {
    tinygrad::NoGrad g;
    CHECK_FALSE(tinygrad::grad_enabled());
    q = w * 2;
  }
  CHECK(tinygrad::grad_enabled());
  CHECK_FALSE(q.requires_grad());
  CHECK(vals(q) == std::vector<float>{2, 4});
  (q.sum() + (w * 3).sum()).backward();  // q is a constant: torch gives [3, 3]
  CHECK(vals(*w.grad()) == std::vector<float>{3, 3});
}
