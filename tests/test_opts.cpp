// Kernel opts pinned one by one (and in chains) on representative kernels: each result equals the kernel without
// opts and, where cheap, a plain loop. Every run reads inputs from buffers twice their size whose tail is NaN and
// writes into an output whose tail holds a sentinel: a load past the end (an unmasked PADTO) shows as NaN, a store
// past the end as a changed sentinel. CPU opts run on the C renderer; workgroup opts (LOCAL, GROUP, GROUPTOP,
// NOLOCALS) on OpenCL (PoCL here; skipped with a warning where no OpenCL device opens) and compile as CUDA via NVRTC.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "one_kernel.hpp"

using tinygrad::DType;
using tinygrad::Kernel;
using tinygrad::KernelOptError;
using tinygrad::Opt;
using tinygrad::OptOp;
using tinygrad::Tensor;
using Catch::Matchers::Contains;

namespace {
constexpr float sentinel = 1234.5f;

bool has_device(const std::string& d) {
  try { tinygrad::runtime(d); return true; } catch (const tinygrad::DeviceError&) { return false; }
}
Tensor rnd(const tinygrad::Shape& s, uint64_t seed, const std::string& dev = "CPU") {
  Tensor::manual_seed(seed);
  return (Tensor::rand(s) - 0.5).to(dev).realize();
}
// a conv weight (cout, cin, kh, kw) kept with its output channels innermost, as the CPU's conv2d lays it out: its conv
// is one kernel (a plain weight's layout is a copy kernel of its own there)
Tensor conv_weight(const tinygrad::Shape& s, uint64_t seed, const std::string& dev = "CPU") {
  return rnd({s[1], s[2], s[3], s[0]}, seed, dev).permute({3, 0, 1, 2});
}
std::string opts_str(const std::vector<Opt>& os) { std::string s; for (auto& o : os) s += o.str() + " "; return s; }

// one kernel with its slots in guarded buffers (twice the size: NaN past the end of inputs, sentinels in the output)
struct Guarded {
  tinygrad::detail::KernelAST k;
  std::string dev;
  std::vector<std::shared_ptr<tinygrad::Buffer>> bufs;  // by slot
  std::vector<int64_t> sizes;                           // the real sizes
};
Guarded guarded(const Tensor& t) {
  auto [spec, src] = one_kernel_schedule(t);
  Guarded g{spec.kernels[0], t.device(), {}, {}};
  for (auto& b : src) {
    REQUIRE(b->dtype == DType::Float32);
    std::vector<float> host(size_t(b->size * 2 + 16), NAN);
    b->copyout(host.data());
    g.bufs.push_back(std::make_shared<tinygrad::Buffer>(t.device(), DType::Float32, int64_t(host.size())));
    g.bufs.back()->copyin(host.data());
    g.sizes.push_back(b->size);
  }
  for (auto& [dt, n] : spec.new_slots) {
    REQUIRE(dt == DType::Float32);
    g.bufs.push_back(std::make_shared<tinygrad::Buffer>(t.device(), dt, n * 2 + 16));
    g.sizes.push_back(n);
  }
  return g;
}
// run the kernel once per opt list (compiled in one batch): each output; the tail of the output must stay untouched
std::vector<std::vector<double>> run_each(Guarded& g, const std::vector<std::vector<Opt>>& optss) {
  auto& d = tinygrad::detail::get_device(g.dev);
  std::vector<tinygrad::detail::ProgramSpec> specs;
  std::vector<std::string> srcs;
  for (auto& o : optss) {
    INFO(opts_str(o));
    specs.push_back(tinygrad::detail::to_program(g.k.ast, *d.renderer, o));
    srcs.push_back(specs.back().src);
  }
  auto bins = d.rt.compiler->compile_many(srcs);
  std::vector<void*> ptrs;
  for (int s : g.k.slots) ptrs.push_back(g.bufs[size_t(s)]->ptr());
  auto& out = *g.bufs[size_t(g.k.slots[0])];
  size_t n = size_t(g.sizes[size_t(g.k.slots[0])]);
  std::vector<std::vector<double>> res;
  for (size_t i = 0; i < specs.size(); i++) {
    std::vector<float> host(size_t(out.size), sentinel);
    out.copyin(host.data());
    d.rt.load(specs[i].fn, bins[i], specs[i].launch)->call(ptrs, {}, true);
    out.copyout(host.data());
    size_t written = 0;
    for (size_t j = n; j < host.size(); j++) written += host[j] != sentinel;
    INFO(opts_str(optss[i]) << "\n" << specs[i].src);
    CHECK(written == 0);
    res.push_back(std::vector<double>(host.begin(), host.begin() + long(n)));
  }
  return res;
}
void check_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  double scale = 0;  // NOTE: opts reorder float sums: the error scales with the output's largest value
  for (double w : want) scale = std::max(scale, std::abs(w));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) bad += !(std::abs(got[i] - want[i]) <= 1e-4 * std::abs(want[i]) + 1e-5 * (1 + scale));
  CHECK(bad == 0);
}
std::string reason(Kernel k, const Opt& o) {
  try { k.apply(o); } catch (const KernelOptError& e) { return e.what(); }
  return "accepted";
}
// the id of a kernel's first reduce axis
int64_t reduce_axis(const Kernel& k) {
  for (auto& r : k.ranges()) if (tinygrad::detail::axis_type(r) == tinygrad::detail::AxisType::REDUCE) return r->range_id();
  FAIL("the kernel has no reduce axis");
  return -1;
}
bool has(const std::vector<Opt>& os, OptOp op, int64_t axis = -2) {
  return std::any_of(os.begin(), os.end(), [&](auto& o) { return o.op == op && (axis == -2 || o.axis == axis); });
}

struct Case { std::string name; Tensor t; std::vector<double> ref; };
std::vector<double> host(const Tensor& t) { auto v = t.to("CPU").to_vector<float>(); return {v.begin(), v.end()}; }
// representative kernels; ref: a plain-loop reference where one is cheap to write
std::vector<Case> cases(const std::string& dev) {
  Tensor x = rnd({17, 1}, 1, dev), y = rnd({1, 31}, 2, dev), t = rnd({17, 31}, 3, dev), v = rnd({1000}, 4, dev);
  Tensor a = rnd({17, 31}, 5, dev), b = rnd({31, 13}, 6, dev), img = rnd({2, 3, 9, 10}, 7, dev), w = conv_weight({4, 3, 3, 3}, 8, dev);
  auto ht = host(t), ha = host(a), hb = host(b), hi = host(img), hw = host(w.contiguous());  // (w stays a view: realized, it would be a plain weight)
  std::vector<double> rsum(17), rmax(17, -INFINITY), rmm(17 * 13), rconv(2 * 4 * 7 * 8);
  for (int i = 0; i < 17; i++)
    for (int j = 0; j < 31; j++) { rsum[size_t(i)] += ht[size_t(i * 31 + j)]; rmax[size_t(i)] = std::max(rmax[size_t(i)], ht[size_t(i * 31 + j)]); }
  for (int i = 0; i < 17; i++)
    for (int j = 0; j < 13; j++)
      for (int k = 0; k < 31; k++) rmm[size_t(i * 13 + j)] += ha[size_t(i * 31 + k)] * hb[size_t(k * 13 + j)];
  for (int n = 0; n < 2; n++)
    for (int o = 0; o < 4; o++)
      for (int p = 0; p < 7; p++)
        for (int q = 0; q < 8; q++)
          for (int c = 0; c < 3; c++)
            for (int kh = 0; kh < 3; kh++)
              for (int kw = 0; kw < 3; kw++)
                rconv[size_t(((n * 4 + o) * 7 + p) * 8 + q)] +=
                    hi[size_t(((n * 3 + c) * 9 + p + kh) * 10 + q + kw)] * hw[size_t(((o * 3 + c) * 3 + kh) * 3 + kw)];
  return {
      {"elementwise, broadcast 17x31", (x * y).exp() + x, {}},
      {"elementwise, 1000", (v * 3).sin() * v, {}},
      {"sum over 31", t.sum(1), rsum},
      {"max over 31", t.max(1), rmax},
      {"sum of exp (not paddable)", t.exp().sum(1), {}},
      {"sum of a broadcast plus (not paddable)", (x + t).sum(1), {}},
      {"matmul 17x31x13", a.matmul(b), rmm},
      {"x @ W.T 6x64x10 (both operands contiguous along the reduce)", rnd({6, 64}, 12, dev).matmul(rnd({10, 64}, 13, dev).transpose(0, 1)), {}},
      {"matmul 5x128x6 with a bias and relu (KBLOCK's epilogue)",
       (rnd({5, 128}, 9, dev).matmul(rnd({128, 6}, 10, dev)) + rnd({6}, 11, dev)).relu(),
       {}},
      {"conv2d", img.conv2d(w), rconv},
  };
}
// each valid opt alone, each valid PADTO followed by each opt valid after it, and random chains of four
std::vector<std::vector<Opt>> opt_lists(const Kernel& k, std::mt19937& g, size_t max_pairs) {
  std::vector<std::vector<Opt>> optss{{}};
  for (auto& o : k.valid_opts()) optss.push_back({o});
  size_t pairs = 0;
  for (auto& o : k.valid_opts()) {
    if (o.op != OptOp::PADTO) continue;
    Kernel kp = Kernel(k).apply(o);
    for (auto& o2 : kp.valid_opts()) if (pairs++ < max_pairs) optss.push_back({o, o2});
  }
  for (int c = 0; c < 8; c++) {
    Kernel kc(k);
    for (int s = 0; s < 4; s++) {
      auto vo = kc.valid_opts();
      if (vo.empty()) break;
      kc.apply(vo[std::uniform_int_distribution<size_t>(0, vo.size() - 1)(g)]);
    }
    optss.push_back(kc.applied());
  }
  return optss;
}
void run_cases(const std::string& dev, size_t max_pairs, std::set<OptOp>& seen) {
  std::mt19937 g(7);
  for (auto& c : cases(dev)) {
    INFO(dev << ": " << c.name);
    auto gk = guarded(c.t);
    Kernel k(gk.k.ast, *tinygrad::detail::get_device(dev).renderer);
    auto optss = opt_lists(k, g, max_pairs);
    for (auto& os : optss) for (auto& o : os) seen.insert(o.op);
    auto res = run_each(gk, optss);
    if (!c.ref.empty()) check_close(res[0], c.ref, "no opts vs the plain loop");
    for (size_t i = 1; i < res.size(); i++) check_close(res[i], res[0], "with " + opts_str(optss[i]));
  }
}
}  // namespace

