// Convolutions, pooling, normalization, attention, einsum and friends (tensor/processing.hpp) against
// plain-loop references (torch's formulas written out), in several layouts, with float64
// finite-difference gradients (and analytic ones where there is a closed form), and every error path.
#include "api_shape_ref.hpp"

using namespace api_ref;
using tinygrad::Tensor;
using std::nullopt;

namespace {
using Pads = std::vector<std::pair<int64_t, int64_t>>;
const double kTol = 1e-4;  // float32 sums of O(10) products

// every position of a box of the given extents
void each(const Shape& box, const std::function<void(const Shape&)>& f) {
  for (int64_t i = 0; i < detail::prod(box); i++) f(unravel(i, box));
}
Arr conv_ref(const Arr& x, const Arr& w, const Arr* b, int64_t groups, Shape st, Shape dl, Pads p) {
  size_t nsp = x.s.size() - 2;
  int64_t cout = w.s[0], cing = w.s[1], coutg = cout / groups;
  Shape ks(w.s.begin() + 2, w.s.end()), os{x.s[0], cout};
  for (size_t i = 0; i < nsp; i++) os.push_back((x.s[2 + i] + p[i].first + p[i].second - dl[i] * (ks[i] - 1) - 1) / st[i] + 1);
  return gen(os, [&](const Shape& o) {
    double acc = b ? b->v[size_t(o[1])] : 0.0;
    int64_t g = o[1] / coutg;
    for (int64_t ci = 0; ci < cing; ci++)
      each(ks, [&](const Shape& k) {
        Shape xi{o[0], g * cing + ci}, wi{o[1], ci};
        for (size_t i = 0; i < nsp; i++) {
          int64_t q = o[2 + i] * st[i] - p[i].first + k[i] * dl[i];
          if (q < 0 || q >= x.s[2 + i]) return;
          xi.push_back(q); wi.push_back(k[i]);
        }
        acc += x(xi) * w(wi);
      });
    return acc;
  });
}
Arr conv_transpose_ref(const Arr& x, const Arr& w, int64_t groups, Shape st, Shape dl, Pads p, Shape op) {
  size_t nsp = x.s.size() - 2;
  int64_t cin = x.s[1], cing = cin / groups, coutg = w.s[1];
  Shape ks(w.s.begin() + 2, w.s.end()), os{x.s[0], coutg * groups}, in(x.s.begin() + 2, x.s.end());
  for (size_t i = 0; i < nsp; i++) os.push_back((in[i] - 1) * st[i] - p[i].first - p[i].second + dl[i] * (ks[i] - 1) + op[i] + 1);
  Arr out = zeros(os);
  for (int64_t n = 0; n < x.s[0]; n++)
    for (int64_t ci = 0; ci < cin; ci++)
      each(in, [&](const Shape& q) {
        for (int64_t co = 0; co < coutg; co++)
          each(ks, [&](const Shape& k) {
            Shape oi{n, (ci / cing) * coutg + co}, xi{n, ci}, wi{ci, co};
            for (size_t i = 0; i < nsp; i++) {
              int64_t o = q[i] * st[i] - p[i].first + k[i] * dl[i];
              if (o < 0 || o >= os[2 + i]) return;
              oi.push_back(o); xi.push_back(q[i]); wi.push_back(k[i]);
            }
            out(oi) += x(xi) * w(wi);
          });
      });
  return out;
}
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pa, bool ceil_mode) {
  int64_t span = d * (k - 1) + 1, num = in + pb + pa - span;
  int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + pb) o--;  // the last window must start inside the input or the left padding
  return o;
}
// {max, first argmax (flat spatial index)} over the last 2 dims, padding never wins
std::pair<Arr, Arr> maxpool_ref(const Arr& x, Shape k, Shape s, Shape d, Pads p, bool ceil_mode) {
  size_t nb = x.s.size() - 2;
  Shape os(x.s.begin(), x.s.begin() + int64_t(nb));
  for (size_t i = 0; i < 2; i++) os.push_back(pool_out(x.s[nb + i], k[i], s[i], d[i], p[i].first, p[i].second, ceil_mode));
  Arr v = zeros(os), ix = zeros(os);
  each(os, [&](const Shape& o) {
    double best = -INFINITY, bi = -1;
    each(k, [&](const Shape& kk) {
      Shape xi(o.begin(), o.begin() + int64_t(nb));
      for (size_t i = 0; i < 2; i++) {
        int64_t q = o[nb + i] * s[i] - p[i].first + kk[i] * d[i];
        if (q < 0 || q >= x.s[nb + i]) return;
        xi.push_back(q);
      }
      if (x(xi) > best) { best = x(xi); bi = double(xi[nb] * x.s[nb + 1] + xi[nb + 1]); }
    });
    v(o) = best; ix(o) = bi;
  });
  return {v, ix};
}
// torch's avg_pool2d (no dilation)
Arr avgpool_ref(const Arr& x, Shape k, Shape s, Pads p, bool ceil_mode, bool count_include_pad) {
  size_t nb = x.s.size() - 2;
  Shape os(x.s.begin(), x.s.begin() + int64_t(nb));
  for (size_t i = 0; i < 2; i++) os.push_back(pool_out(x.s[nb + i], k[i], s[i], 1, p[i].first, p[i].second, ceil_mode));
  return gen(os, [&](const Shape& o) {
    int64_t pool_size = 1, count = 1;
    Shape lo, hi;
    for (size_t i = 0; i < 2; i++) {
      int64_t st = o[nb + i] * s[i] - p[i].first, en = std::min(st + k[i], x.s[nb + i] + p[i].second);
      pool_size *= en - st;
      st = std::max<int64_t>(st, 0); en = std::min(en, x.s[nb + i]);
      count *= en - st;
      lo.push_back(st); hi.push_back(en);
    }
    double acc = 0;
    for (int64_t a = lo[0]; a < hi[0]; a++)
      for (int64_t b = lo[1]; b < hi[1]; b++) { Shape xi(o.begin(), o.begin() + int64_t(nb)); xi.push_back(a); xi.push_back(b); acc += x(xi); }
    return acc / double(count_include_pad ? pool_size : count);
  });
}
}  // namespace

