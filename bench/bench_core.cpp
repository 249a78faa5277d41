// bench_core: the core performance report of tinygrad.hpp on the CPU device, each figure next to a
// peer measured in the same run:
//   1. a fused 10-op elementwise chain over 16M float32 (GB/s) vs a hand-written C++ loop
//   2. float32 matmul 256/512/1024/2048, 1 thread (GFLOP/s) vs Eigen (C.noalias() = A*B, 1 thread); 1024 again with
//      BEAM=2 (search time, GFLOP/s) and in a second process that finds the searched kernel in the disk cache;
//      1024 on every core, default and BEAM=2, vs Eigen on as many OpenMP threads; a Linear layer's x @ W.T on every
//      core (both operands contiguous along K) vs Eigen's A * B.transpose()
//   3. host overhead of realizing a small graph whose kernel is already compiled (us)
//   4. first-kernel latency, cold (empty CACHEDIR) and warm (disk cache hit), vs one bare `cc -shared`
//   5. a long float sum: 1e8 floats (GB/s) vs Eigen's sum, and its relative error (random values; 1e9 x 0.1)
//
// Usage: bench_core            run everything (each part in a child process of this binary) and print the table
//        bench_core --ew | --matmul [N] | --matmul-all [N] | --linear | --overhead | --sum | --first-kernel SRC_OUT
//                                   one part; prints "@R key value" lines
//
// The number of CPU threads a kernel uses is baked in when the device opens (THREADS env / flags().threads), so
// every part runs in its own process with its own THREADS. Always exits 0: it is a report; misses are marked.
// It measures the CPU device whatever DEV says (the peers are host loops and Eigen, and it reads results through host
// pointers): main() pins the default device to CPU before any tensor exists, so it runs alike with and without a GPU.
// Children are started without a shell (posix_spawn).
#include <tinygrad.hpp>

#include <Eigen/Dense>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using tinygrad::Tensor;
namespace fs = std::filesystem;

namespace {

double now() { return tinygrad::detail::now_s(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
double best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
void result(const char* key, double v) { std::printf("@R %s %.9g\n", key, v); std::fflush(stdout); }
template <class T> void keep(T* p) { asm volatile("" : : "g"(p) : "memory"); }  // the compiler must assume *p is read

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& f : v) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; f = float(x >> 8) / 16777216.0f * 2.0f - 1.0f; }
  return v;
}
// a realized tensor's host memory. NOTE: only a CPU buffer is host memory (a CUDA buffer's pointer segfaults here)
const float* data_of(const Tensor& t) {
  if (t.device() != "CPU") throw tinygrad::DeviceError("bench_core: host access to a tensor on " + t.device() + "; the bench pins DEV=CPU");
  auto& u = t.uop();
  auto buf = u->op == tinygrad::Ops::BUFFER ? u->buffer() : u->src[0]->buffer();
  return static_cast<const float*>(buf->ptr());
}

// ---------------------------------------------------------------------------------------------
// 1. elementwise chain: 3 inputs, 10 ALU ops (as the graph counts them: sub is ADD+NEG, relu is MAX)
//   t = (a*1.5 + b)*c - a ; t = relu(t) ; t = t*2 + b ; out = t*0.5 + c
constexpr int64_t kEwN = int64_t(1) << 24;  // 16M floats = 64 MiB per buffer
Tensor ew_graph(const Tensor& a, const Tensor& b, const Tensor& c) {
  Tensor t = ((a * 1.5 + b) * c - a).relu();
  return (t * 2.0 + b) * 0.5 + c;
}
// the hand loop, same math. GCC -O2 needs two nudges to vectorize it (checked with -fopt-info-vec): blocks of 64, so
// its "very cheap" cost model needs no epilogue, and -fno-trapping-math (a flag the kernels are built with too) so the
// relu compare may be if-converted to vmaxps; without them it is a scalar loop with a mispredicted branch (~1.5 GB/s).
#if defined(__GNUC__) && !defined(__clang__)
#define TG_HAND_FLAGS __attribute__((noinline, optimize("no-trapping-math")))
#else
#define TG_HAND_FLAGS __attribute__((noinline))
#endif
TG_HAND_FLAGS void ew_hand(const float* __restrict a, const float* __restrict b, const float* __restrict c, float* __restrict o, int64_t lo,
                                       int64_t hi) {
  for (int64_t i = lo; i < hi; i += 64)
    for (int64_t j = i; j < i + 64; j++) {
      float t = (a[j] * 1.5f + b[j]) * c[j] - a[j];
      t = t > 0.0f ? t : 0.0f;  // relu
      o[j] = (t * 2.0f + b[j]) * 0.5f + c[j];
    }
}
void ew_hand_threads(const float* a, const float* b, const float* c, float* o, int64_t n, int nt) {
  if (nt <= 1) { ew_hand(a, b, c, o, 0, n); return; }
  std::vector<std::thread> ts;
  int64_t chunk = n / nt;  // n is a multiple of 64*nt
  for (int i = 1; i < nt; i++) ts.emplace_back(ew_hand, a, b, c, o, i * chunk, (i + 1) * chunk);
  ew_hand(a, b, c, o, 0, chunk);
  for (auto& t : ts) t.join();
}

