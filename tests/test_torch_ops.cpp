// Ops a PyTorch user reaches for (issue 40), forward and backward against PyTorch's values: losses, norms, selection,
// matrix products, interpolate(scale_factor). The values come from tests/data/make_torch_ops.py (torch 2.15, CPU,
// float32), committed as tests/data/torch_ops.json; a few small cases are literals here. Run with DEV=CPU and DEV=CL.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

using tinygrad::DType;
using tinygrad::Shape;
using tinygrad::Tensor;
using tinygrad::detail::find;
using tinygrad::detail::Json;
namespace nn = tinygrad::nn;
using V = std::vector<double>;

namespace {

Json load() {
  std::string path = std::string(TG_TEST_SOURCE_DIR) + "/tests/data/torch_ops.json";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return tinygrad::detail::parse_json(ss.str(), path + ": ");
}
double num(const Json& j) { return j.kind == Json::Int ? double(j.i) : j.f; }
double num(const Json& args, const char* key) {
  const Json* j = find(args, key);
  return j->kind == Json::Str ? std::stod(j->s) : num(*j);  // "inf", "-inf" as strings
}
std::string str(const Json& args, const char* key) { return find(args, key)->s; }
bool flag(const Json& args, const char* key) { return find(args, key)->b; }
std::vector<int64_t> ints(const Json& args, const char* key) {
  std::vector<int64_t> r;
  for (auto& x : find(args, key)->arr) r.push_back(x.i);
  return r;
}
Shape shape_of(const Json& t) {
  Shape s;
  for (auto& x : find(t, "shape")->arr) s.push_back(x.i);
  return s;
}
V data_of(const Json& t) {
  V r;
  for (auto& x : find(t, "data")->arr) r.push_back(num(x));
  return r;
}
Tensor tensor_of(const Json& t) {
  V d = data_of(t);
  if (const Json* dt = find(t, "dtype"); dt && dt->s == "int64") return Tensor(std::vector<int64_t>(d.begin(), d.end()), shape_of(t));
  return Tensor(std::vector<float>(d.begin(), d.end()), shape_of(t));
}

// |got - want| <= atol + rtol |want| for every element, and the same shape; the first mismatch in the message
std::string mismatch(const Tensor& got, const Json& want, double atol = 1e-5, double rtol = 1e-4) {
  if (got.shape() != shape_of(want)) return "shape " + tinygrad::to_string(got.shape()) + " != " + tinygrad::to_string(shape_of(want));
  V g = got.to_vector<double>(), w = data_of(want);
  for (size_t i = 0; i < g.size(); i++)
    if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i])))
      return "element " + std::to_string(i) + ": " + std::to_string(g[i]) + " != " + std::to_string(w[i]);
  return "";
}

Tensor run(const std::string& op, const Json& a, const std::vector<Tensor>& x) {
  auto opt = [&](size_t i) { return x.size() > i ? std::optional<Tensor>(x[i]) : std::nullopt; };
  if (op == "mse_loss") return x[0].mse_loss(x[1], str(a, "reduction"));
  if (op == "l1_loss") return x[0].l1_loss(x[1], str(a, "reduction"));
  if (op == "huber_loss") return x[0].huber_loss(x[1], str(a, "reduction"), num(a, "delta"));
  if (op == "smooth_l1_loss") return x[0].smooth_l1_loss(x[1], str(a, "reduction"), num(a, "beta"));
  if (op == "kl_div") return x[0].kl_div(x[1], str(a, "reduction"), flag(a, "log_target"));
  if (op == "binary_cross_entropy") return x[0].binary_cross_entropy(x[1], opt(2), str(a, "reduction"));
  if (op == "bce_with_logits") return x[0].binary_cross_entropy_with_logits(x[1], opt(2), str(a, "reduction"), opt(3));
  if (op == "norm") return x[0].norm(num(a, "p"), ints(a, "dim"), flag(a, "keepdim"));
  if (op == "cosine_similarity") return x[0].cosine_similarity(x[1], int64_t(num(a, "dim")));
  if (op == "normalize") return x[0].normalize(num(a, "p"), int64_t(num(a, "dim")));
  if (op == "amax") return x[0].amax(ints(a, "dim"), flag(a, "keepdim"));
  if (op == "amin") return x[0].amin(ints(a, "dim"), flag(a, "keepdim"));
  if (op == "median") return x[0].median();
  if (op == "median_values") return x[0].median(int64_t(num(a, "dim")), flag(a, "keepdim")).first;
  if (op == "median_indices") return x[0].median(int64_t(num(a, "dim")), flag(a, "keepdim")).second;
  if (op == "index_select") return x[0].index_select(int64_t(num(a, "dim")), x[1]);
  if (op == "mm") return x[0].mm(x[1]);
  if (op == "bmm") return x[0].bmm(x[1]);
  if (op == "baddbmm") return x[0].baddbmm(x[1], x[2], num(a, "beta"), num(a, "alpha"));
  if (op == "interpolate_scale") {
    V sf;
    for (auto& s : find(a, "scale_factor")->arr) sf.push_back(num(s));
    return x[0].interpolate(std::nullopt, sf, str(a, "mode"), flag(a, "align_corners"));
  }
  throw std::runtime_error("no op " + op);
}