TEST_CASE("api: max_pool2d", "[api][api_nn]") {
  struct Case { Shape x, k, s, d; Pads p; bool ceil; };
  std::vector<Case> cases{
      {{2, 3, 6, 6}, {2, 2}, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, false},
      {{1, 2, 7, 5}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, false},
      {{1, 2, 7, 5}, {3, 2}, {2, 3}, {1, 1}, {{1, 1}, {0, 0}}, true},
      {{1, 1, 8, 7}, {2, 3}, {1, 2}, {2, 1}, {{0, 0}, {1, 1}}, false},
      {{2, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, true},
      {{3, 5, 4}, {3, 1}, {1, 1}, {1, 1}, {{1, 1}, {0, 0}}, true},  // no channel dim
  };
  for (auto& c : cases) {
    INFO("x " << to_string(c.x) << " k " << to_string(c.k) << " s " << to_string(c.s) << " d " << to_string(c.d) << " ceil " << c.ceil);
    Arr a = rnd(c.x, 21, -2, 2, false);
    auto [v, ix] = maxpool_ref(a, c.k, c.s, c.d, c.p, c.ceil);
    std::vector<int64_t> pad{c.p[0].first, c.p[0].second, c.p[1].first, c.p[1].second};
    for (auto& t : layouts(a)) {
      check(t.max_pool2d(c.k, c.s, pad, c.d, c.ceil), v);
      auto [tv, ti] = t.max_pool2d_with_indices(c.k, c.s, pad, c.d, c.ceil);
      check(tv, v);
      check(ti, ix);
    }
  }
  // defaults (2x2, stride = kernel), ties take the first index, ints
  Tensor i = Tensor({1, 5, 5, 2, 0, 5, 3, 3, 7, 7, 7, 7, -1, -2, -3, -4}).reshape({1, 1, 4, 4});
  CHECK(i.max_pool2d().to_vector<int>() == std::vector<int>{5, 5, 7, 7});
  CHECK(i.max_pool2d_with_indices().second.to_vector<int>() == std::vector<int>{1, 2, 8, 10});
  CHECK(i.max_pool2d({3}, {1}).shape() == Shape{1, 1, 2, 2});
  // gradients vs finite differences (no ties in random doubles) and vs the loop's argmax
  check_grad([](auto& x) { return x[0].max_pool2d({2, 2}); }, {rnd({1, 2, 4, 4}, 3, -2, 2, false)});
  check_grad([](auto& x) { return x[0].max_pool2d({3, 3}, {2, 2}, 1, 1, true); }, {rnd({1, 1, 5, 6}, 4, -2, 2, false)});
  check_grad([](auto& x) { return x[0].max_pool2d({2, 2}, {1, 1}, 0, {2, 1}); }, {rnd({1, 1, 5, 4}, 5, -2, 2, false)});
  {
    Arr a = rnd({2, 2, 6, 6}, 6, -2, 2, false), gw = rnd({2, 2, 3, 3}, 7);
    Tensor x(a.v, a.s);
    auto g = gradient((x.max_pool2d() * Tensor(gw.v, gw.s)).sum(), {x})[0];
    auto ix = maxpool_ref(a, {2, 2}, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, false).second;
    Arr want = zeros(a.s);
    each(ix.s, [&](const Shape& o) { want({o[0], o[1], int64_t(ix(o)) / 6, int64_t(ix(o)) % 6}) += gw(o); });
    check(g, want, 0, 0);
  }
  // errors
  Tensor t = Tensor::zeros({1, 2, 5, 5});
  CHECK(has(thrown<ShapeError>([&] { (void)t.max_pool2d({6, 6}); }), "max_pool2d: kernel (6, 6)"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::zeros({5}).max_pool2d(); }), "(5,)"));
  CHECK_THROWS_AS(t.max_pool2d({2, 2, 2, 2, 2, 2}), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d({0}), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d({2}, {0}), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d({2}, {}, 0, {1, 1, 1}), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d({2}, {}, {1, 1, 1}), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d({2}, {}, -1), ShapeError);
  CHECK_THROWS_AS(t.max_pool2d_with_indices({7}), ShapeError);
  CHECK(t.max_pool2d().shape() == Shape{1, 2, 2, 2});
}

