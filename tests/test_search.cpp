// The Kernel object (apply checks each opt, valid_opts lists the legal ones) and BEAM search. Every opt the kernel
// accepts must compute what the kernel computes without opts: each single opt, and random chains of them, on
// representative kernels (elementwise with broadcasts and odd sizes, reduces, matmul, conv, a transposed view),
// on the default device (DEV=CL / DEV=CUDA run the GPU opts).
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <random>

#include "one_kernel.hpp"

using tinygrad::DType;
using tinygrad::Kernel;
using tinygrad::KernelOptError;
using tinygrad::Opt;
using tinygrad::OptOp;
using tinygrad::Tensor;
using Catch::Matchers::Contains;

namespace {
struct OneKernel {
  tinygrad::detail::KernelAST k;
  std::vector<std::shared_ptr<tinygrad::Buffer>> bufs;  // by slot
};
// the single kernel computing t from realized inputs, with buffers for its slots
OneKernel one_kernel(const Tensor& t) {
  auto [spec, bufs] = one_kernel_schedule(t);
  for (auto& [dt, n] : spec.new_slots) bufs.push_back(std::make_shared<tinygrad::Buffer>(t.device(), dt, n));
  return {spec.kernels[0], bufs};
}
// run many opt lists of one kernel (compiled in one batch); each output as doubles
std::vector<std::vector<double>> run_each(OneKernel& ok, const std::string& dev, const std::vector<std::vector<Opt>>& optss) {
  auto& d = tinygrad::detail::get_device(dev);
  std::vector<tinygrad::detail::ProgramSpec> specs;
  std::vector<std::string> srcs;
  for (auto& o : optss) { specs.push_back(tinygrad::detail::to_program(ok.k.ast, *d.renderer, o)); srcs.push_back(specs.back().src); }
  auto bins = d.rt.compiler->compile_many(srcs);
  std::vector<void*> ptrs;
  for (int s : ok.k.slots) ptrs.push_back(ok.bufs[size_t(s)]->ptr());
  auto& out = *ok.bufs[size_t(ok.k.slots[0])];
  std::vector<std::vector<double>> res;
  for (size_t i = 0; i < specs.size(); i++) {
    std::vector<char> zero(out.nbytes(), 0);
    out.copyin(zero.data());
    d.rt.load(specs[i].fn, bins[i], specs[i].launch)->call(ptrs, {}, true);
    REQUIRE(out.dtype == DType::Float32);
    std::vector<float> host(size_t(out.size));
    out.copyout(host.data());
    res.push_back(std::vector<double>(host.begin(), host.end()));
  }
  return res;
}
void check_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  // NOTE: opts reorder float sums: the error scales with the terms, so with the output's largest value too
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) bad += !(std::abs(got[i] - want[i]) <= 1e-4 * std::abs(want[i]) + 1e-5 * (1 + scale));
  CHECK(bad == 0);
}
std::string opts_str(const std::vector<Opt>& os) { std::string s; for (auto& o : os) s += o.str() + " "; return s; }
Tensor rnd(const tinygrad::Shape& s, uint64_t seed) { Tensor::manual_seed(seed); return (Tensor::rand(s) - 0.5).realize(); }
int unique_constant() {
  static std::mt19937 g(std::random_device{}() ^ uint32_t(::getpid()));
  return int(std::uniform_int_distribution<int>(1000000, 99999999)(g));
}
}  // namespace