TEST_CASE("opts: every CPU opt, alone, after a PADTO and in chains, computes what no opts compute", "[opts]") {
  std::set<OptOp> seen;
  run_cases("CPU", 1000, seen);
  for (OptOp op : {OptOp::UPCAST, OptOp::VECTOR, OptOp::UNROLL, OptOp::PADTO, OptOp::SWAP, OptOp::KBLOCK, OptOp::MERGE}) CHECK(seen.count(op));
  if (tinygrad::detail::get_device("CPU").renderer->threads > 1) CHECK(seen.count(OptOp::THREAD));
}

TEST_CASE("opts: workgroup opts (LOCAL, GROUP, GROUPTOP, NOLOCALS) and PADTO on a GPU device (CUDA, else OpenCL)", "[opts][gpu]") {
  std::string gpu = has_device("CUDA") ? "CUDA" : "CL";
  if (!has_device(gpu)) { WARN("no CUDA or OpenCL device here: skipped"); return; }
  INFO(gpu);
  std::set<OptOp> seen;
  run_cases(gpu, 40, seen);
  for (OptOp op : {OptOp::LOCAL, OptOp::GROUP, OptOp::GROUPTOP, OptOp::NOLOCALS, OptOp::PADTO, OptOp::UPCAST, OptOp::UNROLL}) CHECK(seen.count(op));
  // pinned: a long sum split over a workgroup both ways, on a padded axis too, and locals on padded output axes
  Tensor t = rnd({5, 1000}, 9, gpu), a = rnd({17, 31}, 10, gpu), b = rnd({31, 13}, 11, gpu);
  auto gs = guarded(t.sum(1));
  Kernel ks(gs.k.ast, *tinygrad::detail::get_device(gpu).renderer);
  int64_t i = ks.ranges()[0]->range_id(), r = ks.ranges()[1]->range_id();
  std::vector<std::vector<Opt>> optss{{},
                                      {{OptOp::GROUP, r, 8}},
                                      {{OptOp::GROUPTOP, r, 8}},
                                      {{OptOp::GROUPTOP, r, 8}, {OptOp::UNROLL, r, 5}},
                                      {{OptOp::PADTO, r, 32}, {OptOp::GROUPTOP, r, 32}, {OptOp::UNROLL, r, 4}},
                                      {{OptOp::PADTO, r, 256}, {OptOp::GROUP, r, 256}},
                                      {{OptOp::PADTO, i, 8}, {OptOp::LOCAL, i, 8}, {OptOp::GROUPTOP, r, 8}},
                                      {{OptOp::NOLOCALS, -1, 0}, {OptOp::UNROLL, r, 4}}};
  auto res = run_each(gs, optss);
  for (size_t j = 1; j < res.size(); j++) check_close(res[j], res[0], opts_str(optss[j]));
  auto gm = guarded(a.matmul(b));
  Kernel km(gm.k.ast, *tinygrad::detail::get_device(gpu).renderer);
  auto rs = km.ranges();
  int64_t mi = rs[0]->range_id(), mj = rs[1]->range_id(), mk = rs[2]->range_id();
  optss = {{},
           {{OptOp::PADTO, mi, 32}, {OptOp::PADTO, mj, 16}, {OptOp::LOCAL, mi, 8}, {OptOp::LOCAL, mj, 16}, {OptOp::UPCAST, mi, 4}},
           {{OptOp::PADTO, mi, 4}, {OptOp::PADTO, mk, 32}, {OptOp::LOCAL, mi, 4}, {OptOp::GROUPTOP, mk, 8}, {OptOp::UNROLL, mk, 4}},
           {{OptOp::SWAP, mi, mj}, {OptOp::PADTO, mj, 16}, {OptOp::LOCAL, mj, 16}},
           {{OptOp::NOLOCALS, -1, 0}, {OptOp::PADTO, mj, 16}, {OptOp::UPCAST, mj, 4}},
           // a group reduce of vector lanes: each lane's share has its own slot in workgroup memory (they shared one)
           {{OptOp::PADTO, mj, 16}, {OptOp::VECTOR, mj, 2}, {OptOp::PADTO, mk, 16}, {OptOp::GROUP, mk, 16}},
           {{OptOp::PADTO, mj, 16},
            {OptOp::VECTOR, mj, 2},
            {OptOp::PADTO, mk, 32},
            {OptOp::GROUPTOP, mk, 8},
            {OptOp::PADTO, mi, 4},
            {OptOp::LOCAL, mi, 4}}};
  res = run_each(gm, optss);
  for (size_t j = 1; j < res.size(); j++) check_close(res[j], res[0], opts_str(optss[j]));
}

TEST_CASE("opts: the GPU heuristic groups a long reduce over axes no group size divides by merging them first", "[opts][gpu]") {
  std::string gpu = has_device("CUDA") ? "CUDA" : "CL";
  if (!has_device(gpu)) { WARN("no CUDA or OpenCL device here: skipped"); return; }
  // a channel's sum over 24 x 24 pixels of a (24, 16, 24) tensor (a conv's bias gradient): two reduce axes of 24
  Tensor t = rnd({24, 16, 24}, 40, gpu);
  auto g = guarded(t.sum({0, 2}));
  auto os = tinygrad::detail::hand_coded_optimizations(g.k.ast, *tinygrad::detail::get_device(gpu).renderer);
  INFO(opts_str(os));
  REQUIRE(os.size() >= 2);
  CHECK(os[0].op == OptOp::MERGE);
  CHECK(has(os, OptOp::GROUP));
  auto h = host(t);
  std::vector<double> want(16);
  for (int i = 0; i < 24; i++)
    for (int c = 0; c < 16; c++)
      for (int j = 0; j < 24; j++) want[size_t(c)] += h[size_t((i * 16 + c) * 24 + j)];
  auto res = run_each(g, {{}, os});
  check_close(res[0], want, "no opts vs the plain loop");
  check_close(res[1], want, "the heuristic's opts vs the plain loop");
}

