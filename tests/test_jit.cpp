// TinyJit: replays equal eager calls with new inputs (values and gradients) and build no graph; an optimizer step
// and dropout inside; fresh random numbers on each replay; the errors (shape, dtype, device, kernels that differ,
// host data baked in, nesting) leave everything usable; the memory planner never lets live buffers share memory;
// CPU, OpenCL and (on a GPU machine) CUDA.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <random>

using namespace tinygrad;
using Catch::Matchers::Contains;

namespace {
bool has_device(const std::string& d) {
  try { runtime(d); return true; } catch (const DeviceError&) { return false; }
}
Tensor data(uint32_t seed, Shape s, const std::string& dev = "") {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(size_t(detail::prod(s)));
  for (auto& x : v) x = u(g);
  return Tensor(v, s, dev);
}
void check_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  REQUIRE(a.shape() == b.shape());
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); i++) REQUIRE(std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i])));
}
std::vector<std::string> devices_here() {
  std::vector<std::string> r;
  for (std::string d : {"CPU", "CL", "CUDA"}) {
    if (has_device(d)) r.push_back(d);
    else WARN(d << " is not available here: skipped");
  }
  return r;
}
}  // namespace

TEST_CASE("jit: replays equal eager calls with new inputs and build no graph, on every device here", "[jit]") {
  for (auto& dev : devices_here()) {
    INFO(dev);
    auto fn = [](const Tensor& x, const Tensor& w) { return (x.matmul(w) + 1).relu().log_softmax(1) * 2 - x.sum(1, true); };
    TinyJit f(fn, "f");
    for (uint32_t i = 0; i < 6; i++) {
      Tensor x = data(i, {4, 8}, dev), w = data(100 + i, {8, 3}, dev);
      RunStats before = run_stats();
      Tensor r = f(x, w);
      if (i >= 2) {  // replays: nothing scheduled, nothing compiled, not even a schedule-cache lookup
        CHECK(run_stats().schedules_built == before.schedules_built);
        CHECK(run_stats().schedule_cache_hits == before.schedule_cache_hits);
        CHECK(run_stats().kernels_compiled == before.kernels_compiled);
        CHECK(run_stats().kernels_run - before.kernels_run == int64_t(f.kernel_count()));
      }
      CHECK(r.device() == dev);
      check_close(r, fn(x, w));
    }
    CHECK(f.captured());
    CHECK(f.calls() == 6);
    CHECK(f.kernel_count() >= 1);
  }
}

TEST_CASE("jit: returned tensors are new on each call, tuples, vectors, nothing and static tensors", "[jit]") {
  TinyJit f([](const Tensor& x) { return std::tuple{x * 2, (x + 1).sum()}; }, "pair");
  std::vector<Tensor> kept;
  for (uint32_t i = 0; i < 4; i++) {
    Tensor x = data(i, {5});
    auto [a, s] = f(x);
    check_close(a, x * 2);
    check_close(s, (x + 1).sum());
    kept.push_back(a);
  }
  for (uint32_t i = 0; i < 4; i++) check_close(kept[i], data(i, {5}) * 2);  // an earlier result is not overwritten

  TinyJit g([](const Tensor& x, const Tensor& y) { return std::vector<Tensor>{x + y, x - y, x}; });
  for (uint32_t i = 0; i < 4; i++) {
    Tensor x = data(i, {3}), y = data(9 + i, {3});
    auto r = g(x, y);
    REQUIRE(r.size() == 3);
    check_close(r[0], x + y);
    check_close(r[1], x - y);
    check_close(r[2], x);  // an argument returned as is: this call's
  }

  Tensor acc = Tensor::zeros({2}).contiguous().realize();
  TinyJit h([&](const Tensor& x) { acc.assign(acc + x); });
  for (int i = 0; i < 5; i++) h(Tensor::ones({2}));
  CHECK(acc.to_vector<float>() == std::vector<float>{5, 5});

  using V = static_tensor<float, 3, 4>;
  TinyJit s([](const V& a, const V& b) { return V(a * b + a); });
  for (int i = 0; i < 4; i++) {
    V a = V::uniform(1.0), b = V::uniform(1.0);
    check_close(s(a, b).tensor(), a.tensor() * b.tensor() + a.tensor());
  }
  CHECK(s.kernel_count() == 1);  // the static plan's launch, recorded while captured (one mechanism: plans are programs too)
}

TEST_CASE("jit: gradients computed inside a jitted function equal eager ones", "[jit]") {
  Tensor w = data(1, {8, 3}).requires_grad_();
  auto fn = [&](const Tensor& x) {
    w.zero_grad();
    Tensor loss = (x.matmul(w).tanh() * x.matmul(w)).mean();
    loss.backward();
    return std::pair{loss, *w.grad()};
  };
  TinyJit f(fn, "grad");
  for (uint32_t i = 0; i < 5; i++) {
    Tensor x = data(10 + i, {4, 8});
    auto [l, g] = f(x);
    auto [le, ge] = fn(x);
    check_close(l, le);
    check_close(g, ge);
  }
}

