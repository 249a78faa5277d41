// autograd identity: a tensor that requires grad is a node of its own, never merged with an equal constant,
// and reading a tensor (to_vector, item, realize) keeps the graph autograd needs.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <functional>

using namespace tinygrad;

namespace {
const DType F64 = DType::Float64;
using Fn = std::function<Tensor(const Tensor&)>;

// f(w) (any shape, summed) differentiated by gradient() and by backward(), against central differences over w's
// values. batched: all 2n perturbed copies of w go through f at once along a new leading axis (f broadcasts over
// it); else one evaluation each (same graph over new buffers: no new kernels)
void check_param(Tensor w, const std::vector<double>& vals, const Fn& f, bool batched = true) {
  Shape s = w.shape();
  size_t n = vals.size();
  const double h = 1e-6;
  std::vector<double> batch;
  for (size_t j = 0; j < 2 * n; j++) {
    auto v = vals;
    v[j / 2] += j % 2 ? -h : h;
    batch.insert(batch.end(), v.begin(), v.end());
  }
  Shape bs{int64_t(2 * n)};
  bs.insert(bs.end(), s.begin(), s.end());
  std::vector<int64_t> axes;
  for (size_t i = 0; i < s.size(); i++) axes.push_back(int64_t(i + 1));
  std::vector<double> sums;
  if (batched) sums = f(Tensor(batch, bs)).sum(axes).to_vector<double>();
  else
    for (size_t j = 0; j < 2 * n; j++)
      sums.push_back(f(Tensor(std::vector<double>(batch.begin() + int64_t(j * n), batch.begin() + int64_t((j + 1) * n)), s)).sum().item<double>());
  auto g = gradient(f(w).sum(), {w})[0].to_vector<double>();
  w.zero_grad();
  f(w).sum().backward();
  REQUIRE(w.grad());
  auto gb = w.grad()->to_vector<double>();
  for (size_t j = 0; j < n; j++) {
    double num = (sums[2 * j] - sums[2 * j + 1]) / (2 * h);
    INFO("element " << j);
    CHECK(g[j] == Approx(num).margin(1e-6).epsilon(1e-4));
    CHECK(gb[j] == Approx(num).margin(1e-6).epsilon(1e-4));
  }
}

struct Creator {
  const char* name;
  std::function<Tensor()> value;  // a fresh tensor, built the same way each time (an equal constant)
  std::function<Tensor()> param;  // the parameter
};
std::vector<Creator> creators() {
  auto plain = [](const char* name, std::function<Tensor()> v) { return Creator{name, v, [v] { return v().requires_grad_(); }}; };
  return {
      plain("ones", [] { return Tensor::ones({2, 3}, F64); }),
      plain("zeros", [] { return Tensor::zeros({2, 3}, F64); }),
      plain("full", [] { return Tensor::full({2, 3}, 0.5, F64); }),
      plain("arange", [] { return Tensor::arange(6).cast(F64).reshape({2, 3}); }),
      plain("eye", [] { return Tensor::eye(3, std::nullopt, F64); }),
      plain("rand", [] { Tensor::manual_seed(7); return Tensor::rand({2, 3}, F64); }),
      // empty, then filled: the parameter is made first, its value assigned after
      Creator{"empty", [] { Tensor t = Tensor::empty({2, 3}, F64); t.assign(Tensor::full({2, 3}, 0.5, F64)); return t; },
              [] { Tensor t = Tensor::empty({2, 3}, F64).requires_grad_(); t.assign(Tensor::full({2, 3}, 0.5, F64)); return t; }},
  };
}

// binary ops of w and an equal constant c; thresholds and offsets keep every comparison and division away from ties
using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
const std::vector<std::pair<const char*, Op>>& ops() {
  auto sel = [](const Tensor& cond, const Tensor& w, const Tensor& c) { return cond.where(w * w, c * 3.0); };
  static const std::vector<std::pair<const char*, Op>> r{
      {"add", [](auto& w, auto& c) { return w + c; }},
      {"sub", [](auto& w, auto& c) { return w - c; }},
      {"rsub", [](auto& w, auto& c) { return c - w; }},
      {"mul", [](auto& w, auto& c) { return (w + 3.0) * (c + 2.0); }},
      {"div", [](auto& w, auto& c) { return (w + 3.0) / (c + 2.0); }},
      {"rdiv", [](auto& w, auto& c) { return (c + 2.0) / (w + 3.0); }},
      {"maximum", [](auto& w, auto& c) { return w.maximum(c); }},  // equal everywhere: the gradient splits, 0.5
      {"minimum", [](auto& w, auto& c) { return w.minimum(c); }},
      {"where", [](auto& w, auto& c) { return (c > 0.25).where(w * 2.0, c * 3.0); }},
      {"lt", [=](auto& w, auto& c) { return sel(c + 0.3 < w * 2.0, w, c); }},
      {"gt", [=](auto& w, auto& c) { return sel(w * 2.0 > c + 0.3, w, c); }},
      {"le", [=](auto& w, auto& c) { return sel(w * 2.0 <= c + 0.3, w, c); }},
      {"ge", [=](auto& w, auto& c) { return sel(w * 2.0 >= c + 0.3, w, c); }},
      {"eq", [=](auto& w, auto& c) { return sel(w * 2.0 == c + 0.3, w, c); }},
      {"ne", [=](auto& w, auto& c) { return sel(w * 2.0 != c + 0.3, w, c); }},
      {"scalar", [](auto& w, auto& c) { return w * 1.0 + w - 1.0 + (c + w.maximum(1.0)) * 0.0; }},
  };
  return r;
}
// every op in one loss, each with its own weight (few kernels to compile)
Tensor all_ops(const Tensor& w, const Tensor& c) {
  Tensor r = ops()[0].second(w, c);
  for (size_t k = 1; k < ops().size(); k++) r = r + ops()[k].second(w, c) * (1.0 / double(k + 1));
  return r;
}

struct DefaultFloat {  // nn layers make float weights: float64 for finite differences
  DType prev = dtypes::default_float;
  DefaultFloat() { dtypes::default_float = F64; }
  ~DefaultFloat() { dtypes::default_float = prev; }
};
}  // namespace

