#pragma once
// CPU device: the system C compiler builds shared objects (cached on disk), dlopen loads them,
// a thread pool runs the THREAD axis.
#include <dlfcn.h>
#include <sys/wait.h>
#include <condition_variable>
#include <cstring>
#include <thread>
#include "device.hpp"

namespace tinygrad {

// a persistent pool: run(n, f) calls f(0..n-1) across the workers and the caller
class ThreadPool {
 public:
  explicit ThreadPool(int n) {
    for (int i = 1; i < n; i++) workers_.emplace_back([this, i] { loop(i); });
  }
  ~ThreadPool() {
    { std::lock_guard lk(mu_); stop_ = true; gen_++; }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return int(workers_.size()) + 1; }
  void run(int n, const std::function<void(int)>& f) {
    if (n <= 1 || workers_.empty()) { for (int i = 0; i < n; i++) f(i); return; }
    std::lock_guard run_lk(run_mu_);  // one parallel region at a time
    {
      std::lock_guard lk(mu_);
      task_ = &f; ntasks_ = n; next_.store(0); pending_ = n; gen_++;
    }
    cv_.notify_all();
    work();
    std::unique_lock lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void work() {
    for (int i; (i = next_.fetch_add(1)) < ntasks_;) {
      (*task_)(i);
      std::lock_guard lk(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  void loop(int) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return gen_ != seen; });
      seen = gen_;
      if (stop_) return;
      if (!task_) continue;
      lk.unlock();
      work();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* task_ = nullptr;
  int ntasks_ = 0, pending_ = 0;
  std::atomic<int> next_{0};
  uint64_t gen_ = 0;
  bool stop_ = false;
};

inline int cpu_threads() {
  static const int hw = int(std::thread::hardware_concurrency());  // NOTE: glibc reads /sys each call (~7 us)
  return std::max(1, flags().threads > 0 ? flags().threads : hw);
}
inline ThreadPool& cpu_pool() { static ThreadPool p(cpu_threads()); return p; }

namespace detail {
// the full path of an executable on PATH ("" when missing)
inline std::string which(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return ::access(exe.c_str(), X_OK) == 0 ? exe : "";
  std::string path = getenv_str("PATH", "/usr/bin:/bin");
  for (size_t b = 0, e; b <= path.size(); b = e + 1) {
    e = path.find(':', b); if (e == std::string::npos) e = path.size();
    std::string p = path.substr(b, e - b) + "/" + exe;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}
inline bool on_path(const std::string& exe) { return !which(exe).empty(); }
// identifies a compiler binary without running it: its resolved path, size and mtime
inline std::string file_identity(const std::string& path) {
  std::error_code ec;
  auto real = std::filesystem::canonical(path, ec);
  auto p = ec ? std::filesystem::path(path) : real;
  auto sz = std::filesystem::file_size(p, ec);
  auto mt = std::filesystem::last_write_time(p, ec).time_since_epoch().count();
  return cat(p.string(), "|", sz, "|", mt);
}
// run a shell command, return (exit status, stdout+stderr)
inline std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string l; std::getline(f, l);) if (l.rfind("model name", 0) == 0) return l;
  return "unknown";
}
}  // namespace detail

// the system C compiler: CC, else clang, else gcc, else cc
class CCompiler : public Compiler {
 public:
  CCompiler() {
    dir_ = cache_dir() / "cpu";
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
  }
  // the compiler is looked up on every compile, so fixing CC takes effect without a restart
  void resolve() {
    std::string cc = getenv_str("CC");
    if (!cc.empty()) {
      if (!detail::on_path(cc)) throw DeviceError("tinygrad: the C compiler named by CC ('" + cc + "') was not found; the CPU device needs one");
    } else {
      for (const char* c : {"clang", "gcc", "cc"}) if (detail::on_path(c)) { cc = c; break; }
      if (cc.empty()) throw DeviceError("tinygrad: no C compiler found for the CPU device: set CC or install clang or gcc");
    }
    std::lock_guard lk(mu_);
    if (cc == cc_) return;
    cc_ = cc;
    // NOTE: keyed by the binary's identity, not `cc --version`: a warm start runs no process
    key_ = hex64(hash_bytes(cc_ + "|" + flags_ + "|" + detail::file_identity(detail::which(cc_)) + "|" + detail::cpu_model()));
  }
  std::string cache_key() const override { return key_; }
  std::string compile(const std::string& src) override { return compile_many({src})[0]; }

  // every source not in the cache is compiled in one compiler process per core, linked into one .so per group
  std::vector<std::string> compile_many(const std::vector<std::string>& srcs) override {
    resolve();
    std::vector<std::string> out(srcs.size());
    std::vector<size_t> todo;
    for (size_t i = 0; i < srcs.size(); i++) {
      if (auto p = lookup(srcs[i]); !p.empty()) out[i] = p; else todo.push_back(i);
    }
    if (todo.empty()) return out;
    // dedupe identical sources
    std::map<std::string, std::vector<size_t>> uniq;
    for (auto i : todo) uniq[srcs[i]].push_back(i);
    std::vector<std::string> usrc;
    for (auto& [s, _] : uniq) usrc.push_back(s);
    size_t ngroups = std::min<size_t>(usrc.size(), size_t(std::max(1u, std::thread::hardware_concurrency())));
    std::vector<std::vector<size_t>> groups(ngroups);
    for (size_t i = 0; i < usrc.size(); i++) groups[i % ngroups].push_back(i);
    std::vector<std::string> so(ngroups);
    std::vector<std::exception_ptr> err(ngroups);
    std::vector<std::thread> ts;
    // NOTE: an exception must not escape a thread (std::terminate); it is rethrown here
    for (size_t g = 0; g < ngroups; g++)
      ts.emplace_back([&, g] { try { so[g] = build(usrc, groups[g]); } catch (...) { err[g] = std::current_exception(); } });
    for (auto& t : ts) t.join();
    for (size_t g = 0; g < ngroups; g++) {
      if (!err[g]) continue;
      try { std::rethrow_exception(err[g]); }
      catch (const CompileError&) { for (auto i : groups[g]) build(usrc, {i}); throw; }  // name the failing kernel
    }
    for (size_t g = 0; g < ngroups; g++)
      for (auto i : groups[g]) for (auto j : uniq[usrc[i]]) out[j] = so[g];
    return out;
  }

