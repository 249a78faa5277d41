// Static tensors against the dynamic Tensor path: same values, same gradients, errors at run time for
// dyn extents, and the plan cache (a second evaluation builds no graph and compiles nothing).
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

using namespace tinygrad;

namespace {
template <int64_t... E> using F = static_tensor<float, E...>;

// values in [-2, 2) from a fixed seed, realized
template <class ST, class... D> ST data(D... dyn_extents) { return ST::uniform(2.0, dyn_extents...); }

// the static expression gives Tensor's shape, dtype and values
template <class X>
void same(const X& s, const Tensor& d, double tol = 1e-5) {
  auto rs = s.rt_shape();
  REQUIRE(Shape(rs.begin(), rs.end()) == d.shape());
  REQUIRE(X::dtype == d.dtype());
  auto a = s.template to_vector<double>(), b = d.to_vector<double>();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); i++) {
    INFO("element " << i);
    if (std::isnan(b[i])) CHECK(std::isnan(a[i]));
    else CHECK(a[i] == Approx(b[i]).margin(tol));
  }
}
void same_t(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  REQUIRE(a.shape() == b.shape());
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) CHECK(x[i] == Approx(y[i]).margin(tol));
}
template <class Fn>
std::string shape_error(Fn&& f) {
  try { f(); } catch (const ShapeError& e) { return e.what(); }
  return "no error";
}
}  // namespace

TEST_CASE("static: elementwise ops and broadcasting match Tensor", "[static]") {
  Tensor::manual_seed(1);
  auto a = data<F<2, 3>>();
  auto b = data<F<3>>();
  auto c = data<F<dyn, 1>>(2);
  Tensor A = a, B = b, C = c;
  same(a + b, A + B);
  same(a - b, A - B);
  same(a * c, A * C);
  same(a / (b.abs() + 1.0f), A / (B.abs() + 1.0));
  same(a.maximum(b), A.maximum(B));
  same(a.minimum(c), A.minimum(C));
  same(a.maximum(0.5), A.maximum(0.5));
  same(2.0f * a - 1.0f, 2.0 * A - 1.0);
  same(1.0f / (a.abs() + 1.0f), 1.0 / (A.abs() + 1.0));
  same(a.abs().pow(b), A.abs().pow(B), 1e-4);
  same(a < b, A < B);
  same(a >= c, A >= C);
  same(a == a, A == A);
  same(a != b, A != B);
  same((a > 0.0f).where(a, b), (A > 0.0).where(A, B));
  same(where(c > 0.0f, a, b * 2.0f), (C > 0.0).where(A, B * 2.0));
  same(-a, -A);
  same(a.exp(), A.exp(), 1e-4);
  same(a.abs().log(), A.abs().log(), 1e-4);
  same(a.abs().sqrt(), A.abs().sqrt());
  same(a.relu(), A.relu());
  same(a.sigmoid(), A.sigmoid());
  same(a.tanh(), A.tanh());
  same(a.gelu(), A.gelu());
  same(a.sin() + a.cos(), A.sin() + A.cos());
  same(a.square(), A.square());
  same(a.floor(), A.floor());
  same(a.cast<int32_t>(), A.cast(DType::Int32));
  auto i = static_tensor<int32_t, 4>::from(std::vector<int>{1, 2, 3, 12});
  Tensor I = i;
  same(i & (i * 2), I & (I * 2.0));
  same(i ^ i, I ^ I);
  same(i * 2, I * 2.0);
  same(i / i, I / I);
  same(i * 2.5, I.cast(DType::Float32) * 2.5);  // a float literal makes an int tensor float (like torch)
}