TEST_CASE("autograd identity: the issue's examples", "[autograd]") {
  Tensor w = Tensor::ones({4}).requires_grad_();
  auto grad_of = [&](const Tensor& loss) { w.zero_grad(); loss.sum().backward(); return w.grad()->to_vector<double>(); };
  CHECK(grad_of(w * 1.0) == std::vector<double>(4, 1.0));
  CHECK(grad_of(w + 1.0) == std::vector<double>(4, 1.0));
  CHECK(grad_of(w - 1.0) == std::vector<double>(4, 1.0));
  CHECK(grad_of(w.maximum(1.0)) == std::vector<double>(4, 0.5));
  // a zeros bias next to a zeros input
  Tensor b = Tensor::zeros({3}).requires_grad_();
  Tensor x0 = Tensor::zeros({3});
  ((x0 + b) * 3.0).sum().backward();
  CHECK(b.grad()->to_vector<double>() == std::vector<double>(3, 3.0));
  // two parameters with equal values are two parameters
  Tensor p = Tensor::ones({2}).requires_grad_(), q = Tensor::ones({2}).requires_grad_();
  auto g = gradient((p * 2.0 + q * 3.0).sum(), {p, q});
  CHECK(g[0].to_vector<double>() == std::vector<double>{2, 2});
  CHECK(g[1].to_vector<double>() == std::vector<double>{3, 3});
  // requires_grad_() twice is one parameter (backward used to add its gradient twice)
  Tensor r = Tensor({1.0, 2.0}).requires_grad_();
  r.requires_grad_();
  (r * 5.0).sum().backward();
  CHECK(r.grad()->to_vector<double>() == std::vector<double>{5, 5});
}

TEST_CASE("autograd identity: every creation function as a parameter next to an equal constant", "[autograd]") {
  for (auto& cr : creators()) {
    INFO(cr.name << ": add, sub, mul, div, maximum, minimum, where, comparisons, scalars");
    check_param(cr.param(), cr.value().to_vector<double>(), [&](const Tensor& x) { return all_ops(x, cr.value()); });
  }
}

TEST_CASE("autograd identity: tensors realized from one graph share a buffer, not an identity", "[autograd]") {
  Tensor x = Tensor({1.0, 2.0, 3.0});
  Tensor a = x * 2.0, b = x * 2.0;  // one node
  Tensor::realize_all({a, b});
  a.requires_grad_();
  b.requires_grad_();
  auto g = gradient((a * 3.0 + b * 5.0 + x * 2.0).sum(), {a, b});
  CHECK(g[0].to_vector<double>() == std::vector<double>{3, 3, 3});
  CHECK(g[1].to_vector<double>() == std::vector<double>{5, 5, 5});
  // no copy: the parameters read the buffer the realize made
  CHECK(a.buffer() == b.buffer());
  CHECK(a.is_realized());
}