void run_ew() {
  int th = tinygrad::cpu_threads();
  auto ha = random_floats(size_t(kEwN), 1), hb = random_floats(size_t(kEwN), 2), hc = random_floats(size_t(kEwN), 3);
  Tensor a = Tensor(ha), b = Tensor(hb), c = Tensor(hc);
  a.realize(); b.realize(); c.realize();
  std::vector<float> o1(static_cast<size_t>(kEwN)), on(static_cast<size_t>(kEwN));  // the hand loops' outputs, touched before timing
  const double bytes = 4.0 * 4.0 * double(kEwN);        // 3 reads + 1 write of float32
  // warm: compile the kernel, fault in the output buffers
  auto k0 = tinygrad::run_stats().kernels_compiled;
  { Tensor r = ew_graph(a, b, c); r.realize(); }
  result("ew.kernels_compiled", double(tinygrad::run_stats().kernels_compiled - k0));
  ew_hand_threads(ha.data(), hb.data(), hc.data(), o1.data(), kEwN, 1);
  ew_hand_threads(ha.data(), hb.data(), hc.data(), on.data(), kEwN, th);
  std::vector<double> t_tg, t_h1, t_hn;
  auto kr = tinygrad::run_stats().kernels_run;
  double max_err = 0;
  const int reps = 30;
  for (int r = 0; r < reps; r++) {  // interleaved so machine noise hits all three alike
    Tensor out = ew_graph(a, b, c);
    double t0 = now();
    out.realize();
    t_tg.push_back(now() - t0);
    if (r == reps - 1) {
      ew_hand(ha.data(), hb.data(), hc.data(), o1.data(), 0, kEwN);
      const float* p = data_of(out);
      for (int64_t i = 0; i < kEwN; i++) max_err = std::max(max_err, double(std::fabs(p[i] - o1[size_t(i)])));
    }
    out = Tensor();  // the output buffer returns to the LRU cache; the next realize reuses it (warm pages)
    t0 = now();
    ew_hand_threads(ha.data(), hb.data(), hc.data(), o1.data(), kEwN, 1);
    keep(o1.data());
    t_h1.push_back(now() - t0);
    t0 = now();
    ew_hand_threads(ha.data(), hb.data(), hc.data(), on.data(), kEwN, th);
    keep(on.data());
    t_hn.push_back(now() - t0);
  }
  result("ew.threads", th);
  result("ew.kernels_per_realize", double(tinygrad::run_stats().kernels_run - kr) / reps);
  result("ew.tg_gbs", bytes / best(t_tg) / 1e9);
  result("ew.tg_gbs_med", bytes / median(t_tg) / 1e9);
  result("ew.hand1_gbs", bytes / best(t_h1) / 1e9);
  result("ew.hand1_gbs_med", bytes / median(t_h1) / 1e9);
  result("ew.handn_gbs", bytes / best(t_hn) / 1e9);
  result("ew.handn_gbs_med", bytes / median(t_hn) / 1e9);
  result("ew.max_abs_err", max_err);
}