TEST_CASE("api: avg_pool2d", "[api][api_nn]") {
  struct Case { Shape x, k, s; Pads p; bool ceil, incl; };
  std::vector<Case> cases{
      {{2, 3, 6, 6}, {2, 2}, {2, 2}, {{0, 0}, {0, 0}}, false, true},
      {{1, 2, 7, 5}, {3, 3}, {2, 2}, {{1, 1}, {1, 1}}, false, true},
      {{1, 2, 7, 5}, {3, 3}, {2, 2}, {{1, 1}, {1, 1}}, false, false},
      {{1, 2, 7, 5}, {3, 2}, {2, 3}, {{1, 1}, {0, 0}}, true, true},
      {{1, 2, 7, 5}, {3, 2}, {2, 3}, {{1, 1}, {1, 1}}, true, false},
      {{2, 1, 5, 5}, {2, 2}, {2, 2}, {{0, 0}, {0, 0}}, true, true},
      {{1, 1, 6, 6}, {4, 4}, {3, 3}, {{2, 2}, {2, 2}}, true, true},
  };
  for (auto& c : cases) {
    INFO("x " << to_string(c.x) << " k " << to_string(c.k) << " s " << to_string(c.s) << " ceil " << c.ceil << " count_include_pad " << c.incl);
    Arr a = rnd(c.x, 22);
    std::vector<int64_t> pad{c.p[0].first, c.p[0].second, c.p[1].first, c.p[1].second};
    for (auto& t : layouts(a)) check(t.avg_pool2d(c.k, c.s, pad, c.ceil, c.incl), avgpool_ref(a, c.k, c.s, c.p, c.ceil, c.incl));
  }
  // dilation: the mean of the dilated window
  Arr a = rnd({1, 1, 6, 5}, 23);
  check(layouts(a)[1].avg_pool2d({.kernel = {2, 2}, .stride = {1, 2}, .dilation = {3, 2}}), gen({1, 1, 3, 2}, [&](const Shape& o) {
          return (a({0, 0, o[2], o[3] * 2}) + a({0, 0, o[2] + 3, o[3] * 2}) + a({0, 0, o[2], o[3] * 2 + 2}) + a({0, 0, o[2] + 3, o[3] * 2 + 2})) / 4;
          }));
  check_grad([](auto& x) { return x[0].avg_pool2d({2, 2}); }, {rnd({1, 2, 4, 4}, 3, -2, 2, false)});
  check_grad([](auto& x) { return x[0].avg_pool2d({3, 3}, {2, 2}, 1, true, false); }, {rnd({1, 1, 5, 6}, 4, -2, 2, false)});
  Tensor t = Tensor::zeros({1, 2, 5, 5});
  CHECK(has(thrown<ShapeError>([&] { (void)t.avg_pool2d({6, 6}); }), "avg_pool2d"));
  CHECK_THROWS_AS(t.avg_pool2d({2}, {-1}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({3}).avg_pool2d(), ShapeError);
}

TEST_CASE("api: conv1d, conv2d, conv3d", "[api][api_nn]") {
  struct Case { Shape x, w; int64_t g; Shape st, dl; Pads p; };
  std::vector<Case> cases{
      {{2, 3, 9}, {4, 3, 3}, 1, {2}, {1}, {{1, 1}}},
      {{1, 4, 8}, {6, 2, 2}, 2, {1}, {3}, {{0, 2}}},
      {{2, 2, 6, 5}, {3, 2, 3, 3}, 1, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}},
      {{1, 4, 7, 7}, {4, 1, 3, 2}, 4, {2, 1}, {1, 2}, {{0, 1}, {2, 0}}},
      {{1, 2, 4, 5, 4}, {2, 2, 2, 3, 2}, 1, {1, 2, 1}, {1, 1, 2}, {{1, 0}, {0, 1}, {1, 1}}},
  };
  for (auto& c : cases) {
    INFO("x " << to_string(c.x) << " w " << to_string(c.w) << " groups " << c.g);
    Arr x = rnd(c.x, 31), w = rnd(c.w, 32), b = rnd({c.w[0]}, 33);
    std::vector<int64_t> pad;
    for (auto& [pb, pa] : c.p) { pad.push_back(pb); pad.push_back(pa); }
    Arr want = conv_ref(x, w, &b, c.g, c.st, c.dl, c.p);
    auto lx = layouts(x), lw = layouts(w);
    for (size_t k = 0; k < lx.size(); k++) {
      Tensor tb(b.v, b.s);
      Tensor r = c.x.size() == 3 ? lx[k].conv1d(lw[(k + 1) % 3], tb.cast(DType::Float32), c.st, pad, c.dl, c.g)
               : c.x.size() == 5 ? lx[k].conv3d(lw[(k + 1) % 3], tb.cast(DType::Float32), c.st, pad, c.dl, c.g)
                                  : lx[k].conv2d(lw[(k + 1) % 3], tb.cast(DType::Float32), c.st, pad, c.dl, c.g);
      check(r, want, kTol, kTol);
    }
  }
  check_grad([](auto& x) { return x[0].conv1d(x[1], x[2], 2, 1, 1, 2); },
             {rnd({1, 4, 6}, 1, -2, 2, false), rnd({2, 2, 3}, 2, -2, 2, false), rnd({2}, 3, -2, 2, false)});
  check_grad([](auto& x) { return x[0].conv3d(x[1], nullopt, 1, 1); },
             {rnd({1, 1, 3, 3, 3}, 1, -2, 2, false), rnd({2, 1, 2, 2, 2}, 2, -2, 2, false)});
  check_grad([](auto& x) { return x[0].conv2d(x[1], nullopt, 2, 1); },
             {rnd({1, 2, 5, 5}, 1, -2, 2, false), rnd({2, 2, 3, 3}, 2, -2, 2, false)});
  // conv2d backward vs loops: dL/dw[co,ci,k] = sum x[...] * g[...]; dL/dx is conv_transpose of g
  {
    Arr x = rnd({2, 3, 6, 6}, 41, -2, 2, false), w = rnd({4, 3, 3, 3}, 42, -2, 2, false), g = rnd({2, 4, 4, 4}, 43, -2, 2, false);
    Tensor tx(x.v, x.s), tw(w.v, w.s);
    auto gr = gradient((tx.conv2d(tw) * Tensor(g.v, g.s)).sum(), {tx, tw});
    Arr dw = gen(w.s, [&](const Shape& i) {
      double acc = 0;
      each({2, 4, 4}, [&](const Shape& o) { acc += x({o[0], i[1], o[1] + i[2], o[2] + i[3]}) * g({o[0], i[0], o[1], o[2]}); });
      return acc;
    });
    Arr wt = gen({4, 3, 3, 3}, [&](const Shape& i) { return w(i); });  // conv_transpose weight is (Cin=4 of g, Cout=3, k, k)
    check(gr[1], dw, 1e-9, 1e-9);
    check(gr[0], conv_transpose_ref(g, wt, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, {0, 0}), 1e-9, 1e-9);
  }
  Tensor t = Tensor::zeros({1, 2, 5});
  CHECK(has(thrown<ShapeError>([&] { (void)t.conv1d(Tensor::zeros({3, 2, 2, 2})); }), "conv1d"));
  CHECK(has(thrown<ShapeError>([&] { (void)t.conv3d(Tensor::zeros({3, 2, 2})); }), "conv3d"));
  CHECK_THROWS_AS(t.conv1d(Tensor::zeros({3, 3, 2})), ShapeError);
  CHECK_THROWS_AS(t.conv1d(Tensor::zeros({3, 2, 6})), ShapeError);
  CHECK_THROWS_AS(t.conv1d(Tensor::zeros({3, 1, 2}), {.groups = 2}), ShapeError);  // 3 out channels, 2 groups
}