template <class E, class F>
std::string thrown(F f) {
  try { f(); } catch (const E& e) { return e.what(); } catch (...) { return "(another exception)"; }
  return "(nothing thrown)";
}
Tensor f32(std::vector<float> d, Shape s = {}) { return Tensor(d, std::move(s)); }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("parity: losses, norms, selection, products and interpolate(scale_factor) match torch, forward and backward", "[parity]") {
  Json ref = load();
  int n = 0;
  for (auto& c : find(ref, "cases")->arr) {
    std::string name = find(c, "name")->s;
    INFO(name);
    std::vector<Tensor> in;
    for (auto& t : find(c, "inputs")->arr) {
      in.push_back(tensor_of(t));
      if (find(t, "grad")->b) in.back().requires_grad_();
    }
    Tensor out = run(find(c, "op")->s, *find(c, "args"), in);
    CHECK(mismatch(out, *find(c, "out")) == "");
    if (const Json* seed = find(c, "seed")) {
      out.backward(tensor_of(*seed));
      auto& grads = find(c, "grads")->arr;
      for (size_t i = 0; i < in.size(); i++) {
        if (grads[i].kind == Json::Null) continue;
        INFO("the gradient of input " << i);
        auto g = in[i].grad();
        CHECK(mismatch(g ? *g : Tensor::zeros(in[i].shape()), grads[i]) == "");
      }
    }
    n++;
  }
  CHECK(n > 150);
}

TEST_CASE("parity: unique gives torch's sorted values, inverse and counts, also of slices along dim", "[parity]") {
  auto u = f32({3.f, 1, 2, 1, 3, 3}, {2, 3}).unique(true, true, true);
  CHECK(u.values.to_vector<double>() == V{1, 2, 3});
  CHECK(u.inverse.shape() == Shape{2, 3});
  CHECK(u.inverse.dtype() == DType::Int64);
  CHECK(u.inverse.to_vector<double>() == V{2, 0, 1, 0, 2, 2});
  CHECK(u.counts.to_vector<double>() == V{2, 1, 3});
  auto r = Tensor(std::vector<int32_t>{1, 2, 0, 5, 1, 2, 0, 3}, {4, 2}).unique(true, true, true, 0);
  CHECK(r.values.shape() == Shape{3, 2});
  CHECK(r.values.dtype() == DType::Int32);
  CHECK(r.values.to_vector<double>() == V{0, 3, 0, 5, 1, 2});
  CHECK(r.inverse.to_vector<double>() == V{2, 1, 2, 0});
  CHECK(r.counts.to_vector<double>() == V{1, 1, 2});
  auto col = f32({1.f, 0, 1, 2, 5, 2}, {2, 3}).unique(true, true, true, 1);
  CHECK(col.values.shape() == Shape{2, 2});
  CHECK(col.values.to_vector<double>() == V{0, 1, 5, 2});
  CHECK(col.inverse.to_vector<double>() == V{1, 0, 1});
  CHECK(col.counts.to_vector<double>() == V{1, 2});
  auto s = Tensor::full({}, 7.0).unique();  // torch: values (1,), inverse 0-d
  CHECK(s.values.shape() == Shape{1});
  CHECK(s.inverse.shape() == Shape{});
  CHECK(Tensor::zeros({0}).unique().values.shape() == Shape{0});
}

