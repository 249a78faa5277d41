#pragma once
// runtime: buffers, allocators (LRU reuse), compilers (disk cache), programs, and the device registry.
// The lowest layer above helpers/dtype: it knows nothing of UOps.
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>
#include "../dtype.hpp"
#if TINYGRAD_WITH_INTERNALS
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#endif

namespace tinygrad {

struct Buffer;
// the registered devices, highest priority first
TINYGRAD_API std::vector<std::string> device_names();
// the default device: DEV if set, else the highest-priority device that opens
TINYGRAD_API std::string& default_device();
// the device whose buffers are host memory (the highest-priority one registered as such)
TINYGRAD_API std::string host_device();
// the threads the CPU device runs a kernel on (THREADS, else one a core)
TINYGRAD_API int cpu_threads();
// wait until every kernel and copy queued on the device has finished (timing GPU work)
TINYGRAD_API void synchronize(const std::string& device);
}  // namespace tinygrad

// NOTE: the runtime itself; a TU of a separate-compilation program that is not the library's sees the declarations above
#if TINYGRAD_WITH_INTERNALS
namespace tinygrad {

// raw device memory
struct Allocator {
  virtual ~Allocator() = default;
  virtual void* alloc_raw(size_t bytes) = 0;  // nullptr when out of memory
  virtual void free_raw(void* p, size_t bytes) = 0;
  virtual void release_freed() {}  // give memory freed by free_raw back to the system where the allocator keeps it
  virtual void copyin(void* dst, const void* src, size_t bytes) = 0;   // host -> device
  virtual void copyout(void* dst, const void* src, size_t bytes) = 0;  // device -> host
  virtual void copy(void* dst, const void* src, size_t bytes) {
    std::vector<char> h(bytes);
    copyout(h.data(), src, bytes);
    copyin(dst, h.data(), bytes);
  }

  // LRU reuse of freed buffers: a free keeps the memory for the next alloc of the same size, up to lru_limit() bytes
  // cached; past it the least recently freed go back to the system. O(log sizes) a call, no syscall on a hit
  void* alloc(size_t bytes) {
    std::lock_guard lk(mu);
    if (auto it = sizes_.find(bytes); it != sizes_.end() && it->second.newest != kNil) {
      uint32_t i = it->second.newest;
      unlink(i, it->second);
      live++;
      return nodes_[i].p;
    }
    void* p = alloc_raw(bytes);
    if (!p && cached_) { free_cache_locked(); p = alloc_raw(bytes); }  // out of memory: drop the cache, retry once
    if (!p) throw DeviceError(detail::cat("tinygrad: out of memory allocating ", bytes, " bytes on ", name));
    live++;
    return p;
  }
  void free(void* p, size_t bytes) {
    std::lock_guard lk(mu);
    live--;
    if (!lru || bytes > limit_) { free_raw(p, bytes); return; }
    uint32_t i = kNil;
    if (!spare_.empty()) i = spare_.back(), spare_.pop_back();
    else i = uint32_t(nodes_.size()), nodes_.emplace_back();
    auto& list = sizes_[bytes];
    nodes_[i] = {p, bytes, list.newest, kNil, newest_, kNil};
    if (list.newest != kNil) nodes_[list.newest].next_same = i; else list.oldest = i;
    list.newest = i;
    if (newest_ != kNil) nodes_[newest_].next_all = i; else oldest_ = i;
    newest_ = i;
    cached_ += bytes;
    while (cached_ > limit_) evict_oldest();
  }
  void free_cache() { std::lock_guard lk(mu); free_cache_locked(); }
  int64_t live_allocations() const { return live; }
  // bytes of freed buffers kept for reuse
  size_t cached_bytes() { std::lock_guard lk(mu); return cached_; }
  // the most bytes kept for reuse: LRU_BYTES, default 256 MiB (a training step or a model's run of the sizes this
  // library targets reuses a few tens of MB; more would only keep idle memory from the system). Lowering it evicts
  size_t lru_limit() { std::lock_guard lk(mu); return limit_; }
  void set_lru_limit(size_t bytes) {
    std::lock_guard lk(mu);
    limit_ = bytes;
    while (cached_ > limit_) evict_oldest();
  }

  std::string name;
  bool lru = detail::getenv_int("LRU", 1) != 0;