// ---------------------------------------------------------------------------------------------
// 2. matmul, 1 thread, row-major on both sides: C[i,j] = sum_k A[i,k] B[k,j]
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// one product C = A (m x k) times B (k x n), or times B^T with B (n x k) row-major (a Linear layer's x @ W.T: both
// operands contiguous along k), ours and Eigen's alternately; results under key
void run_gemm(const std::string& k, int64_t m, int64_t kk, int64_t n, bool bt) {
  auto ha = random_floats(size_t(m * kk), uint32_t(10 + m)), hb = random_floats(size_t(kk * n), uint32_t(20 + n));
  Tensor a = Tensor(ha, {m, kk}), b = bt ? Tensor(hb, {n, kk}) : Tensor(hb, {kk, n});
  a.realize(); b.realize();
  RowMat A = Eigen::Map<RowMat>(ha.data(), m, kk),
         B = bt ? RowMat(Eigen::Map<RowMat>(hb.data(), n, kk)) : RowMat(Eigen::Map<RowMat>(hb.data(), kk, n)), C(m, n);
  auto ours = [&] { return bt ? a.matmul(b.transpose(0, 1)) : a.matmul(b); };
  auto eigen = [&] { if (bt) C.noalias() = A * B.transpose(); else C.noalias() = A * B; };
  const double flop = 2.0 * double(m) * double(n) * double(kk);
  // warm up both (tinygrad compiles here), then alternate until ~1.5 s of tinygrad time or 25 reps
  double tc0 = now();
  { Tensor w = ours(); w.realize(); }
  double first = now() - tc0;
  eigen();
  std::vector<double> t_tg, t_eg;
  double spent = 0, max_err = 0;
  for (int r = 0; r < 25 && (r < 3 || spent < 1.5); r++) {
    Tensor out = ours();
    double t0 = now();
    out.realize();
    double dt = now() - t0;
    t_tg.push_back(dt); spent += dt;
    t0 = now();
    eigen();
    keep(C.data());
    t_eg.push_back(now() - t0);
    if (r == 0) {
      const float* p = data_of(out);
      for (int64_t i = 0; i < m * n; i++) max_err = std::max(max_err, double(std::fabs(p[i] - C.data()[i])));
    }
  }
  result((k + ".first_s").c_str(), first);
  result((k + ".tg_gflops").c_str(), flop / best(t_tg) / 1e9);
  result((k + ".tg_gflops_med").c_str(), flop / median(t_tg) / 1e9);
  result((k + ".eigen_gflops").c_str(), flop / best(t_eg) / 1e9);
  result((k + ".eigen_gflops_med").c_str(), flop / median(t_eg) / 1e9);
  result((k + ".max_abs_err").c_str(), max_err);
  result((k + ".reps").c_str(), double(t_tg.size()));
}

// threads: 1, or 0 for every core (ours: the default thread count; Eigen: as many OpenMP threads)
void set_gemm_threads(int threads) {
  if (threads == 1) tinygrad::flags().threads = 1;  // before the device opens: the renderer bakes the thread count in
  Eigen::setNbThreads(threads == 1 ? 1 : tinygrad::cpu_threads());
  result("mm.threads", double(threads == 1 ? 1 : tinygrad::cpu_threads()));
  result("mm.eigen_threads", double(Eigen::nbThreads()));
}
void run_matmul(const std::vector<int64_t>& sizes, int threads = 1) {
  set_gemm_threads(threads);
  for (int64_t n : sizes) run_gemm("mm" + std::to_string(n), n, n, n, false);
  result("mm.searches", double(tinygrad::search_stats().searches));
  result("mm.search_hits", double(tinygrad::search_stats().cache_hits));
}
// a Linear layer's forward, x @ W.T (MiniLM's intermediate layer: 4096 tokens x 384 -> 1536), on every core
void run_linear() {
  set_gemm_threads(0);
  run_gemm("lin", 4096, 384, 1536, true);
}

// ---------------------------------------------------------------------------------------------
// 3. overhead: (a+b)*c over 16 floats, fresh Tensors each iteration over realized inputs, kernel compiled
void run_overhead() {
  Tensor a = Tensor(random_floats(16, 7)), b = Tensor(random_floats(16, 8)), c = Tensor(random_floats(16, 9));
  a.realize(); b.realize(); c.realize();
  const int warm = 1000, iters = 10000;
  auto k0 = tinygrad::run_stats().kernels_compiled;
  for (int i = 0; i < warm; i++) { Tensor r = (a + b) * c; r.realize(); }
  result("oh.kernels_compiled", double(tinygrad::run_stats().kernels_compiled - k0));
  std::vector<double> t_build, t_real, t_vec, t_kern;
  t_build.reserve(iters); t_real.reserve(iters); t_vec.reserve(iters); t_kern.reserve(iters);
  auto kr = tinygrad::run_stats().kernels_run;
  for (int i = 0; i < iters; i++) {  // graph built + realized
    double t0 = now();
    Tensor r = (a + b) * c;
    double t1 = now();
    r.realize();
    double t2 = now();
    t_build.push_back(t1 - t0);
    t_real.push_back(t2 - t0);
  }
  result("oh.kernels_per_realize", double(tinygrad::run_stats().kernels_run - kr) / iters);
  float sink = 0;
  for (int i = 0; i < warm; i++) sink += ((a + b) * c).to_vector<float>()[0];
  for (int i = 0; i < iters; i++) {  // ... and read back to the host
    double t0 = now();
    auto v = ((a + b) * c).to_vector<float>();
    t_vec.push_back(now() - t0);
    sink += v[0];
  }
  // the kernel alone: call the compiled program directly, as realize does (thread pool dispatch included)
  auto loaded = tinygrad::detail::loaded_programs();
  std::shared_ptr<tinygrad::detail::CompiledKernel> ck = loaded.empty() ? nullptr : loaded[0];  // the only kernel this process compiled
  Tensor out = (a + b) * c;
  out.realize();
  // slot order of the kernel: output first, then inputs in load order (what the schedule binds)
  std::vector<void*> ptrs{const_cast<float*>(data_of(out)), const_cast<float*>(data_of(a)), const_cast<float*>(data_of(b)),
                          const_cast<float*>(data_of(c))};
  if (ck) {
    for (int i = 0; i < warm; i++) ck->prg->call(ptrs, {}, false);
    for (int i = 0; i < iters; i++) {
      double t0 = now();
      ck->prg->call(ptrs, {}, false);
      t_kern.push_back(now() - t0);
    }
  }
  // the timer itself
  std::vector<double> t_clock;
  for (int i = 0; i < iters; i++) { double t0 = now(); t_clock.push_back(now() - t0); }
  result("oh.build_us", median(t_build) * 1e6);
  result("oh.realize_us", median(t_real) * 1e6);
  result("oh.realize_us_p90", [&] { auto v = t_real; std::sort(v.begin(), v.end()); return v[v.size() * 9 / 10]; }() * 1e6);
  result("oh.to_vector_us", median(t_vec) * 1e6);
  result("oh.kernel_us", ck ? median(t_kern) * 1e6 : NAN);
  result("oh.clock_us", median(t_clock) * 1e6);
  result("oh.sink", sink);
}