TEST_CASE("parity: clip_grad_norm_ and clip_grad_value_ scale .grad in place as torch, inside TinyJit too", "[parity]") {
  // torch: loss = (a * a * [1, 2, 3]).sum() + (b * [1, -1, 2, 0.5]).sum(); clip_grad_norm_([a, b], max_norm, norm_type)
  struct Want { double norm_type, max_norm, total; V ga, gb; };
  std::vector<Want> wants = {
      {2.0, 1.0, 14.05346965789795, {0.0711568, -0.2846272, 0.8538816, 0.2134704, 0.0711568, -0.3202056},
       {0.0711568, -0.0711568, 0.1423136, 0.0355784}},
      {INFINITY, 0.5, 12.0, {0.0416667, -0.1666667, 0.5, 0.125, 0.0416667, -0.1875}, {0.0416667, -0.0416667, 0.0833333, 0.0208333}},
      {1.0, 2.0, 30.0, {0.0666667, -0.2666667, 0.8, 0.2, 0.0666667, -0.3}, {0.0666667, -0.0666667, 0.1333333, 0.0333333}},
      {2.0, 100.0, 14.05346965789795, {1, -4, 12, 3, 1, -4.5}, {1, -1, 2, 0.5}},
  };
  auto close = [](const V& g, const V& w) {
    for (size_t i = 0; i < g.size(); i++) if (std::abs(g[i] - w[i]) > 1e-5 + 1e-5 * std::abs(w[i])) return false;
    return g.size() == w.size();
  };
  Tensor a = f32({0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}, {2, 3}).requires_grad_();
  Tensor b = f32({3.0f, -2.0f, 0.5f, 1.0f}).requires_grad_();
  auto loss = [&] { return (a * a * f32({1.f, 2, 3})).sum() + (b * f32({1.f, -1, 2, 0.5f})).sum(); };
  for (auto& w : wants) {
    INFO("norm_type " << w.norm_type << ", max_norm " << w.max_norm);
    a.zero_grad();
    b.zero_grad();
    loss().backward();
    Tensor total = nn::clip_grad_norm_({a, b}, w.max_norm, w.norm_type);
    CHECK(std::abs(total.item<float>() - w.total) < 1e-4);
    CHECK(close(a.grad()->to_vector<double>(), w.ga));
    CHECK(close(b.grad()->to_vector<double>(), w.gb));
  }
  a.zero_grad();
  loss().backward();
  nn::clip_grad_value_({a}, 2.0);
  CHECK(a.grad()->to_vector<double>() == V{1, -2, 2, 2, 1, -2});

  // inside a jitted train step: the clipped gradient reaches the update on every replay
  Tensor w = f32({3.0f, -4.0f}).requires_grad_();
  nn::optim::SGD opt({w}, 0.1);
  tinygrad::TinyJit step([&](const Tensor& x) {
    opt.zero_grad();
    Tensor l = (w * x).sum();
    l.backward();
    Tensor total = nn::clip_grad_norm_({w}, 1.0);
    opt.step({total});
    return total;
  }, "clip_step");
  V before = w.to_vector<double>();
  for (int i = 0; i < 4; i++) {
    Tensor total = step(f32({3.0f, 4.0f}));  // grad (3, 4): norm 5, clipped to (0.6, 0.8)
    CHECK(std::abs(total.item<float>() - 5.0) < 1e-5);
  }
  V after = w.to_vector<double>();
  CHECK(std::abs(after[0] - (before[0] - 4 * 0.1 * 0.6 / (1 + 1e-6 / 5))) < 1e-5);
  CHECK(std::abs(after[1] - (before[1] - 4 * 0.1 * 0.8 / (1 + 1e-6 / 5))) < 1e-5);
}