TEST_CASE("opts: the GPU heuristic groups each of several reduce loops of few outputs (a LayerNorm's mean, then its variance)", "[opts][gpu]") {
  std::string gpu = has_device("CUDA") ? "CUDA" : "CL";
  if (!has_device(gpu)) { WARN("no CUDA or OpenCL device here: skipped"); return; }
  // 48 rows of 512: one kernel computes each row's mean, then the variance around it (they had run as 48 threads)
  Tensor t = rnd({48, 512}, 43, gpu);
  auto g = guarded((t - t.mean(1, true)).square().mean(1));
  auto os = tinygrad::detail::hand_coded_optimizations(g.k.ast, *tinygrad::detail::get_device(gpu).renderer);
  INFO(opts_str(os));
  CHECK(std::count_if(os.begin(), os.end(), [](auto& o) { return o.op == OptOp::GROUP; }) == 2);
  auto h = host(t);
  std::vector<double> mean(48), var(48);
  for (size_t r = 0; r < 48; r++) {
    for (size_t j = 0; j < 512; j++) mean[r] += h[r * 512 + j] / 512;
    for (size_t j = 0; j < 512; j++) var[r] += (h[r * 512 + j] - mean[r]) * (h[r * 512 + j] - mean[r]) / 512;
  }
  // the kernel stores both: the mean first (run_each's output), then the variance
  REQUIRE(g.k.slots.size() == 3);
  auto res = run_each(g, {{}, os});
  check_close(res[0], mean, "no opts vs the plain loop");
  check_close(res[1], mean, "the heuristic's opts vs the plain loop");
  size_t vs = 0;  // the other output (48 values; the input has 48 x 512)
  for (int x : g.k.slots) if (x != g.k.slots[0] && g.sizes[size_t(x)] == 48) vs = size_t(x);
  REQUIRE(vs != 0);
  auto& vb = *g.bufs[vs];
  std::vector<float> v(size_t(vb.size));
  vb.copyout(v.data());
  check_close(std::vector<double>(v.begin(), v.begin() + 48), var, "the heuristic's variance vs the plain loop");
}

TEST_CASE("opts: the GPU heuristic shares a sliding window's loads (taps unrolled, neighbouring outputs a thread)", "[opts][gpu]") {
  std::string gpu = has_device("CUDA") ? "CUDA" : "CL";
  if (!has_device(gpu)) { WARN("no CUDA or OpenCL device here: skipped"); return; }
  // a conv into one channel (a 1-channel input's gradient): 3 channels of 12 x 12 by 5 x 5 taps, 8 x 8 outputs
  Tensor x = rnd({2, 3, 12, 12}, 41, gpu), w = rnd({1, 3, 5, 5}, 42, gpu);
  auto g = guarded(x.conv2d(w));
  auto os = tinygrad::detail::hand_coded_optimizations(g.k.ast, *tinygrad::detail::get_device(gpu).renderer);
  INFO(opts_str(os));
  int unrolled = 0, upcast = 0;
  for (auto& o : os) unrolled += o.op == OptOp::UNROLL && o.amt == 5, upcast += o.op == OptOp::UPCAST;
  CHECK(unrolled == 2);
  CHECK(upcast == 2);
  auto hx = host(x), hw = host(w);
  std::vector<double> want(2 * 8 * 8);
  for (int n = 0; n < 2; n++)
    for (int y = 0; y < 8; y++)
      for (int xx = 0; xx < 8; xx++)
        for (int c = 0; c < 3; c++)
          for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++)
              want[size_t((n * 8 + y) * 8 + xx)] += hx[size_t(((n * 3 + c) * 12 + y + i) * 12 + xx + j)] * hw[size_t((c * 5 + i) * 5 + j)];
  auto res = run_each(g, {{}, os});
  check_close(res[0], want, "no opts vs the plain loop");
  check_close(res[1], want, "the heuristic's opts vs the plain loop");
}

TEST_CASE("opts: PADTO pads an axis: stores past the end are skipped, and results are as without it", "[opts]") {
  Tensor v = rnd({17}, 12), a = rnd({17, 31}, 13), b = rnd({31, 13}, 14);
  auto ge = guarded((v * 2).exp());
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  Kernel k(ge.k.ast, ren);
  int64_t i = k.ranges()[0]->range_id();
  Kernel kp = Kernel(k).apply({OptOp::PADTO, i, 8});
  CHECK(kp.ranges()[0]->range_end() == 24);
  CHECK(has(kp.valid_opts(), OptOp::UPCAST, i));  // 24 divides by 8 (17 did not)
  auto src = tinygrad::detail::to_program(kp).src;
  CHECK_THAT(src, Contains("<17"));  // NOTE: the rendered gate; the C renderer prints comparisons without spaces
  std::vector<std::vector<Opt>> optss{{}, {{OptOp::PADTO, i, 8}}, {{OptOp::PADTO, i, 8}, {OptOp::UPCAST, i, 8}},
                                      {{OptOp::PADTO, i, 4}, {OptOp::UPCAST, i, 4}, {OptOp::UPCAST, i, 5}}};
  if (ren.threads > 1) optss.push_back({{OptOp::PADTO, i, 8}, {OptOp::THREAD, i, 2}});
  auto res = run_each(ge, optss);
  for (size_t j = 1; j < res.size(); j++) check_close(res[j], res[0], opts_str(optss[j]));
  // a matmul padded on every axis (17 -> 20, 13 -> 16, the reduce 31 -> 32) with full tiles
  auto gm = guarded(a.matmul(b));
  Kernel km(gm.k.ast, ren);
  auto rs = km.ranges();
  int64_t mi = rs[0]->range_id(), mj = rs[1]->range_id(), mk = rs[2]->range_id();
  optss = {
      {},
      {{OptOp::PADTO, mk, 32}, {OptOp::UNROLL, mk, 8}},
      {{OptOp::PADTO, mi, 4}, {OptOp::PADTO, mj, 4}, {OptOp::UPCAST, mi, 4}, {OptOp::UPCAST, mj, 4}},
      {{OptOp::PADTO, mi, 4}, {OptOp::PADTO, mj, 16}, {OptOp::PADTO, mk, 4}, {OptOp::UPCAST, mi, 4}, {OptOp::UPCAST, mj, 4}, {OptOp::UNROLL, mk, 4}}};
  optss.push_back(
      {{OptOp::PADTO, mi, 6}, {OptOp::UPCAST, mi, 6}, {OptOp::PADTO, mj, 4}, {OptOp::UPCAST, mj, 4}, {OptOp::PADTO, mk, 8}, {OptOp::KBLOCK, mk, 16}});
  res = run_each(gm, optss);
  for (size_t j = 1; j < res.size(); j++) check_close(res[j], res[0], opts_str(optss[j]));
}

TEST_CASE("opts: a CPU's padded loop axis loads its last index again (no masked load in the loop), a GPU's masks them", "[opts]") {
  Tensor a = rnd({17, 31}, 15), b = rnd({31, 16}, 16);
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  auto g = guarded(a.matmul(b));
  Kernel k(g.k.ast, ren);
  auto rs = k.ranges();
  int64_t mi = rs[0]->range_id(), mj = rs[1]->range_id(), mk = rs[2]->range_id();
  // rows 17 -> 18, a register tile of 6 rows: the rows past the end read row 16, their stores are skipped
  std::vector<Opt> tile{{OptOp::PADTO, mi, 6}, {OptOp::UPCAST, mi, 6}};
  std::string src = tinygrad::detail::to_program(g.k.ast, ren, tile).src;
  INFO(src);
  CHECK_THAT(src, Contains("if (alu"));   // the last row's store is masked (rows 0-4 of a tile are always in range)
  CHECK_THAT(src, !Contains("if (1)"));   // nor marked
  CHECK_THAT(src, !Contains(": 0.0f"));   // no masked load (a masked load reads `gate ? *p : 0.0f`)
  auto res = run_each(g, {{}, tile, {{OptOp::PADTO, mi, 6}, {OptOp::UPCAST, mi, 6}, {OptOp::UPCAST, mj, 4}}});
  check_close(res[1], res[0], "PADTO 6, UPCAST 6");
  check_close(res[2], res[0], "PADTO 6, UPCAST 6, UPCAST 4");
  // the loads no longer walk the padded axis with a stride of 1: no vector lanes on it
  if (int64_t lanes = ren.vector_lanes(DType::Float32); lanes > 1) {
    Kernel k13(guarded(a.matmul(rnd({31, 13}, 17))).k.ast, ren);
    int64_t j13 = k13.ranges()[1]->range_id();
    CHECK_THAT(reason(Kernel(k13).apply({OptOp::PADTO, j13, lanes}), {OptOp::VECTOR, j13, lanes}), Contains("a load walks the axis with a stride"));
  }
  // a padded reduce axis still masks its loads (the identity is added there)
  CHECK_THAT(tinygrad::detail::to_program(g.k.ast, ren, std::vector<Opt>{{OptOp::PADTO, mk, 32}}).src, Contains(": 0.0f"));
  // a GPU kernel masks a padded loop axis's loads (TC stages its tiles from the masks)
  tinygrad::detail::OpenCLRenderer cl;
  CHECK_THAT(tinygrad::detail::to_program(g.k.ast, cl, tile).src, Contains(": 0.0f"));
}

