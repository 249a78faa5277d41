// README's "Coming from PyTorch" table, row by row: every C++ spelling the table shows is called here once on small
// tensors (values checked where cheap, against what PyTorch gives), so the table cannot drift from the API.
// A row changed in README is changed here too.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <filesystem>
#include <sstream>

using namespace tinygrad;
using std::nullopt;

namespace {
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }
float one(const Tensor& t) { return t.to_vector<float>().at(0); }

struct Net {
  nn::Linear fc1{4, 8}, fc2{8, 3};
  nn::Dropout drop{0.1};
  Tensor operator()(const Tensor& x) const { return fc2(drop(fc1(x).relu())); }
};
}  // namespace
TINYGRAD_STATE(Net, fc1, fc2);

TEST_CASE("readme torch table: creation", "[readme]") {
  Tensor a({{1.f, 2.f}, {3.f, 4.f}});
  CHECK(a.shape() == Shape{2, 2});
  CHECK(Tensor::zeros({2, 3}).shape() == Shape{2, 3});
  CHECK(vals(Tensor::ones({2})) == std::vector<float>{1, 1});
  CHECK(vals(Tensor::full({2}, 7)) == std::vector<float>{7, 7});
  CHECK(Tensor::empty({2, 3}).numel() == 6);
  CHECK(Tensor::arange(0, 10, 2).cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{0, 2, 4, 6, 8});
  CHECK(Tensor::arange(5, nullopt, 1, DType::Int64).dtype() == DType::Int64);
  CHECK(vals(Tensor::linspace(0, 1, 5)) == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(vals(Tensor::eye(2)) == std::vector<float>{1, 0, 0, 1});
  Tensor::manual_seed(0);
  CHECK(Tensor::rand({2, 3}).shape() == Shape{2, 3});
  CHECK(Tensor::randn({2, 3}).dtype() == DType::Float32);
  CHECK(Tensor::randint(0, 10, {2, 3}).dtype() == DType::Int64);
  CHECK(Tensor::randperm(5).sort().first.cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(Tensor::normal({2}, 0, 1).numel() == 2);
  CHECK(Tensor::uniform({2}, -1, 1).numel() == 2);
  CHECK(vals(a.zeros_like()) == std::vector<float>{0, 0, 0, 0});
  CHECK(vals(a.ones_like()) == std::vector<float>{1, 1, 1, 1});
  CHECK(vals(a.full_like(3)) == std::vector<float>{3, 3, 3, 3});
  CHECK(a.rand_like().shape() == a.shape());
  CHECK(a.randn_like().shape() == a.shape());
  std::vector<float> host{1, 2, 3, 4, 5, 6};
  CHECK(vals(Tensor(host, {2, 3})) == host);
  CHECK(vals(Tensor::from_blob(host.data(), {2, 3}, DType::Float32)) == host);
  auto grid = Tensor::meshgrid({Tensor::arange(2), Tensor::arange(3)}, "ij");
  CHECK(grid[0].shape() == Shape{2, 3});
}

TEST_CASE("readme torch table: dtype, device, shape", "[readme]") {
  Tensor x = Tensor::arange(6, nullopt, 1, DType::Float32).reshape(2, 3);
  CHECK(x.dtype() == DType::Float32);
  CHECK(x.shape() == Shape{2, 3});
  CHECK(x.shape(1) == 3);
  CHECK(x.ndim() == 2);
  CHECK(x.numel() == 6);
  CHECK(x.half().dtype() == DType::Float16);
  CHECK(x.float_().dtype() == DType::Float32);
  CHECK(x.double_().dtype() == DType::Float64);
  CHECK(x.long_().dtype() == DType::Int64);
  CHECK(x.int_().dtype() == DType::Int32);
  CHECK(x.bool_().dtype() == DType::Bool);
  CHECK(x.cast(DType::BFloat16).dtype() == DType::BFloat16);
  CHECK(x.bitcast(DType::Int32).dtype() == DType::Int32);
  CHECK(x.is_floating_point());
  CHECK(x.element_size() == 4);
  CHECK(x.to("CPU").device() == "CPU");
  CHECK(!x.device().empty());
  CHECK(!default_device().empty());
  synchronize(x.device());
}

TEST_CASE("readme torch table: indexing", "[readme]") {
  Tensor x = Tensor::arange(12, nullopt, 1, DType::Float32).reshape(3, 4);
  CHECK(vals(x[0]) == std::vector<float>{0, 1, 2, 3});
  CHECK(vals(x[{Slice{}, 1}]) == std::vector<float>{1, 5, 9});
  CHECK(x[{Slice{1, 3}}].shape() == Shape{2, 4});
  CHECK(vals(x[{1, Slice{nullopt, nullopt, 2}}]) == std::vector<float>{4, 6});
  CHECK(vals(x[{-1, -1}]) == std::vector<float>{11});
  CHECK(x[{Ellipsis{}, NewAxis{}}].shape() == Shape{3, 4, 1});
  Tensor idx(std::vector<int64_t>{2, 0}, {2});
  CHECK(vals(x[idx][{Slice{}, 0}]) == std::vector<float>{8, 0});
  Tensor mask = x > 9.0;
  CHECK(vals(x.masked_select(mask)) == std::vector<float>{10, 11});
  CHECK(vals(x.masked_fill(mask, 0.0)[2]) == std::vector<float>{8, 9, 0, 0});
  CHECK(vals(mask.where(x, -1.0)[2]) == std::vector<float>{-1, -1, 10, 11});
  Tensor y = x.clone();
  y.set({0}, Tensor::zeros({4}));
  CHECK(vals(y[0]) == std::vector<float>{0, 0, 0, 0});
  Tensor col(std::vector<int64_t>{1, 0, 3}, {3, 1});
  CHECK(vals(x.gather(1, col)) == std::vector<float>{1, 4, 11});
  CHECK(vals(x.index_select(0, Tensor(std::vector<int64_t>{2}, {1}))) == std::vector<float>{8, 9, 10, 11});
  CHECK(vals(Tensor::zeros({3, 4}).scatter(1, col, 1.0).sum(1)) == std::vector<float>{1, 1, 1});
  CHECK(vals(Tensor::zeros({3}).scatter_reduce(0, Tensor(std::vector<int64_t>{0, 0}, {2}), Tensor({1.f, 2.f}), "sum")) ==
        std::vector<float>{3, 0, 0});
  CHECK(mask.nonzero().shape() == Shape{2, 2});
}

TEST_CASE("readme torch table: movement", "[readme]") {
  Tensor x = Tensor::arange(6, nullopt, 1, DType::Float32);
  CHECK(x.reshape(2, 3).shape() == Shape{2, 3});
  CHECK(x.view(3, -1).shape() == Shape{3, 2});
  Tensor m = x.reshape(2, 3);
  CHECK(m.permute(1, 0).shape() == Shape{3, 2});
  CHECK(vals(m.transpose(0, 1)[0]) == std::vector<float>{0, 3});
  CHECK(m.transpose().shape() == Shape{3, 2});
  CHECK(m.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(m.unsqueeze(0).squeeze(0).shape() == Shape{2, 3});
  CHECK(m.unsqueeze(0).squeeze().shape() == Shape{2, 3});
  CHECK(m.flatten().shape() == Shape{6});
  CHECK(x.unflatten(0, {2, 3}).shape() == Shape{2, 3});
  CHECK(m[0].reshape(1, 3).expand({4, 3}).shape() == Shape{4, 3});
  CHECK(m[0].reshape(1, 3).expand_as(m).shape() == Shape{2, 3});
  CHECK(Tensor::cat({m, m}, 0).shape() == Shape{4, 3});
  CHECK(Tensor::stack({m, m}, 0).shape() == Shape{2, 2, 3});
  CHECK(Tensor::stack({m, m}).shape() == Shape{2, 2, 3});
  CHECK(x.split(2).size() == 3);
  CHECK(x.chunk(3).size() == 3);
  CHECK(m.repeat({2, 1}).shape() == Shape{4, 3});
  CHECK(vals(x[{Slice{0, 2}}].repeat_interleave(2)) == std::vector<float>{0, 0, 1, 1});
  CHECK(vals(x.flip(0))[0] == 5);
  CHECK(vals(x.roll(1, 0))[0] == 5);
  CHECK(vals(x[{Slice{0, 2}}].pad({1, 1})) == std::vector<float>{0, 0, 1, 0});
  CHECK(vals(x[{Slice{0, 3}}].pad({1, 1}, "reflect")) == std::vector<float>{1, 0, 1, 2, 1});  // torch: F.pad(.., mode="reflect")
  CHECK(vals(x.shrink({{1, 3}})) == std::vector<float>{1, 2});
  CHECK(m.contiguous().shape() == Shape{2, 3});
  CHECK(vals(m.tril()) == std::vector<float>{0, 0, 0, 3, 4, 0});
  CHECK(vals(m.triu()) == std::vector<float>{0, 1, 2, 0, 4, 5});
  CHECK(x.unfold(0, 2, 2).shape() == Shape{3, 2});
  CHECK(vals(m.diagonal()) == std::vector<float>{0, 4});
  CHECK(vals(x[{Slice{0, 2}}].diag()) == std::vector<float>{0, 0, 0, 1});
  CHECK(m.rearrange("a b -> b a").shape() == Shape{3, 2});
}

TEST_CASE("readme torch table: elementwise", "[readme]") {
  Tensor a({1.f, 2.f, 4.f}), b({2.f, 2.f, 2.f});
  CHECK(vals(a + b) == std::vector<float>{3, 4, 6});
  CHECK(vals(a - 1) == std::vector<float>{0, 1, 3});
  CHECK(vals(a * 2) == std::vector<float>{2, 4, 8});
  CHECK(vals(a / b) == std::vector<float>{0.5f, 1, 2});
  CHECK(vals(-a) == std::vector<float>{-1, -2, -4});
  CHECK(vals(a.pow(2)) == std::vector<float>{1, 4, 16});
  CHECK(vals(Tensor({-7.f}).div(Tensor({2.f}), "floor")) == std::vector<float>{-4});  // torch: -7 // 2 = -4
  CHECK(vals(Tensor({-7.f}) % 2) == std::vector<float>{1});                             // torch: -7 % 2 = 1
  CHECK(vals(a.sqrt())[3 - 1] == 2);
  CHECK(vals(a.log2()) == std::vector<float>{0, 1, 2});
  CHECK(a.exp().log().allclose(a));
  CHECK(vals(Tensor({-1.f}).abs()) == std::vector<float>{1});
  CHECK(vals(Tensor({0.f}).sin() + Tensor({0.f}).cos()) == std::vector<float>{1});
  CHECK(vals(a.clamp(1.5, 3.0)) == std::vector<float>{1.5f, 2, 3});
  CHECK(vals(a.maximum(b)) == std::vector<float>{2, 2, 4});
  CHECK(vals(a.minimum(b)) == std::vector<float>{1, 2, 2});
  CHECK((a == b).dtype() == DType::Bool);
  CHECK((a > b).cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 1});
  CHECK(((a > 1.0) & (a < 3.0)).cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 0});
  CHECK(vals(Tensor({-1.f, 1.f}).relu()) == std::vector<float>{0, 1});
  CHECK(vals(Tensor({0.f}).sigmoid()) == std::vector<float>{0.5f});
  CHECK(vals(Tensor({0.f}).tanh()) == std::vector<float>{0});
  CHECK(one(Tensor({1.f}).gelu()) == Approx(0.8413447f));  // torch: F.gelu(1.) exact
  CHECK(one(Tensor({1.f}).gelu("tanh")) == Approx(0.8411920f));
  CHECK(one(Tensor({1.f}).silu()) == Approx(0.7310586f));
  CHECK(one(Tensor({0.f}).softplus()) == Approx(0.6931472f));
  CHECK(one(Tensor({-1.f}).leaky_relu(0.1)) == Approx(-0.1f));
  CHECK(one(Tensor({-1.f}).elu()) == Approx(-0.6321206f));
  CHECK(vals(Tensor({0.f, 0.f}).softmax(-1)) == std::vector<float>{0.5f, 0.5f});
  CHECK(one(Tensor({0.f, 0.f}).log_softmax(-1)) == Approx(-0.6931472f));
  CHECK(vals(a.lerp(b, 0.5)) == std::vector<float>{1.5f, 2, 3});
  CHECK(vals(Tensor({NAN}).isnan().cast(DType::Float32)) == std::vector<float>{1});
  CHECK(vals(a.isclose(b).cast(DType::Float32)) == std::vector<float>{0, 1, 0});
  Tensor c = a;
  c += b;
  CHECK(vals(c) == std::vector<float>{3, 4, 6});
  Tensor d = a.contiguous().realize();
  d.assign(d + 1);
  CHECK(vals(d) == std::vector<float>{2, 3, 5});
}

TEST_CASE("readme torch table: reductions", "[readme]") {
  Tensor x({{1.f, 5.f, 3.f}, {4.f, 2.f, 6.f}});
  CHECK(x.sum().item<float>() == 21);
  CHECK(vals(x.sum(1, true)) == std::vector<float>{9, 12});
  CHECK(x.sum(1, true).shape() == Shape{2, 1});
  CHECK(vals(x.sum({0, 1})) == std::vector<float>{21});
  CHECK(vals(x.mean(0)) == std::vector<float>{2.5f, 3.5f, 4.5f});
  CHECK(vals(x.var(1)) == std::vector<float>{4, 4});  // torch: unbiased (correction=1)
  CHECK(one(x.std(1, false, 0)) == Approx(1.6329932f));  // torch: x.std(1, correction=0)
  auto [v, i] = x.max(1);
  CHECK(vals(v) == std::vector<float>{5, 6});
  CHECK(i.cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(vals(x.min(1)) == std::vector<float>{1, 2});
  CHECK(x.max().item<float>() == 6);
  CHECK(vals(x.amax(0)) == std::vector<float>{4, 5, 6});
  CHECK(x.argmax(1).cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(x.argmin().cast(DType::Int64).item<int64_t>() == 0);
  CHECK(vals(x.prod(1)) == std::vector<float>{15, 48});
  CHECK(vals(x[0].cumsum(0)) == std::vector<float>{1, 6, 9});
  CHECK(vals(x[0].cumprod(0)) == std::vector<float>{1, 5, 15});
  auto [tv, ti] = x.topk(2);
  CHECK(vals(tv) == std::vector<float>{5, 3, 6, 4});
  CHECK(ti.cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 2, 0});
  auto [sv, si] = x[0].sort();
  CHECK(vals(sv) == std::vector<float>{1, 3, 5});
  CHECK(x[0].argsort(-1, true).cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0});
  CHECK(x.logsumexp(1).shape() == Shape{2});
  CHECK((x > 5.0).any().item<bool>());
  CHECK(!(x > 5.0).all().item<bool>());
  CHECK(vals(Tensor({3.f, 4.f}).norm()) == std::vector<float>{5});
  CHECK(x[0].median().item<float>() == 3);
  auto u = Tensor({2.f, 1.f, 2.f}).unique(true, true, true);
  CHECK(vals(u.values) == std::vector<float>{1, 2});
  CHECK(u.counts.cast(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
}

TEST_CASE("readme torch table: matmul and einsum", "[readme]") {
  Tensor a({{1.f, 2.f}, {3.f, 4.f}}), b({{1.f, 0.f}, {0.f, 1.f}});
  CHECK(vals(a.matmul(b)) == vals(a));
  CHECK(vals(a.mm(b)) == vals(a));
  CHECK(a.unsqueeze(0).bmm(b.unsqueeze(0)).shape() == Shape{1, 2, 2});
  CHECK(vals(Tensor::einsum("ij,jk->ik", {a, b})) == vals(a));
  CHECK(vals(Tensor({1.f, 2.f}).dot(Tensor({3.f, 4.f}))) == std::vector<float>{11});
  // F.linear(x, w, b) = x @ w.T + b: w is (out, in) in torch, Tensor::linear takes it (in, out)
  Tensor w({{1.f, 1.f}, {0.f, 1.f}}), bias({0.5f, 0.5f});
  CHECK(vals(a.linear(w.transpose(), bias)) == std::vector<float>{3.5f, 2.5f, 7.5f, 4.5f});
}

TEST_CASE("readme torch table: losses and functional nn", "[readme]") {
  Tensor logits({{2.f, 0.f, 0.f}, {0.f, 1.f, 0.f}});
  Tensor y(std::vector<int64_t>{0, -100}, {2});
  // torch: F.cross_entropy(logits, [0, -100]) = 0.2395447 (the -100 row ignored)
  CHECK(logits.cross_entropy(y).item<float>() == Approx(0.2395447f));
  CHECK(logits.log_softmax(-1).nll_loss(y).item<float>() == Approx(0.2395447f));
  CHECK(logits.cross_entropy(Tensor(std::vector<int64_t>{0, 1}, {2}), nullopt, -100, "mean", 0.1).item<float>() ==
        Approx(0.4954947f));  // torch, label_smoothing=0.1
  Tensor p({0.5f, 1.f}), t({1.f, 1.f});
  CHECK(p.mse_loss(t).item<float>() == Approx(0.125f));
  CHECK(p.l1_loss(t).item<float>() == Approx(0.25f));
  CHECK(p.smooth_l1_loss(t).item<float>() == Approx(0.0625f));
  CHECK(p.binary_cross_entropy(t).item<float>() == Approx(0.3465736f));
  CHECK(Tensor({0.f}).binary_cross_entropy_with_logits(Tensor({1.f})).item<float>() == Approx(0.6931472f));
  CHECK(Tensor({-0.5f}).kl_div(Tensor({0.5f}), "batchmean").item<float>() == Approx(-0.0965736f));

  Tensor img = Tensor::ones({1, 1, 4, 4}), k = Tensor::ones({2, 1, 3, 3});
  CHECK(img.conv2d(k, Tensor::zeros({2}), 1, 1).shape() == Shape{1, 2, 4, 4});
  CHECK(img.conv2d(k, nullopt, {.stride = 2, .padding = 1}).shape() == Shape{1, 2, 2, 2});
  CHECK(img.max_pool2d(2).shape() == Shape{1, 1, 2, 2});
  CHECK(img.avg_pool2d(2, 2).shape() == Shape{1, 1, 2, 2});
  CHECK(img.interpolate({8, 8}).shape() == Shape{1, 1, 8, 8});
  Tensor h({{1.f, 3.f}});
  CHECK(one(h.layer_norm({2})) == Approx(-1.f).epsilon(1e-4));
  Tensor q = Tensor::randn({1, 2, 3, 4});
  CHECK(q.scaled_dot_product_attention(q, q, nullopt, true).shape() == Shape{1, 2, 3, 4});
  {
    TrainingScope train;
    CHECK(q.dropout(0.5).shape() == q.shape());
  }
  CHECK(vals(q.dropout(0.5)) == vals(q));  // eval: identity
  CHECK(vals(Tensor(std::vector<int64_t>{2}, {1}).one_hot(3)) == std::vector<float>{0, 0, 1});
  CHECK(nn::embedding(Tensor(std::vector<int64_t>{1}, {1}), Tensor::eye(3)).shape() == Shape{1, 3});
  CHECK(one(Tensor({{3.f, 4.f}}).normalize()) == Approx(0.6f));
  CHECK(Tensor({{1.f, 0.f}}).cosine_similarity(Tensor({{1.f, 0.f}})).item<float>() == Approx(1.f));
}

TEST_CASE("readme torch table: nn layers", "[readme]") {
  Tensor x = Tensor::randn({2, 4});
  nn::Linear lin(4, 3);
  CHECK(lin(x).shape() == Shape{2, 3});
  CHECK(lin.weight.shape() == Shape{3, 4});  // torch's (out, in)
  nn::Conv2d conv(1, 4, 3, 1, 1);
  Tensor img = Tensor::randn({2, 1, 5, 5});
  CHECK(conv(img).shape() == Shape{2, 4, 5, 5});
  nn::Conv1d conv1(1, 2, 3);
  CHECK(conv1(Tensor::randn({1, 1, 5})).shape() == Shape{1, 2, 3});
  nn::ConvTranspose2d up(4, 1, 2, 2);
  CHECK(up(conv(img)).shape() == Shape{2, 1, 10, 10});
  nn::BatchNorm2d bn(4);
  {
    TrainingScope train;
    CHECK(bn(conv(img)).shape() == Shape{2, 4, 5, 5});
  }
  nn::LayerNorm ln(4);
  CHECK(ln(x).shape() == Shape{2, 4});
  nn::GroupNorm gn(2, 4);
  CHECK(gn(conv(img)).shape() == Shape{2, 4, 5, 5});
  nn::InstanceNorm in(4);
  CHECK(in(conv(img)).shape() == Shape{2, 4, 5, 5});
  nn::RMSNorm rms(4);
  CHECK(rms(x).shape() == Shape{2, 4});
  nn::Embedding emb(10, 4);
  CHECK(emb(Tensor(std::vector<int64_t>{1, 2, 3}, {3})).shape() == Shape{3, 4});
  nn::Dropout drop(0.1);
  CHECK(drop(x).shape() == Shape{2, 4});
  nn::LSTMCell cell(4, 8);
  auto [hh, cc] = cell(x);
  CHECK(hh.shape() == Shape{2, 8});
  CHECK(cc.shape() == Shape{2, 8});
}

TEST_CASE("readme torch table: training, autograd, state, jit, printing", "[readme]") {
  Net net;
  auto params = nn::get_parameters(net);
  CHECK(params.size() == 4);
  nn::optim::SGD sgd(params, 0.1, 0.9);
  nn::optim::Adam adam(params, 1e-3);
  nn::optim::AdamW adamw(params, 1e-3, 0.9, 0.999, 1e-8, 0.01);
  nn::optim::StepLR step_lr(sgd, 10, 0.1);
  nn::optim::CosineAnnealingLR cosine(adam, 100);
  nn::optim::OneCycleLR one_cycle(adamw, 0.01, 100);
  nn::optim::MultiStepLR multi(adam, {10, 20});
  Tensor x = Tensor::randn({2, 4}), y(std::vector<int64_t>{0, 2}, {2});
  nn::train(net);
  sgd.zero_grad();
  Tensor loss = net(x).cross_entropy(y);
  loss.backward();
  CHECK(net.fc1.weight.grad().has_value());
  nn::clip_grad_norm_(params, 1.0);
  nn::clip_grad_value_(params, 1.0);
  sgd.step();
  step_lr.step();
  CHECK(sgd.lr() == Approx(0.1));
  sgd.set_lr(0.05);
  CHECK(sgd.lr() == Approx(0.05));
  nn::eval(net);

  Tensor w = Tensor({1.f, 2.f}).requires_grad_();
  CHECK(w.requires_grad());
  Tensor l = (w * w).sum();
  l.backward();
  CHECK(vals(*w.grad()) == std::vector<float>{2, 4});
  w.zero_grad();
  CHECK(!w.grad());
  CHECK(vals(gradient((w * w).sum(), {w})[0]) == std::vector<float>{2, 4});
  CHECK(!w.detach().requires_grad());
  {
    NoGrad no_grad;
    CHECK(!grad_enabled());
  }

  auto sd = nn::get_state_dict(net);
  CHECK(sd.count("fc1.weight") == 1);
  auto path = (std::filesystem::temp_directory_path() / "tinygrad_readme_torch.safetensors").string();
  nn::safe_save(sd, path);
  Net other;
  nn::load_state_dict(other, nn::safe_load(path));
  CHECK(vals(other.fc1.weight) == vals(net.fc1.weight));
  std::filesystem::remove(path);

  TinyJit step([&](const Tensor& a) { return (a * 2).sum(); }, "step");
  for (int i = 0; i < 3; i++) CHECK(step(Tensor({1.f, float(i)})).item<float>() == Approx(2 + 2 * i));

  std::ostringstream os;
  os << Tensor({1.f, 2.f});
  CHECK(os.str() == "tensor([1., 2.])");
  CHECK(to_string(Tensor({1.f, 2.f})) == "tensor([1., 2.])");
  CHECK(Tensor({3.5f}).sum().item<float>() == 3.5f);
  CHECK(Tensor({1.f, 2.f}).to_vector<float>() == std::vector<float>{1, 2});
  Tensor r = Tensor({1.f}) + 1;
  r.realize();
  CHECK(r.is_realized());
  Tensor r2 = r * 2, r3 = r * 3;
  Tensor::realize_all({r2, r3});
  CHECK(r3.is_realized());
}