TEST_CASE("static: reductions match Tensor", "[static]") {
  Tensor::manual_seed(2);
  auto a = data<F<2, 3, 4>>();
  Tensor A = a;
  same(a.sum<1>(), A.sum(1));
  same(a.sum<0, -1>(), A.sum({0, -1}));
  same(a.sum<>(), A.sum());
  same(a.sum_keepdim<2>(), A.sum(2, true));
  same(a.max<1>(), A.max(1));
  same(a.max_keepdim<0>(), A.max(0, true));
  same(a.min<2>(), A.min(2));
  same(a.mean<1, 2>(), A.mean({1, 2}));
  same(a.mean_keepdim<0>(), A.mean(0, true));
  same(a.softmax(), A.softmax(-1));
  same(a.softmax<1>(), A.softmax(1));
  same(a.log_softmax<0>(), A.log_softmax(0));
  auto d = data<F<dyn, 5>>(3);
  same(d.sum<0>(), Tensor(d).sum(0));
  same(d.mean<0>(), Tensor(d).mean(0));
  auto i = static_tensor<int8_t, 3>::from(std::vector<int>{100, 100, 100});
  same(i.sum<>(), Tensor(i).sum());  // accumulates in int64
}

TEST_CASE("static: movement ops match Tensor", "[static]") {
  Tensor::manual_seed(3);
  auto a = data<F<2, 3, 4>>();
  Tensor A = a;
  same(a.reshape<6, 4>(), A.reshape({6, 4}));
  same(a.reshape<dyn, 2>(), A.reshape({-1, 2}));
  same(a.flatten<1>(), A.flatten(1));
  same(a.flatten<>(), A.flatten());
  same(a.permute<2, 0, 1>(), A.permute({2, 0, 1}));
  same(a.T(), A.transpose(-2, -1));
  same(a.transpose<0, 2>(), A.transpose(0, 2));
  same(a.sum_keepdim<1>().expand<2, 5, 4>(), A.sum(1, true).expand({2, 5, 4}));
  same(a.pad<0, 0, 1, 2, 0, 1>(), A.pad({{0, 0}, {1, 2}, {0, 1}}));
  same(a.shrink<1, 2, 0, 3, 1, 3>(), A.shrink({{1, 2}, {0, 3}, {1, 3}}));
  same(a.flip<0, 2>(), A.flip({0, 2}));
  same(a.slice<2, 1, 3>(), A.shrink({{0, 2}, {0, 3}, {1, 3}}));
  auto b = data<F<2, 5, 4>>();
  same(cat<1>(a, b), Tensor::cat({A, Tensor(b)}, 1));
  auto d = data<F<dyn, 6>>(4);
  same(d.reshape<dyn, 2, 3>(), Tensor(d).reshape({4, 2, 3}));
  same(d.shrink<1, 3, 0, 6>(), Tensor(d).shrink({{1, 3}, {0, 6}}));
  same(cat<0>(d, d), Tensor::cat({Tensor(d), Tensor(d)}, 0));
}

TEST_CASE("static: matmul, conv2d, pooling and losses match Tensor", "[static]") {
  Tensor::manual_seed(4);
  auto x = data<F<dyn, 8>>(5);
  auto w = data<F<8, 3>>();
  auto v = data<F<8>>();
  Tensor X = x, W = w, V = v;
  same(x.matmul(w), X.matmul(W));
  same(matmul(x, v), X.matmul(V));
  same(v.matmul(w), V.matmul(W));
  same(v.matmul(v), V.matmul(V));
  auto bx = data<F<2, 4, 8>>();
  same(bx.matmul(w), Tensor(bx).matmul(W));
  auto bb = data<F<3>>();
  same(linear(x, w, bb).relu().sum<1>(), (X.matmul(W) + Tensor(bb)).relu().sum(1), 1e-4);

  auto img = data<F<dyn, 2, 9, 9>>(2);
  auto k = data<F<4, 2, 3, 3>>();
  auto kb = data<F<4>>();
  Tensor IMG = img, K = k, KB = kb;
  same(conv2d(img, k), IMG.conv2d(K), 1e-4);
  same(conv2d<2, 1>(img, k, kb), IMG.conv2d(K, KB, 2, 1), 1e-4);
  same(conv2d<1, 0, 2>(img, k), IMG.conv2d(K, std::nullopt, 1, 0, 2), 1e-4);
  auto kg = data<F<4, 1, 3, 3>>();
  same(conv2d<1, 0, 1, 2>(img, kg), IMG.conv2d(Tensor(kg), {.groups = 2}), 1e-4);
  same(max_pool2d(img), IMG.max_pool2d({2, 2}));
  same(max_pool2d<3, 2>(img), IMG.max_pool2d({3, 3}, {2, 2}));
  same(avg_pool2d<3>(img), IMG.avg_pool2d({3, 3}), 1e-5);

  auto logits = data<F<dyn, 10>>(4);
  auto labels = static_tensor<int32_t, dyn>::from(std::vector<int>{3, 0, 9, 3}, 4);
  Tensor L = logits;
  auto ref = -(L.log_softmax(-1) * (Tensor(labels).unsqueeze(-1) == Tensor::arange(10)).cast(DType::Float32)).sum(-1).mean();
  same(sparse_categorical_crossentropy(logits, labels), ref, 1e-5);
}

