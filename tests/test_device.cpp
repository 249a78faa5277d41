// Devices: transfers between CPU, OpenCL and CUDA (where present), mixing devices, missing drivers,
// GPU compile failures, allocation balance, and the golden CUDA / OpenCL renderings of a few kernels
// (UPDATE_GOLDEN=1 rewrites them: tools/gen_golden).
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using Catch::Matchers::Contains;
using tinygrad::DType;
using tinygrad::Tensor;

namespace {
// whether a device opens here (PoCL in CI; CUDA only on a GPU machine)
bool has_device(const std::string& d) {
  try { tinygrad::runtime(d); return true; } catch (const tinygrad::DeviceError&) { return false; }
}
std::vector<float> iota(size_t n, float scale = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = float(i) * scale - 3;
  return v;
}
// the kernels one realize of t would run (inputs numbered in graph order), without running them; rows: scheduled as
// for a device of workgroups (row kernels), whatever device t is on
std::vector<tinygrad::detail::KernelAST> kernels_of(const Tensor& t, bool rows = false) {
  std::unordered_map<const tinygrad::UOp*, int> slots;
  int n = 0;
  for (auto& u : tinygrad::detail::toposort(t.uop())) if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
  if (rows) return tinygrad::detail::Scheduler({t.uop()}, slots, n, false, true).spec().kernels;
  return tinygrad::detail::create_schedule({t.uop()}, slots, n).kernels;
}
// the outputs of a (batched) matmul y = A B (+ bias, relu) that differ from float64 over the same inputs by more than
// rel * (1 + |value|); a: A's shape, or A^T's where at; b: B's, or B^T's where bt
size_t gemm_mismatches(const std::vector<float>& ha, const std::vector<float>& hb, const std::vector<float>& hbias, const std::vector<float>& got,
                       const tinygrad::Shape& a, const tinygrad::Shape& b, bool at, bool bt, double rel) {
  size_t d = a.size(), bad = 0;
  int64_t batch = d == 3 ? a[0] : 1, M = at ? a[d - 1] : a[d - 2], K = at ? a[d - 2] : a[d - 1], N = bt ? b[d - 2] : b[d - 1];
  for (int64_t q = 0; q < batch; q++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t kk = 0; kk < K; kk++)
          s += double(ha[size_t(q * M * K + (at ? kk * M + i : i * K + kk))]) * hb[size_t(q * K * N + (bt ? j * K + kk : kk * N + j))];
        if (!hbias.empty()) s = std::max(0.0, s + hbias[size_t(j)]);
        bad += !(std::abs(got[size_t((q * M + i) * N + j)] - s) <= rel * (1 + std::abs(s)));
      }
  return bad;
}
}  // namespace

TEST_CASE("device: CPU <-> GPU round trips and to() chains", "[device]") {
  for (std::string d : {"CL", "CUDA"}) {
    if (!has_device(d)) { WARN(d << " is not available here: skipped"); continue; }
    INFO(d);
    auto v = iota(1000, 0.5f);
    Tensor a = Tensor(v, {10, 100}, "CPU");
    Tensor g = a.to(d);
    CHECK(g.device() == d);
    CHECK(g.to_vector<float>() == v);
    // compute there, come back, compute here, go again
    Tensor r = ((g * 2).to("CPU") + 1).to(d).sum(1).to("CPU");
    CHECK(r.device() == "CPU");
    auto got = r.to_vector<float>();
    for (size_t i = 0; i < 10; i++) {
      float want = 0;
      for (size_t j = 0; j < 100; j++) want += v[i * 100 + j] * 2 + 1;
      CHECK(got[i] == Approx(want));
    }
    // a view and other dtypes cross too
    CHECK(a.T().to(d).to("CPU").to_vector<float>() == a.T().contiguous().to_vector<float>());
    Tensor ints = Tensor(std::vector<int64_t>{1, -2, 3}, {}, "CPU").to(d);
    CHECK((ints * 3).to_vector<int64_t>() == std::vector<int64_t>{3, -6, 9});
    CHECK(Tensor(std::vector<bool>{true, false}, {}, "CPU").to(d).logical_not().to_vector<bool>() == std::vector<bool>{false, true});
    // device to device on the same device is the same tensor; to() of an unrealized graph realizes it there
    CHECK(g.to(d).uop() == g.uop());
    CHECK((a + 1).to(d).to_vector<float>() == (a + 1).to_vector<float>());
  }
}

TEST_CASE("device: ops mixing devices without to() are a DeviceError", "[device][errors]") {
  if (!has_device("CL")) { WARN("CL is not available here: skipped"); return; }
  Tensor a(std::vector<float>{1, 2}, {}, "CPU");
  Tensor b(std::vector<float>{3, 4}, {}, "CL");
  try {
    (void)(a + b);
    FAIL_CHECK("no DeviceError");
  } catch (const tinygrad::DeviceError& e) {
    CHECK_THAT(std::string(e.what()), Contains("CPU") && Contains("CL") && Contains(".to()"));
  }
  CHECK((a + b.to("CPU")).to_vector<float>() == std::vector<float>{4, 6});
}

TEST_CASE("device: a missing driver or device is a DeviceError saying what is missing", "[device][errors]") {
  if (!has_device("CUDA")) {
    try {
      tinygrad::runtime("CUDA");
      FAIL_CHECK("no DeviceError");
    } catch (const tinygrad::DeviceError& e) {
      std::string m = e.what();
      CHECK((m.find("libcuda") != std::string::npos || m.find("GPU") != std::string::npos || m.find("libnvrtc") != std::string::npos));
    }
    CHECK_THROWS_AS(Tensor(std::vector<float>{1}, {}, "CUDA"), tinygrad::DeviceError);
  }
  CHECK_THROWS_WITH(tinygrad::runtime("CUDA:99"), Contains("CUDA"));
  CHECK_THROWS_WITH(tinygrad::runtime("CL:99"), Contains("CL") || Contains("OpenCL"));
  CHECK_THROWS_WITH(tinygrad::runtime("NOPE"), Contains("NOPE"));
}