TEST_CASE("jit: a training step with Adam, dropout and BatchNorm inside matches eager steps", "[jit]") {
  struct Net {
    nn::Linear a{8, 16}, b{16, 3};
    nn::BatchNorm bn{16};
    Tensor operator()(const Tensor& x) const { return b(bn(a(x)).relu().dropout(0.25)); }
  };
  auto train = [](bool jit) {
    Tensor::manual_seed(5);
    Net net;
    nn::optim::Adam opt({net.a.weight, *net.a.bias, net.b.weight, *net.b.bias, *net.bn.weight, *net.bn.bias, net.bn.running_mean, net.bn.running_var},
                        0.01);
    auto step = [&](const Tensor& x, const Tensor& y) {
      TrainingScope t;
      opt.zero_grad();
      Tensor loss = net(x).sparse_categorical_crossentropy(y);
      loss.backward();
      opt.step({loss});
      return loss;
    };
    TinyJit j(step, "train_step");
    std::vector<float> losses;
    for (uint32_t i = 0; i < 7; i++) {
      Tensor x = data(i, {6, 8}), y = Tensor(std::vector<int32_t>{int(i % 3), 1, 2, 0, 1, int((i + 1) % 3)}, {6});
      losses.push_back((jit ? j(x, y) : step(x, y)).item<float>());
      if (i == 3) opt.set_lr(0.005);  // written in place: the replays read it
    }
    if (jit) CHECK(j.captured());
    return std::tuple{losses, net.b.weight.to_vector<float>(), net.bn.running_mean.to_vector<float>()};
  };
  auto [le, we, me] = train(false);
  auto [lj, wj, mj] = train(true);
  for (size_t i = 0; i < le.size(); i++) CHECK(lj[i] == Approx(le[i]).epsilon(1e-5));
  for (size_t i = 0; i < we.size(); i++) CHECK(wj[i] == Approx(we[i]).margin(1e-5));
  for (size_t i = 0; i < me.size(); i++) CHECK(mj[i] == Approx(me[i]).margin(1e-5));
  CHECK(le[6] < le[0]);  // it trains
}

TEST_CASE("jit: random numbers are drawn anew on each replay, as eager calls draw them", "[jit]") {
  auto fn = [](const Tensor& x) { return x + Tensor::rand({6}); };
  Tensor z = Tensor::zeros({6}).contiguous().realize();
  Tensor::manual_seed(3);
  std::vector<std::vector<float>> eager, jitted;
  for (int i = 0; i < 5; i++) eager.push_back(fn(z).to_vector<float>());
  Tensor::manual_seed(3);
  TinyJit f(fn, "noise");
  for (int i = 0; i < 5; i++) jitted.push_back(f(z).to_vector<float>());
  CHECK(f.captured());
  CHECK(jitted == eager);
  CHECK(jitted[3] != jitted[4]);
  // and a draw compiles nothing new: the counter reaches the kernel in a buffer
  Tensor::rand({6}).realize();
  RunStats before = run_stats();
  for (int i = 0; i < 3; i++) Tensor::rand({6}).realize();
  CHECK(run_stats().kernels_compiled == before.kernels_compiled);
}

TEST_CASE("jit: arguments of another shape, dtype or device are errors naming the argument and both", "[jit][errors]") {
  TinyJit f([](const Tensor& x, const Tensor& y) { return x * y; }, "mul");
  for (int i = 0; i < 3; i++) f(Tensor::ones({3, 4}), Tensor::ones({3, 4}));
  CHECK_THROWS_MATCHES(f(Tensor::ones({3, 4}), Tensor::ones({2, 4})), JitError,
                       Catch::Matchers::Predicate<JitError>([](const JitError& e) {
                         std::string m = e.what();
                         return m.find("TinyJit(mul)") != m.npos && m.find("argument 1") != m.npos && m.find("(2, 4)") != m.npos &&
                             m.find("(3, 4)") != m.npos;
                       }));
  CHECK_THROWS_WITH(f(Tensor::ones({3, 4}), Tensor::ones({3, 4}, DType::Int32)), Contains("argument 1") && Contains("int32") && Contains("float32"));
  std::string other = default_device() == "CL" ? "CPU" : "CL";
  if (has_device(other))
    CHECK_THROWS_WITH(f(Tensor::ones({3, 4}, std::nullopt, other), Tensor::ones({3, 4})),
                      Contains("argument 0") && Contains(other) && Contains(default_device()));
  // still usable
  Tensor x = data(1, {3, 4}), y = data(2, {3, 4});
  check_close(f(x, y), x * y);
}

