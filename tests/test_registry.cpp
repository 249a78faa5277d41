// Devices as registered descriptors: a device registered here (a copy of the CPU's descriptor under another name, with
// a renderer family of its own and a parallelism of 1) is found by name, listed, opened, and realize renders with its
// renderer and splits reduces by its parallelism; an unknown name is a DeviceError naming it and the known devices.
// Launch dimensions as a type, and split_reduceop as a scheduler rule.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <atomic>

#include "one_kernel.hpp"

using Catch::Matchers::Contains;
using tinygrad::DType;
using tinygrad::Ops;
using tinygrad::Tensor;

namespace {
std::atomic<int> test_renders{0};
// C for the CPU, counting its renders
struct CountingRenderer : tinygrad::CRenderer {
  using tinygrad::CRenderer::CRenderer;
  std::string render(const std::string& name, const std::vector<tinygrad::UOpRef>& lin) const override {
    test_renders++;
    return tinygrad::CRenderer::render(name, lin);
  }
};
// TESTDEV: the CPU's allocator, compiler and loader, the renderer family TESTC, one output keeps it busy
const std::string& test_device() {
  static const std::string name = [] {
    tinygrad::register_renderer("TESTC",
        [](const tinygrad::DeviceRuntime& rt) { return std::make_unique<CountingRenderer>(rt.threads, rt.vector_registers); });
    tinygrad::DeviceSpec d = tinygrad::device_spec(tinygrad::host_device());
    d.name = "TESTDEV";
    d.priority = -100;
    d.host = false;
    d.renderer = "TESTC";
    d.open = [open = d.open](const std::string& instance) {
      auto rt = open(instance);
      rt->parallelism = 1;
      return rt;
    };
    tinygrad::register_device(d);
    return d.name;
  }();
  return name;
}
std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = float(i % 7) - 3;
  return v;
}
int64_t kernels_to_realize(Tensor& t) {
  int64_t before = tinygrad::run_stats().kernels_run;
  t.realize();
  return tinygrad::run_stats().kernels_run - before;
}
int count_ops(const tinygrad::UOpRef& root, Ops op) {
  int n = 0;
  for (auto& u : tinygrad::detail::toposort(root)) n += u->op == op;
  return n;
}
}  // namespace

TEST_CASE("registry: a device registered with a descriptor is found, listed, and realize uses its renderer", "[device][registry]") {
  const std::string& dev = test_device();
  auto names = tinygrad::device_names();
  CHECK(std::find(names.begin(), names.end(), dev) != names.end());
  CHECK(names.back() == dev);  // the lowest priority last
  CHECK(tinygrad::device_spec(dev).renderer == "TESTC");
  CHECK(tinygrad::device_spec(dev + ":0").name == dev);
  CHECK(tinygrad::host_device() != dev);
  CHECK(tinygrad::default_device() != dev);

  int before = test_renders;
  Tensor a(ramp(300), {3, 100}, dev);
  Tensor b = (a * 2 + 1).sum(1);
  CHECK(b.device() == dev);
  auto v = b.to_vector<float>();
  REQUIRE(v.size() == 3);
  for (int i = 0; i < 3; i++) {
    double want = 0;
    for (int j = 0; j < 100; j++) want += double((i * 100 + j) % 7 - 3) * 2 + 1;
    CHECK(v[size_t(i)] == Approx(want));
  }
  CHECK(test_renders > before);
  CHECK(dynamic_cast<CountingRenderer*>(tinygrad::detail::get_device(dev).renderer.get()) != nullptr);
  CHECK(&tinygrad::detail::get_device(dev).rt == &tinygrad::runtime(dev));
  // copies to and from it
  CHECK(b.to(tinygrad::host_device()).to_vector<float>() == v);
}