TEST_CASE("device: a GPU kernel that fails to build is a CompileError with the source and the log", "[device][errors]") {
  std::string bad = "__kernel void f(__global float* a) { a[0] = undefined_thing; }\n";
  if (has_device("CL")) {
    try {
      tinygrad::runtime("CL").compiler->compile(bad);
      FAIL_CHECK("no CompileError");
    } catch (const tinygrad::CompileError& e) {
      CHECK_THAT(e.source, Contains("undefined_thing"));
      CHECK_THAT(e.log, Contains("undefined_thing"));
    }
  }
  if (tinygrad::detail::nvrtc()) {
    try {
      tinygrad::detail::NVRTCCompiler("compute_90").compile("extern \"C\" __global__ void f(float* a) { a[0] = undefined_thing; }\n");
      FAIL_CHECK("no CompileError");
    } catch (const tinygrad::CompileError& e) {
      CHECK_THAT(e.log, Contains("undefined_thing"));
      CHECK_THAT(std::string(e.what()), Contains("NVRTC"));
    }
  } else {
    WARN("libnvrtc not found: the NVRTC half of this test is skipped");
  }
}

TEST_CASE("device: OpenCL builds many kernels as one program: names repeat, helpers, a bad one is named, cache by reference", "[device]") {
  if (!has_device("CL")) { WARN("CL is not available here: skipped"); return; }
  auto& rt = tinygrad::runtime("CL");
  static std::mt19937 rng(std::random_device{}());
  int base = std::uniform_int_distribution<int>(1, 1000000)(rng) * 16;  // sources no earlier run has cached
  // out[i] = c (+ twice, through a helper in the prelude)
  auto src = [](const std::string& name, int c, bool helper) {
    return std::string(helper ? "float tg_twice(float x) { return 2 * x; }\n" : "") + "__kernel void " + name +
           "(__global float* out) { out[get_global_id(0)] = " + (helper ? "tg_twice" : "") + "((float)" + std::to_string(c) + "); }\n";
  };
  std::vector<std::string> srcs, names;
  std::vector<float> want;
  for (int i = 0; i < 9; i++) {
    bool helper = i >= 6;
    srcs.push_back(src(i % 2 ? "f" : "g", base + i, helper));
    names.push_back(i % 2 ? "f" : "g");
    want.push_back(float(base + i) * (helper ? 2 : 1));
  }
  srcs.push_back(srcs[1]), names.push_back("f"), want.push_back(want[1]);  // a repeated source
  auto run = [&](const std::string& name, const std::string& bin) {
    tinygrad::Buffer out("CL", DType::Float32, 4);
    tinygrad::LaunchDims launch;
    launch.global = {4, 1, 1};
    rt.load(name, bin, launch)->call({out.ptr()}, {}, true);
    std::vector<float> h(4);
    out.copyout(h.data());
    return h;
  };
  auto bins = rt.compiler->compile_many(srcs);
  CHECK(bins[10 - 1] == bins[1]);
  size_t batched = 0;
  for (size_t i = 0; i < srcs.size(); i++) {
    INFO(srcs[i]);
    CHECK(run(names[i], bins[i]) == std::vector<float>(4, want[i]));
    batched += tinygrad::detail::parse_batch_ref(bins[i]).has_value();
  }
  CHECK(batched == srcs.size());  // 7 sources of one prelude and 3 of another: every program has several kernels
  // cached: the same references; a program file that is gone is built again
  CHECK(rt.compiler->compile_many(srcs) == bins);
  std::filesystem::remove(tinygrad::detail::parse_batch_ref(bins[0])->file);
  auto again = rt.compiler->compile_many({srcs[0]});
  CHECK(again[0] != bins[0]);
  CHECK(run(names[0], again[0]) == std::vector<float>(4, want[0]));
  // a source that fails to build fails alone, named; the others in its batch build and run
  std::vector<std::string> mixed = {src("f", base + 9, false), src("f", base + 10, false),
                                    "__kernel void f(__global float* out) { out[0] = nope; }\n"};
  try {
    rt.compiler->compile_many(mixed);
    FAIL_CHECK("no CompileError");
  } catch (const tinygrad::CompileError& e) {
    CHECK_THAT(e.source, Contains("nope"));
    CHECK_THAT(e.source, !Contains(std::to_string(base + 9)));
  }
  mixed.pop_back();
  auto good = rt.compiler->compile_many(mixed);
  CHECK(run("f", good[1]) == std::vector<float>(4, float(base + 10)));
}

TEST_CASE("device: every allocation is freed, and out of memory is a clear DeviceError", "[device]") {
  std::vector<std::string> devs{tinygrad::default_device()};
  if (devs[0] != "CL" && has_device("CL")) devs.push_back("CL");
  for (auto& d : devs) {
    INFO(d);
    auto& al = *tinygrad::runtime(d).allocator;
    int64_t live = al.live_allocations();
    {
      Tensor a = Tensor::rand({64, 64}, DType::Float32, d);
      Tensor b = (a.matmul(a) + 1).relu().sum(0);
      b.realize();
      CHECK(al.live_allocations() > live);
    }
    CHECK(al.live_allocations() == live);
    // far more than any device has: the cache is dropped, the retry fails, and the error says so
    {
      Tensor huge = Tensor::empty({int64_t(1) << 38}, DType::Float32, d);
      CHECK_THROWS_WITH((huge + 1).realize(), Contains("out of memory"));
    }
    CHECK(al.live_allocations() == live);
  }
}

TEST_CASE("device: the CUDA check compiles many kernels an NVRTC program (renamed, by prelude), marks them, names a bad one", "[device][cuda]") {
  if (!tinygrad::detail::nvrtc()) { WARN("libnvrtc not found: NVRTC compile check skipped"); return; }
  tinygrad::detail::NVRTCCompiler nv("compute_90");
  std::mt19937 g(std::random_device{}());
  std::string k = std::to_string(g() % 100000000);  // sources no earlier run checked
  std::string helper = "__device__ inline float tg_twice(float x) { return x * 2.0f + " + k + ".0f; }\n";
  auto kernel = [&](const std::string& name, const std::string& body, bool bounds) {
    return std::string("extern \"C\" __global__ void ") + (bounds ? "__launch_bounds__(32) " : "") + name + "(float* data0) { " + body + " }\n";
  };
  // names repeat (E_4 twice), with and without launch bounds, two share a helper in their prelude, one source twice
  std::vector<std::string> srcs{kernel("E_4", "data0[threadIdx.x] = " + k + ".0f;", true), kernel("E_4", "data0[0] = -" + k + ".0f;", false),
                                helper + kernel("r_2", "data0[0] = tg_twice(data0[1]);", true),
                                helper + kernel("r_3", "data0[1] = tg_twice(data0[0]);", true)};
  srcs.push_back(srcs[0]);
  namespace fs = std::filesystem;
  auto mark = [&](const std::string& src) {
    return tinygrad::detail::cache_dir() / "cuda" / (tinygrad::detail::hex64(tinygrad::detail::hash_bytes(nv.cache_key() + "\n" + src)) + ".checked");
  };
  for (auto& s : srcs) CHECK_FALSE(fs::exists(mark(s)));
  nv.check_many(srcs);
  for (auto& s : srcs) CHECK(fs::exists(mark(s)));
  nv.check_many(srcs);  // all marked: nothing to compile
  // a bad kernel among good ones: the error names it alone; the good ones before it in its batch are compiled
  std::string bad = kernel("E_bad", "data0[0] = no_such_thing_" + k + ";", true);
  try {
    nv.check_many({kernel("E_5", "data0[2] = " + k + ".0f;", true), bad, kernel("E_6", "data0[3] = " + k + ".0f;", false)});
    FAIL_CHECK("no CompileError");
  } catch (const tinygrad::CompileError& e) {
    CHECK_THAT(e.source, Contains("no_such_thing_" + k) && !Contains("E_5"));
    CHECK_THAT(e.log, Contains("no_such_thing_" + k));
  }
  CHECK_FALSE(fs::exists(mark(bad)));
}