TEST_CASE("jit: a function whose kernels change between calls, or that bakes in host data, is an error saying why", "[jit][errors]") {
  int n = 0;
  TinyJit f([&](const Tensor& x) { return n++ % 2 ? x * 2 : x + 1; }, "branchy");
  f(Tensor::ones({4}));
  f(Tensor::ones({4}));  // differs from the first: the first may have initialized state, so once more
  CHECK_THROWS_WITH(f(Tensor::ones({4})), Contains("TinyJit(branchy)") && Contains("calls 2 and 3") && Contains("different kernels"));

  float k = 0;
  TinyJit g([&](const Tensor& x) { return x + Tensor(std::vector<float>{k++, 1, 2, 3}); }, "host");
  g(Tensor::ones({4}));
  g(Tensor::ones({4}));
  CHECK_THROWS_WITH(g(Tensor::ones({4})), Contains("host data") && Contains("argument"));

  TinyJit inner([](const Tensor& x) { return x + 1; });
  TinyJit outer([&](const Tensor& x) { return inner(x) * 2; }, "outer");
  CHECK_THROWS_WITH(outer(Tensor::ones({2})), Contains("nest"));
  CHECK_THROWS_WITH(outer(Tensor::ones({2})), Contains("nest"));
  CHECK((Tensor::ones({2}) + 1).to_vector<float>() == std::vector<float>{2, 2});  // nothing left capturing
}

TEST_CASE("jit: a function that throws while captured leaves nothing half-captured", "[jit][errors]") {
  bool fail = false;
  TinyJit f([&](const Tensor& x) {
    Tensor y = (x * 3).realize();
    if (fail) throw Error("boom");
    return y + 1;
  }, "thrower");
  f(Tensor::ones({3}));
  fail = true;
  CHECK_THROWS_WITH(f(Tensor::ones({3})), Contains("boom"));
  fail = false;
  CHECK((Tensor::ones({3}) * 5).to_vector<float>() == std::vector<float>{5, 5, 5});
  for (uint32_t i = 0; i < 4; i++) {
    Tensor x = data(i, {3});
    check_close(f(x), x * 3 + 1);
  }
  CHECK(f.captured());
}

TEST_CASE("jit: the memory planner never lets buffers alive at once share memory", "[jit]") {
  std::mt19937 g(7);
  for (int trial = 0; trial < 300; trial++) {
    size_t n = 1 + g() % 40, steps = 1 + g() % 30;
    std::vector<std::array<size_t, 3>> items(n);
    for (auto& it : items) {
      size_t a = g() % steps, b = g() % steps;
      it = {std::min(a, b), std::max(a, b), 1 + g() % 4096};
    }
    auto p = detail::plan_memory(items);
    REQUIRE(p.of.size() == n);
    for (size_t i = 0; i < n; i++) {
      REQUIRE(p.of[i] >= 0);
      REQUIRE(p.bytes[size_t(p.of[i])] >= items[i][2]);
      for (size_t j = i + 1; j < n; j++)
        if (p.of[i] == p.of[j]) REQUIRE((items[i][1] < items[j][0] || items[j][1] < items[i][0]));
    }
  }
  // a chain of kernels needs two intermediate buffers, not one per kernel
  TinyJit f([](const Tensor& x) {
    Tensor h = x;
    for (int i = 0; i < 8; i++) h = (h * 1.5 + 1).contiguous();
    return h.sum();
  }, "chain");
  for (uint32_t i = 0; i < 3; i++) {
    Tensor x = data(i, {1000});
    Tensor e = x;
    for (int k = 0; k < 8; k++) e = e * 1.5 + 1;
    check_close(f(x), e.sum(), 1e-4);
  }
  REQUIRE(f.program());
  CHECK(f.program()->intermediates >= 7);
  CHECK(f.program()->pool.size() == 2);
  CHECK(f.program()->bytes_planned * 3 <= f.program()->bytes_unplanned);
  // while it captures, a schedule's intermediates give their memory back after their last kernel, as a plain run's do
  // (the capture keeps the buffers, not their memory: a language model's prefill capture made 630 MB of fresh pages)
  auto& al = *runtime(default_device()).allocator;
  int64_t during = -1;
  TinyJit c([&](const Tensor& x) {
    Tensor h = x;
    for (int i = 0; i < 8; i++) h = (h * 1.5 + 1).contiguous();
    Tensor s = h.sum().realize();
    during = al.live_allocations();
    return s;
  }, "chain_live");
  Tensor x = data(9, {1000}).realize();
  int64_t before = al.live_allocations();
  Tensor s = c(x);
  CHECK(during - before == 1);  // the sum
  check_close(s, c(x));
}