TEST_CASE("static: argmax, argmin and the losses match Tensor, values and gradients", "[static]") {
  Tensor::manual_seed(6);
  auto a = data<F<dyn, 5>>(4);
  Tensor A = a;
  same(a.argmax<1>(), A.argmax(1));
  same(a.argmax<-2>(), A.argmax(-2));
  same(a.argmin<0>(), A.argmin(0));
  same(a.argmax(), A.argmax());
  same(a.argmin(), A.argmin());
  same((a * 2.0f).argmax<-1>(), (A * 2.0).argmax(-1));
  auto i = static_tensor<int32_t, 2, 3>::from(std::vector<int>{3, 7, 7, -1, -5, -5});
  same(i.argmax<1>(), Tensor(i).argmax(1));  // ties: the first
  same(i.argmin<-1>(), Tensor(i).argmin(-1));

  // a dyn batch of 4, 3 classes; the losses of a linear layer, with the gradients of its weight and input
  auto x = data<F<dyn, 3>>(4);
  auto w = data<F<3, 3>>();
  auto y = static_tensor<float, dyn, 3>::from(std::vector<float>{1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0}, 4);
  auto labels = static_tensor<int32_t, dyn>::from(std::vector<int>{2, 0, 1, 2}, 4);
  Tensor X = x, W = w, Y = y, L = labels;
  auto z = x.matmul(w);
  // NOTE: the reference is built afresh for each loss and differentiated before it is realized (realizing a Tensor
  // replaces its graph with the buffer, and the gradient would be 0)
  auto check = [&](const auto& s, auto dyn_loss) {
    auto [gw, gx] = gradient(s, w, x);
    auto ref = gradient(dyn_loss(X.matmul(W)), {W, X});
    same(gw, ref[0], 1e-5);
    same(gx, ref[1], 1e-5);
    same(s, dyn_loss(X.matmul(W)), 1e-5);
  };
  check(binary_crossentropy(z.sigmoid(), y), [&](const Tensor& Z) { return Z.sigmoid().binary_crossentropy(Y); });
  check(binary_crossentropy_logits(z, y), [&](const Tensor& Z) { return Z.binary_crossentropy_logits(Y); });
  check(cross_entropy(z, labels), [&](const Tensor& Z) { return Z.cross_entropy(L); });
  check(cross_entropy(z, y * 0.5f), [&](const Tensor& Z) { return Z.cross_entropy(Y * 0.5); });  // class probabilities
  check(nll_loss(z.log_softmax(), labels), [&](const Tensor& Z) { return Z.log_softmax(-1).nll_loss(L); });
  // (N, C, L) logits with (N, L) labels, and (C) logits with one label
  auto x3 = data<F<dyn, 3, 2>>(2);
  auto l3 = static_tensor<int32_t, dyn, 2>::from(std::vector<int>{0, 2, 1, 1}, 2);
  same(cross_entropy(x3, l3), Tensor(x3).cross_entropy(Tensor(l3)));
  same(nll_loss(x3.log_softmax<1>(), l3), Tensor(x3).log_softmax(1).nll_loss(Tensor(l3)));
  auto x1 = data<F<5>>();
  auto l1 = static_tensor<int32_t>::from(std::vector<int>{3});
  same(cross_entropy(x1, l1), Tensor(x1).cross_entropy(Tensor(l1)));
}