TEST_CASE("device: kernels render as CUDA and compile with NVRTC", "[device][cuda]") {
  if (!tinygrad::detail::nvrtc()) { WARN("libnvrtc not found: NVRTC compile check skipped"); return; }
  tinygrad::detail::CUDARenderer ren;
  tinygrad::detail::NVRTCCompiler nv("compute_90");
  Tensor a = Tensor::empty({16, 32}, DType::Float32, "CPU"), h = Tensor::empty({32}, DType::Float16, "CPU");
  Tensor long_h = Tensor::empty({4, 1024}, DType::Float16, "CPU");  // GROUP reduces: shared memory, barrier
  for (Tensor t : std::initializer_list<Tensor>{(a.exp() * 2 - a.sqrt()).max(1),
                   a.matmul(a.T()), (h * h).cast(DType::BFloat16), a.cast(DType::Int64) / 3,
                   (a < 0).where(a, INFINITY), a.sum(), long_h.max(1), (long_h > 0).any(1)})
    for (auto& k : kernels_of(t)) {
      auto p = tinygrad::detail::to_program(k.ast, ren);
      CHECK_THAT(nv.compile(p.src), Contains(".entry " + p.fn));
    }
  // half and bfloat16 convert with the hardware's cvt instructions (bfloat16 rounding by integer work before sm_80)
  auto ptx = [&](const Tensor& t, const std::string& arch) {
    std::string all;
    for (auto& k : kernels_of(t)) all += tinygrad::detail::NVRTCCompiler(arch).compile(tinygrad::detail::to_program(k.ast, ren).src);
    return all;
  };
  std::string p90 = ptx((h * h + 1).cast(DType::BFloat16), "compute_90"), p75 = ptx((h * h + 1).cast(DType::BFloat16), "compute_75");
  CHECK_THAT(p90, Contains("cvt.f32.f16") && Contains("cvt.rn.f16.f32") && Contains("cvt.rn.bf16.f32"));
  CHECK_THAT(p75, Contains("cvt.rn.f16.f32") && !Contains("cvt.rn.bf16.f32"));
}

TEST_CASE("device: vector loads and stores where aligned, per lane where not, GROUP reduces", "[device]") {
  // on the GPU devices present: big elementwise kernels use float4/int4 (the chain) or fall back to per-lane
  // loads (an offset of 1 element), and few-output reduces use workgroup memory; values equal the CPU's
  Tensor x(iota(1 << 16, 1e-4f), {1 << 16});
  auto chain = [](const Tensor& a) { return ((((a * 1.5f + 0.5f).relu() * a) * 0.25f + a) * 2.f); };
  auto cases = [&](const Tensor& a) {
    return std::vector<Tensor>{chain(a), chain(a.shrink({{1, (1 << 16) - 3}})), (a * 1000).cast(DType::Int32) / 3 + (a > 0.3f).cast(DType::Int32),
                               a.reshape({16, 4096}).sum(1), a.reshape({2, 32768}).max(1), (a.reshape({64, 1024}) > 1).any(1).cast(DType::Float32)};
  };
  auto want = cases(x);
  for (std::string d : {"CL", "CUDA"}) {
    if (!has_device(d)) { WARN(d << " is not available here: skipped"); continue; }
    INFO(d);
    auto got = cases(x.to(d));
    for (size_t i = 0; i < want.size(); i++) {
      INFO("case " << i);
      auto a = want[i].cast(DType::Float32).to_vector<float>(), b = got[i].to("CPU").cast(DType::Float32).to_vector<float>();
      REQUIRE(a.size() == b.size());
      for (size_t j = 0; j < a.size(); j++) CHECK(b[j] == Approx(a[j]).epsilon(1e-5).margin(1e-5));
    }
  }
  if (!tinygrad::detail::nvrtc()) { WARN("libnvrtc not found: PTX checks skipped"); return; }
  tinygrad::detail::CUDARenderer ren;
  tinygrad::detail::NVRTCCompiler nv("compute_90");
  Tensor e = Tensor::empty({1 << 16}, DType::Float32, "CPU");
  auto v4_loads = [&](const Tensor& t) {
    auto ks = kernels_of(t);
    REQUIRE(ks.size() == 1);
    std::string ptx = nv.compile(tinygrad::detail::to_program(ks[0].ast, ren).src), line;
    int n = 0;
    for (std::istringstream in(ptx); std::getline(in, line);)
      n += line.find("ld.global") != std::string::npos && line.find(".v4.") != std::string::npos;
    return n;
  };
  CHECK(v4_loads(chain(e)) == 1);
  CHECK(v4_loads(chain(e.shrink({{1, (1 << 16) - 3}}))) == 0);  // not 16-byte aligned: 4 scalar loads
  CHECK(v4_loads(e.reshape({256, 256}).sum(1)) == 0);
}