// ---------------------------------------------------------------------------------------------
// 5. a long sum, read once: 1e8 random floats (400 MB) vs Eigen's vectorized sum on 1 thread; the errors are relative
// to a float64 sum (of |x|: the values have both signs). The sum splits into stages (engine/schedule.hpp, kSumTerms)
void run_sum() {
  constexpr int64_t n = 100000000;
  auto h = random_floats(size_t(n), 4);
  Tensor a = Tensor(h);
  a.realize();
  Eigen::Map<const Eigen::VectorXf> m(h.data(), n);
  double ref = 0, mag = 0;
  for (float f : h) { ref += double(f); mag += std::fabs(double(f)); }
  float tg = a.sum().item<float>(), eg = m.sum();  // warm: compile, fault in the partials
  std::vector<double> t_tg, t_eg;
  for (int r = 0; r < 10; r++) {  // interleaved so machine noise hits both alike
    double t0 = now();
    tg = a.sum().item<float>();
    t_tg.push_back(now() - t0);
    t0 = now();
    eg = m.sum();
    keep(&eg);
    t_eg.push_back(now() - t0);
  }
  result("sum.threads", tinygrad::cpu_threads());
  result("sum.tg_gbs", 4.0 * double(n) / best(t_tg) / 1e9);
  result("sum.eigen_gbs", 4.0 * double(n) / best(t_eg) / 1e9);
  result("sum.tg_err", std::fabs(double(tg) - ref) / mag);
  result("sum.eigen_err", std::fabs(double(eg) - ref) / mag);
  result("sum.const_err", std::fabs(Tensor::full({1000000000}, 0.1).sum().item<double>() / (double(0.1f) * 1e9) - 1));
}