TEST_CASE("static: gradients match the dynamic path and keep the static type", "[static]") {
  Tensor::manual_seed(5);
  auto x = data<F<dyn, 6>>(4);
  auto w = data<F<6, 3>>();
  auto b = data<F<3>>();
  auto labels = static_tensor<int32_t, dyn>::from(std::vector<int>{0, 2, 1, 2}, 4);
  auto [gw, gb] = gradient(sparse_categorical_crossentropy((x.matmul(w) + b).relu(), labels), w, b);
  static_assert(std::is_same_v<decltype(gw), F<6, 3>>);
  static_assert(std::is_same_v<decltype(gb), F<3>>);
  Tensor X = x, W = w, B = b;
  auto ref = gradient(sparse_categorical_crossentropy((x.matmul(w) + b).relu(), labels).lazy(), {W, B});
  Tensor l = (X.matmul(W) + B).relu().log_softmax(-1);
  auto oh = (Tensor(labels).unsqueeze(-1) == Tensor::arange(3)).cast(DType::Float32);
  auto dref = gradient(-(l * oh).sum(-1).mean(), {W, B});
  same(gw, dref[0], 1e-5);
  same(gb, dref[1], 1e-5);
  same_t(ref[0], dref[0]);

  // conv + pool + movement, through backward() and grad()
  auto img = data<F<2, 1, 6, 6>>();
  auto k = data<F<3, 1, 3, 3>>();
  k.requires_grad_();
  auto loss = (max_pool2d(conv2d<1, 1>(img, k)).flatten<1>().permute<1, 0>().pad<1, 0, 0, 0>() * 0.5f).square().mean<>();
  loss.backward();
  F<3, 1, 3, 3> gk = k.grad();
  Tensor K = Tensor(k).detach();
  auto dg = gradient((Tensor(img).conv2d(K, std::nullopt, 1, 1).max_pool2d({2, 2}).flatten(1).permute({1, 0}).pad({{1, 0}, {0, 0}}) * 0.5)
                     .square().mean(), {K});
  same(gk, dg[0], 1e-5);
}

TEST_CASE("static: dyn extents that do not fit throw at run time with the op and the shapes", "[static]") {
  auto a = F<dyn>::zeros(3);
  auto b = F<dyn>::zeros(4);
  CHECK(shape_error([&] { auto c = a + b; }) == "tinygrad::error::shapes_not_broadcastable<op::add, shape<3>, shape<4>>");
  auto x = F<dyn, 5>::zeros(2);
  auto w = F<dyn, 3>::zeros(4);
  CHECK(shape_error([&] { auto c = x.matmul(w); }) == "tinygrad::error::inner_dims_differ<op::matmul, shape<2, 5>, shape<4, 3>>");
  CHECK(shape_error([&] { auto c = x.reshape<3, dyn>(); }) == "tinygrad::error::reshape_changes_element_count<op::reshape, shape<2, 5>>");
  CHECK(shape_error([&] { auto c = cat<1>(x, w); }) == "tinygrad::error::shapes_differ<op::cat, shape<2, 5>, shape<4, 3>>");
  auto img = F<1, 1, dyn, dyn>::zeros(3, 3);
  CHECK(shape_error([&] { auto c = max_pool2d<4>(img); }) == "tinygrad::error::window_larger_than_input<op::max_pool2d, shape<1, 1, 3, 3>>");
  auto y = static_tensor<int32_t, dyn>::zeros(3);
  CHECK(shape_error([&] { auto c = sparse_categorical_crossentropy(x, y); }) ==
        "tinygrad::error::batch_sizes_differ<op::sparse_categorical_crossentropy, shape<2, 5>, shape<3>>");
  CHECK(shape_error([&] { auto c = nll_loss(x, y); }) == "tinygrad::error::batch_sizes_differ<op::nll_loss, shape<2, 5>, shape<3>>");
  auto x3 = F<dyn, 5>::zeros(3);
  CHECK(shape_error([&] { auto c = binary_crossentropy(x, x3); }) ==
        "tinygrad::error::shapes_differ<op::binary_crossentropy, shape<2, 5>, shape<3, 5>>");
  CHECK(shape_error([&] { auto c = cross_entropy(x, x3); }) == "tinygrad::error::shapes_differ<op::cross_entropy, shape<2, 5>, shape<3, 5>>");
  CHECK(shape_error([&] { F<3, 5> z = x * 2.0f; }) == "tinygrad::error::shapes_differ<op::assign, shape<3, 5>, shape<2, 5>>");
  CHECK(shape_error([&] { auto c = x.shrink<0, 3, 0, 5>(); }) == "tinygrad::error::shrink_out_of_bounds<op::shrink, shape<2, 5>>");
}