TEST_CASE("golden: CUDA and OpenCL renderings of a few kernels", "[golden]") {
  namespace fs = std::filesystem;
  Tensor a = Tensor::empty({64, 64}, DType::Float32, "CPU"), b = Tensor::empty({64, 64}, DType::Float32, "CPU");
  Tensor img = Tensor::empty({1, 4, 8, 8}, DType::Float32, "CPU"), w = Tensor::empty({8, 4, 3, 3}, DType::Float32, "CPU");
  std::vector<std::pair<std::string, Tensor>> cases{
      {"elementwise", ((a + b) * a - 1).relu().exp() / (b + 2)},
      {"reduce", (a * b).sum(1)},
      {"group_reduce", (a * b).sum()},
      {"matmul", a.matmul(b)},
      {"conv", img.conv2d(w).relu()},
      {"half", (a.cast(DType::Float16) * 2).cast(DType::BFloat16)},
  };
  tinygrad::detail::CUDARenderer cuda;
  tinygrad::detail::OpenCLRenderer cl;
  bool update = tinygrad::detail::getenv_int("UPDATE_GOLDEN", 0) != 0;
  for (auto& [name, t] : cases) {
    auto ks = kernels_of(t, name == "conv");  // (as for a GPU: the CPU's copy of the conv's weight dropped)
    REQUIRE(ks.size() == 1);
    for (auto [ren, dir, ext] : {std::tuple<tinygrad::Renderer*, const char*, const char*>{&cuda, "cuda", ".cu"}, {&cl, "opencl", ".cl"}}) {
      std::string src = tinygrad::detail::to_program(ks[0].ast, *ren).src;
      fs::path f = fs::path(TG_TEST_SOURCE_DIR) / "tests" / "golden" / dir / (name + ext);
      INFO(f.string());
      if (update) { fs::create_directories(f.parent_path()); std::ofstream(f) << src; continue; }
      std::ifstream in(f);
      REQUIRE(in.good());
      std::string want((std::istreambuf_iterator<char>(in)), {});
      CHECK(src == want);
    }
  }
}