TEST_CASE("search: Kernel::apply rejects illegal opts with the reason and stays usable", "[search]") {
  Tensor a = rnd({24, 40}, 1), b = rnd({40, 12}, 2);
  auto ok = one_kernel(a.matmul(b));
  tinygrad::detail::CRenderer cpu(4);
  Kernel k(ok.k.ast, cpu);
  auto rs = k.ranges();
  REQUIRE(rs.size() == 3);  // 24, 12 loops and the 40 reduce
  int64_t i = rs[0]->range_id(), j = rs[1]->range_id(), r = rs[2]->range_id();
  auto reason = [&](const Opt& o) {
    try { Kernel(k).apply(o); } catch (const KernelOptError& e) { return std::string(e.what()); }
    return std::string("accepted");
  };
  CHECK_THAT(reason({OptOp::UPCAST, i, 5}), Contains("does not divide") && Contains("24"));
  CHECK_THAT(reason({OptOp::UNROLL, i, 2}), Contains("need a reduce axis"));
  CHECK_THAT(reason({OptOp::UPCAST, r, 2}), Contains("reduce axis takes UNROLL, VECTOR or GROUP"));
  CHECK_THAT(reason({OptOp::LOCAL, i, 4}), Contains("no workgroups"));
  CHECK_THAT(reason({OptOp::GROUP, r, 8}), Contains("no workgroups"));
  CHECK_THAT(reason({OptOp::THREAD, i, 8}), Contains("more threads"));
  CHECK_THAT(reason({OptOp::UPCAST, 99, 2}), Contains("no such axis"));
  CHECK_THAT(reason({OptOp::UPCAST, i, 1}), Contains("does not divide"));
  k.apply({OptOp::THREAD, i, 4});
  CHECK_THAT(reason({OptOp::THREAD, j, 2}), Contains("already split over threads"));
  // the register expansion cap
  Kernel big(one_kernel(rnd({64, 64}, 3).matmul(rnd({64, 64}, 4))).k.ast, cpu);
  auto br = big.ranges();
  big.apply({OptOp::UPCAST, br[0]->range_id(), 8}).apply({OptOp::UPCAST, br[1]->range_id(), 8});
  try { big.apply({OptOp::UNROLL, br[2]->range_id(), 8}); FAIL("accepted"); }
  catch (const KernelOptError& e) { CHECK_THAT(e.what(), Contains("register expansion 512")); }
  CHECK(big.applied().size() == 2);  // a rejected opt leaves the kernel as it was
  // GPU renderers: workgroups instead of threads
  tinygrad::detail::CUDARenderer gpu;
  Kernel g(ok.k.ast, gpu);
  g.apply({OptOp::LOCAL, i, 8}).apply({OptOp::GROUP, r, 8});
  CHECK(g.workgroup() == 64);
  bool any_thread = false, any_local = false;
  for (auto& o : g.valid_opts()) { any_thread |= o.op == OptOp::THREAD; any_local |= o.op == OptOp::LOCAL; }
  CHECK_FALSE(any_thread);
  CHECK(any_local);
  CHECK_THROWS_AS(tinygrad::detail::to_program(ok.k.ast, cpu, std::vector<Opt>{{OptOp::UNROLL, i, 2}}), KernelOptError);
}

TEST_CASE("search: every valid opt, and random chains of them, compute what no opts compute", "[search]") {
  std::string dev = tinygrad::default_device();
  Tensor x = rnd({7, 1, 33}, 5), y = rnd({1, 5, 33}, 6), m = rnd({48, 40}, 7), n = rnd({40, 36}, 8);
  // (the conv's weight kept with its output channels innermost, as conv2d lays it out on the CPU: one kernel)
  Tensor img = rnd({2, 3, 9, 10}, 9), w = rnd({3, 3, 3, 4}, 10).permute({3, 0, 1, 2}), v = rnd({1000}, 11), t = rnd({64, 96}, 12);
  std::vector<std::pair<std::string, Tensor>> cases = {
      {"elementwise, broadcast", (x * y).exp() + x},
      {"elementwise, odd size", (v * 3).sin() * v},
      {"reduce over the last axis", t.sum(1)},
      {"reduce over a transposed view", t.T().max(1)},
      {"matmul", m.matmul(n)},
      {"matmul of transposed views", m.T().contiguous().realize().T().matmul(n.T().contiguous().realize().T())},
      {"conv2d", img.conv2d(w)},
  };
  std::mt19937 g(42);
  for (auto& [name, tensor] : cases) {
    INFO(name);
    auto ok = one_kernel(tensor);
    auto& d = tinygrad::detail::get_device(dev);
    Kernel k(ok.k.ast, *d.renderer);
    std::vector<std::vector<Opt>> optss{{}};
    auto valid = k.valid_opts();
    CHECK(valid.size() >= 2);
    for (auto& o : valid) optss.push_back({o});
    // chains: up to 4 random legal opts each
    for (int c = 0; c < 12; c++) {
      Kernel kc(ok.k.ast, *d.renderer);
      for (int s = 0; s < 4; s++) {
        auto vo = kc.valid_opts();
        if (vo.empty()) break;
        kc.apply(vo[std::uniform_int_distribution<size_t>(0, vo.size() - 1)(g)]);
      }
      optss.push_back(kc.applied());
    }
    auto res = run_each(ok, dev, optss);
    for (size_t i = 1; i < res.size(); i++) check_close(res[i], res[0], name + " with " + opts_str(optss[i]));
  }
}