TEST_CASE("autograd identity: a computed tensor as a parameter", "[autograd]") {
  Tensor x = Tensor({1.0, 2.0}).requires_grad_();
  Tensor h = (x * 2.0).requires_grad_();
  // (x * 2.0) again is the node h was made from, but it is not h
  auto g = gradient((h * 3.0 + (x * 2.0) * 5.0).sum(), {h, x});
  CHECK(g[0].to_vector<double>() == std::vector<double>{3, 3});
  CHECK(g[1].to_vector<double>() == std::vector<double>{16, 16});  // through h and directly
  h.realize();  // reading h keeps it on x's graph
  CHECK(gradient((h * 3.0).sum(), {x})[0].to_vector<double>() == std::vector<double>{6, 6});
}

TEST_CASE("autograd identity: nn layers whose weights start as constants", "[autograd][nn]") {
  DefaultFloat f64;
  Tensor x = Tensor::rand({4, 4, 3}, F64) * 2.0 - 1.0;
  Tensor k = Tensor::rand({4, 4, 3}, F64);
  x.realize();
  k.realize();
  // two layers of each kind given equal constants in one realize: they used to share one buffer node
  auto check = [&](const char* name, auto make) {
    auto a = make(), b = make();
    auto ptr = [](auto& t) -> Tensor* { if constexpr (requires { t.value(); }) return &t.value(); else return &t; };
    std::vector<Tensor*> ps{ptr(a.weight), ptr(b.weight)};
    if constexpr (requires { a.bias; }) ps.insert(ps.end(), {ptr(a.bias), ptr(b.bias)});
    std::vector<Tensor> all;
    for (size_t i = 0; i < ps.size(); i++) {
      ps[i]->assign(i < 2 ? Tensor::ones(ps[i]->shape(), F64) : Tensor::zeros(ps[i]->shape(), F64));
      all.push_back(*ps[i]);
    }
    Tensor::realize_all(all);
    for (size_t i : {size_t(0), ps.size() - 1}) {  // a's weight, b's bias (or weight): each shared a node with the other layer's
      INFO(name << " parameter " << i);
      Tensor w = *ps[i];
      auto vals = w.to_vector<double>();
      check_param(w, vals, [&](const Tensor& v) { *ps[i] = v; Tensor r = (b(a(x)) * k).sum(); *ps[i] = w; return r; }, false);
    }
  };
  TrainingScope train;
  check("LayerNorm", [] { return nn::LayerNorm(3); });
  check("RMSNorm", [] { return nn::RMSNorm(3); });
  check("BatchNorm", [] { return nn::BatchNorm(4); });
  check("GroupNorm", [] { return nn::GroupNorm(2, 4); });
}

TEST_CASE("autograd: reading a tensor keeps its graph", "[autograd]") {
  // the example
  Tensor x = Tensor({1.0, -2.0, 3.0}).requires_grad_();
  Tensor out = x * 2.0;
  CHECK(out.to_vector<float>() == std::vector<float>{2, -4, 6});
  CHECK(gradient(out.sum(), {x})[0].to_vector<double>() == std::vector<double>{2, 2, 2});
  out.sum().backward();
  CHECK(x.grad()->to_vector<double>() == std::vector<double>{2, 2, 2});

  // an intermediate and the loss, read or not, in every way: the same gradients
  Tensor a = Tensor({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}}).requires_grad_();
  Tensor w = Tensor({{1.0, -0.5}, {0.25, 2.0}, {-1.0, 0.5}}).requires_grad_();
  auto run = [&](int read_h, int read_loss) {
    a.zero_grad(); w.zero_grad();
    Tensor h = a.matmul(w).relu();
    if (read_h == 1) h.to_vector<double>();
    if (read_h == 2) h.realize();
    Tensor loss = (h * h).sum() + a.exp().sum();
    if (read_loss == 1) loss.item<double>();
    if (read_loss == 2) loss.realize();
    auto g = gradient(loss, {a, w});
    loss.backward();
    std::vector<std::vector<double>> r{g[0].to_vector<double>(), g[1].to_vector<double>(), a.grad()->to_vector<double>(),
                                       w.grad()->to_vector<double>()};
    return r;
  };
  auto ref = run(0, 0);
  for (int rh = 0; rh < 3; rh++)
    for (int rl = 0; rl < 3; rl++) {
      INFO("read h " << rh << ", read loss " << rl);
      auto got = run(rh, rl);
      for (size_t i = 0; i < ref.size(); i++)
        for (size_t j = 0; j < ref[i].size(); j++) CHECK(got[i][j] == Approx(ref[i][j]).epsilon(1e-12));
    }

  // reading a parameter between building the loss and backward: it is still the same parameter
  Tensor p = Tensor::ones({3}).requires_grad_();
  Tensor loss = (p * 1.0 * Tensor({1.0, 2.0, 3.0})).sum();
  p.to_vector<double>();
  loss.backward();
  CHECK(p.grad()->to_vector<double>() == std::vector<double>{1, 2, 3});
  // .grad is a value: reading it keeps no graph
  p.grad()->realize();
  CHECK(p.grad()->uop()->op == Ops::BUFFER);
  // values that do not depend on a parameter are cut to their buffer as before
  Tensor c = Tensor({1.0, 2.0}) * 2.0;
  c.realize();
  CHECK(c.uop()->op == Ops::BUFFER);
}

