// Shared by test_api_shape.cpp and test_api_nn.cpp: a plain row-major reference array, the same
// values as tensors in several layouts, a tolerance check, and a float64 finite-difference gradient check.
#pragma once
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include "ref_index.hpp"

#include <cmath>
#include <functional>
#include <string>

namespace api_ref {
using namespace tinygrad;

using ref_index::ravel;
using ref_index::unravel;

// the reference: a row-major array of doubles
struct Arr {
  Shape s;
  std::vector<double> v;
  double operator()(const Shape& i) const { return v[size_t(ravel(i, s))]; }
  double& operator()(const Shape& i) { return v[size_t(ravel(i, s))]; }
  int64_t numel() const { return detail::prod(s); }
};
inline Arr gen(const Shape& s, const std::function<double(const Shape&)>& f) {
  Arr a{s, std::vector<double>(size_t(detail::prod(s)))};
  for (int64_t i = 0; i < a.numel(); i++) a.v[size_t(i)] = f(unravel(i, s));
  return a;
}
inline Arr zeros(const Shape& s) { return gen(s, [](auto&) { return 0.0; }); }
// deterministic values in [lo, hi); `round` keeps them exact in float32 (k/8)
inline Arr rnd(const Shape& s, uint64_t seed = 1, double lo = -2, double hi = 2, bool round = true) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
  return gen(s, [&](auto&) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    double u = lo + (hi - lo) * double(x >> 11) / double(1ull << 53);
    return round ? std::floor(u * 8) / 8 : u;
  });
}

// the same values in three layouts: contiguous, transposed storage (permute), every other element (strided slice)
inline std::vector<Tensor> layouts(const Arr& a, DType dt = DType::Float32) {
  std::vector<Tensor> out{Tensor(a.v, a.s).cast(dt)};
  size_t n = a.s.size();
  if (n == 0) return out;
  Shape rs(a.s.rbegin(), a.s.rend());
  std::vector<int64_t> rev;
  for (size_t i = n; i-- > 0;) rev.push_back(int64_t(i));
  Arr r = gen(rs, [&](const Shape& i) { return a(Shape(i.rbegin(), i.rend())); });
  out.push_back(Tensor(r.v, rs).cast(dt).permute(rev));
  Shape ws = a.s;
  ws.back() *= 2;
  Arr w = gen(ws, [&](const Shape& i) { if (i.back() % 2) return 99.0; Shape j = i; j.back() /= 2; return a(j); });
  std::vector<Index> sl(n - 1, Slice{});
  sl.push_back(Slice{0, std::nullopt, 2});
  out.push_back(Tensor(w.v, ws).cast(dt).slice(sl));
  return out;
}

inline void check(const Tensor& t, const Arr& a, double atol = 1e-5, double rtol = 1e-5) {
  REQUIRE(t.shape() == a.s);
  auto g = t.to_vector<double>();
  for (size_t i = 0; i < g.size(); i++) {
    INFO("element " << i << " of " << to_string(a.s) << ": got " << g[i] << ", want " << a.v[i]);
    bool ok = (std::isnan(g[i]) && std::isnan(a.v[i])) || g[i] == a.v[i] || std::abs(g[i] - a.v[i]) <= atol + rtol * std::abs(a.v[i]);
    CHECK(ok);
  }
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
// d(sum(f(xs) * weights))/dxs against central differences in float64 (random weights make each output count differently)
inline void check_grad(const Fn& f, const std::vector<Arr>& xs0, double tol = 1e-6) {
  auto make = [&](const std::vector<Arr>& vs) {
    std::vector<Tensor> ts;
    for (auto& v : vs) ts.push_back(Tensor(v.v, v.s));
    return ts;
  };
  auto xs = make(xs0);
  Tensor y0 = f(xs);
  Arr wa = rnd(y0.shape(), 99, 0.5, 1.5, false);
  Tensor w(wa.v, wa.s);
  auto loss = [&](const std::vector<Tensor>& ts) { return (f(ts) * w).sum(); };
  auto grads = gradient(loss(xs), xs);
  for (size_t i = 0; i < xs0.size(); i++) {
    REQUIRE(grads[i].shape() == xs0[i].s);
    auto g = grads[i].to_vector<double>();
    for (size_t j = 0; j < xs0[i].v.size(); j++) {
      const double h = 1e-6;
      auto vp = xs0, vm = xs0;
      vp[i].v[j] += h; vm[i].v[j] -= h;
      double num = (loss(make(vp)).item<double>() - loss(make(vm)).item<double>()) / (2 * h);
      INFO("input " << i << " element " << j);
      CHECK(g[j] == Approx(num).margin(tol).epsilon(1e-4));
    }
  }
}

// the message of the exception f throws, which must be E
template <class E, class F>
std::string thrown(F&& f) {
  try { f(); } catch (const E& e) { return e.what(); } catch (const std::exception& e) { FAIL("wrong exception type: " << e.what()); }
  FAIL("nothing thrown");
  return "";
}
inline bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

}  // namespace api_ref