TEST_CASE("api: conv_transpose2d", "[api][api_nn]") {
  struct Case { Shape x, w; int64_t g; Shape st, dl; Pads p; Shape op; };
  std::vector<Case> cases{
      {{2, 3, 4, 4}, {3, 2, 3, 3}, 1, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, {0, 0}},
      {{1, 2, 3, 4}, {2, 3, 3, 2}, 1, {2, 2}, {1, 1}, {{1, 1}, {0, 0}}, {1, 0}},
      {{1, 4, 3, 3}, {4, 1, 2, 3}, 2, {3, 1}, {2, 1}, {{1, 1}, {1, 1}}, {1, 0}},
      {{1, 2, 5}, {2, 2, 3}, 1, {2}, {1}, {{2, 2}}, {1}},  // 1-D
  };
  for (auto& c : cases) {
    INFO("x " << to_string(c.x) << " w " << to_string(c.w) << " groups " << c.g);
    Arr x = rnd(c.x, 51), w = rnd(c.w, 52);
    std::vector<int64_t> pad;
    for (auto& [pb, pa] : c.p) { pad.push_back(pb); pad.push_back(pa); }
    Arr want = conv_transpose_ref(x, w, c.g, c.st, c.dl, c.p, c.op);
    auto lx = layouts(x), lw = layouts(w);
    for (size_t k = 0; k < lx.size(); k++) check(lx[k].conv_transpose2d(lw[(k + 2) % 3], nullopt, c.st, pad, c.op, c.g, c.dl), want, kTol, kTol);
  }
  // bias
  Arr x = rnd({1, 2, 3, 3}, 53), w = rnd({2, 2, 2, 2}, 54);
  Arr want = conv_transpose_ref(x, w, 1, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, {0, 0});
  for (int64_t i = 0; i < want.numel(); i++) want.v[size_t(i)] += unravel(i, want.s)[1] ? -1.0 : 0.5;
  check(Tensor(x.v, x.s).conv_transpose2d(Tensor(w.v, w.s), Tensor({0.5, -1.0}), 2), want, kTol, kTol);
  check_grad([](auto& x) { return x[0].conv_transpose2d(x[1], nullopt, 2, 1, 1); },
             {rnd({1, 2, 3, 3}, 1, -2, 2, false), rnd({2, 2, 3, 3}, 2, -2, 2, false)});
  CHECK(thrown<ShapeError>([] { (void)Tensor::zeros({1, 2, 5, 5}).conv_transpose2d(Tensor::zeros({4, 3, 3, 3})); }) ==
        "tinygrad::conv_transpose2d: weight (4, 3, 3, 3) needs 4 input channels, input has shape (1, 2, 5, 5)");
  Tensor t = Tensor::zeros({1, 4, 5, 5});
  CHECK_THROWS_AS(t.conv_transpose2d(Tensor::zeros({4, 3, 3})), ShapeError);
  CHECK_THROWS_AS(t.conv_transpose2d(Tensor::zeros({4, 3, 3, 3}), {.groups = 3}), ShapeError);
  CHECK(has(thrown<ShapeError>([&] { (void)t.conv_transpose2d(Tensor::zeros({4, 3, 3, 3}), nullopt, 2, 0, 2); }), "output_padding"));
  CHECK_THROWS_AS(t.conv_transpose2d(Tensor::zeros({4, 3, 3, 3}), nullopt, {1, 1, 1}), ShapeError);
  CHECK_THROWS_AS(t.conv_transpose2d(Tensor::zeros({4, 3, 3, 3}), nullopt, 1, {1, 1, 1}), ShapeError);
  CHECK(t.conv_transpose2d(Tensor::zeros({4, 3, 3, 3})).shape() == Shape{1, 3, 7, 7});
}

