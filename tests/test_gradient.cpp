// autograd: gradients of composed ops against central finite differences in float64
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <functional>

using namespace tinygrad;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// compare d(sum(f(xs)))/dxs with central differences, each input of the given shape
void check_grad(const Fn& f, const std::vector<Shape>& shapes, double lo = -2, double hi = 2, double tol = 1e-6) {
  std::vector<std::vector<double>> vals;
  uint64_t s = 12345;
  for (auto& sh : shapes) {
    std::vector<double> v(size_t(detail::prod(sh)));
    for (auto& x : v) { s = s * 6364136223846793005ull + 1442695040888963407ull; x = lo + (hi - lo) * double(s >> 11) / double(1ull << 53); }
    vals.push_back(v);
  }
  auto make = [&](const std::vector<std::vector<double>>& vs) {
    std::vector<Tensor> ts;
    for (size_t i = 0; i < vs.size(); i++) ts.push_back(Tensor(vs[i], shapes[i]));
    return ts;
  };
  auto xs = make(vals);
  auto grads = gradient(f(xs).sum(), xs);
  for (size_t i = 0; i < xs.size(); i++) {
    auto g = grads[i].to_vector<double>();
    REQUIRE(grads[i].shape() == shapes[i]);
    for (size_t j = 0; j < vals[i].size(); j++) {
      const double h = 1e-6;
      auto vp = vals, vm = vals;
      vp[i][j] += h; vm[i][j] -= h;
      double num = (f(make(vp)).sum().item<double>() - f(make(vm)).sum().item<double>()) / (2 * h);
      INFO("input " << i << " element " << j);
      CHECK(g[j] == Approx(num).margin(tol).epsilon(1e-4));
    }
  }
}
}  // namespace

TEST_CASE("gradient: elementwise", "[gradient]") {
  check_grad([](auto& x) { return x[0] * x[1] + x[0]; }, {{3, 4}, {3, 4}});
  check_grad([](auto& x) { return x[0] / x[1]; }, {{5}, {5}}, 0.5, 2);
  check_grad([](auto& x) { return x[0].exp() - x[0].log() + x[0].sqrt(); }, {{6}}, 0.5, 2);
  check_grad([](auto& x) { return x[0].sin() * x[0].cos() + x[0].tanh() + x[0].sigmoid(); }, {{6}});
  check_grad([](auto& x) { return x[0].relu() + x[0].maximum(x[1]) + x[0].minimum(0.5); }, {{7}, {7}});
  check_grad([](auto& x) { return (x[0] > 0.0).where(x[0] * 3.0, x[1]); }, {{6}, {6}});
  check_grad([](auto& x) { return x[0].pow(3.0) + x[0].abs(); }, {{5}}, 0.2, 2);
}

TEST_CASE("gradient: erf and gelu by their own rules (2/sqrt(pi) exp(-x^2), Phi + x phi), one kernel a backward", "[gradient]") {
  check_grad([](auto& x) { return x[0].erf(); }, {{16}}, -4, 4);
  check_grad([](auto& x) { return x[0].gelu() * x[1]; }, {{16}, {16}}, -6, 6);
  check_grad([](auto& x) { return x[0].erf().erf(); }, {{8}}, -2, 2);
  // the second derivative: erf'' = -2x erf', through the rule's own ops
  Tensor x = Tensor(std::vector<double>{-1.5, -0.3, 0.0, 0.7, 2.0});
  Tensor d1 = gradient(x.erf().sum(), {x})[0], d2 = gradient(d1.sum(), {x})[0];
  auto xv = x.to_vector<double>(), got = d2.to_vector<double>();
  for (size_t i = 0; i < xv.size(); i++) CHECK(got[i] == Approx(-2 * xv[i] * M_2_SQRTPI * std::exp(-xv[i] * xv[i])).margin(1e-12));
  // the polynomials' own derivative had been 50 elementwise kernels a gelu backward
  Tensor a = Tensor::randn({64, 256}).realize();
  a.requires_grad_();
  a.gelu().square().sum().backward();
  int64_t before = run_stats().kernels_run;
  a.grad()->realize();
  CHECK(run_stats().kernels_run - before <= 2);
}