 private:
  static constexpr uint32_t kNil = ~uint32_t(0);
  // a cached buffer, in two lists: of its size (alloc takes the newest) and of all sizes (eviction takes the oldest)
  struct Node { void* p; size_t bytes; uint32_t prev_same, next_same, prev_all, next_all; };
  struct SizeList { uint32_t oldest = kNil, newest = kNil; };
  void unlink(uint32_t i, SizeList& list) {
    Node& n = nodes_[i];
    (n.prev_same != kNil ? nodes_[n.prev_same].next_same : list.oldest) = n.next_same;
    (n.next_same != kNil ? nodes_[n.next_same].prev_same : list.newest) = n.prev_same;
    (n.prev_all != kNil ? nodes_[n.prev_all].next_all : oldest_) = n.next_all;
    (n.next_all != kNil ? nodes_[n.next_all].prev_all : newest_) = n.prev_all;
    cached_ -= n.bytes;
    spare_.push_back(i);
  }
  void evict_oldest() {
    uint32_t i = oldest_;
    auto it = sizes_.find(nodes_[i].bytes);
    unlink(i, it->second);
    free_raw(nodes_[i].p, nodes_[i].bytes);
    if (it->second.newest == kNil) sizes_.erase(it);  // NOTE: only here: a size reused often keeps its entry
  }
  void free_cache_locked() {
    while (oldest_ != kNil) evict_oldest();
    sizes_.clear();
    release_freed();
  }
  static size_t default_lru_limit() {
    int64_t v = detail::getenv_int("LRU_BYTES", int64_t(256) << 20);
    return v < 0 ? 0 : size_t(v);
  }
  std::mutex mu;
  std::map<size_t, SizeList> sizes_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> spare_;  // free slots of nodes_
  uint32_t oldest_ = kNil, newest_ = kNil;
  size_t cached_ = 0, limit_ = default_lru_limit();
  std::atomic<int64_t> live{0};
};

// a compiled kernel; call() runs it and returns seconds when timing was asked for
struct Program {
  virtual ~Program() = default;
  virtual double call(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, bool wait) = 0;
};

// turns source into a binary; cache_key() names the compiler and its flags
// kernel launches replayed as one (a CUDA graph): built once over programs and their arguments; set_args changes a
// launch's buffers and variable values before the next launch()
struct GraphLaunch {
  Program* prg;
  std::vector<void*> bufs;
  std::vector<int64_t> vals;
};
struct GraphExec {
  virtual ~GraphExec() = default;
  virtual void set_args(size_t i, const std::vector<void*>& bufs, const std::vector<int64_t>& vals) = 0;
  virtual void launch() = 0;
};

struct Compiler {
  virtual ~Compiler() = default;
  virtual std::string cache_key() const = 0;
  virtual std::string compile(const std::string& src) = 0;  // throws CompileError
  // compile several sources at once: here one compile() a thread on every core (a compiler with a batch mode,
  // one process for many sources, overrides it); the first failure in source order is rethrown
  virtual std::vector<std::string> compile_many(const std::vector<std::string>& srcs) {
    std::vector<std::string> r(srcs.size());
    detail::parallel_for(srcs.size(), [&](size_t i) { r[i] = compile(srcs[i]); });
    return r;
  }
  // that the sources compile, when nothing will load them (CUDA_COMPILE_CHECK); a compiler whose fixed cost a batch
  // shares overrides it. Throws the CompileError naming the failing source
  virtual void check_many(const std::vector<std::string>& srcs) { compile_many(srcs); }
};

namespace detail {
// (prelude, kernel) of a source whose one kernel starts a line with `head` ("__kernel ", "extern \"C\" __global__ "): the
// text before it (pragmas, helpers) and the kernel; ("", "") for any other source. The batch builds (OpenCL programs,
// the CUDA check) put the kernels of one prelude in one program
inline std::pair<std::string, std::string> split_kernel(const std::string& src, const std::string& head) {
  size_t at = src.rfind(head, 0) == 0 ? 0 : src.rfind("\n" + head);
  if (at != 0 && at != std::string::npos) at++;
  if (at == std::string::npos || src.find(head, at + 1) != std::string::npos) return {"", ""};
  return {src.substr(0, at), src.substr(at)};
}
// where a split kernel's function name is, [begin, end): `... void [__launch_bounds__(N) ]name(`; {npos, npos} for any
// other form. The batch builds rename each kernel k<i>_<name> (names may repeat in a program)
inline std::pair<size_t, size_t> kernel_name_span(const std::string& kernel) {
  constexpr size_t npos = std::string::npos;
  size_t v = kernel.find(" void "), paren = v == npos ? npos : kernel.find('(', v);
  if (paren != npos && kernel.compare(v + 6, 18, "__launch_bounds__(") == 0) {
    size_t close = kernel.find(')', paren);
    paren = close == npos ? npos : kernel.find('(', close + 1);
  }
  if (paren == npos) return {npos, npos};
  return {kernel.rfind(' ', paren) + 1, paren};
}
}  // namespace detail

// a launch size that varies with a kernel's variables (the workgroups over a symbolic dim): a postfix program over the
// values a launch passes (codegen writes it from the dim's extent; empty: the size is fixed)
struct LaunchExpr {
  enum Op : int64_t { CONST, VAR, ADD, MUL, IDIV, MOD, MAX };
  std::vector<std::pair<Op, int64_t>> code;
  // its value at vals, or `otherwise` where it cannot be taken (a division by 0, a variable not passed)
  int64_t eval(const std::vector<int64_t>& vals, int64_t otherwise) const {
    std::array<int64_t, 16> st{};
    size_t n = 0;
    for (auto [op, x] : code) {
      if (op == CONST || op == VAR) {
        if (n == st.size() || (op == VAR && size_t(x) >= vals.size())) return otherwise;
        st[n++] = op == CONST ? x : vals[size_t(x)];
        continue;
      }
      if (n < 2) return otherwise;
      int64_t b = st[--n], &a = st[n - 1];
      if ((op == IDIV || op == MOD) && b == 0) return otherwise;
      a = op == ADD ? a + b : op == MUL ? a * b : op == IDIV ? a / b : op == MOD ? a % b : std::max(a, b);
    }
    return n == 1 ? st[0] : otherwise;
  }
  bool operator==(const LaunchExpr&) const = default;
};
// how a kernel is launched: on a CPU the cores its THREAD axis runs on, on a GPU its workgroups and their threads
struct LaunchDims {
  int64_t threads = 1;                      // CPU: cores (the THREAD axis)
  std::array<int64_t, 3> global{1, 1, 1};  // GPU: workgroups in x, y, z (at the variables' bounds)
  std::array<int64_t, 3> local{1, 1, 1};   // GPU: threads of a workgroup in x, y, z
  int64_t smem = 0;                         // GPU: dynamic workgroup memory in bytes (staged tensor-core tiles)
  std::array<LaunchExpr, 3> global_var{};  // GPU: the workgroups of a dim over a symbolic extent, at a launch's values
  bool operator==(const LaunchDims&) const = default;
  // the workgroups of a launch with these variable values: a symbolic dim's extent at the values (1 to its bound)
  std::array<int64_t, 3> global_at(const std::vector<int64_t>& vals) const {
    std::array<int64_t, 3> g = global;
    for (size_t d = 0; d < 3; d++)
      if (!global_var[d].code.empty()) g[d] = std::clamp<int64_t>(global_var[d].eval(vals, global[d]), 1, global[d]);
    return g;
  }
  bool varies() const { return std::any_of(global_var.begin(), global_var.end(), [](auto& e) { return !e.code.empty(); }); }
  std::string str() const {
    return detail::cat("threads ", threads, " global ", global[0], ",", global[1], ",", global[2], " local ", local[0], ",", local[1], ",", local[2],
               smem ? detail::cat(" smem ", smem) : "");
  }
};
// the largest launch a device takes: workgroups per dim, threads of a workgroup per dim and in all
struct LaunchLimits {
  std::array<int64_t, 3> global_max{0x7fffffff, 65535, 65535}, local_max{1024, 1024, 64};
  int64_t max_threads = 1024;
};

struct Communicator;  // collective.hpp

// an opened device: allocator, compiler, program loader, and what code generation needs to know of it
struct DeviceRuntime {
  std::string name;  // the instance: "CPU", "CUDA:1"
  std::unique_ptr<Allocator> allocator;
  std::unique_ptr<Compiler> compiler;
  std::function<std::unique_ptr<Program>(const std::string& fn_name, const std::string& binary, const LaunchDims& launch)> load;
  std::function<void()> synchronize = [] {};
  // optional: the launches (program, buffers) as one graph; nullptr where the device cannot (TinyJit loops instead)
  std::function<std::unique_ptr<GraphExec>(const std::vector<GraphLaunch>&)> graph;
  int threads = 1;              // cores a THREAD axis may run on (1: none, as on GPUs)
  int vector_registers = 16;    // registers a register tile of accumulators may fill
  int vector_bytes = 32;        // CPU: the widest vector register (VECTOR's lanes)
  bool tensor_cores = false;    // NVIDIA sm_80+: warp-level mma.sync (the renderer's TC opt)
  bool wgmma = false;           // NVIDIA sm_90: warpgroup MMA (kernels compiled for sm_90a)
  bool fp16 = false;            // native half conversions (OpenCL: cl_khr_fp16)
  bool workgroups = false;      // GPUs: kernels run as workgroups of threads (a row of a LayerNorm in one: schedule.hpp)
  int64_t parallelism = 65536;  // outputs that keep the whole device busy (split_reduceop): its cores, or waves of workgroups
  LaunchLimits limits;
};

// A device is one registered descriptor, made by the device's own header (cpu.hpp, cuda.hpp, opencl.hpp) and added on
// the registry's first use (devices.hpp), or added by a user's register_device(); nothing above runtime/ names a device.
// Opening it gives its allocator, compiler, loader and launch limits. NOTE: runtime/ knows nothing of UOps, so the descriptor names its renderer
// instead of holding one: renderer/ maps the name to a factory (register_renderer). The layers stay apart, the descriptor stays data.
struct DeviceSpec {
  std::string name;      // "CPU"; an instance may add ":n" ("CUDA:1")
  int priority = 0;      // the default device is the highest-priority one that opens (DEV overrides)
  bool host = false;     // its buffers are host memory: a tensor made from a host pointer lives here
  std::string renderer;  // the renderer family of the source its compiler takes ("C", "CUDA", "OpenCL"); empty: `name`
  std::function<std::unique_ptr<DeviceRuntime>(const std::string& instance)> open;  // throws DeviceError naming what is missing
  // optional: a compiler for this device's code that needs no device, or nullptr when none is wanted; with one, every
  // kernel compiled for another device is also rendered and compiled for this one (CUDA_COMPILE_CHECK=1)
  std::function<std::unique_ptr<Compiler>()> check_compiler;
  // optional: the collectives of a group of this device's instances ({"CUDA:0", "CUDA:1"}) through the device's own
  // library (NCCL), or nullptr when it cannot (a missing library): the group then reduces through the host
  std::function<std::unique_ptr<Communicator>(const std::vector<std::string>& instances)> communicator;
};

namespace detail {
struct RuntimeRegistry {
  std::mutex mu;
  std::map<std::string, DeviceSpec> specs;                      // name ("CUDA") -> descriptor
  std::map<std::string, std::unique_ptr<DeviceRuntime>> opened;  // instance ("CUDA:1") -> runtime
  static RuntimeRegistry& get();  // with the built-in devices added (defined in runtime/devices.hpp)
  std::vector<std::string> names() const {  // highest priority first
    std::vector<const DeviceSpec*> v;
    for (auto& [n, s] : specs) v.push_back(&s);
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->priority > b->priority; });
    std::vector<std::string> r;
    for (auto* s : v) r.push_back(s->name);
    return r;
  }
  const DeviceSpec& spec(const std::string& device) const;
};
}  // namespace detail

