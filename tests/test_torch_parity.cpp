// Issue 40's silent traps against PyTorch 2.15 (CPU, float64), forward and backward: conv/pool arguments in torch's
// positional order (and the ConvOptions/PoolOptions keyword forms), gelu exact by default, attention rows with
// every key masked. Reference values from tests/data/make_torch_parity.py, which defines the inputs and fp().
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <tuple>

using tinygrad::Error;
using tinygrad::Shape;
using tinygrad::Tensor;
using std::nullopt;

namespace {
using V = std::vector<double>;

// float32(2 sin(0.7 i + phase)), as the script's data()
Tensor data(const Shape& s, double phase) {
  std::vector<float> v(size_t(tinygrad::detail::prod(s)));
  for (size_t i = 0; i < v.size(); i++) v[i] = float(2 * std::sin(0.7 * double(i) + phase));
  return Tensor(v).reshape(s).realize().requires_grad_();
}
// sum_i t[i] cos(i): one number that sees every value and its position
double fp(const Tensor& t) {
  auto v = t.to_vector<double>();
  double r = 0;
  for (size_t i = 0; i < v.size(); i++) r += v[i] * std::cos(double(i));
  return r;
}
Tensor fp_weights(const Tensor& t) {
  std::vector<float> w(size_t(t.numel()));
  for (size_t i = 0; i < w.size(); i++) w[i] = float(std::cos(double(i)));
  return Tensor(w).reshape(t.shape());
}

struct Case {
  const char* name;
  Shape shape;
  V want;  // fp(out), then fp(d fp(out) / d input) per input
};
// out = f(inputs): its shape, fp(out) and the fingerprints of the gradients of fp(out) match torch's
void check(const Case& c, const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& in) {
  INFO(c.name);
  Tensor out = f(in);
  REQUIRE(out.shape() == c.shape);
  REQUIRE(c.want.size() == in.size() + 1);
  CHECK(fp(out) == Approx(c.want[0]).epsilon(1e-5).margin(1e-4));
  auto g = tinygrad::gradient((out.cast(tinygrad::DType::Float32) * fp_weights(out)).sum(), in);
  for (size_t i = 0; i < in.size(); i++) {
    INFO("gradient of input " << i);
    auto gv = g[i].to_vector<double>();
    for (double v : gv) REQUIRE(std::isfinite(v));
    CHECK(fp(g[i]) == Approx(c.want[i + 1]).epsilon(1e-5).margin(1e-4));
  }
}
}  // namespace

TEST_CASE("parity: pools take torch's positional order (kernel, stride, padding, dilation, ceil_mode)", "[parity]") {
  Tensor x = data({1, 4, 10, 10}, 0.3);
  // the example, ported literally: (1, 4, 5, 5), not (1, 4, 4, 4)
  CHECK(x.max_pool2d(3, 2, 1).shape() == Shape{1, 4, 5, 5});
  check({"max_pool2d(x, 3, 2, 1)", {1, 4, 5, 5}, {0.729834901, 0.611825193}}, [](auto& t) { return t[0].max_pool2d(3, 2, 1); }, {x});
  check({"the same, options", {1, 4, 5, 5}, {0.729834901, 0.611825193}},
        [](auto& t) { return t[0].max_pool2d({.kernel = 3, .stride = 2, .padding = 1}); }, {x});
  check({"max_pool2d(x, 3, 2, 1, 2, True)", {1, 4, 5, 5}, {-3.88401779, 1.38501079}}, [](auto& t) { return t[0].max_pool2d(3, 2, 1, 2, true); },
        {x});
  check({"the same, options", {1, 4, 5, 5}, {-3.88401779, 1.38501079}},
        [](auto& t) { return t[0].max_pool2d({.kernel = 3, .stride = 2, .padding = 1, .dilation = 2, .ceil_mode = true}); }, {x});
  // a plain list is a kernel (or stride, padding) per dim, never the options
  check({"max_pool2d(x, (3, 2), (2, 1), (1, 0))", {1, 4, 5, 9}, {-0.576994483, -1.56015697}},
        [](auto& t) { return t[0].max_pool2d({3, 2}, {2, 1}, {1, 0}); }, {x});
  auto [v, idx] = x.max_pool2d_with_indices(3, 2, 1);
  CHECK(fp(idx) == Approx(-338.129386));
  CHECK(fp(x.max_pool2d_with_indices({.kernel = 3, .stride = 2, .padding = 1}).second) == Approx(-338.129386));
  CHECK(fp(v) == Approx(0.729834901).epsilon(1e-5));
  check({"avg_pool2d(x, 3, 2, 1)", {1, 4, 5, 5}, {-3.38594309, 0.238731839}}, [](auto& t) { return t[0].avg_pool2d(3, 2, 1); }, {x});
  check({"avg_pool2d(x, 3, 2, 1, True, False)", {1, 4, 6, 6}, {1.19245839, 0.550730724}},
        [](auto& t) { return t[0].avg_pool2d(3, 2, 1, true, false); }, {x});
  check({"the same, options", {1, 4, 6, 6}, {1.19245839, 0.550730724}},
        [](auto& t) { return t[0].avg_pool2d({.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false}); }, {x});
  check({"avg_pool2d(x, 3, 2, 1, False, True, 5)", {1, 4, 5, 5}, {-6.09469757, 0.429717311}},
        [](auto& t) { return t[0].avg_pool2d(3, 2, 1, false, true, 5); }, {x});
  CHECK(x.max_pool2d(3, nullopt).shape() == Shape{1, 4, 3, 3});  // torch's stride=None: the kernel
  CHECK(x.max_pool2d().shape() == Shape{1, 4, 5, 5});
  CHECK_THROWS_AS(x.avg_pool2d({.kernel = 2, .divisor_override = 0}), Error);
}