TEST_CASE("static: a Tensor converts to a static type with a run-time check", "[static]") {
  Tensor t = Tensor::ones({4, 784});
  F<dyn, 784> a(t);
  CHECK(a.rt_shape()[0] == 4);
  using W1 = F<dyn, 10>;
  using W2 = F<4, 784, 1>;
  using W3 = static_tensor<int32_t, dyn, 784>;
  CHECK_THROWS_AS(W1(t), ShapeError);
  CHECK_THROWS_AS(W2(t), ShapeError);
  CHECK_THROWS_AS(W3(t), DTypeError);
  CHECK_THROWS_WITH(W1(t), Catch::Contains("static_tensor<float, -1, 10>") && Catch::Contains("(4, 784)"));
  Tensor back = a * 2.0f;  // and back, freely
  CHECK(back.shape() == Shape{4, 784});
  using V = F<2>;
  CHECK_THROWS_AS(V().grad(), GradientError);
}

TEST_CASE("static: the plan cache: a second evaluation builds no graph and compiles nothing", "[static]") {
  Tensor::manual_seed(6);
  auto a = data<F<dyn, 16>>(8);
  auto b = data<F<16>>();
  auto f = [](const auto& x, const auto& y) { return ((x * y + 1.0f).relu().template sum<1>() / 16.0f).sqrt(); };
  using R = F<dyn>;
  R first = f(a, b);
  auto a2 = data<F<dyn, 16>>(8), a3 = data<F<dyn, 16>>(3);
  auto g0 = static_stats().graphs_built.load(), h0 = static_stats().plan_hits.load();
  auto k0 = run_stats().kernels_compiled, s0 = run_stats().schedules_built, r0 = run_stats().kernels_run;
  // new data, same type and extents: only binds buffers and launches
  R second = f(a2, b);
  CHECK(static_stats().graphs_built.load() == g0);
  CHECK(static_stats().plan_hits.load() == h0 + 1);
  CHECK(run_stats().kernels_compiled == k0);
  CHECK(run_stats().schedules_built == s0);
  CHECK(run_stats().kernels_run > r0);
  same(second, ((Tensor(a2) * Tensor(b) + 1.0).relu().sum(1) / 16.0).sqrt());
  same(first, ((Tensor(a) * Tensor(b) + 1.0).relu().sum(1) / 16.0).sqrt());
  // another dyn extent (a first dim: a variable of the plan): the same plan, nothing compiled, the right answer
  k0 = run_stats().kernels_compiled;
  R third = f(a3, b);
  CHECK(static_stats().graphs_built.load() == g0);
  CHECK(run_stats().kernels_compiled == k0);
  CHECK(third.rt_shape()[0] == 3);
  same(third, ((Tensor(a3) * Tensor(b) + 1.0).relu().sum(1) / 16.0).sqrt());
  // another scalar value (read from a buffer): the same plan, and the right answer
  F<dyn, 16> s1 = a * 2.0f;
  auto g1 = static_stats().graphs_built.load();
  F<dyn, 16> s2 = a * 3.0f;
  CHECK(static_stats().graphs_built.load() == g1);
  same(s2, Tensor(a) * 3.0);
  same(s1, Tensor(a) * 2.0);
  // a leaf that needs gradients keeps the graph lazy (autograd sees it)
  auto w = data<F<16>>();
  w.requires_grad_();
  F<dyn, 16> lz = a * w;
  CHECK_FALSE(lz.tensor().is_realized());
}