TEST_CASE("api: layernorm, layer_norm, batchnorm", "[api][api_nn]") {
  Arr a = rnd({2, 3, 4}, 61, -2, 2, false);
  auto ln_ref = [&](const Arr& x, size_t k, double eps, const Arr* w, const Arr* b) {
    int64_t inner = 1;
    for (size_t i = 0; i < k; i++) inner *= x.s[x.s.size() - 1 - i];
    Arr out = x;
    for (int64_t r = 0; r < x.numel() / inner; r++) {
      double m = 0, v = 0;
      for (int64_t j = 0; j < inner; j++) m += x.v[size_t(r * inner + j)];
      m /= double(inner);
      for (int64_t j = 0; j < inner; j++) v += std::pow(x.v[size_t(r * inner + j)] - m, 2);
      v /= double(inner);
      for (int64_t j = 0; j < inner; j++) {
        double y = (x.v[size_t(r * inner + j)] - m) / std::sqrt(v + eps);
        out.v[size_t(r * inner + j)] = y * (w ? w->v[size_t(j)] : 1) + (b ? b->v[size_t(j)] : 0);
      }
    }
    return out;
  };
  Arr w = rnd({3, 4}, 62), b = rnd({3, 4}, 63);
  for (auto& t : layouts(a)) {
    check(t.layernorm(), ln_ref(a, 1, 1e-5, nullptr, nullptr), kTol, kTol);
    check(t.layernorm({-2, -1}, 0.1), ln_ref(a, 2, 0.1, nullptr, nullptr), kTol, kTol);
    check(t.layer_norm({3, 4}, Tensor(w.v, w.s).cast(DType::Float32), Tensor(b.v, b.s).cast(DType::Float32)), ln_ref(a, 2, 1e-5, &w, &b), kTol, kTol);
    check(t.layer_norm({4}), ln_ref(a, 1, 1e-5, nullptr, nullptr), kTol, kTol);
  }
  check_grad([](auto& x) { return x[0].layernorm(); }, {a});
  check_grad([](auto& x) { return x[0].layer_norm({3, 4}, x[1], x[2]); }, {a, w, b});
  // analytic: dx = (g - mean(g) - xhat * mean(g * xhat)) / sigma over the normalized dim
  {
    Arr g = rnd({2, 3, 4}, 64, -1, 1, false);
    Tensor x(a.v, a.s);
    auto dx = gradient((x.layernorm({-1}, 1e-5) * Tensor(g.v, g.s)).sum(), {x})[0];
    Arr xh = ln_ref(a, 1, 1e-5, nullptr, nullptr), want = a;
    for (int64_t r = 0; r < 6; r++) {
      double m = 0, v = 0, mg = 0, mgx = 0;
      for (int64_t j = 0; j < 4; j++) m += a.v[size_t(r * 4 + j)] / 4;
      for (int64_t j = 0; j < 4; j++) v += std::pow(a.v[size_t(r * 4 + j)] - m, 2) / 4;
      for (int64_t j = 0; j < 4; j++) { mg += g.v[size_t(r * 4 + j)] / 4; mgx += g.v[size_t(r * 4 + j)] * xh.v[size_t(r * 4 + j)] / 4; }
      for (int64_t j = 0; j < 4; j++) want.v[size_t(r * 4 + j)] = (g.v[size_t(r * 4 + j)] - mg - xh.v[size_t(r * 4 + j)] * mgx) / std::sqrt(v + 1e-5);
    }
    check(dx, want, 1e-9, 1e-9);
  }
  // batchnorm over channels (dim 1) and over the last dim
  Arr x = rnd({2, 3, 2, 2}, 65), mean = rnd({3}, 66), invstd = rnd({3}, 67, 0.5, 2), bw = rnd({3}, 68), bb = rnd({3}, 69);
  auto T = [](const Arr& r) { return Tensor(r.v, r.s).cast(DType::Float32); };
  for (auto& t : layouts(x)) {
    check(t.batchnorm(T(bw), T(bb), T(mean), T(invstd)),
          gen(x.s, [&](const Shape& i) { size_t c = size_t(i[1]); return (x(i) - mean.v[c]) * bw.v[c] * invstd.v[c] + bb.v[c]; }), kTol, kTol);
    check(t.batchnorm(nullopt, nullopt, T(mean), T(invstd)),
          gen(x.s, [&](const Shape& i) { size_t c = size_t(i[1]); return (x(i) - mean.v[c]) * invstd.v[c]; }), kTol, kTol);
  }
  Arr y = rnd({3, 2}, 70), m2 = rnd({2}, 71), s2 = rnd({2}, 72, 0.5, 2);
  check(T(y).batchnorm(nullopt, T(m2), T(m2), T(s2), {-1}),
        gen(y.s, [&](const Shape& i) { size_t c = size_t(i[1]); return (y(i) - m2.v[c]) * s2.v[c] + m2.v[c]; }), kTol, kTol);
  check_grad([](auto& v) { return v[0].batchnorm(v[1], v[2], v[3], v[4]); },
      {rnd({2, 3, 2}, 1, -2, 2, false), rnd({3}, 2, -2, 2, false), rnd({3}, 3, -2, 2, false), rnd({3}, 4, -2, 2, false), rnd({3}, 5, 0.5, 2, false)});
  // errors
  Tensor t = T(a);
  CHECK(has(thrown<ShapeError>([&] { (void)t.layer_norm({3}); }), "normalized_shape (3,) is not the end of input shape (2, 3, 4)"));
  CHECK_THROWS_AS(t.layer_norm({}), ShapeError);
  CHECK_THROWS_AS(t.layer_norm({1, 2, 3, 4}), ShapeError);
  CHECK_THROWS_AS(t.layer_norm({4}, Tensor::ones({3})), ShapeError);
  CHECK_THROWS_AS(t.layernorm({3}), IndexError);
  CHECK(has(thrown<ShapeError>([&] { (void)t.batchnorm(nullopt, nullopt, Tensor::zeros({4}), Tensor::ones({3})); }), "mean of shape (4,)"));
  CHECK_THROWS_AS(t.batchnorm(Tensor::ones({2}), nullopt, Tensor::zeros({3}), Tensor::ones({3})), ShapeError);
  CHECK_THROWS_AS(t.batchnorm(nullopt, nullopt, Tensor::zeros({3}), Tensor::ones({3}), {3}), IndexError);
}

TEST_CASE("api: scaled_dot_product_attention", "[api][api_nn]") {
  auto ref = [](const Arr& q, const Arr& k, const Arr& v, const Arr* mask, bool bool_mask, bool causal) {
    int64_t B = q.s[0], L = q.s[1], D = q.s[2], S = k.s[1], Dv = v.s[2];
    return gen({B, L, Dv}, [&](const Shape& i) {
      std::vector<double> sc(static_cast<size_t>(S));
      double mx = -INFINITY;
      for (int64_t s = 0; s < S; s++) {
        double d = 0;
        for (int64_t e = 0; e < D; e++) d += q({i[0], i[1], e}) * k({i[0], s, e});
        d /= std::sqrt(double(D));
        if (causal && s > i[1]) d = -INFINITY;
        if (mask) { double m = (*mask)({i[1], s}); d = bool_mask ? (m != 0 ? d : -INFINITY) : d + m; }
        sc[size_t(s)] = d; mx = std::max(mx, d);
      }
      double z = 0, acc = 0;
      for (int64_t s = 0; s < S; s++) { double e = std::exp(sc[size_t(s)] - mx); z += e; acc += e * v({i[0], s, i[2]}); }
      return acc / z;
    });
  };
  Arr q = rnd({2, 3, 4}, 81), k = rnd({2, 5, 4}, 82), v = rnd({2, 5, 2}, 83), fm = rnd({3, 5}, 84);
  Arr bm = gen({3, 5}, [](const Shape& i) { return double((i[0] + i[1]) % 3 != 0); });
  auto lq = layouts(q), lk = layouts(k), lv = layouts(v);
  for (size_t j = 0; j < 3; j++) {
    check(lq[j].scaled_dot_product_attention(lk[(j + 1) % 3], lv[(j + 2) % 3]), ref(q, k, v, nullptr, false, false), kTol, kTol);
    check(lq[j].scaled_dot_product_attention(lk[j], lv[j], Tensor(fm.v, fm.s).cast(DType::Float32)), ref(q, k, v, &fm, false, false), kTol, kTol);
    check(lq[j].scaled_dot_product_attention(lk[j], lv[j], Tensor(bm.v, bm.s).cast(DType::Bool)), ref(q, k, v, &bm, true, false), kTol, kTol);
  }
  Arr k3 = rnd({2, 3, 4}, 85), v3 = rnd({2, 3, 2}, 86);
  check(Tensor(q.v, q.s).scaled_dot_product_attention(Tensor(k3.v, k3.s), Tensor(v3.v, v3.s), nullopt, true),
        ref(q, k3, v3, nullptr, false, true), 1e-9, 1e-9);
  check_grad([](auto& x) { return x[0].scaled_dot_product_attention(x[1], x[2]); },
             {rnd({1, 2, 3}, 1, -1, 1, false), rnd({1, 3, 3}, 2, -1, 1, false), rnd({1, 3, 2}, 3, -1, 1, false)});
  check_grad([](auto& x) { return x[0].scaled_dot_product_attention(x[1], x[2], nullopt, true); },
             {rnd({1, 3, 2}, 1, -1, 1, false), rnd({1, 3, 2}, 2, -1, 1, false), rnd({1, 3, 2}, 3, -1, 1, false)});
  Tensor t = Tensor::zeros({2, 3, 4});
  CHECK(has(thrown<ShapeError>([&] { (void)t.scaled_dot_product_attention(Tensor::zeros({2, 5, 3}), Tensor::zeros({2, 5, 2})); }), "key (2, 5, 3)"));
  CHECK_THROWS_AS(t.scaled_dot_product_attention(Tensor::zeros({2, 5, 4}), Tensor::zeros({2, 4, 2})), ShapeError);
  CHECK_THROWS_AS(t.scaled_dot_product_attention(t, t, Tensor::zeros({3, 3}), true), Error);
  CHECK(has(thrown<ShapeError>([&] { (void)t.scaled_dot_product_attention(t, t, Tensor::zeros({2, 2})); }), "attn_mask (2, 2)"));
}