TEST_CASE("opts: with 16 vector registers (AVX2) a matmul's register tile leaves 4 free: 6 rows padded, not 8", "[opts]") {
  // 8 rows x 16 floats were 16 float8 accumulators in 16 registers: they spilled (1024 matmul: 32 -> 42 GFLOP/s)
  Tensor a = rnd({64, 256}, 34), b = rnd({256, 64}, 35);
  tinygrad::detail::CRenderer avx2(1, 16), avx512(1, 32);
  auto g = guarded(a.matmul(b));
  Kernel k(g.k.ast, avx2);
  int64_t mi = k.ranges()[0]->range_id();
  auto os = tinygrad::detail::hand_coded_optimizations(g.k.ast, avx2);
  INFO(opts_str(os));
  CHECK(has(os, OptOp::PADTO, mi));
  CHECK(std::any_of(os.begin(), os.end(), [&](auto& o) { return o.op == OptOp::UPCAST && o.axis == mi && o.amt == 6; }));
  int64_t tile = 1;
  for (auto& o : os) if (o.op == OptOp::UPCAST || o.op == OptOp::VECTOR) tile *= o.amt;
  CHECK(tile == 6 * 16);
  // 32 registers hold the 8 x 16 tile: unchanged there
  auto os512 = tinygrad::detail::hand_coded_optimizations(g.k.ast, avx512);
  INFO(opts_str(os512));
  CHECK(!has(os512, OptOp::PADTO));
  auto res = run_each(g, {{}, os, os512});
  check_close(res[1], res[0], "the 16-register heuristic's opts");
  check_close(res[2], res[0], "the 32-register heuristic's opts");
}

TEST_CASE("opts: x @ W.T walks x's rows innermost where W passes a core's L2 and x is smaller (a prefill chunk), else W's", "[opts]") {
  // 64 rows against a 3.5 MB weight streamed W from L3 for every 4 rows (Xeon: 43 GFLOPS on 2 cores, 69 rows inner)
  tinygrad::detail::CRenderer avx512(2, 32);
  for (auto [m, n, swap] : {std::tuple{64, 1536, true}, std::tuple{2048, 1536, false}, std::tuple{64, 256, false}}) {
    Tensor x = rnd({m, 576}, 36), w = rnd({n, 576}, 37);
    auto g = guarded(x.matmul((-w).transpose()));  // W computed where it is read (a realized W.T: panels, a copy)
    auto os = tinygrad::detail::hand_coded_optimizations(g.k.ast, avx512);
    INFO(m << " x " << n << ": " << opts_str(os));
    CHECK(has(os, OptOp::SWAP) == swap);
    if (!swap) continue;
    auto res = run_each(g, {{}, os});
    check_close(res[1], res[0], "rows innermost");
  }
}

TEST_CASE("opts: of reduce loops one after another (softmax's max, then its sum of exponentials), the busiest takes the lanes", "[opts]") {
  tinygrad::detail::CRenderer avx512(2, 32, 64);
  Tensor x = rnd({32, 256}, 38);
  Tensor m = x.max(1, true), s = (x - m).exp().sum(1, true);
  size_t found = 0;
  for (auto& k : kernels_of(std::vector<Tensor>{m, s})) {
    tinygrad::detail::KernelFacts f(k.ast);
    if (f.stores.size() != 2 || f.loops.size() != 2) continue;
    found++;
    auto os = tinygrad::detail::hand_coded_optimizations(k.ast, avx512);
    INFO(opts_str(os));
    REQUIRE(has(os, OptOp::VECTOR));
    for (auto& o : os)  // the lanes on the sum's loop: the range whose nodes include the exp2
      if (o.op == OptOp::VECTOR) {
        bool exp_on = false;
        for (auto* u : tinygrad::detail::depends_on(k.ast, f.range(o.axis))) exp_on |= u->op == tinygrad::Ops::EXP2;
        CHECK(exp_on);
      }
  }
  CHECK(found == 1);
  auto vm = host(m), vs = host(s), vx = host(x);
  for (size_t r = 0; r < 32; r += 7) {
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < 256; j++) mx = std::max(mx, vx[r * 256 + j]);
    for (size_t j = 0; j < 256; j++) sum += std::exp(vx[r * 256 + j] - mx);
    CHECK(vm[r] == Approx(mx));
    CHECK(vs[r] == Approx(sum).epsilon(1e-5));
  }
}

TEST_CASE("opts: a padded reduce axis adds the identity: max, prod, exp, broadcasts, and inf or NaN in the other operand", "[opts]") {
  Tensor t = rnd({17, 31}, 21), x = rnd({17, 1}, 22);
  std::vector<float> c(17, 1.0f);
  c[3] = INFINITY; c[5] = -INFINITY; c[7] = NAN;
  Tensor cs = Tensor::from_data(c.data(), {17, 1}, t.device()).realize();
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  using L = std::initializer_list<Tensor>;  // NOTE: max(1) is a ValuesIndices, the rest Tensors
  for (const Tensor& e : L{t.max(1), (-t).max(1),
                          t.exp().sum(1), (x + t).sum(1), (t * cs).sum(1), (t * cs).max(1), (t + 1).prod(1)}) {
    auto g = guarded(e);
    Kernel k(g.k.ast, ren);
    int64_t r = -1;
    for (auto& x : k.ranges()) if (tinygrad::detail::axis_type(x) == tinygrad::detail::AxisType::REDUCE) r = x->range_id();
    REQUIRE(r >= 0);
    std::vector<std::vector<Opt>> optss{{}, {{OptOp::PADTO, r, 32}}, {{OptOp::PADTO, r, 32}, {OptOp::UNROLL, r, 8}}};
    auto res = run_each(g, optss);
    for (size_t j = 1; j < res.size(); j++) {
      INFO(opts_str(optss[j]));
      REQUIRE(res[j].size() == res[0].size());
      // NOTE: exact where every term is inf or NaN (row 3, 5, 7): the padded terms must not turn inf into NaN
      for (size_t q = 0; q < res[0].size(); q++)
        if (std::isnan(res[0][q]) || std::isinf(res[0][q])) CHECK(((std::isnan(res[j][q]) && std::isnan(res[0][q])) || res[j][q] == res[0][q]));
        else CHECK(std::abs(res[j][q] - res[0][q]) <= 1e-4 * (1 + std::abs(res[0][q])));
    }
  }
}