TEST_CASE("static: nn layers chained with seq match the dynamic model", "[static]") {
  Tensor::manual_seed(7);
  namespace snn = static_nn;
  snn::Conv2d<1, 4, 3> c1;
  snn::Linear<4 * 3 * 3, 5> l1;
  auto model = snn::seq(c1, snn::relu, snn::MaxPool2d<2>{}, snn::Flatten<>{}, l1);
  CHECK(model.parameters().size() == 4);
  auto x = data<F<dyn, 1, 8, 8>>(3);
  auto y = model(x);
  static_assert(std::is_same_v<decltype(y)::shape_type, shape<-1, 5>>);
  Tensor X = x;
  auto ref = X.conv2d(c1.weight, Tensor(c1.bias)).relu().max_pool2d({2, 2}).flatten(1).matmul(Tensor(l1.weight).T()) + Tensor(l1.bias);
  same(y, ref, 1e-4);
  // parameters are the layers' own tensors: an optimizer step through them is seen by the model
  auto p = model.parameters();
  p[3].assign(Tensor::zeros({5}));
  p[3].realize();
  same(model(x), X.conv2d(c1.weight, Tensor(c1.bias)).relu().max_pool2d({2, 2}).flatten(1).matmul(Tensor(l1.weight).T()), 1e-4);
}

TEST_CASE("static: unflatten, layer_norm, attention, erf, gelu and Embedding match Tensor", "[static]") {
  auto x = data<F<dyn, dyn, 24>>(2, 5);
  const Tensor& xt = x.tensor();
  // unflatten keeps the other dims dyn; one dyn target extent is inferred
  same(x.unflatten<2, 4, 6>(), xt.reshape({2, 5, 4, 6}));
  same(x.unflatten<2, dyn, 3>(), xt.reshape({2, 5, 8, 3}));
  static_assert(std::is_same_v<decltype(x.unflatten<2, 4, 6>())::shape_type, shape<-1, -1, 4, 6>>);
  auto y = data<F<dyn, 12>>(3);
  CHECK(shape_error([&] { y.unflatten<0, 2, dyn>(); }) == "tinygrad::error::unflatten_changes_extent<op::unflatten, shape<3, 12>>");
  // layer_norm lowers x once
  auto w = data<F<24>>(), b = data<F<24>>();
  same(layer_norm(x * 2.0 + 1.0, w, b, 1e-6), (xt * 2.0 + 1.0).layer_norm({24}, w.tensor(), b.tensor(), 1e-6));
  static_nn::LayerNorm<24> ln(1e-6);
  same(ln(x), xt.layer_norm({24}, ln.weight.tensor(), ln.bias.tensor(), 1e-6));
  // attention with and without a mask
  auto q = x.unflatten<2, 4, 6>().permute<0, 2, 1, 3>();
  Tensor qt = xt.reshape({2, 5, 4, 6}).permute({0, 2, 1, 3});
  same(scaled_dot_product_attention(q, q, q), qt.scaled_dot_product_attention(qt, qt));
  auto keep = static_tensor<bool, dyn, 1, 1, dyn>(Tensor(std::vector<int32_t>{1, 1, 0, 1, 0, 1, 1, 1, 1, 1}).reshape({2, 1, 1, 5}) != 0);
  same(scaled_dot_product_attention(q, q, q, keep), qt.scaled_dot_product_attention(qt, qt, keep.tensor()));
  auto bad = static_tensor<bool, dyn, 1, 1, dyn>(Tensor::ones({2, 1, 1, 4}, DType::Bool));
  CHECK(shape_error([&] { scaled_dot_product_attention(q, q, q, bad); }) ==
        "tinygrad::error::mask_does_not_broadcast<op::scaled_dot_product_attention, shape<2, 4, 5, 6>, shape<2, 4, 5, 6>, shape<2, 4, 5, 6>, "
        "shape<2, 1, 1, 4>>");
  // erf and the exact GELU, values and gradient (d/dx x Phi(x) = Phi(x) + x phi(x))
  same(x.erf(), xt.erf());
  auto g = static_tensor<float, 7>(Tensor(std::vector<float>{-3, -1, -0.5f, 0, 0.5f, 1, 3}));
  auto gv = g.gelu().to_vector<double>();
  auto gx = g.to_vector<double>();
  Tensor gt = g.tensor().detach().requires_grad_();
  gt.gelu().sum().backward();
  auto dg = gt.grad()->to_vector<double>();
  for (size_t i = 0; i < 7; i++) {
    double v = gx[i], phi = std::exp(-v * v / 2) / std::sqrt(2 * M_PI), Phi = 0.5 * std::erfc(-v / std::sqrt(2.0));
    CHECK(gv[i] == Approx(v * Phi).margin(1e-6));
    CHECK(dg[i] == Approx(Phi + v * phi).margin(1e-5));
  }
  // Embedding: rows by index, one kernel without a reduce loop; an index outside [0, vocab) is an IndexError
  static_nn::Embedding<6, 3> emb;
  auto bad_ids = static_tensor<int32_t, dyn, dyn>(Tensor(std::vector<int32_t>{0, 5, 2, -1, 6, 3}).reshape({2, 3}));
  CHECK_THROWS_AS(emb(bad_ids).to_vector<float>(), tinygrad::IndexError);
  auto idx = static_tensor<int32_t, dyn, dyn>(Tensor(std::vector<int32_t>{0, 5, 2, 1, 4, 3}).reshape({2, 3}));
  auto ev = emb(idx).to_vector<float>();
  auto wv = emb.weight.to_vector<float>();
  int32_t ids[] = {0, 5, 2, 1, 4, 3};
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 3; k++) CHECK(ev[size_t(i * 3 + k)] == wv[size_t(ids[i] * 3 + k)]);
}