TEST_CASE("search: BEAM finds kernels that compute the same values, and caches them on disk", "[search]") {
  float k = float(unique_constant());  // a new kernel AST in every run of the suite: the disk cache has no entry yet
  Tensor a = rnd({96, 80}, 13), b = rnd({80, 72}, 14), c = rnd({333}, 15);
  auto values = [&] {
    std::vector<std::vector<double>> r;
    for (auto& t : {a.matmul(b) * k, (c * (1 / k)).exp().sum()}) { auto v = t.to_vector<float>(); r.emplace_back(v.begin(), v.end()); }
    return r;
  };
  auto want = values();
  auto before = tinygrad::search_stats();
  {
    tinygrad::BeamScope beam(2);
    CHECK(tinygrad::flags().beam == 2);
    tinygrad::clear_program_cache();
    auto got = values();
    for (size_t i = 0; i < got.size(); i++) check_close(got[i], want[i], "BEAM=2");
  }
  CHECK(tinygrad::flags().beam == 0);
  auto after = tinygrad::search_stats();
  CHECK(after.searches == before.searches + 2);  // the matmul and the reduce
  CHECK(after.candidates > before.candidates + 4);
  // a later run (another process: no loaded programs) finds the winners on disk and searches nothing
  tinygrad::clear_program_cache();
  {
    tinygrad::BeamScope beam(2);
    auto got = values();
    for (size_t i = 0; i < got.size(); i++) check_close(got[i], want[i], "BEAM=2, from the cache");
  }
  CHECK(tinygrad::search_stats().searches == after.searches);
  CHECK(tinygrad::search_stats().cache_hits == after.cache_hits + 2);
}

TEST_CASE("search: a BEAM cache entry that is out of range or does not parse completely is searched again", "[search]") {
  float k = float(unique_constant());
  Tensor a = rnd({21, 37}, 16);
  auto want = (a * k).sum(1).to_vector<float>();
  OneKernel ok = one_kernel((a * k).sum(1));
  std::string dev = tinygrad::default_device();
  auto& d = tinygrad::detail::get_device(dev);
  Kernel kr(ok.k.ast, *d.renderer);
  int64_t axis = kr.ranges().back()->range_id();
  // PADTO by INT64_MAX overflowed (n + amt - 1) and passed the check; a kernel that never wrote its output
  for (int64_t amt : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max() / 2, int64_t(74)}) {
    INFO("PADTO amount " << amt);
    CHECK_THROWS_AS(Kernel(ok.k.ast, *d.renderer).apply({OptOp::PADTO, axis, amt}), KernelOptError);
    CHECK_THROWS_AS(tinygrad::detail::apply_opt(ok.k.ast, {OptOp::PADTO, axis, amt}), KernelOptError);
  }
  CHECK_THROWS_WITH(Kernel(ok.k.ast, *d.renderer).apply({OptOp::UPCAST, axis, int64_t(1) << 60}), Contains("amount is not in"));
  CHECK_NOTHROW(Kernel(ok.k.ast, *d.renderer).apply({OptOp::PADTO, axis, 40}));
  auto file = tinygrad::detail::beam_cache_file(ok.k.ast, d.rt, *d.renderer, 2);
  std::string padto = std::to_string(int(OptOp::PADTO)) + " " + std::to_string(axis) + " ";
  for (std::string entry : {padto + "9223372036854775807\nend\n", std::string("0 0"), padto + "40\n", std::string(""),
                            padto + "40\nend\nx", padto + "4O\nend\n", padto + "40 1\nend\n", std::string("99 0 4\nend\n"),
                            padto + "99999999999999999999\nend\n"}) {
    INFO("cache entry '" << entry << "'");
    tinygrad::detail::write_file_atomic(file, entry);
    auto before = tinygrad::search_stats();
    auto opts = tinygrad::detail::beam_search(ok.k.ast, d.rt, *d.renderer, 2);
    REQUIRE(opts);
    CHECK(tinygrad::search_stats().searches == before.searches + 1);
    CHECK(tinygrad::search_stats().cache_hits == before.cache_hits);
    auto got = run_each(ok, dev, {*opts})[0];
    check_close(got, std::vector<double>(want.begin(), want.end()), "searched again");
  }
  // a complete entry is used
  tinygrad::detail::write_file_atomic(file, padto + "40\nend\n");
  auto before = tinygrad::search_stats();
  auto opts = tinygrad::detail::beam_search(ok.k.ast, d.rt, *d.renderer, 2);
  REQUIRE(opts);
  CHECK(*opts == std::vector<Opt>{{OptOp::PADTO, axis, 40}});
  CHECK(tinygrad::search_stats().cache_hits == before.cache_hits + 1);
}