TEST_CASE("opts: illegal opts throw KernelOptError with the reason and leave the kernel usable", "[opts]") {
  Tensor t = rnd({17, 31}, 15), x = rnd({17, 1}, 16), s = rnd({16, 32}, 17), big = rnd({5, 64}, 18);
  tinygrad::detail::CRenderer cpu(4);
  tinygrad::detail::OpenCLRenderer cl;
  auto ast = [](const Tensor& u) { return guarded(u).k.ast; };
  auto ids = [](const Kernel& k) { std::vector<int64_t> r; for (auto& x : k.ranges()) r.push_back(x->range_id()); return r; };
  Kernel ksum(ast(t.sum(1)), cpu), kmax(ast(t.max(1)), cpu), kexp(ast(t.exp().sum(1)), cpu), kbc(ast((x + t).sum(1)), cpu);
  int64_t i = ids(ksum)[0], r = ids(ksum)[1];
  CHECK(reason(ksum, {OptOp::PADTO, r, 32}) == "accepted");
  CHECK(reason(ksum, {OptOp::PADTO, i, 32}) == "accepted");
  // a padded reduce axis adds the reduce's identity there, whatever the terms are: any reduce, any ops before it
  CHECK(reason(kmax, {OptOp::PADTO, r, 32}) == "accepted");
  CHECK(reason(kmax, {OptOp::PADTO, i, 32}) == "accepted");  // an output axis: its stores are masked
  CHECK(reason(kexp, {OptOp::PADTO, r, 32}) == "accepted");
  CHECK(reason(kbc, {OptOp::PADTO, r, 32}) == "accepted");
  CHECK_THAT(reason(ksum, {OptOp::PADTO, r, 64}), Contains("more than double"));
  CHECK_THAT(reason(ksum, {OptOp::PADTO, r, 1}), Contains("at least 2"));
  Kernel k16(ast(s.sum(1)), cpu);
  CHECK_THAT(reason(k16, {OptOp::PADTO, ids(k16)[1], 8}), Contains("already a multiple"));
  CHECK_THAT(reason(ksum, {OptOp::PADTO, 99, 4}), Contains("no such axis"));
  // SWAP: two different loop axes
  Kernel ke(ast((t * 2).exp()), cpu);
  CHECK(reason(ke, {OptOp::SWAP, ids(ke)[0], ids(ke)[1]}) == "accepted");
  CHECK_THAT(reason(ke, {OptOp::SWAP, ids(ke)[0], ids(ke)[0]}), Contains("two different axes"));
  CHECK_THAT(reason(ksum, {OptOp::SWAP, i, r}), Contains("two loop axes"));
  CHECK_THAT(reason(ke, {OptOp::SWAP, ids(ke)[0], 42}), Contains("no axis to swap with"));
  // workgroup opts: none on the CPU; NOLOCALS excludes LOCAL / GROUP / GROUPTOP both ways
  CHECK_THAT(reason(ksum, {OptOp::NOLOCALS, -1, 0}), Contains("no workgroups"));
  CHECK_THAT(reason(ksum, {OptOp::GROUPTOP, r, 31}), Contains("no workgroups"));
  Kernel g(ast(big.sum(1)), cl);
  int64_t gi = ids(g)[0], gr = ids(g)[1];
  CHECK_THAT(reason(g, {OptOp::GROUPTOP, gi, 5}), Contains("need a reduce axis"));
  CHECK_THAT(reason(g, {OptOp::GROUPTOP, gr, 24}), Contains("does not divide"));
  CHECK_THAT(reason(g, {OptOp::UPCAST, gr, 2}), Contains("reduce axis takes UNROLL, VECTOR or GROUP"));
  Kernel gn = Kernel(g).apply({OptOp::NOLOCALS, -1, 0});
  CHECK_THAT(reason(gn, {OptOp::LOCAL, gi, 5}), Contains("NOLOCALS was applied"));
  CHECK_THAT(reason(gn, {OptOp::GROUPTOP, gr, 16}), Contains("NOLOCALS was applied"));
  CHECK_THAT(reason(gn, {OptOp::NOLOCALS, -1, 0}), Contains("already applied"));
  CHECK_FALSE(has(gn.valid_opts(), OptOp::LOCAL));
  CHECK_FALSE(has(gn.valid_opts(), OptOp::GROUPTOP));
  Kernel gl = Kernel(g).apply({OptOp::GROUPTOP, gr, 16});
  CHECK(gl.workgroup() == 16);
  CHECK_THAT(reason(gl, {OptOp::NOLOCALS, -1, 0}), Contains("already uses LOCAL or GROUP"));
  // the message names the opt and the kernel's axes
  CHECK_THAT(reason(ksum, {OptOp::PADTO, r, 64}), Contains("tinygrad::Kernel: Opt(PADTO, ") && Contains("[0:17 1:31r]"));
  // a rejected opt leaves the kernel as it was: it still takes legal opts and computes the same values
  Kernel kk(ast(t.sum(1)), *tinygrad::detail::get_device("CPU").renderer);
  for (Opt bad : {Opt{OptOp::PADTO, r, 64}, Opt{OptOp::SWAP, i, r}, Opt{OptOp::UNROLL, r, 4}}) CHECK_THROWS_AS(kk.apply(bad), KernelOptError);
  CHECK(kk.applied().empty());
  kk.apply({OptOp::PADTO, r, 32}).apply({OptOp::UNROLL, r, 4});
  CHECK_THROWS_AS(kk.apply({OptOp::UNROLL, r, 3}), KernelOptError);
  CHECK(kk.applied().size() == 2);
  auto gt = guarded(t.sum(1));
  auto res = run_each(gt, {{}, kk.applied()});
  check_close(res[1], res[0], opts_str(kk.applied()));
  CHECK_THROWS_AS(tinygrad::detail::to_program(gt.k.ast, cpu, std::vector<Opt>{{OptOp::PADTO, r, 64}}), KernelOptError);
}

TEST_CASE("opts: MERGE joins two loop or two reduce axes, a conv's merges (gemm_merges) and opts after them compute what no opts compute", "[opts]") {
  Tensor img = rnd({2, 3, 9, 10}, 30), w = conv_weight({4, 3, 3, 3}, 31), t = rnd({6, 5, 7}, 32);
  auto& cpu = *tinygrad::detail::get_device("CPU").renderer;
  auto ids = [](const Kernel& k, tinygrad::detail::AxisType at) {
    std::vector<int64_t> r;
    for (auto& x : k.ranges()) if (tinygrad::detail::axis_type(x) == at) r.push_back(x->range_id());
    return r;
  };
  const auto LOOP = tinygrad::detail::AxisType::LOOP, REDUCE = tinygrad::detail::AxisType::REDUCE;
  for (auto [name, y] : {std::pair{"conv", img.conv2d(w)}, std::pair{"conv, padding 1, stride 2", img.conv2d(w, std::nullopt, 2, 1)},
                         std::pair{"conv with a bias and relu", (img.conv2d(w) + rnd({1, 4, 1, 1}, 33)).relu()}}) {
    INFO(name);
    auto g = guarded(y);
    Kernel k(g.k.ast, cpu);
    auto merges = tinygrad::detail::gemm_merges(k.ast());
    // the reduce (channels, taps) into one axis, the rows (batch, pixels) into one; out channels are B's alone
    REQUIRE(merges.size() == 4);
    Kernel km(k);
    for (auto& o : merges) km.apply(o);
    CHECK(ids(km, REDUCE).size() == 1);
    CHECK(ids(km, LOOP).size() == 2);
    int64_t m = ids(km, LOOP)[0], n = ids(km, LOOP)[1], r = ids(km, REDUCE)[0];
    std::vector<std::vector<Opt>> optss{{}, merges};
    auto with = [&](std::initializer_list<Opt> more) { auto v = merges; v.insert(v.end(), more); optss.push_back(v); };
    with({{OptOp::UPCAST, n, 4}});
    with({{OptOp::PADTO, m, 32}, {OptOp::UPCAST, m, 4}, {OptOp::UNROLL, r, 3}});
    with({{OptOp::SWAP, m, n}, {OptOp::UPCAST, m, 2}});
    // one merge alone, inner axes first
    optss.push_back({{OptOp::MERGE, ids(k, REDUCE)[1], ids(k, REDUCE)[2]}});
    optss.push_back({{OptOp::MERGE, ids(k, LOOP)[2], ids(k, LOOP)[3]}});
    auto res = run_each(g, optss);
    for (size_t i = 1; i < res.size(); i++) check_close(res[i], res[0], opts_str(optss[i]));
  }
  // refusals, with the reason
  Kernel kc(guarded(img.conv2d(w)).k.ast, cpu), ks(guarded(t.sum(2) + t.max(2)).k.ast, cpu);
  auto lp = ids(kc, LOOP), rd = ids(kc, REDUCE);
  CHECK(reason(kc, {OptOp::MERGE, lp[0], lp[1]}) == "accepted");
  CHECK(reason(kc, {OptOp::MERGE, rd[0], rd[1]}) == "accepted");
  CHECK_THAT(reason(kc, {OptOp::MERGE, lp[0], rd[0]}), Contains("two loop axes or two reduce axes"));
  CHECK_THAT(reason(kc, {OptOp::MERGE, lp[0], lp[0]}), Contains("two different axes"));
  CHECK_THAT(reason(kc, {OptOp::MERGE, lp[0], 99}), Contains("no axis to merge with"));
  CHECK_THAT(reason(Kernel(kc).apply({OptOp::UPCAST, lp[1], 2}), {OptOp::MERGE, lp[2], lp[3]}), Contains("MERGE comes first"));
  CHECK(has(kc.valid_opts(), OptOp::MERGE));
  CHECK(tinygrad::detail::gemm_merges(ks.ast()).empty());  // two reduces: no GEMM
  CHECK(tinygrad::detail::gemm_merges(guarded(t.sum(2)).k.ast).empty());
}