TEST_CASE("api: one_hot, tril, triu", "[api][api_nn]") {
  Tensor y = Tensor({2, 0, 1, 2, 3, 0}).reshape({2, 3});
  check(y.one_hot(), gen({2, 3, 4}, [](const Shape& i) { int v[2][3]{{2, 0, 1}, {2, 3, 0}}; return double(v[i[0]][i[1]] == i[2]); }));
  CHECK(y.one_hot(5).shape() == Shape{2, 3, 5});
  CHECK(y.one_hot().dtype() == DType::Int64);  // as torch
  CHECK(y.T().one_hot(4).to_vector<int>()[0 * 4 + 2] == 1);
  CHECK(Tensor::zeros({0}, DType::Int32).one_hot().shape() == Shape{0, 0});
  CHECK(has(thrown<DTypeError>([] { (void)Tensor({1.0f}).one_hot(); }), "one_hot"));
  Arr a = rnd({2, 3, 4}, 91);
  for (auto& t : layouts(a))
    for (int64_t d : {-2, -1, 0, 1, 3}) {
      check(t.tril(d), gen(a.s, [&](const Shape& i) { return i[2] - i[1] <= d ? a(i) : 0.0; }));
      check(t.triu(d), gen(a.s, [&](const Shape& i) { return i[2] - i[1] >= d ? a(i) : 0.0; }));
    }
  Tensor tb = Tensor::ones({2, 2}, DType::Bool).tril();
  CHECK(tb.dtype() == DType::Bool);
  CHECK(tb.to_vector<bool>() == std::vector<bool>{true, false, true, true});
  CHECK(Tensor::arange(4).reshape({2, 2}).triu().to_vector<int>() == std::vector<int>{0, 1, 0, 3});
  check_grad([](auto& x) { return x[0].tril(1) * x[0].triu(); }, {rnd({3, 4}, 1, -2, 2, false)});
  CHECK(has(thrown<ShapeError>([] { (void)Tensor::zeros({3}).tril(); }), "tril"));
  CHECK_THROWS_AS(Tensor::zeros({3}).triu(), ShapeError);
}

TEST_CASE("api: interpolate", "[api][api_nn]") {
  // torch's source coordinate for one axis
  auto src = [](int64_t o, int64_t n, int64_t m, bool ac) {
    if (ac) return m > 1 ? double(o) * double(n - 1) / double(m - 1) : 0.0;
    return std::max(0.0, (double(o) + 0.5) * double(n) / double(m) - 0.5);
  };
  auto lin = [&](const Arr& x, Shape size, bool ac) {
    size_t nd = x.s.size(), k = size.size();
    Shape os = x.s;
    for (size_t i = 0; i < k; i++) os[nd - k + i] = size[i];
    return gen(os, [&](const Shape& o) {
      // a weighted sum over the 2^k corners
      double acc = 0;
      for (int64_t c = 0; c < (1 << k); c++) {
        Shape xi(o.begin(), o.begin() + int64_t(nd - k));
        double w = 1;
        for (size_t i = 0; i < k; i++) {
          int64_t n = x.s[nd - k + i];
          double s = std::min(src(o[nd - k + i], n, size[i], ac), double(n - 1));
          int64_t lo = int64_t(std::floor(s)), hi = std::min(lo + 1, n - 1);
          double l = s - double(lo);
          bool up = (c >> i) & 1;
          xi.push_back(up ? hi : lo);
          w *= up ? l : 1 - l;
        }
        acc += w * x(xi);
      }
      return acc;
    });
  };
  auto nearest = [&](const Arr& x, Shape size, bool exact) {
    size_t nd = x.s.size(), k = size.size();
    Shape os = x.s;
    for (size_t i = 0; i < k; i++) os[nd - k + i] = size[i];
    return gen(os, [&](const Shape& o) {
      Shape xi(o.begin(), o.begin() + int64_t(nd - k));
      for (size_t i = 0; i < k; i++) {
        int64_t n = x.s[nd - k + i];
        double sc = double(n) / double(size[i]);
        xi.push_back(std::min(int64_t(std::floor((double(o[nd - k + i]) + (exact ? 0.5 : 0)) * sc)), n - 1));
      }
      return x(xi);
    });
  };
  Arr a = rnd({2, 2, 4, 5}, 92);
  for (auto& t : layouts(a)) {
    for (bool ac : {false, true}) {
      check(t.interpolate({7, 3}, "bilinear", ac), lin(a, {7, 3}, ac), 1e-5, 1e-5);
      check(t.interpolate({9}, "linear", ac), lin(a, {9}, ac), 1e-5, 1e-5);
      check(t.interpolate({1, 6}, "linear", ac), lin(a, {1, 6}, ac), 1e-5, 1e-5);
    }
    check(t.interpolate({8, 10}, "nearest"), nearest(a, {8, 10}, false));
    check(t.interpolate({3, 7}, "nearest"), nearest(a, {3, 7}, false));
    check(t.interpolate({3, 7}, "nearest-exact"), nearest(a, {3, 7}, true));
  }
  Arr c = rnd({1, 2, 3, 2, 2}, 93);
  check(layouts(c)[2].interpolate({4, 3, 3}, "trilinear"), lin(c, {4, 3, 3}, false), 1e-5, 1e-5);
  check_grad([](auto& x) { return x[0].interpolate({5, 3}, "bilinear"); }, {rnd({1, 1, 3, 4}, 1, -2, 2, false)});
  check_grad([](auto& x) { return x[0].interpolate({5}, "linear", true); }, {rnd({2, 3}, 2, -2, 2, false)});
  Tensor t = Tensor::zeros({1, 1, 3, 3});
  CHECK(has(thrown<Error>([&] { (void)t.interpolate({4, 4}, "cubic"); }), "\"cubic\""));
  CHECK(has(thrown<ShapeError>([&] { (void)t.interpolate({1, 1, 1, 1, 1}); }), "(1, 1, 3, 3)"));
  CHECK_THROWS_AS(t.interpolate({}), ShapeError);
  CHECK_THROWS_AS(t.interpolate({0, 2}), ShapeError);
  CHECK_THROWS_AS(t.interpolate({2, 2}, "nearest", true), Error);
}