TEST_CASE("parity: mm, bmm, baddbmm, index_select, median, norm and the losses say what is wrong", "[parity]") {
  Tensor m = Tensor::ones({2, 3}), b3 = Tensor::ones({2, 3, 4});
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)m.mm(b3); }), "tinygrad::mm: needs two 2-d matrices, got (2, 3) and (2, 3, 4)"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)m.mm(m); }), "a.shape[-1] must equal b.shape[-2]"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)m.bmm(m); }), "tinygrad::bmm: needs two 3-d batches"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)b3.bmm(Tensor::ones({3, 4, 2})); }), "the batch sizes differ"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)Tensor::ones({3, 3, 2}).baddbmm(b3, Tensor::ones({2, 4, 2})); }), "baddbmm: self (3, 3, 2)"));
  Tensor idx = Tensor(std::vector<int64_t>{0, 3});
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)m.index_select(1, idx).to_vector<double>(); }),
            "index_select: index 3 is out of bounds for dim 1"));
  CHECK(has(thrown<tinygrad::DTypeError>([&] { (void)m.index_select(1, f32({0.f})); }), "index_select"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)m.index_select(1, Tensor(std::vector<int64_t>{0, 1}, {1, 2})); }), "0-d or 1-d"));
  CHECK(has(thrown<tinygrad::DTypeError>([&] { (void)Tensor(std::vector<int32_t>{1, 2}).norm(); }), "norm: needs a float tensor"));
  CHECK(has(thrown<tinygrad::Error>([&] { (void)m.huber_loss(m, "mean", 0); }), "huber_loss: delta must be positive"));
  CHECK(has(thrown<tinygrad::Error>([&] { (void)m.smooth_l1_loss(m, "mean", -1); }), "smooth_l1_loss: beta"));
  CHECK(has(thrown<tinygrad::Error>([&] { (void)m.kl_div(m, "avg"); }), "\"batchmean\""));
  CHECK(has(thrown<tinygrad::Error>([&] { (void)m.mse_loss(m, "avg"); }), "mse_loss: reduction"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)m.mse_loss(Tensor::ones({4})); }), "(2, 3)"));
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)Tensor::ones({2, 0}).median(1); }), "median: cannot reduce the empty dim 1"));
  CHECK(has(thrown<tinygrad::ShapeError>([&] { (void)Tensor::ones({2, 3}).interpolate(std::nullopt, {2.0}); }), "(N, C, then one"));
  // torch's median of a NaN is NaN; interpolate's default mode is torch's "nearest"
  CHECK(std::isnan(f32({1.f, NAN, 0.f}).median().item<float>()));
  CHECK(std::isnan(f32({1.f, NAN, 0.f}, {1, 3}).median(1).first.item<float>()));
  Tensor x = f32({1.f, 2.f}, {1, 1, 2});
  CHECK(x.interpolate({4}).to_vector<double>() == V{1, 1, 2, 2});
}

TEST_CASE("parity: a class label outside 0..C-1 that is not ignore_index is an IndexError, as torch's error (Target 7 is out of bounds)",
          "[parity]") {
  Tensor logits = Tensor::ones({3, 5});
  auto labels = [](std::vector<int64_t> v) { return Tensor(v); };
  const char* bad7 = "index 7 is out of bounds for size 5 (valid indices are 0..4)";
  // the IndexError comes when the loss is built where the labels are known on the host, else at the next sync (item)
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)logits.cross_entropy(labels({0, 7, 1})).item<float>(); }), "cross_entropy target: index 7"));
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)logits.cross_entropy(labels({0, 7, 1})).item<float>(); }), bad7));
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)logits.nll_loss(labels({0, -3, 1})).item<float>(); }), "nll_loss target: index -3"));
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)logits.sparse_categorical_crossentropy(labels({5, 0, 1})).item<float>(); }),
            "sparse_categorical_crossentropy target: index 5"));
  // ignore_index is no error, elsewhere too (torch: F.cross_entropy(ones(3, 5), [0, -100, 1]) = 1.6094379)
  CHECK(logits.cross_entropy(labels({0, -100, 1})).item<float>() == Approx(1.6094379));
  CHECK(logits.cross_entropy(labels({0, 9, 1}), std::nullopt, 9).item<float>() == Approx(1.6094379));
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)logits.cross_entropy(labels({0, -100, 7})).item<float>(); }), bad7));
  auto no_ignore = [&] { (void)logits.nll_loss(labels({0, -100, 1}), std::nullopt, std::nullopt).item<float>(); };
  CHECK(has(thrown<tinygrad::IndexError>(no_ignore), "index -100"));
  // labels computed on the device
  Tensor lazy = labels({0, 3, 1}) + 4;
  Tensor loss = logits.cross_entropy(lazy);
  CHECK(has(thrown<tinygrad::IndexError>([&] { (void)loss.item<float>(); }), bad7));
  Tensor ok = logits.cross_entropy(labels({0, 3, 1}) + 1, std::nullopt, 5);  // 1, 4, 2: in range
  CHECK(ok.item<float>() == Approx(1.6094379));
}
