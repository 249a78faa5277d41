// Tensors of several devices (engine/multi.hpp): every op family on sharded and copied tensors (several split axes,
// uneven parts) equals the same op on one device, forward and backward; a data-parallel step (TinyJit'd, Adam,
// BatchNorm) on 2 and 4 devices equals the one-device step; the collectives of runtime/collective.hpp reduce as plain
// loops do. On the CPU the devices are CPU:0, CPU:1, ... (collectives through the host); under DEV=CUDA with two GPUs or
// more, CUDA:0, CUDA:1, ... (NCCL where libnccl loads).
#include <catch2/catch.hpp>
#include <tinygrad.hpp>
#include <tinygrad/models/bert.hpp>

#include <random>

using namespace tinygrad;
using Catch::Matchers::Contains;

namespace {
// n devices of the default device's kind: CUDA's when there are that many GPUs, else the CPU's
std::vector<std::string> devs(size_t n) {
  std::string base = detail::device_base(default_device());
  std::vector<std::string> r;
  for (size_t i = 0; i < n; i++) r.push_back((base == "CUDA" ? "CUDA:" : "CPU:") + std::to_string(i));
  if (base == "CUDA") try { runtime(r.back()); } catch (const DeviceError&) { for (auto& d : r) d = "CPU:" + d.substr(5); }
  return r;
}
Tensor data(uint32_t seed, Shape s) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(size_t(detail::prod(s)));
  for (auto& x : v) x = u(g);
  return Tensor(v, s);
}
void check_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  REQUIRE(a.shape() == b.shape());
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); i++) REQUIRE(std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i])));
}
}  // namespace

TEST_CASE("multi: shard splits along an axis (uneven parts), to(devices) copies, both read back whole", "[multi]") {
  auto D = devs(3);
  Tensor a = data(1, {7, 5});
  Tensor s = a.shard(D, 0);
  CHECK(s.device() == D[0] + "," + D[1] + "," + D[2]);
  CHECK(s.devices() == D);
  CHECK(s.shape() == Shape{7, 5});
  auto bufs = s.buffers();
  REQUIRE(bufs.size() == 3);
  CHECK(bufs[0]->size == 15);  // 7 over 3: 3, 2, 2 rows
  CHECK(bufs[2]->size == 10);
  CHECK(bufs[1]->device == D[1]);
  check_close(s, a, 0);
  check_close(a.shard(D, 1), a, 0);
  check_close(a.to(D), a, 0);
  CHECK(a.to(D).buffers().size() == 3);
  check_close(s.to(D[1]), a, 0);
  CHECK_THROWS_WITH(a.shard(devs(8), 1), Contains("fewer than the 8 devices"));
  CHECK_THROWS_WITH(a.shard({D[0], D[0]}, 0), Contains("listed twice"));
  CHECK_THROWS_AS(s + a, DeviceError);  // several devices and one: moved first, as between two devices
  check_close(s + a.to(D), a * 2);      // and usable after the error
}

TEST_CASE("multi: elementwise, movement, reduce and matmul on sharded tensors equal one device", "[multi]") {
  for (size_t n : {2, 3}) {
    auto D = devs(n);
    Tensor a = data(2, {6, 4, 5}), b = data(3, {6, 4, 5}), c = data(4, {5, 3});
    for (int64_t ax : {0, 1, 2}) {
      INFO("devices " << n << " axis " << ax);
      Tensor as = a.shard(D, ax), bs = b.shard(D, ax), br = b.to(D);
      check_close(as * bs + 1, a * b + 1);
      check_close((as - br).relu().exp(), (a - b).relu().exp());  // sharded with copied: the copies are split to match
      check_close(as.where(as > 0, bs), a.where(a > 0, b));
      check_close(as.cast(DType::Float16).cast(DType::Float32), a.cast(DType::Float16).cast(DType::Float32));
      for (int64_t r : {0, 1, 2}) {
        check_close(as.sum(r), a.sum(r));
        check_close(as.max(r), a.max(r));
        check_close(as.mean(r, true), a.mean(r, true));
      }
      check_close(as.sum(), a.sum(), 1e-4);
      check_close(as.softmax(-1), a.softmax(-1));
      check_close(as.permute(2, 0, 1).contiguous(), a.permute(2, 0, 1));
      check_close(as.reshape(3, 2, 20), a.reshape(3, 2, 20));  // splits a part: gathered first
      check_close(as.reshape(6, 20), a.reshape(6, 20));
      check_close(as.flip(1), a.flip(1));
      check_close(as.pad({{1, 0}, {0, 2}, {1, 1}}), a.pad({{1, 0}, {0, 2}, {1, 1}}));
      check_close(as.shrink({{1, 5}, {0, 4}, {2, 5}}), a.shrink({{1, 5}, {0, 4}, {2, 5}}));
      check_close(as.unsqueeze(1).expand({6, 3, 4, 5}), a.unsqueeze(1).expand({6, 3, 4, 5}));
      check_close(as.matmul(c.to(D)), a.matmul(c), 1e-4);
      check_close(as.cumsum(2), a.cumsum(2), 1e-4);
      check_close(as.argmax(1).cast(DType::Float32), a.argmax(1).cast(DType::Float32));
    }
  }
}

TEST_CASE("multi: tensor-parallel matmuls (the Megatron split) equal one device", "[multi]") {
  auto D = devs(2);
  Tensor x = data(5, {3, 8}), w1 = data(6, {8, 6}), w2 = data(7, {6, 4});
  Tensor want = x.matmul(w1).gelu().matmul(w2);
  // w1 split by columns: each device computes its columns; w2 by rows: the partial products are all-reduced
  Tensor h = x.to(D).matmul(w1.shard(D, 1)).gelu();
  Tensor y = h.matmul(w2.shard(D, 0));
  check_close(y, want, 1e-4);
  check_close(y.to(D[0]), want, 1e-4);
}