TEST_CASE("api: einsum", "[api][api_nn]") {
  Arr a = rnd({3, 4}, 101), b = rnd({4, 5}, 102), c = rnd({2, 3, 4}, 103), d = rnd({2, 4, 5}, 104), s = rnd({4, 4}, 105), v = rnd({4}, 106);
  auto la = layouts(a), lb = layouts(b), lc = layouts(c), ld = layouts(d), ls = layouts(s), lv = layouts(v);
  auto mm = gen({3, 5}, [&](const Shape& i) { double r = 0; for (int64_t k = 0; k < 4; k++) r += a({i[0], k}) * b({k, i[1]}); return r; });
  for (size_t j = 0; j < 3; j++) {
    size_t o = (j + 1) % 3;
    check(Tensor::einsum("ij,jk->ik", {la[j], lb[o]}), mm, kTol, kTol);
    check(Tensor::einsum("ij,jk", {la[j], lb[o]}), mm, kTol, kTol);  // implicit output: i k
    check(Tensor::einsum(" i j , j k -> k i ", {la[j], lb[o]}), gen({5, 3}, [&](const Shape& i) { return mm({i[1], i[0]}); }), kTol, kTol);
    check(Tensor::einsum("bij,bjk->bik", {lc[j], ld[o]}), gen({2, 3, 5}, [&](const Shape& i) {
            double r = 0; for (int64_t k = 0; k < 4; k++) r += c({i[0], i[1], k}) * d({i[0], k, i[2]}); return r; }), kTol, kTol);
    check(Tensor::einsum("...ij,...jk->...ik", {lc[j], lb[o]}), gen({2, 3, 5}, [&](const Shape& i) {
            double r = 0; for (int64_t k = 0; k < 4; k++) r += c({i[0], i[1], k}) * b({k, i[2]}); return r; }), kTol, kTol);
    check(Tensor::einsum("ii->", {ls[j]}), Arr{{}, {s({0, 0}) + s({1, 1}) + s({2, 2}) + s({3, 3})}}, kTol, kTol);
    check(Tensor::einsum("ii->i", {ls[j]}), gen({4}, [&](const Shape& i) { return s({i[0], i[0]}); }));
    check(Tensor::einsum("ij->ji", {la[j]}), gen({4, 3}, [&](const Shape& i) { return a({i[1], i[0]}); }));
    check(Tensor::einsum("ij->", {la[j]}), Arr{{}, {[&] { double r = 0; for (double x : a.v) r += x; return r; }()}}, kTol, kTol);
    check(Tensor::einsum("i,j->ij", {lv[j], la[o].sum(1)}),
          gen({4, 3}, [&](const Shape& i) { return v({i[0]}) * (a({i[1], 0}) + a({i[1], 1}) + a({i[1], 2}) + a({i[1], 3})); }), kTol, kTol);
    check(Tensor::einsum("ij,j,jk->i", {la[j], lv[o], lb[j]}), gen({3}, [&](const Shape& i) {
            double r = 0; for (int64_t k = 0; k < 4; k++) for (int64_t m = 0; m < 5; m++) r += a({i[0], k}) * v({k}) * b({k, m});
            return r; }), kTol, kTol);
  }
  check_grad([](auto& x) { return Tensor::einsum("ij,jk->ki", {x[0], x[1]}); }, {rnd({2, 3}, 1, -2, 2, false), rnd({3, 2}, 2, -2, 2, false)});
  check_grad([](auto& x) { return Tensor::einsum("ii,i->i", {x[0], x[1]}); }, {rnd({3, 3}, 1, -2, 2, false), rnd({3}, 2, -2, 2, false)});
  Tensor t = la[0], u = lb[0];
  auto msg = thrown<ShapeError>([&] { (void)Tensor::einsum("ij,jk->ik", {t, t}); });
  CHECK(has(msg, "einsum(\"ij,jk->ik\")"));
  CHECK(has(msg, "'j' has sizes 4 and 3"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ij,jk->ik", {t}); }), "1 operands"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ij->ij", {t, u}); }), "1 terms for 2 operands"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ijk->i", {t}); }), "rank 2"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("i1->i", {t}); }), "position 1"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ij->x", {t}); }), "'x'"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ij->ii", {t}); }), "twice"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ij->i->j", {t}); }), "more than one"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("ii->i", {t}); }), "'i' has sizes 3 and 4"));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("...i->i", {lc[0]}); }), "\"...\""));
  CHECK(has(thrown<ShapeError>([&] { (void)Tensor::einsum("...j,...j->...", {lc[0], Tensor::zeros({3, 2, 4})}); }), "broadcast"));
}