TEST_CASE("tensor cores: float16/bfloat16 matmuls run as mma.sync tiles (TC), compile with NVRTC and match float64", "[device][cuda][tc]") {
  using tinygrad::Opt;
  using tinygrad::OptOp;
  auto mk = [](const tinygrad::Shape& s, uint64_t seed, DType dt, const std::string& dev) {
    Tensor::manual_seed(seed);
    return (Tensor::rand(s, DType::Float32, "CPU") - 0.5).cast(dt).to(dev).realize();
  };
  // at: A is given as its transpose (K x M, a view): its staged tile is m-major (ldmatrix .trans); bt: B as N x K
  // (k-major, the x @ W.T of a Linear), else K x N (n-major)
  struct Case { std::string name; tinygrad::Shape a, b; bool bt, bias; DType dt; bool at = false; };
  std::vector<Case> cases{{"64x64x64 half", {64, 64}, {64, 64}, false, false, DType::Float16},
                          {"128x48 @ 48x32 half, bias and relu", {128, 48}, {48, 32}, false, true, DType::Float16},
                          {"batched 3x32x16 @ 3x16x24 half", {3, 32, 16}, {3, 16, 24}, false, false, DType::Float16},
                          {"x @ W.T 32x64, W 40x64 bfloat16", {32, 64}, {40, 64}, true, false, DType::BFloat16},
                          {"256x256x256 bfloat16", {256, 256}, {256, 256}, false, false, DType::BFloat16},
                          {"100x200 @ 200x60 half, bias and relu (PADTO to tiles, then TC)", {100, 200}, {200, 60}, false, true, DType::Float16},
                          {"x @ W.T 48x72, W 24x72 bfloat16 (K padded)", {48, 72}, {24, 72}, true, false, DType::BFloat16},
                          {"odd 7x129 @ 129x33 half (no TC: padding 7 to 16 would double it)", {7, 129}, {129, 33}, false, false, DType::Float16},
                          {"float32 64x72 @ 72x40 with TF32 allowed (m16n8k8)", {64, 72}, {72, 40}, false, false, DType::Float32},
                          {"staged A.T 128x192 @ W.T 128x192 half (both tiles k-major / m-major)", {192, 128}, {128, 192}, true,
                           true, DType::Float16, true},
                          {"staged A.T 192x64 @ 64x128 bfloat16 (m-major, n-major)", {64, 192}, {64, 128}, false, false, DType::BFloat16, true},
                          {"staged batched 2x128x64 @ 2x64x128 half", {2, 128, 64}, {2, 64, 128}, false, false, DType::Float16},
                          {"staged 128x128 @ 128x256 half, bias and relu", {128, 128}, {128, 256}, false, true, DType::Float16},
                          {"float32 128x96 @ 96x256 TF32, bias and relu (wgmma: B n-major copied k-major)", {128, 96}, {96, 256}, false, true,
                           DType::Float32},
                          {"float32 x @ W.T 128x64, W 192x64 TF32 (wgmma: both k-major)", {128, 64}, {192, 64}, true, false, DType::Float32}};
  // TF32 is off by default (as in PyTorch): float32 cases allow it for this test only; the tile choice is restored
  struct Flags {
    bool tf32 = tinygrad::flags().tf32;
    int stage = tinygrad::flags().tc_stage;
    Flags() { tinygrad::flags().tf32 = true; }
    ~Flags() { tinygrad::flags().tf32 = tf32, tinygrad::flags().tc_stage = stage; tinygrad::clear_program_cache(); }
  } allow;
  auto build = [&](const Case& c, const std::string& dev) {
    Tensor a = mk(c.a, 1, c.dt, dev), b = mk(c.b, 2, c.dt, dev);
    Tensor y = (c.at ? a.transpose(-1, -2) : a).matmul(c.bt ? b.transpose(-1, -2) : b);
    if (c.bias) y = (y + mk({c.b[c.bt ? 0 : 1]}, 3, c.dt, dev)).relu();
    return std::tuple{a, b, y};
  };
  auto tc_amt = [](const std::vector<Opt>& os) {
    for (auto& o : os) if (o.op == OptOp::TC) return o.amt;
    return int64_t(-1);
  };
  // rendering and NVRTC (any machine with libnvrtc): the heuristic picks TC where the sizes are tiles, a staged tile
  // (cp.async copies, ldmatrix fragments) where one fits; every tile shape renders and compiles
  if (tinygrad::detail::nvrtc()) {
    tinygrad::detail::CUDARenderer ren(true), ren_wg(true, true);
    tinygrad::detail::NVRTCCompiler nv("compute_90"), nv_wg("compute_90a");
    int wg_tiles = 0;
    for (auto& c : cases) {
      INFO(c.name);
      auto [a, b, y] = build(c, "CPU");
      auto ks = kernels_of(y);
      bool any_tc = false, any_staged = false;
      for (auto& k : ks) {
        for (int stage : {-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}) {
          tinygrad::flags().tc_stage = stage;
          auto p = tinygrad::detail::to_program(k.ast, ren);
          int64_t amt = tc_amt(p.opts);
          if (stage > 0 && amt != stage) continue;  // the tile does not fit
          if (stage == -1) any_tc |= amt >= 0, any_staged |= amt > 0;
          INFO("tile " << amt);
          std::string ptx = nv.compile(p.src);
          CHECK_THAT(ptx, Contains(".entry " + p.fn));
          if (amt >= 0)
            CHECK_THAT(ptx, Contains(c.dt == DType::Float32 ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32" : "mma.sync.aligned.m16n8k16.row.col.f32"));
          if (amt > 0) CHECK_THAT(ptx, Contains("ldmatrix.sync.aligned.m8n8.x4") && Contains("cp.async.wait_group"));
        }
      }
      // Hopper's wgmma tiles (sm_90a) where they fit: A k-major or m-major, B n-major or k-major, batched
      for (auto& k : ks)
        for (int stage : {14, 15, 16, 17, 18, 19, 20, 21, 22}) {
          tinygrad::flags().tc_stage = stage;
          auto p = tinygrad::detail::to_program(k.ast, ren_wg);
          if (tc_amt(p.opts) != stage) continue;
          INFO("wgmma tile " << stage);
          wg_tiles++;
          std::string ptx = nv_wg.compile(p.src);
          CHECK_THAT(ptx,
                     Contains("wgmma.mma_async.sync.aligned.m64n") && Contains("fence.proxy.async.shared::cta") && Contains("cp.async.wait_group"));
          // 4 stages or more: each step's wgmma stays in flight while the next is issued, waited for after the loop
          bool inflight = tinygrad::detail::tc_tiles[stage].stages >= 4;
          CHECK((p.src.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos) == inflight);
          CHECK((p.src.find("tg_wgmma_wait") != std::string::npos) == inflight);
        }
      tinygrad::flags().tc_stage = -1;
      CHECK(any_tc == (c.name.find("no TC") == std::string::npos));
      CHECK(any_staged == (c.name.find("staged") != std::string::npos || c.name.find("PADTO") != std::string::npos ||
                           c.name.find("256x256x256") != std::string::npos || c.name.find("64x64x64") != std::string::npos));
    }
    CHECK(wg_tiles >= 8);
    // TC is refused with the reason where it cannot apply
    tinygrad::detail::CUDARenderer no_tc(false);
    auto [a, b, y] = build(cases[0], "CPU");
    tinygrad::Kernel k(kernels_of(y)[0].ast, ren), kn(kernels_of(y)[0].ast, no_tc);
    int64_t r = -1;
    for (auto& x : k.ranges()) if (tinygrad::detail::axis_type(x) == tinygrad::detail::AxisType::REDUCE) r = x->range_id();
    auto why = [](tinygrad::Kernel kk, const Opt& o) {
      try { kk.apply(o); return std::string("accepted"); } catch (const tinygrad::KernelOptError& e) { return std::string(e.what()); }
    };
    CHECK(why(k, {OptOp::TC, r, 0}) == "accepted");
    CHECK(why(k, {OptOp::TC, r, 4}) == "accepted");
    CHECK_THAT(why(k, {OptOp::TC, r, 1}), Contains("the tile 128x128x32 does not divide 64x64x64"));
    CHECK_THAT(why(k, {OptOp::TC, r, 99}), Contains("a tile shape, 0 to 22"));
    CHECK_THAT(why(k, {OptOp::TC, r, 14}), Contains("Hopper"));
    CHECK_THAT(why(tinygrad::Kernel(kernels_of(y)[0].ast, ren_wg), {OptOp::TC, r, 14}), Contains("the tile 128x128x64 does not divide 64x64x64"));
    CHECK_THAT(why(kn, {OptOp::TC, r, 0}), Contains("no tensor cores"));
    CHECK_THAT(why(tinygrad::Kernel(k).apply({OptOp::TC, r, 0}), {OptOp::UNROLL, r, 2}), Contains("only UPCAST, LOCAL and SWAP"));
    CHECK_THAT(why(tinygrad::Kernel(k).apply({OptOp::TC, r, 4}), {OptOp::UPCAST, 0, 2}), Contains("a staged TC"));
    Tensor f = Tensor::empty({64, 64}, DType::Float32, "CPU");
    tinygrad::Kernel kf(kernels_of(f.matmul(f))[0].ast, ren);
    CHECK(why(kf, {OptOp::TC, r, 0}) == "accepted");
    CHECK_THAT(why(kf, {OptOp::TC, r, 4}), Contains("float16 or bfloat16"));
    tinygrad::flags().tf32 = false;
    CHECK_THAT(why(kf, {OptOp::TC, r, 0}), Contains("float16") && Contains("TF32=1"));
    tinygrad::flags().tf32 = true;
  } else WARN("libnvrtc not found: TC rendering checks skipped");
  // values on an NVIDIA GPU with tensor cores: against float64 over the same (rounded) inputs, with the heuristic's
  // kernels, then with every staged tile that fits (and none)
  if (!has_device("CUDA")) { WARN("CUDA is not available here: TC value checks skipped"); return; }
  auto check_values = [&](const Case& c) {
    auto [a, b, y] = build(c, "CUDA");
    auto ha = a.cast(DType::Float32).to("CPU").to_vector<float>(), hb = b.cast(DType::Float32).to("CPU").to_vector<float>();
    auto got = y.cast(DType::Float32).to("CPU").to_vector<float>();
    std::vector<float> hbias;
    if (c.bias) hbias = mk({c.b[c.bt ? 0 : 1]}, 3, c.dt, "CPU").cast(DType::Float32).to_vector<float>();
    // the tolerance: the output's own rounding (half types), TF32's products
    CHECK(gemm_mismatches(ha, hb, hbias, got, c.a, c.b, c.at, c.bt, c.dt == DType::Float16 ? 2e-3 : 1e-2) == 0);
  };
  for (auto& c : cases) {
    INFO(c.name);
    check_values(c);
  }
  for (size_t i : {0, 4, 5, 9, 10, 11, 12, 13, 14})
    for (int stage : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}) {
      INFO(cases[i].name << ", tile " << stage);
      tinygrad::flags().tc_stage = stage;
      tinygrad::clear_program_cache();
      check_values(cases[i]);
    }
}

TEST_CASE("TILE: float32 GEMMs as block tiles staged in workgroup memory (cp.async), every tile shape, match float64", "[device][cuda][tc]") {
  using tinygrad::Opt;
  using tinygrad::OptOp;
  struct Case { std::string name; tinygrad::Shape a, b; bool at, bt, bias; };
  std::vector<Case> cases{{"256x128 @ 128x256", {256, 128}, {128, 256}, false, false, false},
                          {"A.T 128x64 @ W.T 64x128, bias and relu (both copied a value at a time)", {64, 128}, {128, 64}, true, true, true},
                          {"batched 2x128x32 @ 2x32x128", {2, 128, 32}, {2, 32, 128}, false, false, false},
                          {"100x60 @ 60x70 (m, n and K padded to tiles)", {100, 60}, {60, 70}, false, false, false},
                          {"odd 7x60 @ 60x70 (no tile: padding 7 to 64 would more than double it)", {7, 60}, {60, 70}, false, false, false}};
  struct Restore {
    int tile = tinygrad::flags().tile;
    ~Restore() { tinygrad::flags().tile = tile; tinygrad::clear_program_cache(); }
  } restore;
  auto build = [](const Case& c, const std::string& dev) {
    Tensor::manual_seed(7);
    Tensor a = (Tensor::rand(c.a, DType::Float32, "CPU") - 0.5).to(dev).realize(),
        b = (Tensor::rand(c.b, DType::Float32, "CPU") - 0.5).to(dev).realize();
    Tensor bias = (Tensor::rand({c.bt ? c.b[c.b.size() - 2] : c.b.back()}, DType::Float32, "CPU") - 0.5).to(dev).realize();
    Tensor y = (c.at ? a.transpose(-1, -2) : a).matmul(c.bt ? b.transpose(-1, -2) : b);
    if (c.bias) y = (y + bias).relu();
    return std::tuple{a, b, bias, y};
  };
  auto tile_of = [](const std::vector<Opt>& os) {
    for (auto& o : os) if (o.op == OptOp::TILE) return o.amt;
    return int64_t(0);
  };
  if (tinygrad::detail::nvrtc()) {
    tinygrad::detail::CUDARenderer ren(true), ren_wg(true, true);
    tinygrad::detail::NVRTCCompiler nv("compute_90"), nv_wg("compute_90a");
    for (auto& c : cases) {
      INFO(c.name);
      auto [a, b, bias, y] = build(c, "CPU");
      auto k = kernels_of(y).at(0);
      tinygrad::flags().tile = 5;
      bool odd = c.name.find("odd") != std::string::npos;
      CHECK((tile_of(tinygrad::detail::to_program(k.ast, ren).opts) > 0) == !odd);
      for (int t = 1; t < int(std::size(tinygrad::detail::simt_tiles)); t++) {
        tinygrad::flags().tile = t;
        auto p = tinygrad::detail::to_program(k.ast, ren);
        if (tile_of(p.opts) != t) continue;
        INFO("tile " << t);
        std::string ptx = nv.compile(p.src);
        CHECK_THAT(ptx, Contains("cp.async") && Contains("ld.shared.v4.f32"));
      }
    }
    // the heuristic's choice: 64 x 64 tiles where they leave 16 blocks or more
    tinygrad::flags().tile = -1;
    Tensor x = Tensor::empty({512, 64}, DType::Float32, "CPU"), w = Tensor::empty({64, 512}, DType::Float32, "CPU");
    CHECK(tile_of(tinygrad::detail::to_program(kernels_of(x.matmul(w)).at(0).ast, ren).opts) == 5);
    CHECK(tile_of(tinygrad::detail::to_program(kernels_of(std::get<3>(build(cases[1], "CPU"))).at(0).ast, ren).opts) == 0);  // 4 blocks
    tinygrad::Kernel k(kernels_of(std::get<3>(build(cases[0], "CPU"))).at(0).ast, ren);
    int64_t r = -1;
    for (auto& x : k.ranges()) if (tinygrad::detail::axis_type(x) == tinygrad::detail::AxisType::REDUCE) r = x->range_id();
    auto why = [](tinygrad::Kernel kk, const Opt& o) {
      try { kk.apply(o); return std::string("accepted"); } catch (const tinygrad::KernelOptError& e) { return std::string(e.what()); }
    };
    CHECK(why(k, {OptOp::TILE, r, 1}) == "accepted");
    CHECK_THAT(why(k, {OptOp::TILE, r, 0}), Contains("a tile shape, 1 to 11"));
    CHECK_THAT(why(tinygrad::Kernel(k).apply({OptOp::TILE, r, 1}), {OptOp::UPCAST, 0, 2}), Contains("after TILE"));
    tinygrad::detail::CUDARenderer no_async(false);
    CHECK_THAT(why(tinygrad::Kernel(k.ast(), no_async), {OptOp::TILE, r, 1}), Contains("asynchronous copies"));
    Tensor h = Tensor::empty({128, 128}, DType::Float16, "CPU");
    CHECK_THAT(why(tinygrad::Kernel(kernels_of(h.matmul(h)).at(0).ast, ren), {OptOp::TILE, r, 1}), Contains("float32 operands"));
  } else WARN("libnvrtc not found: TILE rendering checks skipped");
  if (!has_device("CUDA")) { WARN("CUDA is not available here: TILE value checks skipped"); return; }
  for (auto& c : cases)
    for (int t : {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
      INFO(c.name << ", tile " << t);
      tinygrad::flags().tile = t;
      tinygrad::clear_program_cache();
      auto [a, b, bias, y] = build(c, "CUDA");
      auto ha = a.to("CPU").to_vector<float>(), hb = b.to("CPU").to_vector<float>(), got = y.to("CPU").to_vector<float>();
      CHECK(gemm_mismatches(ha, hb, c.bias ? bias.to("CPU").to_vector<float>() : std::vector<float>{}, got, c.a, c.b, c.at, c.bt, 1e-5) == 0);
    }
}

namespace {
// a conv's forward, input and weight gradients in float64 (scatter loops): y like the output, dx like x, dw like w
struct ConvRef { std::vector<double> y, dx, dw; };
ConvRef conv_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& g, const tinygrad::Shape& xs,
                 const tinygrad::Shape& ws, int64_t stride, int64_t pad) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], K = ws[2], P = (H + 2 * pad - K) / stride + 1, Q = (W + 2 * pad - K) / stride + 1;
  ConvRef r{std::vector<double>(size_t(N * O * P * Q)), std::vector<double>(x.size()), std::vector<double>(w.size())};
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t p = 0; p < P; p++)
        for (int64_t q = 0; q < Q; q++) {
          size_t yi = size_t(((n * O + o) * P + p) * Q + q);
          for (int64_t c = 0; c < C; c++)
            for (int64_t kh = 0; kh < K; kh++)
              for (int64_t kw = 0; kw < K; kw++) {
                int64_t i = p * stride + kh - pad, j = q * stride + kw - pad;
                if (i < 0 || i >= H || j < 0 || j >= W) continue;
                size_t xi = size_t(((n * C + c) * H + i) * W + j), wi = size_t(((o * C + c) * K + kh) * K + kw);
                r.y[yi] += double(x[xi]) * w[wi];
                r.dx[xi] += double(g[yi]) * w[wi];
                r.dw[wi] += double(g[yi]) * x[xi];
              }
        }
  return r;
}
size_t mismatches(const std::vector<float>& got, const std::vector<double>& want, double rel) {
  size_t bad = got.size() != want.size() ? 1 : 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); i++) bad += !(std::abs(got[i] - want[i]) <= rel * (1 + std::abs(want[i])));
  return bad;
}
}  // namespace