TEST_CASE("opts: SWAP exchanges the loop order, valid_opts lists the new opts only where legal", "[opts]") {
  Tensor t = rnd({17, 31}, 19), s = rnd({16, 32}, 20);
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  auto ge = guarded((t * 2).exp());
  Kernel k(ge.k.ast, ren);
  int64_t i = k.ranges()[0]->range_id(), j = k.ranges()[1]->range_id();
  tinygrad::detail::CRenderer cpu1(1);
  auto first_loop = [&](const std::vector<Opt>& os) {
    std::string src = tinygrad::detail::to_program(ge.k.ast, cpu1, os).src;
    auto at = src.find("for (");
    REQUIRE(at != std::string::npos);
    return src.substr(at, src.find('{', at) - at);
  };
  CHECK_THAT(first_loop({}), Contains("< 17"));
  CHECK_THAT(first_loop({{OptOp::SWAP, i, j}}), Contains("< 31"));
  {  // a symbolic dim's loop keeps its end when SWAP moves it (it ran to the bound, every row gated)
    tinygrad::Variable n("swap_rows", 1, 17);
    auto ks = one_kernel_schedule((t.shrink({{0, n.bind(5)}, {0, 31}}) * 2).exp()).spec.kernels[0];
    Kernel kk(ks.ast, ren);
    std::vector<Opt> swap{{OptOp::SWAP, kk.ranges()[0]->range_id(), kk.ranges()[1]->range_id()}};
    std::string src = tinygrad::detail::to_program(ks.ast, cpu1, swap).src;
    CHECK_THAT(src, Contains("< 31") && Contains("< var_swap_rows"));
  }
  auto res = run_each(ge, {{}, {{OptOp::SWAP, i, j}}, {{OptOp::SWAP, i, j}, {OptOp::PADTO, i, 4}, {OptOp::UPCAST, i, 4}}});
  check_close(res[1], res[0], "SWAP");
  check_close(res[2], res[0], "SWAP, PADTO, UPCAST");
  // valid_opts: PADTO only where the size is no multiple, SWAP between loop axes, no workgroup opts on the CPU
  auto vo = k.valid_opts();
  CHECK(has(vo, OptOp::PADTO, i));
  CHECK(has(vo, OptOp::SWAP, i));
  CHECK_FALSE(has(vo, OptOp::NOLOCALS));
  Kernel ks(guarded(s.sum(1)).k.ast, ren);
  auto vs = ks.valid_opts();
  CHECK_FALSE(has(vs, OptOp::PADTO));
  CHECK_FALSE(has(vs, OptOp::SWAP));  // one loop axis
  CHECK_FALSE(has(vs, OptOp::GROUPTOP));
  tinygrad::detail::OpenCLRenderer cl;
  auto vg = Kernel(guarded(t.sum(1)).k.ast, cl).valid_opts();
  CHECK(has(vg, OptOp::NOLOCALS));
  CHECK(has(vg, OptOp::PADTO));
  auto vg2 = Kernel(guarded(rnd({4, 256}, 21).sum(1)).k.ast, cl).valid_opts();
  CHECK(has(vg2, OptOp::GROUPTOP));
  CHECK(has(vg2, OptOp::GROUP));
  CHECK_FALSE(has(vg2, OptOp::PADTO));
}

TEST_CASE("opts: workgroup opts and PADTO render as CUDA and compile with NVRTC", "[opts][cuda]") {
  if (!tinygrad::detail::nvrtc()) { WARN("libnvrtc not found: NVRTC compile check skipped"); return; }
  tinygrad::detail::CUDARenderer ren;
  tinygrad::detail::NVRTCCompiler nv("compute_90");
  Tensor t = rnd({5, 1000}, 22), a = rnd({17, 31}, 23), b = rnd({31, 13}, 24);
  auto kt = guarded(t.sum(1)).k.ast, km = guarded(a.matmul(b)).k.ast;
  Kernel k1(kt, ren), k2(km, ren);
  int64_t i = k1.ranges()[0]->range_id(), r = k1.ranges()[1]->range_id();
  auto mr = k2.ranges();
  std::vector<std::pair<tinygrad::UOpRef, std::vector<Opt>>> pins{
      {kt, {{OptOp::GROUPTOP, r, 8}, {OptOp::UNROLL, r, 5}}},
      {kt, {{OptOp::PADTO, r, 256}, {OptOp::GROUP, r, 256}}},
      {kt, {{OptOp::PADTO, i, 8}, {OptOp::LOCAL, i, 8}, {OptOp::GROUPTOP, r, 8}}},
      {kt, {{OptOp::NOLOCALS, -1, 0}, {OptOp::UNROLL, r, 4}}},
      {km,
       {{OptOp::PADTO, mr[0]->range_id(), 32},
        {OptOp::PADTO, mr[1]->range_id(), 16},
        {OptOp::LOCAL, mr[0]->range_id(), 8},
        {OptOp::LOCAL, mr[1]->range_id(), 16},
        {OptOp::UPCAST, mr[0]->range_id(), 4},
        {OptOp::PADTO, mr[2]->range_id(), 4},
        {OptOp::UNROLL, mr[2]->range_id(), 4}}},
      {km, {{OptOp::SWAP, mr[0]->range_id(), mr[1]->range_id()}, {OptOp::PADTO, mr[0]->range_id(), 4}, {OptOp::VECTOR, mr[0]->range_id(), 4}}},
      // a group reduce of vector lanes: workgroup memory read and written per lane (a vector read of it did not compile)
      {km,
       {{OptOp::PADTO, mr[1]->range_id(), 16},
        {OptOp::VECTOR, mr[1]->range_id(), 2},
        {OptOp::PADTO, mr[2]->range_id(), 16},
        {OptOp::GROUP, mr[2]->range_id(), 16}}},
  };
  for (auto& [ast, os] : pins) {
    INFO(opts_str(os));
    auto p = tinygrad::detail::to_program(ast, ren, os);
    CHECK_THAT(nv.compile(p.src), Contains(".entry " + p.fn));
  }
}

TEST_CASE("opts: thread ranges that no node uses together share one thread id", "[opts]") {
  tinygrad::detail::CUDARenderer ren;
  auto ids = [](const Kernel& k, tinygrad::detail::AxisType t) {
    std::vector<int64_t> r;
    for (auto& x : k.ranges()) if (tinygrad::detail::axis_type(x) == t) r.push_back(x->range_id());
    return r;
  };
  // a variance: the mean's loop, then the squares' around it; a GROUP of 64 on each runs on one id of 64 threads
  Kernel v(guarded(rnd({8, 256}, 40).var(1)).k.ast, ren);
  auto red = ids(v, tinygrad::detail::AxisType::REDUCE);
  REQUIRE(red.size() == 2);
  for (auto r : red) v.apply({OptOp::GROUP, r, 64});
  CHECK(v.workgroup() == 64);
  auto cls = tinygrad::detail::thread_classes(v.sink());
  REQUIRE(cls.size() == 1);
  CHECK(cls[0].size() == 2);
  auto p = tinygrad::detail::to_program(v);
  CHECK(p.launch.local == std::array<int64_t, 3>{64, 1, 1});
  CHECK_THAT(p.src, Contains("__shfl_xor_sync"));
  // a matmul's LOCAL on a column and GROUP on K: its loads walk both, so 16 x 16 threads
  Kernel m(guarded(rnd({4, 64}, 41).matmul(rnd({64, 16}, 42))).k.ast, ren);
  auto loops = ids(m, tinygrad::detail::AxisType::LOOP);
  m.apply({OptOp::LOCAL, loops.back(), 16}).apply({OptOp::GROUP, ids(m, tinygrad::detail::AxisType::REDUCE)[0], 16});
  CHECK(m.workgroup() == 256);
  CHECK(tinygrad::detail::thread_classes(m.sink()).size() == 2);
  // the limit counts a shared id once: two groups of 1024 on one id fit a 1024-thread workgroup, a LOCAL of 2 beside them not
  Kernel w(guarded(rnd({2, 4096}, 43).var(1)).k.ast, ren);
  for (auto r : ids(w, tinygrad::detail::AxisType::REDUCE)) w.apply({OptOp::GROUP, r, 1024});
  CHECK(w.workgroup() == 1024);
  CHECK_THROWS_AS(Kernel(w).apply({OptOp::LOCAL, ids(w, tinygrad::detail::AxisType::LOOP)[0], 2}), KernelOptError);
}