 private:
  std::filesystem::path ref_path(const std::string& src) const { return dir_ / (hex64(hash_bytes(key_ + src)) + ".ref"); }
  // a cache entry is a .ref naming a shared object and its content hash; anything off means recompile
  std::string lookup(const std::string& src) const {
    std::string ref = read_file(ref_path(src));
    auto nl = ref.find('\n');
    if (nl == std::string::npos) return {};
    std::string so = ref.substr(0, nl), h = ref.substr(nl + 1);
    while (!h.empty() && (h.back() == '\n' || h.back() == ' ')) h.pop_back();
    std::string data = read_file(dir_ / so);
    if (data.empty() || hex64(hash_bytes(data)) != h) return {};
    return (dir_ / so).string();
  }
  std::string build(const std::vector<std::string>& srcs, const std::vector<size_t>& idx) {
    uint64_t h = hash_bytes(key_);
    for (auto i : idx) h = hash_mix(h, hash_bytes(srcs[i]));
    std::string name = "b_" + hex64(h) + ".so";
    auto tmpdir = dir_ / cat("tmp_", ::getpid(), "_", hex64(h));
    std::error_code ec;
    std::filesystem::create_directories(tmpdir, ec);
    std::string files;
    for (auto i : idx) {
      auto f = tmpdir / (hex64(hash_bytes(srcs[i])) + ".c");
      std::ofstream(f) << srcs[i];
      files += " '" + f.string() + "'";
    }
    auto tmpso = tmpdir / "out.so";
    auto [rc, log] = detail::run_command(cc_ + " " + flags_ + " -o '" + tmpso.string() + "'" + files + " -lm");
    if (rc != 0) {
      std::filesystem::remove_all(tmpdir, ec);
      std::string all;
      for (auto i : idx) all += srcs[i];
      throw CompileError("tinygrad: kernel failed to compile with " + cc_, all, log);
    }
    std::string data = read_file(tmpso);
    write_file_atomic(dir_ / name, data);
    for (auto i : idx) write_file_atomic(ref_path(srcs[i]), name + "\n" + hex64(hash_bytes(data)) + "\n");
    std::filesystem::remove_all(tmpdir, ec);
    return (dir_ / name).string();
  }
  std::string cc_, key_;
  std::string flags_ = "-shared -fPIC -O2 -march=native -ffp-contract=fast -fno-math-errno -fno-trapping-math -pipe -w";
  std::filesystem::path dir_;
  std::mutex mu_;
};

// a kernel in a dlopen'ed shared object: void name(void** bufs, const long long* vals, int core_id, int ncores)
class CPUProgram : public Program {
 public:
  using Fn = void (*)(void**, const long long*, int, int);
  CPUProgram(const std::string& name, const std::string& so_path, int threads) : threads_(threads) {
    handle_ = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw DeviceError(cat("tinygrad: dlopen of ", so_path, " failed: ", ::dlerror()));
    fn_ = reinterpret_cast<Fn>(::dlsym(handle_, name.c_str()));
    if (!fn_) { ::dlclose(handle_); throw DeviceError("tinygrad: kernel " + name + " not found in " + so_path); }
  }
  ~CPUProgram() override { if (handle_) ::dlclose(handle_); }
  double call(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, bool) override {
    double t0 = now_s();
    auto b = const_cast<void**>(bufs.data());
    auto v = reinterpret_cast<const long long*>(vals.data());
    if (threads_ <= 1) fn_(b, v, 0, 1);
    else cpu_pool().run(threads_, [&](int i) { fn_(b, v, i, threads_); });
    return now_s() - t0;
  }

 private:
  void* handle_ = nullptr;
  Fn fn_ = nullptr;
  int threads_;
};

struct CPUAllocator : Allocator {
  void* alloc_raw(size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void free_raw(void* p, size_t) override { std::free(p); }
  void copyin(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copyout(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
};

namespace detail {
inline const bool cpu_registered = (register_runtime("CPU", [](const std::string&) {
  auto rt = std::make_unique<DeviceRuntime>();
  rt->allocator = std::make_unique<CPUAllocator>();
  rt->compiler = std::make_unique<CCompiler>();
  // NOTE: the THREAD axis is baked into the kernel; the program is told how many cores to launch
  rt->load = [](const std::string& fn, const std::string& bin, const std::vector<int64_t>& launch) -> std::unique_ptr<Program> {
    return std::make_unique<CPUProgram>(fn, bin, launch.empty() ? 1 : int(launch[0]));
  };
  return rt;
}), true);
}  // namespace detail

}  // namespace tinygrad