TEST_CASE("TILE on convolutions: MERGE makes the forward and both gradients implicit GEMMs, every tile matches float64", "[device][cuda][tc]") {
  using tinygrad::Opt;
  using tinygrad::OptOp;
  struct Case { std::string name; tinygrad::Shape x, w; int64_t stride, pad; };
  std::vector<Case> cases{{"32x8x10x10 * 32x8x3x3", {32, 8, 10, 10}, {32, 8, 3, 3}, 1, 0},
                          {"8x16x12x12 * 64x16x3x3, padding 1 (gated loads of x)", {8, 16, 12, 12}, {64, 16, 3, 3}, 1, 1},
                          {"16x4x11x11 * 32x4x5x5, stride 2, padding 2 (K 100 padded)", {16, 4, 11, 11}, {32, 4, 5, 5}, 2, 2}};
  struct Restore {
    int tile = tinygrad::flags().tile;
    ~Restore() { tinygrad::flags().tile = tile; tinygrad::clear_program_cache(); }
  } restore;
  // y = conv(x, w), and the gradients of sum(y * g)
  auto build = [](const Case& c, const std::string& dev, DType dt = DType::Float32) {
    Tensor::manual_seed(11);
    auto rnd = [&](const tinygrad::Shape& s) { return (Tensor::rand(s, DType::Float32, "CPU") - 0.5).cast(dt).to(dev).realize(); };
    Tensor x = rnd(c.x).requires_grad_(), w = rnd(c.w).requires_grad_();
    Tensor y = x.conv2d(w, std::nullopt, c.stride, c.pad), g = rnd(y.shape());
    auto grads = tinygrad::gradient((y * g).sum(), {x, w});
    return std::tuple{x, w, g, std::vector<Tensor>{y, grads[0], grads[1]}};
  };
  auto has = [](const std::vector<Opt>& os, OptOp op) { return std::any_of(os.begin(), os.end(), [&](auto& o) { return o.op == op; }); };
  if (tinygrad::detail::nvrtc()) {
    tinygrad::detail::CUDARenderer ren(true), ren_wg(true, true);
    tinygrad::detail::NVRTCCompiler nv("compute_90"), nv_wg("compute_90a");
    for (auto& c : cases) {
      auto outs = std::get<3>(build(c, "CPU"));
      for (int t : {-1, 5, 8, 9, 10, 11}) {
        tinygrad::flags().tile = t;
        const char* what[] = {"forward", "dx", "dw"};
        for (size_t i = 0; i < 3; i++) {
          INFO(c.name << ", " << what[i] << ", tile " << t);
          bool tiled = false;
          for (auto& k : kernels_of(outs[i], true)) {
            auto p = tinygrad::detail::to_program(k.ast, ren);
            if (!has(p.opts, OptOp::TILE)) continue;
            tiled = true;
            CHECK(has(p.opts, OptOp::MERGE));
            CHECK_THAT(nv.compile(p.src), Contains("cp.async") && Contains("ld.shared.v4.f32"));
          }
          if (i == 0 && t == 9) CHECK(tiled);  // 64 x 32 divides every case's forward (rows padded to 64, K to 16)
        }
      }
    }
    // the heuristic's choice for the Fashion-MNIST example's second conv (batch 512): 256 x 32 tiles (8 x 8 outputs a
    // thread) over the merged rows (batch and pixels) and K (channels and taps)
    tinygrad::flags().tile = -1;
    Tensor x = Tensor::empty({512, 32, 28, 28}, DType::Float32, "CPU"), w = Tensor::empty({32, 32, 5, 5}, DType::Float32, "CPU");
    auto p = tinygrad::detail::to_program(kernels_of(x.conv2d(w), true).at(0).ast, ren);
    CHECK(std::count_if(p.opts.begin(), p.opts.end(), [](auto& o) { return o.op == OptOp::MERGE; }) == 4);
    CHECK(p.opts.back() == Opt{OptOp::TILE, p.opts.back().axis, 10});
    // float16: the merged forward takes a staged tensor-core tile (TC) and compiles to mma.sync
    auto half = std::get<3>(build(cases[1], "CPU", DType::Float16));
    auto ph = tinygrad::detail::to_program(kernels_of(half[0], true).at(0).ast, ren);
    CHECK(has(ph.opts, OptOp::MERGE));
    CHECK(std::any_of(ph.opts.begin(), ph.opts.end(), [](auto& o) { return o.op == OptOp::TC && o.amt > 0; }));
    CHECK_THAT(nv.compile(ph.src), Contains("mma.sync") && Contains("ldmatrix"));
  } else WARN("libnvrtc not found: conv TILE rendering checks skipped");
  if (!has_device("CUDA")) { WARN("CUDA is not available here: conv TILE value checks skipped"); return; }
  for (auto& c : cases)
    for (int t : {-1, 0, 5, 8, 9, 10, 11}) {
      INFO(c.name << ", tile " << t);
      tinygrad::flags().tile = t;
      tinygrad::clear_program_cache();
      auto [x, w, g, outs] = build(c, "CUDA");
      auto ref = conv_ref(x.to("CPU").to_vector<float>(), w.to("CPU").to_vector<float>(), g.to("CPU").to_vector<float>(), c.x, c.w, c.stride, c.pad);
      CHECK(mismatches(outs[0].to("CPU").to_vector<float>(), ref.y, 1e-5) == 0);
      CHECK(mismatches(outs[1].to("CPU").to_vector<float>(), ref.dx, 1e-5) == 0);
      CHECK(mismatches(outs[2].to("CPU").to_vector<float>(), ref.dw, 1e-4) == 0);
    }
  // float16 operands (tensor cores, float32 accumulation, float16 results) against float64 over the same values
  tinygrad::flags().tile = -1;
  tinygrad::clear_program_cache();
  auto [x, w, g, outs] = build(cases[1], "CUDA", DType::Float16);
  auto f32 = [](const Tensor& t) { return t.cast(DType::Float32).to("CPU").to_vector<float>(); };
  auto ref = conv_ref(f32(x), f32(w), f32(g), cases[1].x, cases[1].w, 1, 1);
  CHECK(mismatches(f32(outs[0]), ref.y, 1e-2) == 0);
  CHECK(mismatches(f32(outs[1]), ref.dx, 1e-2) == 0);
  CHECK(mismatches(f32(outs[2]), ref.dw, 1e-2) == 0);
}