namespace {
// stderr of a block, through a temporary file (fd 2 is redirected, so child output and fprintf are caught)
struct StderrCapture {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("tg_opts_stderr_" + std::to_string(::getpid()));
  int saved = -1;
  StderrCapture() {
    std::fflush(stderr);
    saved = ::dup(2);
    std::FILE* f = std::fopen(path.c_str(), "w");
    ::dup2(::fileno(f), 2);
    std::fclose(f);
  }
  std::string done() {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::ifstream in(path);
    std::string s((std::istreambuf_iterator<char>(in)), {});
    std::filesystem::remove(path);
    return s;
  }
};
int unique_constant() {
  static std::mt19937 g(std::random_device{}() ^ uint32_t(::getpid()));
  return int(std::uniform_int_distribution<int>(1000000, 99999999)(g));
}
}  // namespace

TEST_CASE("opts: BEAM starts from the heuristic or from no opts, prints its rounds at DEBUG=2, and its opts compute the same", "[opts][beam]") {
  float c = float(unique_constant());  // a new kernel AST in every run: the disk cache has no entry yet
  Tensor a = rnd({17, 31}, 25), b = rnd({31, 13}, 26);
  auto g = guarded(a.matmul(b) * c);
  auto& d = tinygrad::detail::get_device("CPU");
  auto before = tinygrad::search_stats();
  int old_debug = tinygrad::flags().debug;
  tinygrad::flags().debug = 2;
  StderrCapture cap;
  auto from_empty = tinygrad::detail::beam_search(g.k.ast, d.rt, *d.renderer, 2, tinygrad::detail::BeamStart::empty);
  std::string log = cap.done();
  tinygrad::flags().debug = old_debug;
  REQUIRE(from_empty);
  CHECK_THAT(log, Contains("BEAM r_17_13_31 start: ") && Contains("with []"));
  CHECK_THAT(log, Contains("BEAM r_17_13_31 round 1: ") && Contains("candidates"));
  CHECK_THAT(log, Contains(" after "));
  // a winner other than the start is timed against it again, interleaved, before it is kept (noise guard)
  if (!from_empty->empty()) CHECK_THAT(log, Contains("BEAM confirm: winner "));
  auto from_heuristic = tinygrad::detail::beam_search(g.k.ast, d.rt, *d.renderer, 2);
  REQUIRE(from_heuristic);
  auto after = tinygrad::search_stats();
  CHECK(after.searches == before.searches + 2);  // two starts: two cache entries
  CHECK(after.candidates > before.candidates + 4);
  // the cache answers both now
  CHECK(tinygrad::detail::beam_search(g.k.ast, d.rt, *d.renderer, 2, tinygrad::detail::BeamStart::empty) == from_empty);
  CHECK(tinygrad::search_stats().searches == after.searches);
  CHECK(tinygrad::search_stats().cache_hits == after.cache_hits + 1);
  auto res = run_each(g, {{}, *from_empty, *from_heuristic});
  check_close(res[1], res[0], "BEAM from no opts: " + opts_str(*from_empty));
  check_close(res[2], res[0], "BEAM from the heuristic: " + opts_str(*from_heuristic));
}

TEST_CASE("opts: KBLOCK keeps partial results in the output: sums, max, epilogues, padded and tiled reduces", "[opts]") {
  Tensor a = rnd({12, 256}, 22), b = rnd({256, 12}, 23), bias = rnd({12}, 24), t = rnd({7, 250}, 25);
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  auto loop = [](const Kernel& k, size_t n) { return k.ranges()[n]->range_id(); };
  struct C { std::string name; Tensor t; };
  for (auto& c : {C{"matmul", a.matmul(b)}, C{"matmul + bias, relu", (a.matmul(b) + bias).relu()}, C{"max", (a * 2).max(1)},
                  C{"prod", (a * 0.1 + 1).prod(1)}, C{"sum then exp (the epilogue runs once, on the whole sum)", a.sum(1).exp()}}) {
    INFO(c.name);
    auto g = guarded(c.t);
    Kernel k(g.k.ast, ren);
    int64_t r = reduce_axis(k), i = loop(k, 0);
    std::vector<std::vector<Opt>> optss{{}, {{OptOp::KBLOCK, r, 64}}, {{OptOp::KBLOCK, r, 128}}, {{OptOp::UPCAST, i, 3}, {OptOp::KBLOCK, r, 64}},
                                        {{OptOp::KBLOCK, r, 32}, {OptOp::UNROLL, r, 4}, {OptOp::UPCAST, i, 3}}};
    if (k.ranges().size() > 2) optss.push_back({{OptOp::KBLOCK, r, 64}, {OptOp::VECTOR, loop(k, 1), 4}, {OptOp::UPCAST, i, 3}});
    if (ren.threads > 1) optss.push_back({{OptOp::KBLOCK, r, 64}, {OptOp::THREAD, i, std::min<int64_t>(ren.threads, 3)}});
    auto res = run_each(g, optss);
    for (size_t n = 1; n < res.size(); n++) check_close(res[n], res[0], opts_str(optss[n]));
    // the block loop is the outermost: the kernel's first loop runs over the blocks
    std::string src = tinygrad::detail::to_program(g.k.ast, ren, std::vector<Opt>{{OptOp::KBLOCK, r, 64}}).src;
    auto at = src.find("for (");
    REQUIRE(at != std::string::npos);
    CHECK_THAT(src.substr(at, src.find('{', at) - at), Contains("< 4"));
  }
  // a padded reduce axis, then blocks of it: the padded part adds the identity
  auto gp = guarded(t.sum(1));
  Kernel kp(gp.k.ast, ren);
  int64_t rp = reduce_axis(kp);
  auto res = run_each(
      gp, {{}, {{OptOp::PADTO, rp, 64}, {OptOp::KBLOCK, rp, 64}}, {{OptOp::PADTO, rp, 32}, {OptOp::KBLOCK, rp, 128}, {OptOp::UNROLL, rp, 4}}});
  check_close(res[1], res[0], "PADTO 64, KBLOCK 64");
  check_close(res[2], res[0], "PADTO 32, KBLOCK 128, UNROLL 4");
  // through the public API with the heuristic's opts, which block a matmul whose operands outgrow the L2 (4 MB here)
  Tensor x = rnd({128, 4096}, 26), y = rnd({4096, 128}, 27);
  auto heur = tinygrad::detail::hand_coded_optimizations(one_kernel_schedule(x.matmul(y)).spec.kernels[0].ast, ren);
  CHECK(has(heur, OptOp::KBLOCK));
  auto hx = host(x), hy = host(y), got = host(x.matmul(y));
  size_t bad = 0;
  for (size_t p = 0; p < 128; p++)
    for (size_t q = 0; q < 128; q++) {
      double want = 0;
      for (size_t kk = 0; kk < 4096; kk++) want += hx[p * 4096 + kk] * hy[kk * 128 + q];
      bad += !(std::abs(got[p * 128 + q] - want) <= 1e-4 * (1 + std::abs(want)));
    }
  CHECK(bad == 0);
}

TEST_CASE("opts: KBLOCK is refused where partial results cannot live in the output", "[opts]") {
  Tensor a = rnd({9, 256}, 28), b = rnd({256, 12}, 29);
  tinygrad::detail::CRenderer cpu(2);
  tinygrad::detail::OpenCLRenderer cl;
  auto k = [&](const Tensor& t, const tinygrad::Renderer& ren) { return Kernel(one_kernel_schedule(t).spec.kernels[0].ast, ren); };
  Kernel mm = k(a.matmul(b), cpu);
  int64_t r = reduce_axis(mm), i = mm.ranges()[0]->range_id();
  CHECK(reason(mm, {OptOp::KBLOCK, r, 64}) == "accepted");
  CHECK_THAT(reason(mm, {OptOp::KBLOCK, r, 256}), Contains("whole axis"));
  CHECK_THAT(reason(mm, {OptOp::KBLOCK, r, 96}), Contains("does not divide"));
  CHECK_THAT(reason(mm, {OptOp::KBLOCK, i, 3}), Contains("needs a reduce axis"));
  CHECK_THAT(reason(Kernel(mm).apply({OptOp::KBLOCK, r, 64}), {OptOp::KBLOCK, r, 32}), Contains("already has a KBLOCK"));
  CHECK_THAT(reason(k(a.matmul(b), cl), {OptOp::KBLOCK, r, 64}), Contains("GPU kernel uses GROUP"));
  // two reduces in one value: one partial value per store
  Kernel two = k(a.sum(1) + a.max(1), cpu);
  CHECK_THAT(reason(two, {OptOp::KBLOCK, reduce_axis(two), 64}), Contains("two reduces"));
  // the sum is float, the stored value half: the partial sums would be rounded to half between blocks
  Kernel half = k(a.sum(1).cast(DType::Float16), cpu);
  CHECK_THAT(reason(half, {OptOp::KBLOCK, reduce_axis(half), 64}), Contains("dtype differs"));
  // the block loop is no loop axis for other opts: they cannot split, tile or reorder it
  Kernel kb = Kernel(mm).apply({OptOp::KBLOCK, r, 64});
  for (auto& rr : kb.ranges())
    if (tinygrad::detail::axis_type(rr) == tinygrad::detail::AxisType::KBLOCK) {
      for (auto& o : kb.valid_opts()) CHECK(o.axis != rr->range_id());
      CHECK_THROWS_AS(Kernel(kb).apply({OptOp::UPCAST, rr->range_id(), 2}), KernelOptError);
    }
}