TEST_CASE("parity: convolutions take torch's positional order (bias, stride, padding, dilation, groups)", "[parity]") {
  Tensor x = data({1, 4, 10, 10}, 0.3), w = data({6, 2, 3, 3}, 1.1), b = data({6}, 2.3), w4 = data({6, 4, 3, 3}, 1.1);
  check({"conv2d(x, w4)", {1, 6, 8, 8}, {-46.6895991, -20.4396286, 8.77981552}}, [](auto& t) { return t[0].conv2d(t[1]); }, {x, w4});
  check({"conv2d(x, w, b, 2, 1, 2, 2)", {1, 6, 4, 4}, {-58.3258818, -7.18456865, -1.78822618, 1.32744343}},
        [](auto& t) { return t[0].conv2d(t[1], t[2], 2, 1, 2, 2); }, {x, w, b});
  check({"the same, options", {1, 6, 4, 4}, {-58.3258818, -7.18456865, -1.78822618, 1.32744343}},
        [](auto& t) { return t[0].conv2d(t[1], t[2], {.stride = 2, .padding = 1, .dilation = 2, .groups = 2}); }, {x, w, b});
  check({"conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2)", {1, 6, 5, 6}, {-4.10075747, -3.06716755, 6.05886532, 1.61162932}},
        [](auto& t) { return t[0].conv2d(t[1], t[2], {2, 1}, {1, 0}, {1, 2}, 2); }, {x, w, b});
  // each form means what torch's does
  Tensor xd = x.detach(), wd = w4.detach(), bd = b.detach();
  CHECK(xd.conv2d(wd).shape() == Shape{1, 6, 8, 8});
  CHECK(fp(xd.conv2d(wd, bd)) == Approx(fp(xd.conv2d(wd)) + fp(bd.reshape({1, 6, 1, 1}).expand({1, 6, 8, 8}))).epsilon(1e-5));
  CHECK(xd.conv2d(wd, nullopt, 2).shape() == Shape{1, 6, 4, 4});                 // stride 2
  CHECK(xd.conv2d(wd, {.padding = 1}).shape() == Shape{1, 6, 10, 10});           // padding 1
  CHECK(xd.conv2d(wd, bd, {.stride = 2}).shape() == Shape{1, 6, 4, 4});          // bias, stride 2
  CHECK(xd.conv2d(wd, nullopt, 1, 0, 2).shape() == Shape{1, 6, 6, 6});           // dilation 2
  CHECK(xd.conv2d(wd, nullopt, {1, 2}, {0, 1}).shape() == Shape{1, 6, 8, 5});    // per-dim stride and padding
  CHECK_THROWS_AS(xd.conv2d(wd, {.output_padding = 1}), tinygrad::ShapeError);  // conv_transpose2d's option
  Tensor x1 = data({2, 4, 12}, 0.5), w1 = data({6, 2, 3}, 0.9);
  check({"conv1d(x1, w1, None, 2, 2, 3, 2)", {2, 6, 5}, {-27.7622998, 1.22631137, 11.849615}},
        [](auto& t) { return t[0].conv1d(t[1], nullopt, 2, 2, 3, 2); }, {x1, w1});
  check({"the same, options", {2, 6, 5}, {-27.7622998, 1.22631137, 11.849615}},
        [](auto& t) { return t[0].conv1d(t[1], {.stride = 2, .padding = 2, .dilation = 3, .groups = 2}); }, {x1, w1});
  Tensor x3 = data({1, 2, 5, 6, 4}, 0.2), w3 = data({3, 2, 2, 3, 2}, 1.7);
  check({"conv3d(x3, w3, None, 1, 1, 2)", {1, 3, 5, 4, 4}, {-69.0706812, -8.9560076, 1.30346594}},
        [](auto& t) { return t[0].conv3d(t[1], nullopt, 1, 1, 2); }, {x3, w3});
  Tensor xt = data({1, 4, 5, 5}, 0.4), wt = data({4, 3, 3, 3}, 1.3), bt = data({6}, 0.1);
  check({"conv_transpose2d(xt, wt, bt, 2, 1, 1, 2, 2)", {1, 6, 12, 12}, {10.4598153, -57.6161558, 0.00714245717, -1.04346643}},
        [](auto& t) { return t[0].conv_transpose2d(t[1], t[2], 2, 1, 1, 2, 2); }, {xt, wt, bt});
  check({"the same, options", {1, 6, 12, 12}, {10.4598153, -57.6161558, 0.00714245717, -1.04346643}},
        [](auto& t) { return t[0].conv_transpose2d(t[1], t[2], {.stride = 2, .padding = 1, .dilation = 2, .groups = 2, .output_padding = 1}); },
        {xt, wt, bt});
  // nn::Conv2d (torch's constructor order) agrees with the functional form
  tinygrad::nn::Conv2d conv(4, 6, 3, 2, 1, 2, 2);
  CHECK(conv(xd).shape() == Shape{1, 6, 4, 4});
  CHECK(fp(conv(xd)) == Approx(fp(xd.conv2d(conv.weight, conv.bias, 2, 1, 2, 2))).epsilon(1e-5));
}