TEST_CASE("row kernels: LayerNorm, RMSNorm, softmax over rows run as one kernel, a row per workgroup, as the CPU computes", "[device]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  auto rnd = [&](tinygrad::Shape s) {
    std::vector<float> v(size_t(tinygrad::detail::prod(s)));
    for (auto& x : v) x = nd(rng);
    return Tensor(v, s, "CPU");
  };
  using F = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  const std::pair<const char*, F> ops[] = {
      {"layer_norm of a sum", [](const Tensor& x, const Tensor& r, const Tensor& w) { return (x + r).layer_norm({x.shape(-1)}, w, w * 0.5f, 1e-5); }},
      {"rms norm", [](const Tensor& x, const Tensor&, const Tensor& w) { return x * (x * x).mean(-1, true).add(1e-6).rsqrt() * w; }},
      {"masked softmax", [](const Tensor& x, const Tensor& r, const Tensor&) { return (x + (r > 1).where(-1e9f, 0.f)).softmax(-1); }},
      {"log_softmax", [](const Tensor& x, const Tensor&, const Tensor&) { return x.log_softmax(-1); }},
  };
  // rows x length: merged (256 rows or more, a length the workgroup divides: 32..256 threads, several rows a workgroup
  // when short), and not (too few rows, a length no workgroup divides: two kernels)
  const std::tuple<int64_t, int64_t, bool> shapes[] = {{300, 384, true}, {256, 64, true},   {260, 96, true},
                                                       {1024, 128, true}, {512, 4096, true}, {100, 384, false}, {300, 100, false}};
  for (std::string d : {"CL", "CUDA"}) {
    if (!has_device(d)) { WARN(d << " is not available here: skipped"); continue; }
    for (auto [R, C, merged] : shapes)
      for (auto& [name, f] : ops) {
        INFO(d << " " << name << " over (" << R << ", " << C << ")");
        Tensor x = rnd({R, C}), r = rnd({R, C}), w = rnd({C});
        auto want = f(x, r, w).to_vector<float>();
        Tensor xd = x.to(d).realize(), rd = r.to(d).realize(), wd = w.to(d).realize();
        auto k0 = tinygrad::run_stats().kernels_run;
        Tensor y = f(xd, rd, wd).realize();
        CHECK(tinygrad::run_stats().kernels_run - k0 == (merged ? 1 : 2));
        auto got = y.to("CPU").to_vector<float>();
        for (size_t i = 0; i < want.size(); i++) REQUIRE(got[i] == Approx(want[i]).margin(2e-5).epsilon(1e-4));
      }
    // backward: the gradients of a LayerNorm and a softmax through their row kernels
    Tensor x = rnd({300, 128}), w = rnd({128}), g = rnd({300, 128});
    auto grads = [&](const std::string& dev) {
      Tensor xs = x.to(dev).detach().requires_grad_(), ws = w.to(dev).detach().requires_grad_();
      ((xs.layer_norm({128}, ws, std::nullopt, 1e-5) + xs.softmax(-1)) * g.to(dev)).sum().backward();
      return std::pair{xs.grad()->to("CPU").to_vector<float>(), ws.grad()->to("CPU").to_vector<float>()};
    };
    auto [gx0, gw0] = grads("CPU");
    auto [gx1, gw1] = grads(d);
    for (size_t i = 0; i < gx0.size(); i++) REQUIRE(gx1[i] == Approx(gx0[i]).margin(1e-4).epsilon(1e-3));
    for (size_t i = 0; i < gw0.size(); i++) REQUIRE(gw1[i] == Approx(gw0[i]).margin(1e-3).epsilon(1e-3));
  }
  // the CUDA rendering (NVRTC, no GPU needed): a warp's lanes reduce by exchanging values, a workgroup a row (or 4 short
  // rows); on a device of workgroups the scheduler makes one kernel of the statistics and the output
  if (!tinygrad::detail::nvrtc()) { WARN("libnvrtc not found: CUDA row kernel checks skipped"); return; }
  tinygrad::detail::CUDARenderer ren;
  tinygrad::detail::NVRTCCompiler nv("compute_90");
  auto row_kernel = [&](const Tensor& t) {
    auto ks = kernels_of(t, true);
    REQUIRE(ks.size() == 1);
    auto p = tinygrad::detail::to_program(ks[0].ast, ren);
    CHECK_THAT(nv.compile(p.src), Contains(".entry " + p.fn));
    return p;
  };
  Tensor e = Tensor::empty({4096, 384}, DType::Float32, "CPU"), e2 = Tensor::empty({4096, 128}, DType::Float32, "CPU");
  auto ln = row_kernel((e + e).layer_norm({384}, std::nullopt, std::nullopt, 1e-5));
  CHECK(ln.launch.global == std::array<int64_t, 3>{2048, 1, 1});  // 64 threads a row (6 values each), 2 rows a workgroup
  CHECK(ln.launch.local == std::array<int64_t, 3>{64, 2, 1});
  CHECK_THAT(ln.src, Contains("__shfl_xor_sync"));
  auto sm = row_kernel(e2.softmax(-1));
  CHECK(sm.launch.local == std::array<int64_t, 3>{32, 4, 1});
  CHECK_THAT(sm.src, Contains("__shfl_xor_sync") && !Contains("__syncthreads"));
}