TEST_CASE("static: dyn extents after the first dim are variables too: one plan per power-of-two bucket, equal to Tensor",
          "[static]") {
  // a (batch, length, 24) input like a text model's: attention over the length, a layer norm, a sum over the length;
  // the plan is keyed by each variable's bucket (the power of two at or above its value, at least 16)
  auto w = data<F<24>>(), b = data<F<24>>();
  auto f = [&](const F<dyn, dyn, 24>& x) {
    auto q = x.unflatten<2, 4, 6>().permute<0, 2, 1, 3>();
    return layer_norm(scaled_dot_product_attention(q, q, q).permute<0, 2, 1, 3>().flatten<2>() + x, w, b, 1e-6);
  };
  auto ft = [&](const Tensor& x) {
    Tensor q = x.reshape({x.shape()[0], x.shape()[1], 4, 6}).permute({0, 2, 1, 3});
    Tensor a = q.scaled_dot_product_attention(q, q).permute({0, 2, 1, 3}).reshape(x.shape());
    return (a + x).layer_norm({24}, w.tensor(), b.tensor(), 1e-6);
  };
  int64_t plans = 0, built = 0, compiled = 0;
  // (an expression takes plans for its first max_value_plans tuples of extents' values: none here, checked below)
  auto keep = detail::st::max_value_plans;
  detail::st::max_value_plans = 0;
  for (auto [bs, len] : {std::pair<int64_t, int64_t>{2, 3}, {3, 7}, {2, 16}, {5, 9}, {2, 17}, {3, 32}, {2, 20}, {4, 40}, {3, 33}}) {
    INFO("batch " << bs << ", length " << len);
    auto x = data<F<dyn, dyn, 24>>(bs, len);
    auto g0 = static_stats().graphs_built.load();
    auto k0 = run_stats().kernels_compiled;
    F<dyn, dyn, 24> y = f(x);
    F<dyn, 24> s = x.sum<1>();
    F<dyn, 24, dyn> t = x.transpose<1, 2>() * 2.0f;
    // a new plan only where a bucket is new: lengths 3..16 share one, 17..32 one, 33..64 one (batches <= 16 one)
    bool fresh = len == 3 || len == 17 || len == 40;
    if (fresh) built += static_stats().graphs_built.load() - g0, compiled += run_stats().kernels_compiled - k0, plans++;
    else {
      CHECK(static_stats().graphs_built.load() == g0);
      CHECK(run_stats().kernels_compiled == k0);
    }
    same(y, ft(x.tensor()), 1e-4);
    same(s, x.tensor().sum(1));
    same(t, x.tensor().transpose(1, 2) * 2.0);
  }
  CHECK(plans == 3);
  CHECK(built > 0);
  CHECK(compiled > 0);
  detail::st::max_value_plans = keep;
  // by default the first tuples of values take plans of their own (concrete kernels: a model run at a few fixed
  // shapes), then the buckets' symbolic plans
  int64_t n = 0;
  for (auto [bs, len] : {std::pair<int64_t, int64_t>{2, 3}, {3, 7}, {2, 16}, {5, 9}, {2, 17}, {3, 5}, {3, 7}, {4, 20}}) {
    INFO("batch " << bs << ", length " << len);
    auto x = data<F<dyn, dyn, 24>>(bs, len);
    auto g0 = static_stats().graphs_built.load();
    F<dyn, dyn> y = x.sum<2>() * 3.0f;
    bool fresh = n < int64_t(keep) || len == 17 || len == 5;  // the values' plans, the buckets of 17..32 and 3..16
    CHECK(static_stats().graphs_built.load() == g0 + (fresh ? 1 : 0));
    same(y, x.tensor().sum(2) * 3.0);
    n++;
  }
}