TEST_CASE("opts: VECTOR on a reduce axis loads every operand as vectors and adds the lanes after the loop", "[opts]") {
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  int64_t lanes = ren.vector_lanes(DType::Float32);
  Tensor x = rnd({12, 256}, 30), w = rnd({20, 256}, 31), t = rnd({7, 250}, 32), bias = rnd({20}, 33);
  struct C { std::string name; Tensor t; };
  for (auto& c : {C{"x @ W.T", x.matmul(w.transpose(0, 1))}, C{"x @ W.T + bias, relu", (x.matmul(w.transpose(0, 1)) + bias).relu()},
                  C{"sum", (x * 2).sum(1)}, C{"max", (x - 0.7).max(1)}, C{"prod", (x * 0.1 + 1).prod(1)},
                  C{"sum and max of one input (two outputs)", x.sum(1) + x.max(1)}}) {
    INFO(c.name);
    auto g = guarded(c.t);
    Kernel k(g.k.ast, ren);
    int64_t r = reduce_axis(k), i = k.ranges()[0]->range_id();
    std::vector<std::vector<Opt>> optss{{},
                                        {{OptOp::VECTOR, r, lanes}},
                                        {{OptOp::VECTOR, r, lanes / 2}},
                                        {{OptOp::VECTOR, r, lanes}, {OptOp::UNROLL, r, 4}},
                                        {{OptOp::UPCAST, i, 3}, {OptOp::VECTOR, r, lanes}}};
    if (reason(Kernel(k).apply({OptOp::VECTOR, r, lanes}), {OptOp::KBLOCK, r, 8}) == "accepted")
      optss.push_back({{OptOp::VECTOR, r, lanes}, {OptOp::KBLOCK, r, 8}});
    else CHECK(c.name.find("two outputs") != std::string::npos);
    if (tinygrad::detail::axis_type(k.ranges()[1]) == tinygrad::detail::AxisType::LOOP)
      optss.push_back({{OptOp::VECTOR, r, lanes}, {OptOp::UPCAST, i, 4}, {OptOp::UPCAST, k.ranges()[1]->range_id(), 4}});
    if (ren.threads > 1) optss.push_back({{OptOp::THREAD, i, 2}, {OptOp::VECTOR, r, lanes}});
    auto res = run_each(g, optss);
    for (size_t n = 1; n < res.size(); n++) check_close(res[n], res[0], opts_str(optss[n]));
    // every load along the reduce is one vector load; the lanes are combined once, after the loop
    std::string src = tinygrad::detail::to_program(g.k.ast, ren, std::vector<Opt>{{OptOp::VECTOR, r, lanes}}).src;
    INFO(src);
    CHECK_THAT(src, Contains(tinygrad::detail::cat("float", lanes, " acc0")));
    CHECK_THAT(src, Contains(tinygrad::detail::cat("sizeof(float", lanes, ")")));
  }
  // a padded reduce axis: the lanes past the end add the identity
  auto gp = guarded(t.sum(1));
  Kernel kp(gp.k.ast, ren);
  int64_t rp = reduce_axis(kp);
  auto res = run_each(
      gp, {{}, {{OptOp::PADTO, rp, 8}, {OptOp::VECTOR, rp, lanes}}, {{OptOp::PADTO, rp, 32}, {OptOp::VECTOR, rp, lanes}, {OptOp::UNROLL, rp, 2}}});
  check_close(res[1], res[0], "PADTO 8, VECTOR");
  check_close(res[2], res[0], "PADTO 32, VECTOR, UNROLL 2");
  // the heuristic vectorizes x @ W.T along K, and the result matches a plain loop
  Tensor a = rnd({64, 384}, 34), b = rnd({96, 384}, 35);
  auto heur = tinygrad::detail::hand_coded_optimizations(one_kernel_schedule(a.matmul(b.transpose(0, 1))).spec.kernels[0].ast, ren);
  INFO(opts_str(heur));
  CHECK(has(heur, OptOp::VECTOR));
  CHECK(has(heur, OptOp::UPCAST));
  auto ha = host(a), hb = host(b), got = host(a.matmul(b.transpose(0, 1)));
  size_t bad = 0;
  for (size_t p = 0; p < 64; p++)
    for (size_t q = 0; q < 96; q++) {
      double want = 0;
      for (size_t kk = 0; kk < 384; kk++) want += ha[p * 384 + kk] * hb[q * 384 + kk];
      bad += !(std::abs(got[p * 96 + q] - want) <= 1e-4 * (1 + std::abs(want)));
    }
  CHECK(bad == 0);
}

TEST_CASE("opts: VECTOR on a reduce axis is refused where lanes cannot be vector loads", "[opts]") {
  Tensor a = rnd({9, 256}, 36), b = rnd({256, 12}, 37), w = rnd({12, 256}, 38);
  tinygrad::detail::CRenderer cpu(2);
  tinygrad::detail::OpenCLRenderer cl;
  auto k = [&](const Tensor& t, const tinygrad::Renderer& ren) { return Kernel(one_kernel_schedule(t).spec.kernels[0].ast, ren); };
  int64_t lanes = cpu.vector_lanes(DType::Float32);
  Kernel wt = k(a.matmul(w.transpose(0, 1)), cpu);
  int64_t r = reduce_axis(wt);
  CHECK(reason(wt, {OptOp::VECTOR, r, lanes}) == "accepted");
  CHECK_THAT(reason(wt, {OptOp::VECTOR, r, 2}), Contains("lanes"));
  // B of a @ b walks K with a stride of 12
  Kernel mm = k(a.matmul(b), cpu);
  CHECK_THAT(reason(mm, {OptOp::VECTOR, reduce_axis(mm), lanes}), Contains("stride"));
  CHECK_THAT(reason(k(a.matmul(w.transpose(0, 1)), cl), {OptOp::VECTOR, r, 4}), Contains("GPU kernel"));
  // one set of lanes a kernel: not on the reduce and on an output axis too
  CHECK_THAT(reason(Kernel(wt).apply({OptOp::VECTOR, r, lanes}), {OptOp::VECTOR, r, lanes}), Contains("already has vector lanes"));
  // lanes of float hold no half
  Kernel half = k(a.cast(DType::Float16).realize().sum(1), cpu);
  CHECK_THAT(reason(half, {OptOp::VECTOR, reduce_axis(half), lanes}), Contains("element size") || Contains("lanes"));
}

TEST_CASE("opts: each OptOp is a row of the opt table, a WMMA arg round-trips, and the tests make heuristic opts strict", "[opts]") {
  for (size_t i = 0; i <= size_t(tinygrad::detail::last_optop); i++) CHECK(tinygrad::detail::opt_table[i].op == OptOp(i));
  CHECK(Opt{OptOp::KBLOCK, 1, 256}.str() == "Opt(KBLOCK, 1, 256)");
  CHECK(Opt{OptOp::MERGE, 0, 2}.str() == "Opt(MERGE, 0, 2)");
  tinygrad::detail::WmmaArg a{.dt = DType::BFloat16, .pairs = 0b101101, .b_hi = true, .a_mn = false, .b_mn = true};
  auto b = tinygrad::detail::WmmaArg::decode(a.encode());
  CHECK((b.dt == a.dt && b.pairs == a.pairs && b.b_hi && !b.a_mn && b.b_mn));
  // tests/main.cpp: an opt of a heuristic that its kernel refuses fails the test instead of being skipped
  CHECK(tinygrad::flags().strict_opts);
}
