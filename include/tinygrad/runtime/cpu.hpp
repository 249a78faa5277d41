#pragma once
// CPU device: the system C compiler builds object files (cached on disk) that runtime/elf.hpp places in memory (or,
// where it cannot, shared objects that dlopen loads), a thread pool runs the THREAD axis.
#include <sched.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstring>
#include <thread>
#include "device.hpp"
#include "elf.hpp"
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

extern char** environ;  // NOTE: declared by <unistd.h> only under _GNU_SOURCE

namespace tinygrad::detail {

// a persistent pool: run(n, f) calls f(0..n-1) across the workers and the caller. Between regions a worker spins a
// while (CPU_SPIN_US, default 500 us) before it sleeps on the condition variable, and so does the caller waiting for
// the last worker: a decode step of a language model runs ~200 threaded kernels of 10-100 us each, and a futex
// wake-up on a VM took about as long as the kernel (SmolLM2-135M decode on a 2-core VM: 60 -> 92-96 tok/s)
class ThreadPool {
 public:
  static inline const double spin_s = double(getenv_int("CPU_SPIN_US", 500)) * 1e-6;
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
    cv_.notify_all();  // NOTE: no system call when no worker sleeps
    work(f, n);
    // NOTE: every worker that took this task has left it too: one still counting on next_ would take indices of the
    // next region's counter and run this region's f after it is gone (a SIGSEGV seen under BEAM on 16 cores)
    spin([&] { return pending_.load() == 0 && active_.load() == 0; });
    std::unique_lock lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0 && active_ == 0; });
    task_ = nullptr;
  }

 private:
  // until ready() or spin_s passed (the clock read every 256 polls)
  template <class F>
  static void spin(F ready) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(spin_s);
    for (uint32_t i = 1; !ready(); i++) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 256 == 0 && std::chrono::steady_clock::now() > end) return;
    }
  }
  void work(const std::function<void(int)>& f, int n) {
    for (int i; (i = next_.fetch_add(1)) < n;) {
      f(i);
      std::lock_guard lk(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
  void loop(int) {
    uint64_t seen = 0;
    for (;;) {
      spin([&] { return gen_.load() != seen; });
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return gen_ != seen; });
      seen = gen_;
      if (stop_) return;
      if (!task_) continue;
      auto [f, n] = std::pair(task_, ntasks_);
      active_++;
      lk.unlock();
      work(*f, n);
      lk.lock();
      if (--active_ == 0) done_cv_.notify_all();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* task_ = nullptr;
  int ntasks_ = 0;
  // pending_: indices not finished; active_: workers inside work(); changed under mu_, read without it while spinning
  std::atomic<int> pending_{0}, active_{0}, next_{0};
  std::atomic<uint64_t> gen_{0};
  bool stop_ = false;
};

// the CPUs this process may run on (a `taskset -c 0,1` run: 2, not the host's 16, as OpenMP counts)
inline int usable_cpus() {
#ifdef __linux__
  if (cpu_set_t set; sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return int(std::thread::hardware_concurrency());
}
}  // namespace tinygrad::detail

namespace tinygrad {  // public (runtime/device.hpp declares it): the CPU device's thread count
TINYGRAD_API int cpu_threads() TINYGRAD_DEF({
  static const int hw = detail::usable_cpus();  // NOTE: once: glibc reads /sys each call (~7 us)
  return std::max(1, flags().threads > 0 ? flags().threads : hw);
})
}  // namespace tinygrad

namespace tinygrad::detail {
// AVX-512 on this CPU, which the kernels are built for (-march=native)
inline bool cpu_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool y = __builtin_cpu_supports("avx512f");
  return y;
#else
  return false;
#endif
}
// its vector registers: 32 with AVX-512 and on AArch64
#if defined(__aarch64__)
inline int cpu_vector_registers() { return 32; }
#else
inline int cpu_vector_registers() { return cpu_avx512() ? 32 : 16; }
#endif
// and their width in bytes: AVX-512's 64 (on a Zen 4 VM, 16-lane floats: MiniLM 1.25x, a BEAM matmul 2x), else 32
// (AVX2; NEON's 16-byte registers take a 32-byte vector as two)
inline int cpu_vector_bytes() { return cpu_avx512() ? 64 : 32; }
inline ThreadPool& cpu_pool() { static ThreadPool p(cpu_threads()); return p; }

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
// CC's words, split as make's shell would but without one: whitespace separates, '...' is literal, "..." and \ escape
inline std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (quote == '\'') { if (c == '\'') quote = 0; else w += c; continue; }
    if (quote == '"') {
      if (c == '"') quote = 0;
      else if (c == '\\' && i + 1 < s.size() && std::strchr("\"\\$`", s[i + 1])) w += s[++i];
      else w += c;
      continue;
    }
    if (c == '\'' || c == '"') quote = c, in_word = true;
    else if (c == '\\' && i + 1 < s.size()) w += s[++i], in_word = true;
    else if (c == ' ' || c == '\t' || c == '\n') { if (in_word) words.push_back(w); w.clear(); in_word = false; }
    else w += c, in_word = true;
  }
  if (quote) throw DeviceError(cat("tinygrad: CC (", s, ") has an unterminated ", quote, " quote"));
  if (in_word) words.push_back(w);
  return words;
}
inline std::string describe_wait_status(int st) {
  return WIFEXITED(st) ? cat("exit status ", WEXITSTATUS(st)) : WIFSIGNALED(st) ? cat("killed by signal ", WTERMSIG(st)) : cat("wait status ", st);
}
// runs args[0] (looked up on PATH) with args, no shell; returns (wait status, stdout+stderr). stdin is /dev/null and the
// child gets no other descriptor of ours. Throws DeviceError when it cannot start.
inline std::pair<int, std::string> run_process(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw DeviceError(cat("tinygrad: cannot run ", args.at(0), ": pipe: ", std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // NOTE: dup2 clears O_CLOEXEC on the copies; the pipe's own ends (CLOEXEC) close at exec, so a compiler spawned
  // meanwhile by another thread cannot hold our write end open. stdin after the dup2s: the pipe may be fd 0.
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // descriptors the application opened without O_CLOEXEC
#endif
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int e = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (e != 0) { ::close(fds[0]); throw DeviceError(cat("tinygrad: cannot run ", args[0], ": ", std::strerror(e))); }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0) out.append(buf, size_t(n));
    else if (errno != EINTR) break;
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0)  // always reaped: no zombie
    if (errno != EINTR) return {-1, out + cat("\ntinygrad: waitpid: ", std::strerror(errno))};
  return {st, out};
}
// the one command a compiler driver prints for `-###` in clang's form (each word in double quotes, \ escaping " \ $),
// or {} where it prints none or several, or another form (gcc's)
inline std::vector<std::string> driver_command(const std::string& out) {
  std::vector<std::vector<std::string>> cmds;
  for (size_t b = 0, e; b < out.size(); b = e + 1) {
    e = out.find('\n', b); if (e == std::string::npos) e = out.size();
    std::string_view l(out.data() + b, e - b);
    if (l.rfind(" \"", 0) != 0) continue;
    std::vector<std::string> words;
    for (size_t i = 0; i < l.size();) {
      if (l[i] == ' ') { i++; continue; }
      if (l[i] != '"') return {};
      std::string w;
      for (i++; i < l.size() && l[i] != '"'; i++) w += l[i] == '\\' && i + 1 < l.size() ? l[++i] : l[i];
      if (i++ >= l.size()) return {};
      words.push_back(std::move(w));
    }
    cmds.push_back(std::move(words));
  }
  return cmds.size() == 1 ? cmds[0] : std::vector<std::string>{};
}
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string l; std::getline(f, l);) if (l.rfind("model name", 0) == 0) return l;
  return "unknown";
}