// ---------------------------------------------------------------------------------------------
// 4. first kernel in a fresh process: the child times from the start of its work to the result on the host
int run_first_kernel(const char* src_out, double t_main) {
  double t0 = now();
  std::vector<float> x(16), y(16), z(16);
  for (int i = 0; i < 16; i++) { x[size_t(i)] = float(i); y[size_t(i)] = 1.0f; z[size_t(i)] = 2.0f; }
  Tensor a = Tensor(x), b = Tensor(y), c = Tensor(z);
  auto v = ((a + b) * c).to_vector<float>();
  double t1 = now();
  result("fk.work_s", t1 - t0);
  result("fk.main_s", t1 - t_main);
  result("fk.compiled", double(tinygrad::run_stats().kernels_compiled));
  result("fk.check", v[3]);  // (3+1)*2 = 8
  if (src_out && *src_out) {
    for (auto& ck2 : tinygrad::detail::loaded_programs()) { std::ofstream(src_out) << ck2->spec.src; break; }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// the driver: run each part in a child, collect "@R key value" lines
std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("./bench_core") : p.string();
}
struct Child {
  std::map<std::string, double> r;
  std::string log;  // every other line of its output
  double wall_s = 0;
  int rc = 0;
};
// runs argv (no shell) with its stdout (and stderr when merge_stderr) read through a pipe, or to /dev/null when out is null;
// returns the exit status (-1 when it could not start or did not exit)
int spawn(const std::vector<std::string>& argv, std::string* out, bool merge_stderr = false) {
  int fd[2];
  if (out && ::pipe(fd) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out) {
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    if (merge_stderr) posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int err = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (out) {
    ::close(fd[1]);
    char buf[8192];
    for (ssize_t n; (n = ::read(fd[0], buf, sizeof buf)) > 0;) out->append(buf, size_t(n));
    ::close(fd[0]);
  }
  if (err != 0) return -1;
  int st = 0;
  if (::waitpid(pid, &st, 0) < 0) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
// runs this binary with `env` settings (arguments of env(1): NAME=value, -u NAME) and args, collecting "@R key value" lines
Child run_child(const std::vector<std::string>& env, const std::vector<std::string>& args, bool merge_stderr = false) {
  Child c;
  std::vector<std::string> argv{"env"};
  argv.insert(argv.end(), env.begin(), env.end());  // NOTE: env(1) takes its options (-u) before the assignments
  argv.push_back("DEV=CPU");
  argv.push_back("OMP_WAIT_POLICY=PASSIVE");  // see main()
  argv.push_back(self_exe());
  argv.insert(argv.end(), args.begin(), args.end());
  double t0 = now();
  std::string out;
  c.rc = spawn(argv, &out, merge_stderr);
  c.wall_s = now() - t0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    char key[256];
    double v;
    if (std::sscanf(line.c_str(), "@R %255s %lf", key, &v) == 2) c.r[key] = v;
    else c.log += line + "\n";
  }
  if (c.rc != 0) {
    std::string cmd;
    for (auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    std::fprintf(stderr, "bench_core: child `%s` failed (rc %d)\n%s\n", cmd.c_str(), c.rc, c.log.c_str());
  }
  return c;
}
double get(const Child& c, const std::string& k) { auto it = c.r.find(k); return it == c.r.end() ? NAN : it->second; }

struct Row {
  std::string metric, tg, peer, ratio, target, status;
};
std::vector<Row> rows;
std::string fmt(const char* f, double v) {
  if (std::isnan(v)) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
// higher_better: ratio = tg/peer must be >= target; else ratio (or tg value) must be <= target
void add(const std::string& metric, const std::string& tg, const std::string& peer, double ratio, const std::string& target,
         double check_v, double lim, bool higher_better) {
  std::string st = std::isnan(lim) ? "info"
                   : std::isnan(check_v) ? "MISS (no data)"
                   : (higher_better ? check_v >= lim : check_v <= lim) ? "ok" : "MISS";
  rows.push_back({metric, tg, peer, std::isnan(ratio) ? "" : fmt("%.2fx", ratio), target, st});
}

// CC may hold a command with arguments ("ccache gcc"), as with make
std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> r;
  for (std::string w; in >> w;) r.push_back(w);
  return r.empty() ? std::vector<std::string>{"cc"} : r;
}

std::string resolve_cc() {  // the compiler tinygrad.hpp's CPU device picks: CC, else clang, gcc, cc
  if (const char* e = std::getenv("CC"); e && *e) return e;
  for (const char* c : {"clang", "gcc", "cc"}) if (tinygrad::detail::on_path(c)) return c;
  return "cc";
}

int driver() {
  if (const char* d = std::getenv("DEV"); d && *d && std::string(d) != "CPU")
    std::fprintf(stderr, "bench_core: DEV=%s ignored: this report measures the CPU device\n", d);
  std::string model = tinygrad::detail::cpu_model();
  if (auto p = model.find(": "); p != std::string::npos) model = model.substr(p + 2);
  std::printf("bench_core: tinygrad.hpp CPU device vs peers | %s, %u hardware threads | kernels built by %s\n", model.c_str(),
              std::thread::hardware_concurrency(), resolve_cc().c_str());
  std::fflush(stdout);
  // a private CACHEDIR for the throughput parts, so the report never depends on an old cache
  char tmpl[] = "/tmp/bench_core_XXXXXX";
  std::string tmp = ::mkdtemp(tmpl) ? tmpl : "/tmp/bench_core_tmp";
  std::string cache = tmp + "/cache";

  std::fprintf(stderr, "[1/4] elementwise (default threads, then THREADS=1)...\n");
  Child ewd = run_child({"-u", "THREADS", "CACHEDIR=" + cache}, {"--ew"});
  Child ew1 = run_child({"THREADS=1", "CACHEDIR=" + cache}, {"--ew"});
  std::fprintf(stderr, "[2/4] matmul (1 thread)...\n");
  Child mm = run_child({"-u", "BEAM", "CACHEDIR=" + cache}, {"--matmul"});
  std::fprintf(stderr, "[2/4] matmul 1024 with BEAM=2 (1 thread), then again in a new process...\n");
  Child mmb = run_child({"BEAM=2", "CACHEDIR=" + tmp + "/beam_cache"}, {"--matmul", "1024"});
  Child mmb2 = run_child({"BEAM=2", "CACHEDIR=" + tmp + "/beam_cache"}, {"--matmul", "1024"});
  std::fprintf(stderr, "[2/4] matmul 1024 on every core, default and BEAM=2...\n");
  Child mma = run_child({"-u", "BEAM", "-u", "THREADS", "CACHEDIR=" + cache}, {"--matmul-all", "1024"});
  Child mmab = run_child({"-u", "THREADS", "BEAM=2", "CACHEDIR=" + tmp + "/beam_cache"}, {"--matmul-all", "1024"});
  std::fprintf(stderr, "[2/4] Linear forward x @ W.T on every core...\n");
  Child lin = run_child({"-u", "BEAM", "-u", "THREADS", "CACHEDIR=" + cache}, {"--linear"});
  std::fprintf(stderr, "[3/4] small-graph overhead...\n");
  Child oh = run_child({"-u", "THREADS", "CACHEDIR=" + cache}, {"--overhead"});
  std::fprintf(stderr, "[5/5] long sums...\n");
  Child sum1 = run_child({"THREADS=1", "CACHEDIR=" + cache}, {"--sum"});
  Child sumd = run_child({"-u", "THREADS", "CACHEDIR=" + cache}, {"--sum"});
  std::fprintf(stderr, "[4/4] first-kernel latency...\n");
  std::vector<double> cold_in, cold_wall, warm_in, warm_wall, cold_compile_ms;
  std::string src = tmp + "/kernel.c";
  for (int i = 0; i < 3; i++) {
    std::string cd = tmp + "/fk_cache_" + std::to_string(i);  // fresh: nothing cached
    Child cold = run_child({"DEBUG=1", "CACHEDIR=" + cd}, {"--first-kernel", src}, true);
    cold_in.push_back(get(cold, "fk.main_s")); cold_wall.push_back(cold.wall_s);
    if (auto p = cold.log.find("compiled 1 kernels in "); p != std::string::npos) cold_compile_ms.push_back(std::atof(cold.log.c_str() + p + 22));
    Child warm = run_child({"CACHEDIR=" + cd}, {"--first-kernel", ""});
    warm_in.push_back(get(warm, "fk.main_s")); warm_wall.push_back(warm.wall_s);
    if (get(cold, "fk.compiled") != 1 || get(warm, "fk.compiled") != 1 || get(cold, "fk.check") != 8)
      std::fprintf(stderr, "bench_core: first-kernel child misbehaved (compiled %g/%g, check %g)\n", get(cold, "fk.compiled"),
                   get(warm, "fk.compiled"), get(cold, "fk.check"));
  }
  // the peer: one bare compiler invocation of the same source to a .so
  std::string cc = resolve_cc();
  auto time_cc = [&](const std::string& compiler) {
    std::vector<double> t;
    for (int i = 0; i < 3; i++) {
      std::vector<std::string> argv = words(compiler);
      argv.insert(argv.end(), {"-shared", "-fPIC", "-O2", "-march=native", "-o", tmp + "/bare.so", src});
      double t0 = now();
      int rc = spawn(argv, nullptr);
      double dt = now() - t0;
      if (rc != 0) return double(NAN);
      t.push_back(dt);
    }
    return median(t);
  };
  double cc_s = time_cc(cc);
  double cc_other_s = time_cc(cc == "gcc" ? "clang" : "gcc");
  double version_s = [&] { auto argv = words(cc); argv.push_back("--version"); double t0 = now(); spawn(argv, nullptr); return now() - t0; }();

  // ---- the table ----
  auto ew_rows = [&](const Child& c, const char* label) {
    double th = get(c, "ew.threads");
    double tg = get(c, "ew.tg_gbs"), hn = get(c, "ew.handn_gbs");
    add(std::string("ew 10-op chain 16M f32, ") + label + " (" + fmt("%.0f", th) + " thr), GB/s", fmt("%.1f", tg),
        fmt("%.1f", hn) + " hand loop " + fmt("%.0f", th) + "thr", tg / hn, ">= 0.80x", tg / hn, 0.8, true);
  };
  ew_rows(ewd, "default threads");
  ew_rows(ew1, "THREADS=1");
  for (int n : {256, 512, 1024, 2048}) {
    std::string k = "mm" + std::to_string(n);
    double tg = get(mm, k + ".tg_gflops"), eg = get(mm, k + ".eigen_gflops");
    add("matmul " + std::to_string(n) + " f32 1 thr, GFLOP/s", fmt("%.1f", tg), fmt("%.1f", eg) + " Eigen", tg / eg,
        n >= 1024 ? ">= 0.80x" : ">= 0.30x", tg / eg, n >= 1024 ? 0.8 : 0.3, true);
  }
  {
    double tg = get(mmb, "mm1024.tg_gflops"), eg = get(mmb, "mm1024.eigen_gflops");
    add("matmul 1024 f32 1 thr, BEAM=2, GFLOP/s", fmt("%.1f", tg), fmt("%.1f", eg) + " Eigen", tg / eg, ">= 1.00x", tg / eg, 1.0, true);
    double search = get(mmb, "mm1024.first_s"), search2 = get(mmb2, "mm1024.first_s");
    add("BEAM=2 search, matmul 1024 (first call), s", fmt("%.1f", search), "163 tinygrad", search / 163, "<= 30 s", search, 30, false);
    add("second process: searches / first call ms", fmt("%.0f", get(mmb2, "mm.searches")), fmt("%.0f ms", search2 * 1e3), NAN, "0 searches",
        get(mmb2, "mm.searches"), 0, false);
  }
  for (auto* c : {&mma, &mmab}) {
    double tg = get(*c, "mm1024.tg_gflops"), eg = get(*c, "mm1024.eigen_gflops");
    std::string thr = fmt("%.0f", get(*c, "mm.threads")) + " thr";
    add("matmul 1024 f32 " + thr + (c == &mma ? ", default" : ", BEAM=2") + ", GFLOP/s", fmt("%.1f", tg),
        fmt("%.1f", eg) + " Eigen " + fmt("%.0f", get(*c, "mm.eigen_threads")) + " thr", tg / eg, c == &mma ? "(info)" : ">= 1.00x", tg / eg,
        c == &mma ? NAN : 1.0, c != &mma);
  }
  {
    double tg = get(lin, "lin.tg_gflops"), eg = get(lin, "lin.eigen_gflops");
    add("Linear x @ W.T 4096x384 -> 1536 f32 " + fmt("%.0f", get(lin, "mm.threads")) + " thr, GFLOP/s", fmt("%.1f", tg),
        fmt("%.1f", eg) + " Eigen " + fmt("%.0f", get(lin, "mm.eigen_threads")) + " thr", tg / eg, ">= 0.80x", tg / eg, 0.8, true);
  }
  double ohr = get(oh, "oh.realize_us"), ohv = get(oh, "oh.to_vector_us"), ohk = get(oh, "oh.kernel_us");
  add("small graph build+realize, us (median)", fmt("%.1f", ohr), fmt("%.2f", ohk) + " kernel call", ohr / ohk, "<= 30 us", ohr, 30, false);
  add("small graph build+realize+to_vector, us", fmt("%.1f", ohv), fmt("%.2f", ohk) + " kernel call", ohv / ohk, "<= 30 us", ohv, 30, false);
  double cold = median(cold_in), warm = median(warm_in);
  add("first kernel cold (empty cache), ms", fmt("%.1f", cold * 1e3), fmt("%.1f", cc_s * 1e3) + " bare " + cc + " -shared", cold / cc_s,
      "(info)", NAN, NAN, false);
  add("first kernel warm (disk cache), ms", fmt("%.2f", warm * 1e3), fmt("%.1f", cc_s * 1e3) + " bare " + cc + " -shared", warm / cc_s,
      "(info)", NAN, NAN, false);

  for (auto* c : {&sum1, &sumd}) {
    double tg = get(*c, "sum.tg_gbs"), eg = get(*c, "sum.eigen_gbs");
    add("sum 1e8 f32 " + fmt("%.0f", get(*c, "sum.threads")) + " thr, GB/s", fmt("%.1f", tg), fmt("%.1f", eg) + " Eigen 1 thr", tg / eg,
        c == &sum1 ? ">= 0.80x" : "(info)", tg / eg, c == &sum1 ? 0.8 : NAN, true);
  }
  add("sum rel. error: 1e8 random / 1e9 x 0.1", fmt("%.1e", get(sum1, "sum.tg_err")) + " / " + fmt("%.1e", get(sum1, "sum.const_err")),
      fmt("%.1e", get(sum1, "sum.eigen_err")) + " Eigen", NAN, "<= 1e-5", std::max(get(sum1, "sum.tg_err"), get(sum1, "sum.const_err")), 1e-5,
      false);
  size_t w[6] = {6, 12, 4, 5, 6, 6};
  for (auto& r : rows) {
    w[0] = std::max(w[0], r.metric.size()); w[1] = std::max(w[1], r.tg.size()); w[2] = std::max(w[2], r.peer.size());
    w[3] = std::max(w[3], r.ratio.size()); w[4] = std::max(w[4], r.target.size()); w[5] = std::max(w[5], r.status.size());
  }
  auto line = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                  const std::string& e, const std::string& f) {
    std::printf("| %-*s | %*s | %-*s | %*s | %-*s | %-*s |\n", int(w[0]), a.c_str(), int(w[1]), b.c_str(), int(w[2]), c.c_str(),
                int(w[3]), d.c_str(), int(w[4]), e.c_str(), int(w[5]), f.c_str());
  };
  std::printf("\n");
  line("metric", "tinygrad.hpp", "peer", "ratio", "target", "status");
  line(std::string(w[0], '-'), std::string(w[1], '-'), std::string(w[2], '-'), std::string(w[3], '-'),
       std::string(w[4], '-'), std::string(w[5], '-'));
  for (auto& r : rows) line(r.metric, r.tg, r.peer, r.ratio, r.target, r.status);

  // ---- details ----
  std::printf("\ndetails (best of N unless noted; ratio = tinygrad.hpp / peer)\n");
  for (auto* c : {&ewd, &ew1})
    std::printf("  ew THREADS=%g: tinygrad %.1f (median %.1f) GB/s | hand 1thr %.1f (median %.1f) | hand %gthr %.1f (median %.1f) | %g "
                "kernel/realize, max|err| %.2g\n",
                get(*c, "ew.threads"), get(*c, "ew.tg_gbs"), get(*c, "ew.tg_gbs_med"), get(*c, "ew.hand1_gbs"),
                get(*c, "ew.hand1_gbs_med"), get(*c, "ew.threads"),
                get(*c, "ew.handn_gbs"), get(*c, "ew.handn_gbs_med"), get(*c, "ew.kernels_per_realize"), get(*c, "ew.max_abs_err"));
  std::printf("  ew default threads vs 1-thread hand loop: %.2fx\n", get(ewd, "ew.tg_gbs") / get(ewd, "ew.hand1_gbs"));
  for (int n : {256, 512, 1024, 2048}) {
    std::string k = "mm" + std::to_string(n);
    std::printf("  matmul %4d: tinygrad %.1f (median %.1f) GFLOP/s, Eigen %.1f (median %.1f), %g reps, first call (compile+run) %.0f ms, max|err| vs "
                "Eigen %.2g\n", n,
                get(mm, k + ".tg_gflops"), get(mm, k + ".tg_gflops_med"), get(mm, k + ".eigen_gflops"),
                get(mm, k + ".eigen_gflops_med"), get(mm, k + ".reps"), get(mm, k + ".first_s") * 1e3, get(mm, k + ".max_abs_err"));
  }
  std::printf("  overhead (median of 10k after 1k warm-up): graph build %.2f us, build+realize %.2f us (p90 %.2f), +to_vector %.2f us, kernel call "
              "alone %.2f us, host overhead ~%.1f us, %g kernel/realize (timer cost %.3f us)\n",
              get(oh, "oh.build_us"), ohr, get(oh, "oh.realize_us_p90"), ohv, ohk, ohr - ohk,
              get(oh, "oh.kernels_per_realize"), get(oh, "oh.clock_us"));
  std::printf("  first kernel, median of 3: cold %.1f ms in-process (whole child process %.1f ms; compile step per DEBUG=1 %.1f ms) | warm %.2f ms "
              "in-process (whole child %.1f ms)\n",
              cold * 1e3, median(cold_wall) * 1e3, median(cold_compile_ms), warm * 1e3, median(warm_wall) * 1e3);
  std::printf("  bare compiler to .so, median of 3: %s %.1f ms, %s %.1f ms; `%s --version` (run once per process by the CPU device) %.1f ms\n",
              cc.c_str(), cc_s * 1e3, cc == "gcc" ? "clang" : "gcc", cc_other_s * 1e3, cc.c_str(), version_s * 1e3);
  int misses = 0;
  for (auto& r : rows) misses += r.status.rfind("MISS", 0) == 0;
  std::printf("\n%d of %zu targets missed%s\n", misses, rows.size(), misses ? " (marked MISS above)" : "");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  double t_main = now();
  tinygrad::flags().dev = "CPU";  // before the first tensor: the default device is chosen once
  std::string mode = argc > 1 ? argv[1] : "";
  // NOTE: after each product Eigen's OpenMP threads spin (GOMP's default active wait) and take the cores from our
  // threads: our 1024 matmul on 2 cores took 25 ms between Eigen's runs, 13.5 ms alone. Passive waiting costs Eigen
  // a wake-up (microseconds). libgomp reads the variable when it loads, so set it and start again.
  if ((mode == "--matmul-all" || mode == "--linear") && !std::getenv("OMP_WAIT_POLICY")) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    std::string exe = self_exe();
    ::execv(exe.c_str(), argv);
  }
  try {
    if (mode == "--ew") run_ew();
    else if (mode == "--matmul-all") run_matmul({argc > 2 ? std::atoll(argv[2]) : 1024}, 0);
    else if (mode == "--linear") run_linear();
    else if (mode == "--matmul") run_matmul(argc > 2 ? std::vector<int64_t>{std::atoll(argv[2])} : std::vector<int64_t>{256, 512, 1024, 2048});
    else if (mode == "--overhead") run_overhead();
    else if (mode == "--sum") run_sum();
    else if (mode == "--first-kernel") return run_first_kernel(argc > 2 ? argv[2] : nullptr, t_main);
    else return driver();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_core %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
  return 0;
}