TEST_CASE("multi: BERT with its weights split over 2 and 4 devices (tensor parallel) equals one device", "[multi]") {
  using Small = models::Bert<32, 4, 64, 2, float, 50, 16>;
  Small one;
  std::vector<int32_t> ids{3, 17, 42, 8, 1, 0, 5, 49, 30, 2}, mask{1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  Tensor ti(ids, {2, 5}), tm(mask, {2, 5});
  Tensor want = one(Small::ids_t(ti), Small::ids_t(tm)).tensor();
  for (size_t n : {2, 4}) {
    auto D = devs(n);
    Small many;
    nn::load_state_dict(many, nn::get_state_dict(one));
    many.shard(D);
    std::string group = D[0];
    for (size_t i = 1; i < n; i++) group += "," + D[i];
    CHECK(many.encoder.layer[0].attention.self.query.weight.tensor().device() == group);
    Tensor got = many(Small::ids_t(ti.to(D)), Small::ids_t(tm.to(D))).tensor();
    CHECK(got.devices() == D);
    check_close(got, want, 1e-4);
  }
}

TEST_CASE("multi: gradients through sharded and copied tensors equal one device's", "[multi]") {
  auto D = devs(2);
  Tensor x = data(8, {5, 6}), w0 = data(9, {6, 3}), b0 = data(10, {3});
  auto grads = [&](bool multi) {
    Tensor w = multi ? w0.to(D) : w0.contiguous(), b = multi ? b0.to(D) : b0.contiguous();
    w.requires_grad_(); b.requires_grad_();
    Tensor xs = multi ? x.shard(D, 0) : x;
    Tensor loss = (xs.matmul(w) + b).log_softmax(-1).mul(xs.sum(1, true)).mean() + w.square().sum() * 0.1;
    loss.backward();
    return std::vector<Tensor>{loss, *w.grad(), *b.grad()};
  };
  auto one = grads(false), many = grads(true);
  for (size_t i = 0; i < one.size(); i++) check_close(many[i], one[i], 1e-5);
  CHECK(many[1].devices() == D);
}

namespace {
struct Net {
  nn::Conv2d c1{1, 4, 3};
  nn::BatchNorm bn{4};
  nn::Linear fc{64, 10};
  Tensor operator()(const Tensor& x) const { return fc(bn(c1(x).relu()).max_pool2d().flatten(1)); }
};
}  // namespace
TINYGRAD_STATE(Net, c1, bn, fc);

TEST_CASE("multi: a TinyJit'd data-parallel step on 2 and 4 devices equals one device's", "[multi][jit]") {
  auto run = [](size_t n) {
    Tensor::manual_seed(3);
    Net m;
    auto D = devs(n);
    if (n > 1) for (auto& [name, t] : nn::get_state_dict(m)) t.replace(t.to(D));
    nn::optim::Adam opt(nn::get_parameters(m), 0.01);
    TinyJit step([&](const Tensor& x, const Tensor& y) {
      TrainingScope train;
      opt.zero_grad();
      Tensor loss = m(x).sparse_categorical_crossentropy(y);
      loss.backward();
      opt.step({loss});
      return loss;
    }, "dp_step");
    std::vector<float> losses;
    for (int s = 0; s < 5; s++) {
      Tensor x = data(uint32_t(20 + s), {8, 1, 10, 10}), y = Tensor(std::vector<int32_t>{3, 1, 4, 1, 5, 9, 2, 6});
      if (n > 1) { x = x.shard(D, 0); y = y.shard(D, 0); }
      losses.push_back(step(x, y).item<float>());
    }
    CHECK(step.captured());
    return std::pair{losses, m.fc.weight.to_vector<float>()};
  };
  auto [l1, w1] = run(1);
  for (size_t n : {2, 4}) {
    INFO(n << " devices");
    auto [ln, wn] = run(n);
    for (size_t i = 0; i < l1.size(); i++) CHECK(ln[i] == Approx(l1[i]).epsilon(1e-4));
    for (size_t i = 0; i < w1.size(); i++) CHECK(wn[i] == Approx(w1[i]).margin(1e-5));
  }
}

TEST_CASE("multi: the host collective reduces every dtype as plain loops do", "[multi]") {
  std::vector<std::string> D{"CPU:0", "CPU:1", "CPU:2"};
  auto& c = communicator(D);
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min}) {
    std::vector<std::vector<int32_t>> v{{1, -2, 2147483647}, {3, 4, 1}, {-5, 6, 0}};
    std::vector<std::shared_ptr<Buffer>> bufs;
    std::vector<Buffer*> send;
    for (size_t i = 0; i < 3; i++) {
      bufs.push_back(std::make_shared<Buffer>(D[i], DType::Int32, 3));
      bufs.back()->copyin(v[i].data());
      send.push_back(bufs.back().get());
    }
    c.all_reduce(send, send, k);  // in place
    for (size_t j = 0; j < 3; j++) {
      uint32_t want = uint32_t(v[0][j]);
      for (size_t i = 1; i < 3; i++) {
        int32_t a = int32_t(want), b = v[i][j];
        want = k == ReduceKind::Sum    ? want + uint32_t(b)
               : k == ReduceKind::Prod ? want * uint32_t(b)
                                       : uint32_t(k == ReduceKind::Max ? std::max(a, b) : std::min(a, b));
      }
      for (auto& b : bufs) {
        std::vector<int32_t> got(3);
        b->copyout(got.data());
        CHECK(got[j] == int32_t(want));
      }
    }
  }
}