TEST_CASE("registry: an unknown device is a DeviceError naming it and the known devices", "[device][registry]") {
  test_device();
  auto msg = [](auto f) {
    try { f(); } catch (const tinygrad::DeviceError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  std::string e = msg([] { tinygrad::runtime("NOPE"); });
  CHECK_THAT(e, Contains("'NOPE'") && Contains(tinygrad::host_device()) && Contains("TESTDEV"));
  CHECK_THAT(msg([] { tinygrad::device_spec("NOPE:1"); }), Contains("NOPE:1"));
  CHECK_THAT(msg([] { Tensor(std::vector<float>{1, 2}, {}, "NOPE"); }), Contains("NOPE"));
  CHECK_THAT(msg([] { tinygrad::register_device(tinygrad::DeviceSpec{}); }), Contains("register_device"));
  // a device whose renderer family nobody registered opens, but has no renderer
  tinygrad::DeviceSpec d = tinygrad::device_spec(tinygrad::host_device());
  d.name = "NORENDER";
  d.priority = -200;
  d.host = false;
  d.renderer = "NO_SUCH_FAMILY";
  tinygrad::register_device(d);
  CHECK_THAT(msg([] { tinygrad::detail::get_device("NORENDER"); }), Contains("NORENDER") && Contains("NO_SUCH_FAMILY"));
}

TEST_CASE("registry: split_reduceop runs in the scheduler with the device's parallelism", "[schedule][registry]") {
  // NOTE: int sums: a float sum also splits for accuracy, whatever the device (below)
  Tensor v = Tensor(ramp(1 << 20), {1 << 20}).cast(DType::Int32), s = Tensor(ramp(1000), {1000}).cast(DType::Int32);
  Tensor t = v.sum(), u = s.sum();
  // the tensor graph holds one plain REDUCE_AXIS: the split is the scheduler's
  CHECK(count_ops(t.uop(), Ops::REDUCE_AXIS) == 1);
  CHECK(count_ops(t.uop(), Ops::CONTIGUOUS) == 0);
  int64_t par = tinygrad::runtime(v.device()).parallelism;
  CHECK(kernels_to_realize(t) == (par > 1 ? 2 : 1));  // a long sum into one output: 2 kernels (CPU: on 2+ cores)
  CHECK(kernels_to_realize(u) == 1);                  // a short one: 1
  double want = 0;
  auto h = ramp(1 << 20);
  for (float x : h) want += x;
  CHECK(t.item<float>() == Approx(want));
  // the same graph on a device that one output keeps busy: not split
  Tensor w = Tensor(ramp(1 << 20), {1 << 20}, test_device()).cast(DType::Int32);
  Tensor tw = w.sum();
  CHECK(kernels_to_realize(tw) == 1);
  CHECK(tw.item<float>() == Approx(want));
  // a float sum splits until each stage adds at most kSumTerms terms an output: on a GPU 2^20 = 16 x 256 x 256, 3
  // kernels; on a CPU 1024 contiguous chunks of 1024, 2 kernels
  Tensor fw = Tensor(ramp(1 << 20), {1 << 20}, test_device()).sum();
  CHECK(kernels_to_realize(fw) == (tinygrad::runtime(fw.device()).parallelism < 4096 ? 2 : 3));
  CHECK(fw.item<float>() == Approx(want));
  // the rule itself: a long reduce into fewer outputs than `busy` becomes REDUCE(CONTIGUOUS(REDUCE(RESHAPE))), reshaped
  auto r = tinygrad::make_uop(Ops::REDUCE_AXIS, DType::Int32, {Tensor::empty({4, 1 << 16}, DType::Int32).uop()},
                              std::vector<int64_t>{int64_t(Ops::ADD), 1});
  CHECK(tinygrad::detail::split_reduceop(r, 4) == nullptr);  // 4 outputs keep 4 cores busy
  auto split = tinygrad::detail::split_reduceop(r, 8);
  REQUIRE(split != nullptr);
  CHECK(split->op == Ops::RESHAPE);
  CHECK(split->shape == r->shape);
  CHECK(count_ops(split, Ops::REDUCE_AXIS) == 2);
  CHECK(count_ops(split, Ops::CONTIGUOUS) == 1);
  // a float sum splits on any device, in stages: on a GPU 2^20 = 16 x 256 x 256, 16 terms an output first (strided);
  // on a CPU (busy < 4096) chunks of 1024 contiguous terms, whose 1024 partials the scheduler's rewrite sums next
  auto rf = tinygrad::make_uop(Ops::REDUCE_AXIS, DType::Float32, {Tensor::empty({4, 1 << 20}).uop()}, std::vector<int64_t>{int64_t(Ops::ADD), 1});
  auto fsplit = tinygrad::detail::split_reduceop(rf, 65536), csplit = tinygrad::detail::split_reduceop(rf, 4);
  REQUIRE((fsplit != nullptr && csplit != nullptr));
  CHECK(count_ops(fsplit, Ops::REDUCE_AXIS) == 3);
  CHECK(count_ops(fsplit, Ops::CONTIGUOUS) == 2);
  CHECK(count_ops(csplit, Ops::REDUCE_AXIS) == 2);
  CHECK(count_ops(csplit, Ops::CONTIGUOUS) == 1);
  CHECK(tinygrad::detail::prod(csplit->src[0]->src[0]->shape) == 4 * 1024);  // RESHAPE(REDUCE(CONTIGUOUS)): the partials
  // 8192 terms an output: split on a GPU (many outputs to be busy), not on a CPU's cores
  auto r8 = tinygrad::make_uop(Ops::REDUCE_AXIS, tinygrad::DType::Float32, {Tensor::empty({4, 1 << 13}).uop()},
                               std::vector<int64_t>{int64_t(Ops::ADD), 1});
  CHECK(tinygrad::detail::split_reduceop(r8, 8) == nullptr);
  CHECK(tinygrad::detail::split_reduceop(r8, 65536) != nullptr);
}

TEST_CASE("registry: launch dimensions are a type", "[runtime][registry]") {
  tinygrad::LaunchDims d;
  CHECK(d.threads == 1);
  CHECK(d.global == std::array<int64_t, 3>{1, 1, 1});
  CHECK(d.local == std::array<int64_t, 3>{1, 1, 1});
  tinygrad::LaunchDims e = d;
  e.local[0] = 32;
  CHECK_FALSE(e == d);
  CHECK_THAT(e.str(), Contains("local 32,1,1"));
  // CPU: the cores of the THREAD axis; GPU: workgroups and their threads (rendered only: no GPU needed)
  Tensor a(ramp(64 * 256), {64, 256}, tinygrad::host_device());
  auto ls = one_kernel_schedule((a * 3).exp2());
  const auto& ast = ls.spec.kernels[0].ast;
  tinygrad::detail::CRenderer cpu(4);
  auto rs = tinygrad::Kernel(ast, cpu).ranges();
  REQUIRE(rs.size() == 2);
  auto pc = tinygrad::detail::to_program(ast, cpu, std::vector<tinygrad::Opt>{{tinygrad::OptOp::THREAD, rs[0]->range_id(), 4}});
  CHECK(pc.launch.threads == 4);
  CHECK(pc.launch.global == std::array<int64_t, 3>{1, 1, 1});
  tinygrad::detail::OpenCLRenderer cl;
  auto pg = tinygrad::detail::to_program(ast, cl, std::vector<tinygrad::Opt>{{tinygrad::OptOp::LOCAL, rs[1]->range_id(), 16}});
  CHECK(pg.launch.threads == 1);
  CHECK(pg.launch.local == std::array<int64_t, 3>{16, 1, 1});
  CHECK(pg.launch.global == std::array<int64_t, 3>{16, 64, 1});
  // a program launches with them: the CPU's runs on 4 cores
  auto& dev = tinygrad::detail::get_device(tinygrad::host_device());
  auto prg = dev.rt.load(pc.fn, dev.rt.compiler->compile(pc.src), pc.launch);
  auto out = std::make_shared<tinygrad::Buffer>(tinygrad::host_device(), tinygrad::DType::Float32, 64 * 256);
  std::vector<void*> ptrs;
  for (int slot : ls.spec.kernels[0].slots) ptrs.push_back(size_t(slot) < ls.bufs.size() ? ls.bufs[size_t(slot)]->ptr() : out->ptr());
  prg->call(ptrs, {}, true);
  std::vector<float> got(64 * 256);
  out->copyout(got.data());
  auto want = (a * 3).exp2().to_vector<float>();
  CHECK(got == want);
}