namespace detail {
// "CUDA:1" -> "CUDA"
inline std::string device_base(const std::string& d) { auto p = d.find(':'); return p == std::string::npos ? d : d.substr(0, p); }
}  // namespace detail

inline const DeviceSpec& detail::RuntimeRegistry::spec(const std::string& device) const {
  auto it = specs.find(device_base(device));
  if (it != specs.end()) return it->second;
  std::string known;
  for (auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw DeviceError("tinygrad: unknown device '" + device + "' (known devices: " + (known.empty() ? "none" : known) + ")");
}

// adds a device, or replaces the one of that name (instances already opened stay as they are)
inline void register_device(DeviceSpec spec) {
  if (spec.name.empty() || spec.name.find(':') != std::string::npos || !spec.open)
    throw DeviceError("tinygrad::register_device: a device needs a name without ':' and an open function, got '" + spec.name + "'");
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  std::string name = spec.name;
  r.specs.insert_or_assign(name, std::move(spec));
}
TINYGRAD_API std::vector<std::string> device_names() TINYGRAD_DEF({
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  return r.names();
})
// the descriptor of a device ("CUDA", or an instance "CUDA:1"); a DeviceError naming it and the known devices when unknown
inline DeviceSpec device_spec(const std::string& device) {
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  return r.spec(device);
}

// the opened device, opened on first use
inline DeviceRuntime& runtime(const std::string& device) {
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  if (auto it = r.opened.find(device); it != r.opened.end()) return *it->second;
  auto rt = r.spec(device).open(device);  // may throw DeviceError naming what is missing
  rt->name = device;
  rt->allocator->name = device;
  if (flags().debug >= 1) std::fprintf(stderr, "opened device %s\n", device.c_str());
  return *(r.opened[device] = std::move(rt));
}

TINYGRAD_API std::string& default_device() TINYGRAD_DEF({
  static std::string d = [] {
    std::string dev = flags().dev, why;
    for (auto& n : dev.empty() ? device_names() : std::vector<std::string>{}) {
      try { runtime(n); dev = n; break; }
      catch (const Error& e) {
        why += detail::cat("; ", n, ": ", e.what());
        if (flags().debug >= 1) std::fprintf(stderr, "%s not used: %s\n", n.c_str(), e.what());
      }
    }
    if (dev.empty()) throw DeviceError("tinygrad: no device opens" + (why.empty() ? std::string(" (none is registered)") : why));
    if (flags().debug >= 1) std::fprintf(stderr, "default device: %s\n", dev.c_str());
    return dev;
  }();
  return d;
})

TINYGRAD_API std::string host_device() TINYGRAD_DEF({
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  for (auto& n : r.names()) if (r.specs.at(n).host) return n;
  throw DeviceError("tinygrad: no host device is registered (runtime/cpu.hpp registers the CPU)");
})
TINYGRAD_API void synchronize(const std::string& device) TINYGRAD_DEF({ runtime(device).synchronize(); })

namespace detail {
// GPU libraries are loaded at run time: the first of several names that loads (nullptr if none)
inline void* dlopen_first(std::initializer_list<std::string> names) {
  for (auto& n : names) if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}
template <class F>
void load_sym(void* lib, F& f, const char* name, const char* libname) {
  f = reinterpret_cast<F>(::dlsym(lib, name));
  if (!f) throw DeviceError(cat("tinygrad: ", libname, " has no symbol ", name));
}
}  // namespace detail

// a buffer on a device; memory is allocated on first use and returned to the LRU cache on destruction
struct Buffer {
  std::string device;
  DType dtype;
  int64_t size;  // elements; nbytes() fits int64 (checked here, so no byte size or offset computed from it overflows)
  Buffer(std::string dev, DType dt, int64_t n) : device(std::move(dev)), dtype(dt), size(n) { detail::checked_nbytes(n, itemsize(dt), "Buffer"); }
  // wraps external memory (Tensor::from_blob): never allocated or freed here
  Buffer(std::string dev, DType dt, int64_t n, void* external) : device(std::move(dev)), dtype(dt), size(n), ptr_(external) {
    detail::checked_nbytes(n, itemsize(dt), "Buffer");
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  size_t nbytes() const { return size_t(size) * size_t(itemsize(dtype)); }
  bool allocated() const { return ptr_ != nullptr; }
  // the memory back to its allocator (for the next buffer of its size); a later ptr() allocates again
  void release() { if (ptr_ && alloc_) alloc_->free(ptr_, nb_), ptr_ = nullptr, alloc_ = nullptr; }
  void* ptr() {
    if (!ptr_) { alloc_ = runtime(device).allocator.get(); ptr_ = alloc_->alloc(std::max<size_t>(nbytes(), 1)); nb_ = std::max<size_t>(nbytes(), 1); }
    return ptr_;
  }
  void copyin(const void* host) { if (nbytes()) runtime(device).allocator->copyin(ptr(), host, nbytes()); }
  void copyout(void* host) { if (nbytes()) runtime(device).allocator->copyout(host, ptr(), nbytes()); }

 private:
  void* ptr_ = nullptr;
  size_t nb_ = 0;
  Allocator* alloc_ = nullptr;
};

// ---- on-disk cache for compiled code: CACHEDIR, default $XDG_CACHE_HOME/tinygrad.hpp or ~/.cache/tinygrad.hpp ----
// A cached shared object is code this process will load, so a folder is used only when it is ours and no other
// user can write to it; otherwise compiled code goes to a private temporary folder, with a warning that names why.
namespace detail {
// the folder the environment asks for and, when the environment cannot give one, why ("" when it can)
inline std::pair<std::filesystem::path, std::string> configured_cache_dir() {
  std::string d = getenv_str("CACHEDIR");
  if (d.empty()) {
    std::string base = getenv_str("XDG_CACHE_HOME");
    if (base.empty()) {
      std::string home = getenv_str("HOME");
      std::error_code ec;
      // NOTE: a missing HOME is not created: HOME=/nonexistent is how daemons say "no home"
      if (home.empty() || !std::filesystem::is_directory(home, ec))
        return {std::filesystem::path(home.empty() ? "~" : home) / ".cache/tinygrad.hpp",
                home.empty() ? "HOME is not set" : "HOME (" + home + ") is not a directory"};
      base = home + "/.cache";
    }
    d = base + "/tinygrad.hpp";
  }
  std::error_code ec;
  auto abs = std::filesystem::absolute(d, ec);  // NOTE: a relative path could start with '-' and read as a compiler option
  return {ec ? std::filesystem::path(d) : abs, ""};
}
// why code must not be cached in `d` ("" when it may): it is created (mode 0700) when missing; it must be a folder
// owned by this user that other users cannot write, and a real write must succeed (root ignores modes)
inline std::string cache_dir_problem(const std::filesystem::path& d) {
  std::error_code ec;
  if (!std::filesystem::exists(d, ec)) {
    std::filesystem::create_directories(d.parent_path(), ec);
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return cat("cannot create it: ", std::strerror(errno));
  }
  struct stat st {};
  if (::stat(d.c_str(), &st) != 0) return cat("cannot stat it: ", std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid()) return cat("it is owned by uid ", st.st_uid, ", not by this user (uid ", ::geteuid(), ")");
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return cat("other users can write to it (mode ", mode, ")");
  std::string probe = (d / ".write_test_XXXXXX").string();
  int fd = ::mkstemp(probe.data());
  if (fd < 0) return cat("cannot write to it: ", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}
// the pid in a name "<prefix><pid>_..." or "<prefix><pid>-..." (0 when the name is not one)
inline long pid_in_name(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return 0;
  char* end = nullptr;
  long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
  return pid > 0 && end && (*end == '_' || *end == '-') ? pid : 0;
}
// removes files and folders "<prefix><pid>..." in `dir` left by processes that died without cleaning up: the pid is gone
// and the entry is older than `min_age` (a pid from another pid namespace sharing the folder may still be compiling)
inline int remove_stale(const std::filesystem::path& dir, const std::string& prefix, std::chrono::seconds min_age = std::chrono::minutes(10)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int removed = 0, seen = 0;
  auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), e; !ec && it != e && seen < 10000; it.increment(ec), seen++) {  // NOTE: bounded work
    long pid = pid_in_name(it->path().filename().string(), prefix);
    if (!pid || pid == ::getpid() || !(::kill(pid_t(pid), 0) != 0 && errno == ESRCH)) continue;
    struct stat st {};
    std::error_code ec2;
    if (::lstat(it->path().c_str(), &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) || st.st_uid != ::geteuid()) continue;
    if (now - fs::last_write_time(it->path(), ec2) < min_age || ec2) continue;
    fs::remove_all(it->path(), ec2);
    removed += !ec2;
  }
  return removed;
}
// this process's private folder for compiled code (mkdtemp: mode 0700), removed at exit
inline std::filesystem::path private_cache_dir() {
  namespace fs = std::filesystem;
  static struct Dir {
    fs::path p;
    Dir() {
      std::error_code ec;
      fs::path tmp = fs::temp_directory_path(ec);
      if (ec) tmp = "/tmp";
      remove_stale(tmp, "tinygrad.hpp-");
      std::string t = (tmp / cat("tinygrad.hpp-", ::getpid(), "-XXXXXX")).string();
      if (!::mkdtemp(t.data()))
        throw DeviceError(cat("tinygrad: cannot create a private folder for compiled kernels in ", tmp, ": ", std::strerror(errno)));
      p = t;
    }
    ~Dir() { std::error_code ec; fs::remove_all(p, ec); }
  } d;
  return d.p;
}
// `d` when it is usable, else the private folder, with a warning on stderr naming `d` and why (once per folder).
// What processes killed while writing to `d` left in its scratch folder is removed.
inline std::filesystem::path usable_cache_dir(const std::filesystem::path& d, std::string problem = "") {
  if (problem.empty()) problem = cache_dir_problem(d);
  if (problem.empty()) return remove_stale(d / "tmp", ""), d;
  auto fallback = private_cache_dir();
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard lk(mu);
  if (warned.insert(d.string()).second)
    std::fprintf(stderr, "tinygrad: warning: not caching compiled kernels in %s: %s; using the private folder %s for this process instead\n",
                 d.c_str(), problem.c_str(), fallback.c_str());
  return fallback;
}

inline std::filesystem::path cache_dir() {
  static std::filesystem::path dir = [] { auto [d, why] = detail::configured_cache_dir(); return detail::usable_cache_dir(d, why); }();
  return dir;
}
// one compiler's folder in the cache, held to the same rules as the cache itself
inline std::filesystem::path cache_subdir(const std::string& name) { return detail::usable_cache_dir(cache_dir() / name); }
// a new name in `dir`/tmp for something this process writes before moving it into place: "<pid>_<n><suffix>"
inline std::filesystem::path scratch_path(const std::filesystem::path& dir, const std::string& suffix = "") {
  static std::atomic<uint64_t> n{0};
  std::error_code ec;
  std::filesystem::create_directory(dir / "tmp", ec);
  return dir / "tmp" / detail::cat(::getpid(), "_", n++, suffix);
}
// the most bytes a file of the cache may hold: a larger one is corruption, not a compiled kernel
inline constexpr size_t kMaxCacheFile = size_t(256) << 20;
// a file's bytes, read only when it is a regular file of at most max_bytes: never through a link (O_NOFOLLOW), never
// waiting on a FIFO or device (O_NONBLOCK). "" when it is missing; "" and, in why, what it is instead when refused
inline std::string read_file(const std::filesystem::path& p, std::string* why = nullptr,
                             size_t max_bytes = kMaxCacheFile) {
  auto refuse = [&](const std::string& w) { if (why) *why = detail::cat(p.string(), ": ", w); return std::string(); };
  if (why) why->clear();
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? std::string() : refuse(std::strerror(errno));
  struct Close { int fd; ~Close() { ::close(fd); } } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refuse(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (uint64_t(st.st_size) > max_bytes)
    return refuse(detail::cat(st.st_size, " bytes, more than the ", max_bytes, " a cache file may hold"));
  std::string data(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refuse(std::strerror(errno));
    if (n == 0) break;  // shrank meanwhile: the caller's hash check sees it
    got += size_t(n);
  }
  data.resize(got);
  return data;
}

// the entries of the disk cache are bounded: CACHE_SIZE bytes (default 512 MiB, ~100k CPU kernels; 0: no bound)
inline int64_t cache_size_limit() { return getenv_int("CACHE_SIZE", int64_t(512) << 20); }
// an entry used (or written) this recently is never evicted: a process that looked it up is about to load it
inline constexpr int64_t kCacheGraceSeconds = 60;
// a name the compilers give a cache entry: [o_|b_]<16 hex digits>[.ext]; nothing else in their folders is evicted
inline bool cache_entry_name(const std::string& n) {
  size_t b = n.rfind("o_", 0) == 0 || n.rfind("b_", 0) == 0 ? 2 : 0;
  if (n.size() < b + 16) return false;
  for (size_t i = b; i < b + 16; i++) if (!std::isxdigit(static_cast<unsigned char>(n[i]))) return false;
  return n.size() == b + 16 || n[b + 16] == '.';
}
// a cache entry that is not what it should be (a link, a directory, a FIFO, a refused object) is removed, so the
// recompiled one takes its place
inline void remove_cache_entry(const std::filesystem::path& p) {
  std::error_code ec;
  auto st = std::filesystem::symlink_status(p, ec);
  if (ec) return;
  // NOTE: remove_all follows no link inside
  if (st.type() == std::filesystem::file_type::directory) std::filesystem::remove_all(p, ec);
  else std::filesystem::remove(p, ec);
}
// a cache hit marks its file used (its mtime, which eviction orders by) unless it was marked within half the grace
// period: at most one syscall per file and half-minute
inline void touch_cache_entry(const std::filesystem::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::time(nullptr) - st.st_mtime > kCacheGraceSeconds / 2)
    ::utimensat(AT_FDCWD, p.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}
// removes the least recently used entries of the folders (by mtime) until they hold at most 3/4 of `limit` bytes,
// never one used within `grace` seconds. Another process may be reading an entry removed here: its lookup misses and it
// compiles again (its loads happen within the grace period of its lookups). Bounded work: 200k files at most.
// Returns the files removed
inline size_t evict_cache(const std::vector<std::filesystem::path>& dirs, int64_t limit,
                          int64_t grace = kCacheGraceSeconds) {
  namespace fs = std::filesystem;
  struct Entry { int64_t mtime; uint64_t bytes; fs::path p; };
  std::vector<Entry> all;
  uint64_t total = 0;
  for (auto& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), e; !ec && it != e && all.size() < 200000; it.increment(ec)) {
      struct stat st {};
      if (!cache_entry_name(it->path().filename().string())) continue;
      if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      all.push_back({int64_t(st.st_mtime), uint64_t(st.st_size), it->path()});
      total += uint64_t(st.st_size);
    }
  }
  if (total <= uint64_t(limit)) return 0;
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  int64_t now = ::time(nullptr);
  size_t removed = 0;
  for (auto& e : all) {
    if (total <= uint64_t(limit) / 4 * 3 || now - e.mtime < grace) break;
    std::error_code ec;
    if (fs::remove(e.p, ec)) total -= e.bytes, removed++;
  }
  return removed;
}
// counts the bytes written into a compiler's folder `dir`; about every CACHE_SIZE/16 bytes the cache is scanned and
// the oldest entries evicted (so it may pass CACHE_SIZE by about 1/16 between scans). NOTE: the count starts at a
// random point, so processes that each write a little still scan now and then (in proportion to what they write),
// with no counter shared between processes to lock
inline void note_cache_write(const std::filesystem::path& dir, uint64_t bytes) {
  int64_t limit = cache_size_limit();
  if (limit <= 0) return;
  static std::atomic<uint64_t> written{hash_mix(uint64_t(::getpid()), uint64_t(now_s() * 1e9))};
  uint64_t every = std::max<uint64_t>(1, uint64_t(limit) / 16), before = written.fetch_add(bytes);
  if ((before + bytes) / every == before / every) return;
  // the whole cache when `dir` is one of its compilers' folders, else `dir` alone (a folder a caller chose)
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs{dir};
  std::error_code ec;
  if (fs::path root = cache_dir(); fs::equivalent(dir.parent_path(), root, ec)) {
    dirs.clear();
    for (fs::directory_iterator it(root, ec), e; !ec && it != e; it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec) && it->path().filename() != "tmp") dirs.push_back(it->path());
  }
  evict_cache(dirs, limit);
}

// write through a scratch file and rename, so a reader never sees a half-written file; what is in the way (a
// directory left where a file belongs) is removed first
inline void write_file_atomic(const std::filesystem::path& p, const std::string& data) {
  auto tmp = scratch_path(p.parent_path());
  std::error_code ec;
  { std::ofstream f(tmp, std::ios::binary); f.write(data.data(), std::streamsize(data.size())); }
  std::filesystem::rename(tmp, p, ec);
  std::error_code ec2;
  if (ec && std::filesystem::is_directory(std::filesystem::symlink_status(p, ec2))) {
    detail::remove_cache_entry(p);
    std::filesystem::rename(tmp, p, ec);
  }
  if (ec) std::filesystem::remove(tmp, ec);
  else detail::note_cache_write(p.parent_path(), data.size());
}
}  // namespace detail

}  // namespace tinygrad

#include "collective.hpp"
#include "devices.hpp"  // NOTE: last: the built-in devices' headers build on everything above
#endif
#include "dist.hpp"  // one process per device: its API is declared for every TU, its internals come with them
