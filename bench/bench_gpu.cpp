// bench_gpu: tinygrad.hpp on a CUDA GPU, each figure next to a peer measured in the same run:
//   1. a fused 7-op elementwise chain over 1 GiB of float32 (GB/s) vs a device-to-device cuMemcpyDtoD, and sums of it
//   2. GEMM float32 1024/4096, float16 and bfloat16 4096/8192 with the default opts (TFLOP/s) vs cuBLAS's cublasGemmEx
//      (libcublas loaded with dlopen; float32 accumulation, TF32 off)
//   3. per-op eager overhead (cached kernel, no JIT) vs the bare launch of the same compiled kernel
//   4. conv2d forward+backward of the Fashion-MNIST example's four convs (batch BS, default 512; TFLOP/s) vs PyTorch's
//      cuDNN (bench/torch_conv_peer.py; float32, TF32 off, cudnn.benchmark; no peer column when it is not installed)
//   5. row reductions over (4096, 384) and (4096, 4096), float16 and float32: LayerNorm of a residual sum, RMSNorm,
//      softmax, jitted, vs a device copy moving as many bytes (its inputs read once and its output written once: a
//      copy of half as many bytes reads them and writes them)
// Bandwidth counts bytes read + written. Exits 0 with a message where no CUDA GPU is usable.
//   bench_gpu           every section on CUDA
//   bench_gpu beam      GEMM float16 4096, float32 4096 and 1024 with BEAM=2 (search time, TFLOP/s) vs cuBLAS
//   bench_gpu gemm      section 2 alone (TC_STAGE=n pins the half GEMMs' TC tile)
//   bench_gpu conv      section 4 alone, on DEV (default CUDA; DEV=CPU BS=16 runs it on the CPU)
//   bench_gpu rows      section 5 alone
//   bench_gpu --tune    every section, then kernel times of other opt lists
#include <tinygrad.hpp>

#include <cstdio>
#include "peer.hpp"

using tinygrad::Tensor;