// the system C compiler: CC (a command with arguments, like make's), else clang, else gcc, else cc
class CCompiler : public Compiler {
 public:
  // dir: the folder for shared objects (a private one when it is unusable or unsafe, see usable_cache_dir);
  // sanitize: a -fsanitize= list every kernel is built with (CPU_SANITIZE), e.g. "undefined"
  explicit CCompiler(const std::filesystem::path& dir = cache_dir() / "cpu", std::string sanitize = getenv_str("CPU_SANITIZE"))
      : dir_(detail::usable_cache_dir(dir)), sanitize_(std::move(sanitize)) {
    if (sanitize_.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789,-_") != std::string::npos)
      throw DeviceError("tinygrad: CPU_SANITIZE must be a list of sanitizers for -fsanitize=, e.g. 'undefined', not '" + sanitize_ + "'");
  }
  std::string cache_key() const override { return setup()->key; }
  std::string compile(const std::string& src) override { return compile_many({src})[0]; }
  // the object a compile placed for `path` (an object file it returned), or nullptr: the loader reads the file then
  std::unique_ptr<detail::ElfObject> take_placed(const std::string& path) {
    std::lock_guard lk(placed_mu_);
    for (auto it = placed_.rbegin(); it != placed_.rend(); ++it) {
      if (it->first != path) continue;
      auto obj = std::move(it->second);
      placed_.erase(std::next(it).base());
      return obj;
    }
    return nullptr;
  }

  // every source not in the cache is compiled by one compiler process per core, to an object file each that is
  // cached and loaded as it is (runtime/elf.hpp); those the loader refuses link into one .so per group
  std::vector<std::string> compile_many(const std::vector<std::string>& srcs) override {
    auto cmd = setup();
    std::vector<std::string> out(srcs.size());
    std::vector<size_t> todo;
    for (size_t i = 0; i < srcs.size(); i++) {
      if (auto p = lookup(*cmd, srcs[i]); !p.empty()) out[i] = p; else todo.push_back(i);
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
    std::vector<std::vector<std::string>> built(ngroups);
    std::vector<std::exception_ptr> err(ngroups);
    parallel_for(ngroups, [&](size_t g) { try { built[g] = build(*cmd, usrc, groups[g]); } catch (...) { err[g] = std::current_exception(); } });
    for (size_t g = 0; g < ngroups; g++) {
      if (!err[g]) continue;
      try { std::rethrow_exception(err[g]); }
      catch (const CompileError&) { for (auto i : groups[g]) build(*cmd, usrc, {i}); throw; }  // name the failing kernel
    }
    for (size_t g = 0; g < ngroups; g++)
      for (size_t k = 0; k < groups[g].size(); k++) for (auto j : uniq[usrc[groups[g][k]]]) out[j] = built[g][k];
    return out;
  }

 private:
  struct Setup {
    std::string cc;                 // CC as given, for messages
    std::vector<std::string> head;  // argv up to the shared object's name
    std::string key;                // names the compiler, its flags and the CPU: part of every cache entry's name
    // the linker's command the driver runs for `head -o OUT IN`, asked once (-###) at the first build: the sources are
    // compiled with -c (clang then compiles in its own process) and linked by it, without a second driver. Empty where
    // the driver does not say (gcc): one driver call compiles and links. NOTE: clang's driver starts in ~45 ms here
    // (it loads libLLVM); compiling and linking through it starts a compiler process too: 150 ms for a small kernel,
    // 105 this way
    mutable std::once_flag link_once;
    mutable std::vector<std::string> link;
    mutable size_t link_in = 0, link_out = 0;  // the words of link that name IN and OUT
  };
  // CC is read on every compile, so fixing it takes effect without a restart; a compile keeps the setup it started with
  std::shared_ptr<const Setup> setup() const {
    std::string cc = getenv_str("CC");
    std::vector<std::string> words = detail::split_words(cc);
    if (!words.empty()) {
      if (!detail::on_path(words[0]))
        throw DeviceError("tinygrad: the C compiler named by CC ('" + cc + "') was not found" +
                          (words.size() > 1 ? " ('" + words[0] + "' is not on PATH)" : "") + "; the CPU device needs one");
    } else {
      for (const char* c : {"clang", "gcc", "cc"}) if (detail::on_path(c)) { cc = c; words = {c}; break; }
      if (words.empty()) throw DeviceError("tinygrad: no C compiler found for the CPU device: set CC or install clang or gcc");
    }
    std::lock_guard lk(mu_);
    if (setup_ && setup_->cc == cc) return setup_;
    auto s = std::make_shared<Setup>();
    s->cc = cc;
    // the command is the words before the first option ("ccache gcc"); CC's options come after ours, so they win ("gcc -O1")
    auto opt = std::find_if(words.begin(), words.end(), [](const std::string& w) { return w.rfind('-', 0) == 0; });
    s->head.assign(words.begin(), opt);
    for (const char* f : {"-shared", "-fPIC", "-O2", "-march=native", "-ffp-contract=fast", "-fno-math-errno", "-fno-trapping-math", "-pipe", "-w"})
      s->head.push_back(f);
    if (!sanitize_.empty()) {
      s->head.insert(s->head.end(), {"-fsanitize=" + sanitize_, "-fno-sanitize-recover=all"});
      // NOTE: clang links its sanitizer runtime statically into executables only; a .so dlopened by an unsanitized process
      // needs the shared one, found through an rpath. gcc links libubsan.so by default and rejects -print-runtime-dir.
      std::vector<std::string> probe = words;
      probe.push_back("-print-runtime-dir");
      auto [st, dir] = detail::run_process(probe);
      while (!dir.empty() && std::isspace((unsigned char)dir.back())) dir.pop_back();
      if (st == 0 && !dir.empty() && dir.find('\n') == std::string::npos) s->head.insert(s->head.end(), {"-shared-libsan", "-Wl,-rpath," + dir});
    }
    s->head.insert(s->head.end(), opt, words.end());
    // NOTE: keyed by the binaries' identities, not `cc --version`: a warm start runs no process
    std::string id;
    for (auto& w : words) if (w.rfind('-', 0) != 0) if (auto p = detail::which(w); !p.empty()) id += detail::file_identity(p) + "|";
    std::string all;
    for (auto& a : s->head) all += a + '\0';
    s->key = hex64(hash_bytes(all + "|" + id + detail::cpu_model()));
    return setup_ = s;
  }
  std::filesystem::path ref_path(const Setup& s, const std::string& src) const { return dir_ / (hex64(hash_bytes(s.key + src)) + ".ref"); }
  // a cache entry is a .ref naming an object or shared object in this folder and its content hash. Anything off is a
  // miss, compiled again: a file that is no regular file (a link, a directory, a FIFO; removed, so the new entry takes
  // its place), a name outside the folder, another hash, an object the loader refuses (it may be older than the loader)
  std::string lookup(const Setup& s, const std::string& src) const {
    namespace fs = std::filesystem;
    auto miss = [&](const fs::path& bad, const std::string& why) {
      if (why.empty()) return std::string();
      detail::remove_cache_entry(bad);
      if (flags().debug >= 1) std::fprintf(stderr, "tinygrad: cache entry refused, compiling again: %s\n", why.c_str());
      return std::string();
    };
    fs::path refp = ref_path(s, src);
    std::string why, ref = read_file(refp, &why, 4096);
    auto nl = ref.find('\n');
    if (nl == std::string::npos) return miss(refp, why);
    std::string name = ref.substr(0, nl), h = ref.substr(nl + 1);
    while (!h.empty() && (h.back() == '\n' || h.back() == ' ')) h.pop_back();
    if (!detail::cache_entry_name(name) || name.find('/') != std::string::npos)
      return miss(refp, cat(refp.string(), " names ", name));
    fs::path obj = dir_ / name;
    std::string data = read_file(obj, &why);
    if (data.empty() || hex64(hash_bytes(data)) != h) return miss(obj, why);
    std::unique_ptr<detail::ElfObject> placed;
    // NOTE: a refused object is left for the rebuild to replace (another process may be loading it)
    if (obj.extension() == ".o" && !(placed = detail::ElfObject::load(data, why)))
      return miss({}, cat(obj.string(), ": ", why));
    detail::touch_cache_entry(refp);
    detail::touch_cache_entry(obj);
    if (placed) keep_placed(obj.string(), std::move(placed));
    return obj.string();
  }
  // objects placed by the lookups and builds that returned their paths, for the loader (take_placed): an object is
  // placed once, and its file, once checked, is not read again (nor missed when another process evicts it meanwhile).
  // NOTE: the last 64: one compiled and never loaded through the device (a BEAM candidate, a test) is dropped in time
  void keep_placed(std::string path, std::unique_ptr<detail::ElfObject> obj) const {
    std::lock_guard lk(placed_mu_);
    placed_.emplace_back(std::move(path), std::move(obj));
    if (placed_.size() > 64) placed_.pop_front();
  }
  // the linker's command for `head -o out in` (see Setup::link), asked of the driver with an empty object
  static void probe_link(const Setup& s, const std::filesystem::path& tmp) {
    auto in = (tmp / "probe.o").string(), out = (tmp / "probe.so").string();
    std::ofstream{in};
    std::vector<std::string> argv = s.head;
    argv.insert(argv.end(), {"-###", "-o", out, in, "-lm"});
    auto [st, log] = detail::run_process(argv);
    auto cmd = st == 0 ? detail::driver_command(log) : std::vector<std::string>{};
    std::string tool = cmd.empty() ? "" : std::filesystem::path(cmd[0]).filename().string();
    if (tool != "ld" && tool.rfind("ld.", 0) != 0) return;  // ld, ld.bfd, ld.gold, ld.lld
    if (std::count(cmd.begin(), cmd.end(), in) != 1 || std::count(cmd.begin(), cmd.end(), out) != 1) return;
    auto at = [&](const std::string& w) { return size_t(std::find(cmd.begin(), cmd.end(), w) - cmd.begin()); };
    s.link_in = at(in), s.link_out = at(out);
    s.link = std::move(cmd);
  }
  // the cached files of srcs[idx]: an object file each where the loader takes it, else a shared object they share
  std::vector<std::string> build(const Setup& s, const std::vector<std::string>& srcs, const std::vector<size_t>& idx) {
    namespace fs = std::filesystem;
    uint64_t h = hash_bytes(s.key);
    for (auto i : idx) h = hash_mix(h, hash_bytes(srcs[i]));
    // NOTE: everything half-written lives in a scratch folder named by our pid, removed when done (one left by a killed
    // process is removed by the next usable_cache_dir); finished files are renamed into place
    fs::path tmp = scratch_path(dir_, "_" + hex64(h));
    std::error_code ec;
    fs::create_directory(tmp, ec);
    if (ec) throw DeviceError(cat("tinygrad: cannot create the build folder ", tmp, " for the C compiler: ", ec.message()));
    struct Cleanup { fs::path p; ~Cleanup() { std::error_code e; fs::remove_all(p, e); } } cleanup{tmp};
    auto put = [&](const fs::path& f, const std::string& data) {
      std::ofstream o(f, std::ios::binary);
      if (!(o.write(data.data(), std::streamsize(data.size())) && o.flush())) throw DeviceError(cat("tinygrad: cannot write ", f));
    };
    // a finished file into the cache, and a ref to it for each of the sources
    auto publish = [&](const fs::path& from, const std::string& name, const std::string& data, const std::vector<size_t>& of) {
      fs::rename(from, dir_ / name, ec);
      if (ec) throw DeviceError(cat("tinygrad: cannot move a compiled kernel into ", dir_, ": ", ec.message()));
      std::string ref = name + "\n" + hex64(hash_bytes(data)) + "\n";
      for (auto i : of) {
        put(tmp / "ref", ref);
        fs::rename(tmp / "ref", ref_path(s, srcs[i]), ec);
      }
      detail::note_cache_write(dir_, data.size() + ref.size() * of.size());
      return (dir_ / name).string();
    };
    // NOTE: asked only when something links (with CPU_SANITIZE, before compiling: how it links decides how it compiles)
    auto probe = [&] { std::call_once(s.link_once, [&] { probe_link(s, tmp); }); };
    auto run = [&](const std::vector<std::string>& argv, const std::string& src) {
      auto [st, log] = detail::run_process(argv);
      if (st != 0) throw CompileError("tinygrad: kernel failed to compile with " + s.cc + " (" + detail::describe_wait_status(st) + ")", src, log);
    };
    // NOTE: a sanitizer's report names the kernel's file and line, so with CPU_SANITIZE the sources are kept in src/
    fs::path srcdir = sanitize_.empty() ? tmp : dir_ / "src";
    fs::create_directory(srcdir, ec);
    std::vector<std::string> files, out(idx.size());
    std::string all;
    for (auto i : idx) {
      auto f = srcdir / (hex64(hash_bytes(srcs[i])) + ".c");
      if (sanitize_.empty()) put(f, srcs[i]); else write_file_atomic(f, srcs[i]);
      files.push_back(f.string());
      all += srcs[i];
    }
    auto so = (tmp / "out.so").string();
    auto driver_link = [&](const std::vector<std::string>& inputs) {  // the driver compiles (sources) and links
      std::vector<std::string> argv = s.head;
      argv.insert(argv.end(), {"-o", so});
      argv.insert(argv.end(), inputs.begin(), inputs.end());
      argv.push_back("-lm");
      run(argv, all);
    };
    std::vector<size_t> linked;  // positions in idx of the objects that link into so
    std::vector<std::string> objs;
    if (!sanitize_.empty()) probe();
    if (!sanitize_.empty() && s.link.empty()) {  // the sanitizer's runtime: one driver call compiles and links
      driver_link(files);
      for (size_t j = 0; j < idx.size(); j++) linked.push_back(j);
    } else {
      for (size_t j = 0; j < files.size(); j++) {
        std::vector<std::string> argv;
        for (auto& w : s.head) if (w != "-shared") argv.push_back(w);
        auto obj = (tmp / cat(j, ".o")).string();
        argv.insert(argv.end(), {"-c", "-o", obj, files[j]});
        run(argv, srcs[idx[j]]);
        // NOTE: with CPU_SANITIZE the kernels call the sanitizer's runtime, which an unsanitized process lacks: linked
        std::string data = read_file(obj), why;
        std::unique_ptr<detail::ElfObject> placed;
        if (sanitize_.empty() && (placed = detail::ElfObject::load(data, why))) {
          out[j] = publish(obj, "o_" + hex64(hash_bytes(s.key + srcs[idx[j]])) + ".o", data, {idx[j]});
          keep_placed(out[j], std::move(placed));
        } else {
          linked.push_back(j), objs.push_back(obj);
        }
      }
      if (!linked.empty()) probe();
      if (!linked.empty() && !s.link.empty()) {  // the linker the driver names
        std::vector<std::string> argv(s.link.begin(), s.link.begin() + long(s.link_in));
        argv.insert(argv.end(), objs.begin(), objs.end());
        argv.insert(argv.end(), s.link.begin() + long(s.link_in) + 1, s.link.end());
        argv[s.link_out < s.link_in ? s.link_out : s.link_out + objs.size() - 1] = so;
        run(argv, all);
      } else if (!linked.empty()) {  // through the driver (gcc)
        driver_link(objs);
      }
    }
    if (!linked.empty()) {
      std::vector<size_t> of;
      for (auto j : linked) of.push_back(idx[j]);
      std::string path = publish(so, "b_" + hex64(h) + ".so", read_file(so), of);
      for (auto j : linked) out[j] = path;
    }
    return out;
  }
  std::filesystem::path dir_;
  std::string sanitize_;
  mutable std::mutex mu_, placed_mu_;
  mutable std::shared_ptr<const Setup> setup_;
  mutable std::deque<std::pair<std::string, std::unique_ptr<detail::ElfObject>>> placed_;
};

// a kernel, from its object file (placed by runtime/elf.hpp) or a dlopen'ed shared object:
// void name(void** bufs, const long long* vals, int core_id, int ncores)
class CPUProgram : public Program {
 public:
  using Fn = void (*)(void**, const long long*, int, int);
  // placed: the object of `path` already placed (CCompiler::take_placed), else it is read from the file
  CPUProgram(const std::string& name, const std::string& path, int threads,
             std::unique_ptr<detail::ElfObject> placed = nullptr) : threads_(threads) {
    if (path.size() > 2 && path.compare(path.size() - 2, 2, ".o") == 0) {
      std::string why;
      obj_ = placed ? std::move(placed) : detail::ElfObject::load(read_file(path), why);
      if (!obj_) throw DeviceError(cat("tinygrad: cannot load the kernel object ", path, ": ", why));
      fn_ = reinterpret_cast<Fn>(obj_->find(name));
      if (!fn_) throw DeviceError("tinygrad: kernel " + name + " not found in " + path);
      return;
    }
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw DeviceError(cat("tinygrad: dlopen of ", path, " failed: ", ::dlerror()));
    fn_ = reinterpret_cast<Fn>(::dlsym(handle_, name.c_str()));
    if (!fn_) { ::dlclose(handle_); throw DeviceError("tinygrad: kernel " + name + " not found in " + path); }
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
  std::unique_ptr<detail::ElfObject> obj_;
  Fn fn_ = nullptr;
  int threads_;
};

// a buffer of 1 MiB or more is its own mapping, so its free gives the memory back to the system (from malloc's heap it
// stayed resident: a language model's prefill capture left 500 MB of a 100 MB model resident); smaller ones malloc's
struct CPUAllocator : Allocator {
  static constexpr size_t own_mapping = size_t(1) << 20;
  void* alloc_raw(size_t bytes) override {
    if (bytes < own_mapping) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void free_raw(void* p, size_t bytes) override { bytes < own_mapping ? std::free(p) : void(::munmap(p, bytes)); }
#ifdef __GLIBC__
  void release_freed() override { ::malloc_trim(0); }  // the small buffers' pages malloc kept (another 100 MB above)
#endif
  void copyin(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copyout(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
};

// the descriptor (nothing opens before first use); RuntimeRegistry adds it on first use (runtime/devices.hpp)
inline DeviceSpec cpu_device() {
  DeviceSpec d;
  d.name = "CPU";
  d.priority = 1;
  d.host = true;
  d.renderer = "C";
  d.open = [](const std::string&) {
    auto rt = std::make_unique<DeviceRuntime>();
    rt->allocator = std::make_unique<CPUAllocator>();
    rt->compiler = std::make_unique<CCompiler>();
    // NOTE: the THREAD axis is baked into the kernel; the program is told how many cores to launch
    rt->load = [r = rt.get()](const std::string& fn, const std::string& bin,
                              const LaunchDims& launch) -> std::unique_ptr<Program> {
      auto* cc = dynamic_cast<CCompiler*>(r->compiler.get());
      return std::make_unique<CPUProgram>(fn, bin, int(launch.threads), cc ? cc->take_placed(bin) : nullptr);
    };
    rt->threads = cpu_threads();
    rt->vector_registers = cpu_vector_registers();
    rt->vector_bytes = cpu_vector_bytes();
    rt->parallelism = cpu_threads();  // one output per core
    return rt;
  };
  return d;
}

}  // namespace tinygrad::detail