TEST_CASE("gradient: broadcasting, movement and reductions", "[gradient]") {
  check_grad([](auto& x) { return x[0] + x[1]; }, {{3, 4}, {4}});
  check_grad([](auto& x) { return x[0] * x[1]; }, {{3, 1}, {1, 4}});
  check_grad([](auto& x) { return x[0].reshape({2, 6}).permute({1, 0}).flip(0) * 2.0; }, {{3, 4}});
  check_grad([](auto& x) { return x[0].pad({{1, 0}, {0, 2}}).slice({Slice{0, 3, 2}, Slice{1, 5}}); }, {{3, 4}});
  check_grad([](auto& x) { return x[0].sum(1) * x[0].max(0).sum() + x[0].mean(); }, {{3, 4}});
  check_grad([](auto& x) { return x[0].prod(0); }, {{3, 4}}, 0.5, 2);
}

TEST_CASE("gradient: matmul, conv2d, softmax", "[gradient]") {
  check_grad([](auto& x) { return x[0].matmul(x[1]); }, {{3, 5}, {5, 2}});
  check_grad([](auto& x) { return x[0].conv2d(x[1], std::nullopt, 1, 1); }, {{1, 2, 4, 4}, {3, 2, 3, 3}});
  check_grad([](auto& x) { return x[0].softmax(-1) * x[1]; }, {{2, 5}, {2, 5}});
  check_grad([](auto& x) { return x[0].log_softmax(0) * x[1]; }, {{4, 3}, {4, 3}});
}

TEST_CASE("gradient: bad input", "[gradient][errors]") {
  Tensor x = Tensor({1.0, 2.0, 3.0});
  CHECK_THROWS_AS(gradient(x * 2.0, {x}), GradientError);  // not a scalar
  CHECK_THROWS_AS(gradient(Tensor({1, 2}).sum(), {x}), GradientError);  // integer loss
  // a target the loss does not depend on is an error, not silent zeros
  Tensor y = Tensor({4.0, 5.0});
  CHECK_THROWS_AS(gradient((x * 2.0).sum(), {x, y}), GradientError);
  CHECK(gradient((x * 2.0).sum(), {x})[0].to_vector<double>() == std::vector<double>{2, 2, 2});
}

TEST_CASE("backward fills .grad of tensors that require it", "[gradient]") {
  Tensor w = Tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();
  Tensor b = Tensor({0.5, -0.5}).requires_grad_();
  Tensor x = Tensor({{1.0, -1.0}});
  Tensor loss = (x.matmul(w) + b).relu().sum();
  loss.backward();
  REQUIRE(w.grad());
  REQUIRE(b.grad());
  // x@w + b = [-1.5, -2.5] -> relu kills both
  CHECK(w.grad()->to_vector<double>() == std::vector<double>{0, 0, 0, 0});
  Tensor loss2 = (x.matmul(w) * -1.0 + b).sum();
  w.zero_grad();
  loss2.backward();
  CHECK(w.grad()->to_vector<double>() == std::vector<double>{-1, -1, 1, 1});
  // grads accumulate across backward calls (b: 0 from the relu loss + 1 from loss2)
  CHECK(b.grad()->to_vector<double>() == std::vector<double>{1, 1});
  // bad input
  CHECK_THROWS_AS(Tensor({1.0, 2.0}).sum().backward(), GradientError);       // nothing requires grad
  CHECK_THROWS_AS((w * 2.0).backward(), GradientError);                        // not a scalar, no seed
  CHECK_THROWS_AS(Tensor({1, 2}).requires_grad_().sum().backward(), GradientError);  // integer
  // still usable after the errors
  CHECK(w.sum().item<double>() == 10.0);
}