namespace {
double now() { return tinygrad::detail::now_s(); }
void gpu_sync(const std::string& dev = "CUDA") { tinygrad::runtime(dev).synchronize(); }
// the BUFFER node under a realized tensor (a realized tensor may be a RESHAPE of it)
const tinygrad::UOp* leaf(const Tensor& t) { return t.uop()->op == tinygrad::Ops::BUFFER ? t.uop().get() : t.uop()->src[0].get(); }
void* dev_ptr(const Tensor& t) {
  auto& u = t.uop();
  return (u->op == tinygrad::Ops::BUFFER ? u->buffer() : u->src[0]->buffer())->ptr();
}
// best of reps timings of f (each synchronized)
template <class F> double best_time(int reps, F&& f, const std::string& dev = "CUDA") {
  double b = 1e30;
  for (int i = 0; i < reps; i++) { gpu_sync(dev); double t0 = now(); f(); gpu_sync(dev); b = std::min(b, now() - t0); }
  return b;
}

// the convs of examples/fashion_mnist.hpp (NOTE: keep in step with bench/torch_conv_peer.py's LAYERS)
struct ConvLayer { int64_t cin, cout, k, side; };  // side: the input's height and width
constexpr ConvLayer CONV_LAYERS[] = {{1, 32, 5, 28}, {32, 32, 5, 24}, {32, 64, 3, 10}, {64, 64, 3, 8}};

// 5. a row op's time as 50 jitted calls back to back (best of 5 rounds) next to 50 device copies moving as many bytes
// (read + written); ratio = the copy's time / ours (>= 0.7x: the target)
void row_rows(const std::string& D) {
  using tinygrad::DType;
  auto& al = *tinygrad::runtime(D).allocator;
  for (DType dt : {DType::Float16, DType::Float32})
    for (auto [R, C] : {std::pair<int64_t, int64_t>{4096, 384}, {4096, 4096}}) {
      Tensor x = Tensor::rand({R, C}, dt, D).realize(), res = Tensor::rand({R, C}, dt, D).realize();
      Tensor w = Tensor::rand({C}, dt, D).realize(), b = Tensor::rand({C}, dt, D).realize();
      tinygrad::nn::RMSNorm rms(C, 1e-6);
      rms.weight = w;
      struct Op { const char* name; int reads; std::function<Tensor(const Tensor&, const Tensor&)> f; };
      std::vector<Op> ops{
          {"layer_norm(x + res)", 2, [&](const Tensor& a, const Tensor& r) { return (a + r).layer_norm({C}, w, b, 1e-12); }},
          {"RMSNorm(x)", 1, [&](const Tensor& a, const Tensor&) { return rms(a); }},
          {"softmax(x, -1)", 1, [&](const Tensor& a, const Tensor&) { return a.softmax(-1); }},
      };
      for (auto& op : ops) {
        tinygrad::TinyJit jit(op.f, op.name);
        for (int i = 0; i < 3; i++) jit(x, res);
        double t = best_time(5, [&] { for (int i = 0; i < 50; i++) jit(x, res); }, D) / 50;
        size_t bytes = size_t(R * C) * tinygrad::itemsize(dt) * size_t(op.reads + 1), half = bytes / 2;
        void *src = al.alloc(half), *dst = al.alloc(half);
        double tc = best_time(5, [&] { for (int i = 0; i < 50; i++) al.copy(dst, src, half); }, D) / 50;
        al.free(src, half), al.free(dst, half);
        std::printf("%-20s (%lld, %5lld) %-8s %3zu kernel(s) %8.2f us %7.1f GB/s | copy of %6.1f MB %8.2f us %7.1f GB/s | ratio %.2fx "
                    "(target >= 0.7x)\n",
                    op.name, (long long)R, (long long)C, tinygrad::to_string(dt).c_str(), jit.kernel_count(), t * 1e6, double(bytes) / t / 1e9,
                    double(half) / 1e6, tc * 1e6, double(bytes) / tc / 1e9, tc / t);
      }
    }
}

// 4. each conv's forward and its backward (a fixed random output gradient to input, weight and bias), all realized in
// one schedule, best of 10 after warmup, vs the peer's same step; ratio = PyTorch's time / ours (>= 1: we are faster)
void conv_rows(const std::string& D) {
  // TF32 off (section 2 ends with it on): the peer computes in plain float32 too
  if (tinygrad::flags().tf32) { tinygrad::flags().tf32 = false; tinygrad::clear_program_cache(); }
  const int64_t bs = tinygrad::detail::getenv_int("BS", 512);
  ::setenv("DEV", D.c_str(), 1);  // the peer runs on our device, with as many threads as we use
  ::setenv("THREADS", std::to_string(tinygrad::cpu_threads()).c_str(), 1);
  ::setenv("BS", std::to_string(bs).c_str(), 1);
  std::string peer = peer_output("torch_conv_peer.py");
  std::printf("conv2d forward+backward (dx, dw, db), batch %lld, float32, Fashion-MNIST example's convs on %s%s\n", (long long)bs, D.c_str(),
              peer.empty() ? " (PyTorch peer not run)" : "");
  int i = 0;
  for (auto [cin, cout, k, side] : CONV_LAYERS) {
    i++;
    int64_t o = side - k + 1;
    Tensor::manual_seed(uint64_t(i));
    Tensor x = Tensor::rand({bs, cin, side, side}, tinygrad::DType::Float32, D).realize().requires_grad_();
    Tensor w = (Tensor::rand({cout, cin, k, k}, tinygrad::DType::Float32, D) - 0.5).realize().requires_grad_();
    Tensor b = (Tensor::rand({cout}, tinygrad::DType::Float32, D) - 0.5).realize().requires_grad_();
    Tensor g = Tensor::rand({bs, cout, o, o}, tinygrad::DType::Float32, D).realize();
    auto step = [&] {
      Tensor y = x.conv2d(w, b);
      auto gr = tinygrad::compute_gradient(y, g, {x, w, b});
      Tensor::realize_all({y, *gr[0], *gr[1], *gr[2]});
    };
    for (int j = 0; j < 3; j++) step();  // compile, then warm
    double t = best_time(10, step, D);
    // forward, dx and dw are each a conv of the same multiply-adds
    double flop = 3 * 2.0 * double(bs * cout * o * o * cin * k * k);
    double pt = peer_key(peer, "conv" + std::to_string(i) + "_us") * 1e-6;
    std::printf("  conv%d %2lld->%-2lld k%lld %2lldx%-2lld: tinygrad.hpp %8.1f us %7.2f TFLOP/s", i, (long long)cin, (long long)cout,
                (long long)k, (long long)side, (long long)side, t * 1e6, flop / t / 1e12);
    if (std::isnan(pt)) std::printf("\n");
    else std::printf(" | PyTorch %8.1f us %7.2f TFLOP/s | ratio %.2fx (target >= 0.5x)\n", pt * 1e6, flop / pt / 1e12, pt / t);
  }
}
// 2. GEMM vs cuBLAS (cublasGemmEx: same dtypes in and out, float32 accumulation, TF32 off); beam: BEAM=2 on a few
// sizes, with the search's time (the caller gives the process a fresh CACHEDIR, so the search runs)
void gemm_rows(const std::string& D, bool beam) {
  void* lib = tinygrad::detail::dlopen_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"});
  int (*create)(void**) = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int, const void*, void*, int,
                 int, int, int) = nullptr;
  void* h = nullptr;
  if (lib) {
    tinygrad::detail::load_sym(lib, create, "cublasCreate_v2", "libcublas");
    tinygrad::detail::load_sym(lib, gemm_ex, "cublasGemmEx", "libcublas");
    create(&h);
  } else std::printf("GEMM: libcublas not found: no peer column\n");
  using tinygrad::DType;
  struct Row { DType dt; int n; const char* target; bool tf32 = false; };
  std::vector<Row> rows{{DType::Float32, 1024, ">= 0.7x"}, {DType::Float32, 4096, ">= 0.8x BEAM"}, {DType::Float16, 4096, ">= 0.5x"},
                        {DType::Float16, 8192, ">= 0.5x"}, {DType::BFloat16, 4096, ">= 0.5x"}, {DType::BFloat16, 8192, ">= 0.5x"},
                        {DType::Float32, 4096, "(TF32 on both)", true}};
  if (beam) rows = {{DType::Float16, 4096, ">= 0.8x (stretch)"}, {DType::Float32, 4096, ">= 0.8x"}, {DType::Float32, 1024, ">= 0.7x"}};
  for (auto [dt, N, target, tf32] : rows) {
    // TF32 changes the kernel the cached float32 program was built as: drop the cache
    if (tf32 != tinygrad::flags().tf32) { tinygrad::flags().tf32 = tf32; tinygrad::clear_program_cache(); }
    Tensor a = Tensor::rand({N, N}, DType::Float32, D).cast(dt).realize(), b = Tensor::rand({N, N}, DType::Float32, D).cast(dt).realize();
    Tensor c;
    auto mm = [&] { c = a.matmul(b).realize(); };
    std::optional<tinygrad::BeamScope> scope;  // the matmul's kernel alone is searched
    if (beam) scope.emplace(2);
    double t0 = now();
    mm();
    gpu_sync();
    double first = now() - t0, t = best_time(5, mm), flop = 2.0 * N * N * double(N);
    scope.reset();
    std::printf("GEMM %-8s %5d%s%s: tinygrad.hpp %7.2f TFLOP/s", tinygrad::to_string(dt).c_str(), N, tf32 ? " TF32" : "",
                beam ? " BEAM=2" : "", flop / t / 1e12);
    if (beam) std::printf(" (search and first run %.1f s)", first);
    if (!beam) {  // the default opts of the matmul's kernel (the heuristic's, or TC_STAGE's tile)
      std::unordered_map<const tinygrad::UOp*, int> slots{{leaf(a), 0}, {leaf(b), 1}};
      auto k = tinygrad::detail::create_schedule({a.matmul(b).uop()}, slots, 2).kernels.at(0);
      std::string os;
      for (auto& o : tinygrad::detail::to_program(k.ast, *tinygrad::detail::get_device(D).renderer).opts) os += (os.empty() ? "" : " ") + o.str();
      std::printf(" [%s]", os.c_str());
    }
    if (!h) { std::printf("\n"); continue; }
    int cdt = dt == DType::Float32 ? 0 : dt == DType::Float16 ? 2 : 14;  // CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF
    Tensor cb = Tensor::empty({N, N}, dt, D);
    float one = 1, zero = 0;
    // row-major C = A B is column-major C^T = B^T A^T; CUBLAS_COMPUTE_32F (68): no TF32, float32 accumulation;
    // CUBLAS_COMPUTE_32F_FAST_TF32 (77) for the TF32 row
    auto run = [&] { gemm_ex(h, 0, 0, N, N, N, &one, dev_ptr(b), cdt, N, dev_ptr(a), cdt, N, &zero, dev_ptr(cb), cdt, N, tf32 ? 77 : 68, -1); };
    run();
    double tb = best_time(5, run);
    auto mine = c.cast(DType::Float32).to("CPU").to_vector<float>(), ref = cb.cast(DType::Float32).to("CPU").to_vector<float>();
    double err = 0, scale = 0;
    for (size_t i = 0; i < mine.size(); i += 997) {
      err = std::max(err, double(std::abs(mine[i] - ref[i])));
      scale = std::max(scale, double(std::abs(ref[i])));
    }
    std::printf(" | cuBLAS %7.2f | ratio %.3fx (target %s) | max |diff| %.2g of %.3g\n", flop / tb / 1e12, tb / t, target, err, scale);
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool tune = argc > 1 && std::string(argv[1]) == "--tune";
  if (argc > 1 && std::string(argv[1]) == "beam") {
    // a fresh cache: the searches run (their results are cached per kernel on disk)
    char dir[] = "/tmp/tg_beam_XXXXXX";
    if (!::mkdtemp(dir)) return 1;
    ::setenv("CACHEDIR", dir, 1);
    tinygrad::flags().dev = "CUDA";
    try { tinygrad::runtime("CUDA"); } catch (const tinygrad::Error& e) { std::printf("bench_gpu beam: no CUDA GPU (%s)\n", e.what()); return 0; }
    gemm_rows("CUDA", true);
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "gemm") {
    tinygrad::flags().dev = "CUDA";
    try { tinygrad::runtime("CUDA"); } catch (const tinygrad::Error& e) { std::printf("bench_gpu gemm: no CUDA GPU (%s)\n", e.what()); return 0; }
    gemm_rows("CUDA", false);
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "rows") {
    tinygrad::flags().dev = "CUDA";
    try { tinygrad::runtime("CUDA"); } catch (const tinygrad::Error& e) { std::printf("bench_gpu rows: no CUDA GPU (%s)\n", e.what()); return 0; }
    row_rows("CUDA");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "conv") {
    std::string d = pin_device("CUDA");
    try { tinygrad::runtime(d); } catch (const tinygrad::Error& e) {
      std::printf("bench_gpu conv: device %s not usable (%s)\n", d.c_str(), e.what());
      return 0;
    }
    conv_rows(d);
    return 0;
  }
  tinygrad::flags().dev = "CUDA";  // every tensor here is on CUDA; host reads go through .to("CPU")
  try { tinygrad::runtime("CUDA"); } catch (const tinygrad::Error& e) { std::printf("bench_gpu: no CUDA GPU (%s)\n", e.what()); return 0; }
  const std::string D = "CUDA";

  // ---- 1. elementwise chain vs memcpy ----
  {
    int64_t n = (int64_t(1) << 30) / 4;
    Tensor x = Tensor::rand({n}, tinygrad::DType::Float32, D).realize();
    auto chain = [&] { return ((((x * 1.5f + 0.5f).relu() * x) * 0.25f + x) * 2.f).realize(); };
    chain();  // compile
    double t = best_time(5, chain);
    auto& al = *tinygrad::runtime(D).allocator;
    void* dst = al.alloc(size_t(n) * 4);
    double tm = best_time(5, [&] { al.copy(dst, dev_ptr(x), size_t(n) * 4); });
    al.free(dst, size_t(n) * 4);
    double gbs = 2.0 * double(n) * 4 / t / 1e9, mgbs = 2.0 * double(n) * 4 / tm / 1e9;
    std::printf("elementwise 7-op chain, 1 GiB: %8.1f GB/s | memcpy DtoD %8.1f GB/s | ratio %.2fx (target >= 0.85x)\n", gbs, mgbs, gbs / mgbs);
    // long reduces (split over kernels, GROUP in shared memory): read bandwidth next to memcpy's read half
    double rgbs_all = double(n) * 4 / best_time(5, [&] { return x.sum().realize(); }) / 1e9;
    Tensor rows = x.reshape({64, n / 64});
    double rgbs_rows = double(n) * 4 / best_time(5, [&] { return rows.sum(1).realize(); }) / 1e9;
    std::printf("sum of 1 GiB: all %8.1f GB/s, into 64 rows %8.1f GB/s | memcpy reads %8.1f GB/s | ratios %.2fx, %.2fx\n",
                rgbs_all, rgbs_rows, mgbs / 2, rgbs_all / (mgbs / 2), rgbs_rows / (mgbs / 2));
  }

  gemm_rows(D, false);

  // ---- 3. eager overhead per op vs a bare launch ----
  {
    Tensor x = Tensor::rand({1024}, tinygrad::DType::Float32, D).realize();
    (x + 1).realize();
    gpu_sync();
    int iters = 2000;
    double t0 = now();
    for (int i = 0; i < iters; i++) (x + 1).realize();
    gpu_sync();
    double per_op = (now() - t0) / iters;
    // the same kernel, launched directly
    auto& dev = tinygrad::detail::get_device(D);
    Tensor y = x + 1;
    std::unordered_map<const tinygrad::UOp*, int> slots{{leaf(x), 0}};
    auto k = tinygrad::detail::create_schedule({y.uop()}, slots, 1).kernels.at(0);
    auto spec = tinygrad::detail::to_program(k.ast, *dev.renderer);
    auto prg = dev.rt.load(spec.fn, dev.rt.compiler->compile(spec.src), spec.launch);
    Tensor out = Tensor::empty({1024}, tinygrad::DType::Float32, D);
    std::vector<void*> bufs{dev_ptr(out), dev_ptr(x)};
    gpu_sync();
    t0 = now();
    for (int i = 0; i < iters; i++) prg->call(bufs, {}, false);
    gpu_sync();
    double bare = (now() - t0) / iters;
    std::printf("eager op (x + 1, 1024 floats, cached kernel): %6.2f us/op | bare launch %5.2f us | ratio %.1fx (target <= 20 us; tinygrad ~1500 "
                "us)\n", per_op * 1e6, bare * 1e6, per_op / bare);
  }
  // ---- 4. conv2d forward+backward vs cuDNN ----
  conv_rows(D);
  // ---- 5. row reductions vs a copy of their bytes ----
  row_rows(D);
  // ---- with --tune: kernel times of other opt lists for the same two kernels (to tune the default) ----
  if (tune) {
    using tinygrad::Opt;
    using O = tinygrad::OptOp;
    auto& dev = tinygrad::detail::get_device(D);
    auto time_opts = [&](const Tensor& t, const std::vector<Tensor>& ins, const std::vector<Opt>& opts, double bytes_or_flops, const char* unit) {
      std::unordered_map<const tinygrad::UOp*, int> slots;
      for (size_t i = 0; i < ins.size(); i++) slots[leaf(ins[i])] = int(i);
      auto k = tinygrad::detail::create_schedule({t.uop()}, slots, int(ins.size())).kernels.at(0);
      try {
        auto spec = tinygrad::detail::to_program(k.ast, *dev.renderer, opts);
        auto prg = dev.rt.load(spec.fn, dev.rt.compiler->compile(spec.src), spec.launch);
        Tensor out = Tensor::empty(t.shape(), t.dtype(), D);
        std::vector<void*> bufs{dev_ptr(out)};
        for (int s : std::vector<int>(k.slots.begin() + 1, k.slots.end())) bufs.push_back(dev_ptr(ins[size_t(s)]));
        double b = 1e30;
        for (int i = 0; i < 5; i++) b = std::min(b, prg->call(bufs, {}, true));
        std::string os;
        for (auto& o : spec.opts) os += o.str() + " ";
        std::printf("  %-70s %9.3f ms %8.2f %s\n", os.c_str(), b * 1e3, bytes_or_flops / b / 1e12 * (unit[0] == 'G' ? 1e3 : 1), unit);
      } catch (const tinygrad::Error& e) { std::printf("  failed: %s\n", e.what()); }
    };
    int N = 4096;
    Tensor a = Tensor::rand({N, N}, tinygrad::DType::Float32, D).realize(), b = Tensor::rand({N, N}, tinygrad::DType::Float32, D).realize();
    double fl = 2.0 * N * N * double(N);
    std::vector<std::vector<Opt>> mm{
        {{O::LOCAL, 0, 16}, {O::LOCAL, 1, 16}, {O::UPCAST, 0, 4}, {O::UPCAST, 1, 4}},
        {{O::LOCAL, 0, 8}, {O::LOCAL, 1, 32}, {O::UPCAST, 0, 8}, {O::UPCAST, 1, 4}},
        {{O::LOCAL, 0, 4}, {O::LOCAL, 1, 32}, {O::UPCAST, 0, 8}, {O::UPCAST, 1, 4}},
        {{O::LOCAL, 0, 8}, {O::LOCAL, 1, 32}, {O::UPCAST, 0, 8}, {O::UPCAST, 1, 4}, {O::UNROLL, 2, 2}},
        {{O::LOCAL, 0, 8}, {O::LOCAL, 1, 32}, {O::UPCAST, 0, 4}, {O::UPCAST, 1, 4}},
        {{O::LOCAL, 0, 16}, {O::LOCAL, 1, 32}, {O::UPCAST, 0, 8}, {O::UPCAST, 1, 4}},
        {{O::LOCAL, 0, 8}, {O::LOCAL, 1, 32}, {O::UPCAST, 0, 8}, {O::UPCAST, 1, 2}},
        {{O::LOCAL, 0, 4}, {O::LOCAL, 1, 64}, {O::UPCAST, 0, 8}, {O::UPCAST, 1, 4}},
    };
    std::printf("tune: matmul %d\n", N);
    for (auto& o : mm) time_opts(a.matmul(b), {a, b}, o, fl, "TFLOP/s");
    int64_t n = (int64_t(1) << 30) / 4;
    Tensor x = Tensor::rand({n}, tinygrad::DType::Float32, D).realize();
    Tensor y = ((((x * 1.5f + 0.5f).relu() * x) * 0.25f + x) * 2.f);
    std::printf("tune: elementwise 1 GiB\n");
    for (auto& o : std::vector<std::vector<Opt>>{{{O::LOCAL, 0, 256}}, {{O::LOCAL, 0, 256}, {O::UPCAST, 0, 4}},
                                                 {{O::LOCAL, 0, 256}, {O::UPCAST, 0, 8}}, {{O::LOCAL, 0, 512}, {O::UPCAST, 0, 4}}})
      time_opts(y, {x}, o, 2.0 * double(n) * 4, "GB/s");
  }
  return 0;
}