// fused as tinygrad fuses them: a pool or conv is one view + one reduce
TEST_CASE("api: kernel counts", "[api][api_nn]") {
  auto in = [](const Shape& s) { Arr a = rnd(s, 7); Tensor t(std::vector<float>(a.v.begin(), a.v.end()), s); REQUIRE(t.is_realized()); return t; };
  auto kernels = [](std::vector<Tensor> ts) { int64_t b = run_stats().kernels_run; Tensor::realize_all(ts); return run_stats().kernels_run - b; };
  CHECK(kernels({in({2, 3, 8, 8}).max_pool2d()}) == 1);
  CHECK(kernels({in({2, 3, 8, 8}).max_pool2d({3}, {1}, 1)}) == 1);
  CHECK(kernels({in({2, 3, 8, 8}).avg_pool2d()}) == 1);
  // a conv on a device without workgroups (the CPU) copies its weight with the output channels innermost first; a
  // weight kept so (a permuted view of a buffer) is read as it is
  int64_t copy = tinygrad::detail::get_device(tinygrad::default_device()).renderer->has_local ? 0 : 1;
  CHECK(kernels({in({2, 3, 8, 8}).conv2d(in({4, 3, 3, 3}), in({4}))}) == 1 + copy);
  CHECK(kernels({in({2, 3, 8, 8}).conv2d(in({3, 3, 3, 4}).permute({3, 0, 1, 2}), in({4}))}) == 1);
  CHECK(kernels({in({2, 3, 8}).conv1d(in({4, 3, 3}))}) == 1 + copy);
  CHECK(kernels({in({2, 3, 8}).conv1d(in({3, 3, 4}).permute({2, 0, 1}))}) == 1);
  CHECK(kernels({in({2, 3, 8, 8}).conv_transpose2d(in({3, 4, 3, 3}), nullopt, 2)}) == 1 + copy);
  CHECK(kernels({Tensor::cat({in({2, 3}), in({2, 4}), in({2, 1})}, 1)}) == 1);
  CHECK(kernels({in({4, 5}).gather(1, Tensor(std::vector<int>{0, 1, 4, 3}, {4, 1}))}) == 1);
  CHECK(kernels({in({4, 5})[Tensor({3, 1, 2})]}) == 1);
  CHECK(kernels({in({4, 5}).pad({{1, 1}, {2, 2}}, "reflect")}) == 1);
  CHECK(kernels({in({4, 5}).layernorm()}) <= 3);
  Tensor x = in({2, 3, 8, 8});
  CHECK(kernels({gradient(x.max_pool2d().sum(), {x})[0]}) <= 3);
}

TEST_CASE("api: nn LayerNorm, RMSNorm, BatchNorm and GroupNorm normalize float16 and bfloat16 in float32", "[api][api_nn][half]") {
  // values near 1000: their squares overflow float16 (torch normalizes half types in float32, then rounds)
  std::vector<double> v;
  for (int i = 0; i < 24; i++) v.push_back(1000 + 37 * ((i * 13) % 11) - 150 * (i % 2));
  for (tinygrad::DType dt : {tinygrad::DType::Float16, tinygrad::DType::BFloat16}) {
    INFO(tinygrad::to_string(dt));
    Tensor x = Tensor(v, {2, 3, 4}).cast(dt).realize();
    std::vector<double> xv = x.to_vector<double>();
    double tol = dt == tinygrad::DType::Float16 ? 2e-3 : 1.6e-2;
    // reference statistics over the elements idx(k), k < n: (x - mean) / sqrt(var + eps) and x / sqrt(mean(x^2) + eps)
    auto norm = [&](auto idx, int64_t n, double eps, bool rms) {
      double m = 0, q = 0;
      for (int64_t k = 0; k < n; k++) m += xv[idx(k)];
      m = rms ? 0 : m / double(n);
      for (int64_t k = 0; k < n; k++) q += (xv[idx(k)] - m) * (xv[idx(k)] - m);
      std::vector<std::pair<size_t, double>> r;
      for (int64_t k = 0; k < n; k++) r.push_back({idx(k), (xv[idx(k)] - m) / std::sqrt(q / double(n) + eps)});
      return r;
    };
    std::vector<double> ln(24), rms(24), bn(24), gn(24);
    for (size_t r = 0; r < 6; r++) {
      for (auto [i, y] : norm([&](int64_t k) { return r * 4 + size_t(k); }, 4, 1e-5, false)) ln[i] = y;
      for (auto [i, y] : norm([&](int64_t k) { return r * 4 + size_t(k); }, 4, 1e-6, true)) rms[i] = y;
    }
    for (size_t c = 0; c < 3; c++)  // BatchNorm: channel c over (N, L); GroupNorm(1 group): each sample
      for (auto [i, y] : norm([&](int64_t k) { return size_t(k / 4) * 12 + c * 4 + size_t(k % 4); }, 8, 1e-5, false)) bn[i] = y;
    for (size_t b = 0; b < 2; b++)
      for (auto [i, y] : norm([&](int64_t k) { return b * 12 + size_t(k); }, 12, 1e-5, false)) gn[i] = y;
    tinygrad::nn::LayerNorm lnl(4);
    tinygrad::nn::RMSNorm rmsl(4);
    tinygrad::nn::BatchNorm1d bnl(3, 1e-5, true, false);  // batch statistics, eval and training alike
    tinygrad::nn::GroupNorm gnl(1, 3);
    for (auto& [name, got, want] : std::vector<std::tuple<const char*, Tensor, std::vector<double>>>{
             {"LayerNorm", lnl(x), ln}, {"RMSNorm", rmsl(x), rms}, {"BatchNorm", bnl(x), bn}, {"GroupNorm", gnl(x), gn},
             {"layer_norm", x.layer_norm({4}), ln}}) {
      INFO(name);
      auto g = got.to_vector<double>();
      for (size_t i = 0; i < 24; i++) CHECK(std::abs(g[i] - want[i]) <= tol * (1 + std::abs(want[i])));
    }
    CHECK(x.layer_norm({4}).dtype() == dt);
    // the layer's gradient is finite and sums to 0 over each normalized row (the mean is subtracted)
    Tensor xg = x.detach().requires_grad_();
    (lnl(xg) * Tensor::arange(4).cast(dt)).sum().backward();
    auto gx = xg.grad()->to_vector<double>();
    for (size_t r = 0; r < 6; r++) {
      double s = 0, a = 0;
      for (size_t k = 0; k < 4; k++) { CHECK(std::isfinite(gx[r * 4 + k])); s += gx[r * 4 + k]; a += std::abs(gx[r * 4 + k]); }
      CHECK(a > 0);
      CHECK(std::abs(s) <= 0.05 * a);
    }
  }
}