TEST_CASE("jit: a replay reads what the tensors it captured hold now, however they changed between calls", "[jit]") {
  nn::Linear l(3, 2);
  TinyJit f([&](const Tensor& x) { return l(x); }, "linear");
  Tensor x = data(1, {4, 3});
  auto same_as_eager = [&](const char* how) {
    INFO(how);
    Tensor y = f(x);
    check_close(y, l(x));
  };
  for (int i = 0; i < 3; i++) same_as_eager("captured");
  REQUIRE(f.captured());
  l.weight.assign(data(2, {2, 3}));
  same_as_eager("assign outside, realized value");
  l.weight.assign(l.weight * 2 + 1);
  same_as_eager("assign outside, lazy value");
  l.bias->assign(Tensor({106.f, 215.f}));
  same_as_eager("the bias assigned");
  nn::load_state_dict(l, {{"weight", data(3, {2, 3})}, {"bias", data(4, {2})}});
  same_as_eager("load_state_dict");
  {
    nn::optim::SGD opt(nn::get_parameters(l), 0.5);
    TrainingScope train;
    opt.zero_grad();
    l(x).square().sum().backward();
    opt.step();
  }
  same_as_eager("an optimizer step outside");
  l.weight.replace(data(5, {2, 3}));
  same_as_eager("replace on the same device");
  same_as_eager("again");
  CHECK(f.calls() == 10);

  // a state assigned inside and outside the function: the replay starts from the value given outside
  Tensor acc = Tensor::zeros({2}).contiguous().realize();
  TinyJit h([&](const Tensor& v) { acc.assign(acc + v); });
  for (int i = 0; i < 3; i++) h(Tensor::ones({2}));
  acc.assign(Tensor({10.f, 20.f}));
  h(Tensor::ones({2}));
  CHECK(acc.to_vector<float>() == std::vector<float>{11, 21});
  // a state made lazily before the first call (a constant, never realized) is a state too
  Tensor lazy = Tensor::full({2}, 3.0);
  TinyJit k([&](const Tensor& v) { lazy.assign(lazy * v); });
  for (int i = 0; i < 4; i++) k(Tensor::full({2}, 2.0));
  CHECK(lazy.to_vector<float>() == std::vector<float>{48, 48});
  // an argument assigned inside the function: each replay assigns the argument it is given
  TinyJit inc([](const Tensor& v) { Tensor(v).assign(v + 1); });
  for (int i = 0; i < 4; i++) {
    Tensor v = Tensor::full({3}, double(i));
    inc(v);
    CHECK(v.to_vector<float>() == std::vector<float>(3, float(i + 1)));
  }
}

TEST_CASE("jit: a tensor the capture reads that moved to another device is an error, and the tensors stay usable", "[jit][errors]") {
  std::string other = default_device() == "CL" ? "CPU" : "CL";
  if (!has_device(other)) { WARN(other << " is not available here: skipped"); return; }
  Tensor w = data(1, {3});
  TinyJit f([&](const Tensor& x) { return x * w; }, "scale");
  for (int i = 0; i < 3; i++) f(Tensor::ones({3}));
  Tensor keep = w;
  w.replace(w.to(other));
  CHECK_THROWS_WITH(f(Tensor::ones({3})), Contains("TinyJit(scale)") && Contains("reads") && Contains(other) && Contains("new TinyJit"));
  w.replace(w.to(default_device()));
  check_close(f(Tensor::ones({3})), data(1, {3}));
}

TEST_CASE("jit: one tensor passed for two arguments at the capture, then two different ones", "[jit]") {
  TinyJit f([](const Tensor& x, const Tensor& y) { return x * 10 + y; }, "twice");
  Tensor a = Tensor({1.f});
  auto before = a.buffer();
  for (int i = 0; i < 3; i++) CHECK(f(a, a).item<float>() == 11);
  CHECK(a.buffer() == before);  // the caller's tensor is untouched
  CHECK(f(Tensor({1.f}), Tensor({5.f})).item<float>() == 15);
  CHECK(f(Tensor({2.f}), Tensor({7.f})).item<float>() == 27);
  Tensor b = Tensor({3.f});
  CHECK(f(b, b).item<float>() == 33);
  // views of one buffer are told apart too
  TinyJit g([](const Tensor& x, const Tensor& y) { return x - y; }, "views");
  Tensor c = Tensor({4.f, 4.f});
  for (int i = 0; i < 3; i++) g(c, c.reshape({2}));
  CHECK(g(Tensor({9.f, 8.f}), Tensor({1.f, 2.f})).to_vector<float>() == std::vector<float>{8, 6});
}