TEST_CASE("static: a model over batches 1..64 runs one plan per layer, compiled once, and a changing learning rate adds no plan",
          "[static]") {
  Tensor::manual_seed(11);
  namespace snn = static_nn;
  // the Fashion-MNIST CNN of examples/static_fashion_mnist.cpp, in eval mode (BatchNorm's running statistics)
  auto model = snn::seq(snn::Conv2d<1, 8, 5>{}, snn::relu, snn::Conv2d<8, 8, 5>{}, snn::relu, snn::BatchNorm<8>{}, snn::MaxPool2d<2>{},
                        snn::Conv2d<8, 16, 3>{}, snn::relu, snn::Conv2d<16, 16, 3>{}, snn::relu, snn::BatchNorm<16>{}, snn::MaxPool2d<2>{},
                        snn::Flatten<1>{}, snn::Linear<144, 10>{});
  for (auto& p : model.parameters()) p.requires_grad_(false);  // inference: the layers evaluate through plans
  auto all = data<F<64, 1, 28, 28>>();
  int64_t plans_one_batch = 0;
  for (int64_t n = 1; n <= 64; n += n < 8 ? 1 : 9) {
    INFO("batch " << n);
    F<dyn, 1, 28, 28> x(Tensor(all).shrink({{0, n}, {0, 1}, {0, 28}, {0, 28}}).contiguous().realize());
    int64_t g_before = static_stats().graphs_built.load(), k_before = run_stats().kernels_compiled;
    F<dyn, 10> y = model(x);
    if (n == 1) plans_one_batch = static_stats().graphs_built.load() - g_before;
    if (n > 1) {
      CHECK(static_stats().graphs_built.load() == g_before);  // no plan built after the first batch size
      CHECK(run_stats().kernels_compiled == k_before);         // nothing compiled
    }
    if (n == 1 || n == 2 || n == 64 || n == 35) {  // against the lazy graph of concrete shapes (a leaf that needs gradients)
      F<dyn, 1, 28, 28> xr(Tensor(x).detach());
      xr.requires_grad_();
      same(y, Tensor(model(xr)).detach(), 1e-3);
    }
  }
  CHECK(plans_one_batch > 0);
  // an update with a learning rate that changes every step: one plan
  auto w = data<F<32, 16>>(), g = data<F<32, 16>>();
  std::vector<float> want = w.to_vector<float>();
  int64_t plans = -1;
  for (int step = 0; step < 6; step++) {
    float lr = 0.1f / float(step + 1);
    w = w - g * lr;
    auto gv = g.to_vector<float>();
    for (size_t i = 0; i < want.size(); i++) want[i] -= gv[i] * lr;
    if (step == 1) plans = static_stats().graphs_built.load();
    if (step > 1) CHECK(static_stats().graphs_built.load() == plans);
  }
  auto got = w.to_vector<float>();
  for (size_t i = 0; i < want.size(); i++) CHECK(got[i] == Approx(want[i]).margin(1e-6));
}