TEST_CASE("autograd: gradient() throws for a target the loss does not use", "[autograd][errors]") {
  Tensor x = Tensor({1.0, 2.0, 3.0}).requires_grad_(), y = Tensor({4.0, 5.0}).requires_grad_();
  CHECK_THROWS_WITH(gradient((x * 2.0).sum(), {x, y}), Catch::Contains("target 1") && Catch::Contains("(2,)"));
  CHECK_THROWS_AS(gradient((x * 2.0).sum() + y.detach().sum(), {y}), GradientError);  // only behind detach
  // used only through a comparison: the gradient is zero
  CHECK(gradient((x > 1.5).where(1.0, 0.0).sum() + y.sum(), {x})[0].to_vector<double>() == std::vector<double>{0, 0, 0});
  // backward skips parameters it does not reach
  (x * 2.0 + (y.sum() > 0.0).where(1.0, 0.0).sum()).sum().backward();
  CHECK(x.grad());
  CHECK(!y.grad());
}

TEST_CASE("autograd: training with a read of the loss each step matches training without, and stays bounded", "[autograd][nn]") {
  struct Model {
    nn::Linear l1{3, 8}, l2{8, 1};
    nn::LayerNorm ln{8};
    Tensor operator()(const Tensor& x) const { return l2(ln(l1(x)).relu()); }
    std::vector<Tensor> params() const { return {l1.weight, *l1.bias, ln.weight.value(), ln.bias.value(), l2.weight, *l2.bias}; }
  };
  Tensor::manual_seed(3);
  Tensor X = Tensor::rand({16, 3}) * 2.0 - 1.0, Y = Tensor::rand({16, 1});
  X.realize(); Y.realize();
  auto train = [&](bool adam, bool read) {
    Tensor::manual_seed(11);
    Model m;
    std::unique_ptr<nn::optim::Optimizer> opt;
    if (adam) opt = std::make_unique<nn::optim::Adam>(m.params(), 0.01);
    else opt = std::make_unique<nn::optim::SGD>(m.params(), 0.05, 0.9);
    std::vector<size_t> nodes, live;
    for (int step = 0; step < 8; step++) {
      opt->zero_grad();
      Tensor h = m.l1(X);
      if (read) h.to_vector<float>();
      Tensor loss = ((m(X) - Y) * (m(X) - Y)).mean();
      if (read) loss.item<float>();
      loss.backward();
      opt->step();
      size_t n = 0;
      for (auto& p : m.params()) n += detail::toposort(p.uop()).size();
      nodes.push_back(n);
      std::lock_guard lk(detail::InternTable::get().mu);
      live.push_back(detail::InternTable::get().map.size());
    }
    // each parameter is its id over its buffer: the graph does not chain steps
    CHECK(nodes.back() <= 3 * m.params().size());  // CONTIGUOUS(id) over BUFFER or RESHAPE(BUFFER)
    CHECK(live.back() <= live[3]);
    std::vector<float> out;
    for (auto& p : m.params()) for (float v : p.to_vector<float>()) out.push_back(v);
    return out;
  };
  for (bool adam : {false, true}) {
    INFO((adam ? "Adam" : "SGD"));
    auto plain = train(adam, false), read = train(adam, true);
    REQUIRE(plain.size() == read.size());
    for (size_t i = 0; i < plain.size(); i++) CHECK(read[i] == Approx(plain[i]).margin(1e-5));
  }
}