TEST_CASE("parity: gelu is exact unless approximate is tanh", "[parity]") {
  Tensor g = Tensor(std::vector<float>{-3, -1, -0.5f, 0, 0.5f, 1, 1.5f, 3}).realize().requires_grad_();
  check({"gelu(g)", {8}, {3.58978933, 2.54912971}}, [](auto& t) { return t[0].gelu(); }, {g});
  check({"gelu(g, tanh)", {8}, {3.59019607, 2.54955097}}, [](auto& t) { return t[0].gelu("tanh"); }, {g});
  // the values and their gradients
  for (auto [approximate, want, dwant] : {std::tuple{"none", 1.3997892, 1.12746919}, std::tuple{"tanh", 1.39957158, 1.12771079}}) {
    INFO(approximate);
    Tensor h = Tensor(std::vector<float>{1.5f}).realize().requires_grad_();
    Tensor y = h.gelu(approximate);
    CHECK(y.item<double>() == Approx(want).epsilon(1e-6));
    CHECK(tinygrad::gradient(y.sum(), {h})[0].item<double>() == Approx(dwant).epsilon(1e-6));
  }
  CHECK(Tensor({1.5}).gelu().item<double>() == Approx(1.3997892).epsilon(1e-6));
  CHECK_THROWS_WITH(g.gelu("erf"), "tinygrad::gelu: approximate must be \"none\" or \"tanh\", got \"erf\"");
}

// torch 2.15 gives 0 for a query row whose keys are all masked, with a bool mask (all false) and with a float mask
// (all -inf) alike, in both its flash and math backends, and 0 gradients for that row
TEST_CASE("parity: scaled_dot_product_attention gives 0 for a fully masked row, without NaN in the gradient", "[parity]") {
  Tensor q = data({1, 2, 3, 4}, 0.6), k = data({1, 2, 5, 4}, 1.4), v = data({1, 2, 5, 4}, 2.2);
  std::vector<float> keep{1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  Tensor bmask = Tensor(keep).reshape({3, 5}) != 0.0f;
  Tensor fmask = bmask.where(0.0, -std::numeric_limits<double>::infinity());
  V want{2.65453395, 0.886598015, -2.57008343, -0.490963377};
  check({"sdpa(q, k, v, bool mask, row 1 all false)", {1, 2, 3, 4}, want},
        [&](auto& t) { return t[0].scaled_dot_product_attention(t[1], t[2], bmask); }, {q, k, v});
  check({"sdpa(q, k, v, float mask, row 1 all -inf)", {1, 2, 3, 4}, want},
        [&](auto& t) { return t[0].scaled_dot_product_attention(t[1], t[2], fmask); }, {q, k, v});
  auto row = q.detach().scaled_dot_product_attention(k.detach(), v.detach(), bmask).to_vector<float>();
  for (size_t h = 0; h < 2; h++)
    for (size_t j = 0; j < 4; j++) CHECK(row[h * 12 + 4 + j] == 0.0f);
  Tensor kc = data({1, 2, 3, 4}, 1.4), vc = data({1, 2, 3, 4}, 2.2);
  check({"sdpa(q, kc, vc, is_causal)", {1, 2, 3, 4}, {3.02275218, 0.442633565, 0.0948550793, 11.8271543}},
        [](auto& t) { return t[0].scaled_dot_product_attention(t[1], t[2], nullopt, true); }, {q, kc, vc});
}
