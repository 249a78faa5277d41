#pragma once
// runtime: buffers, allocators (LRU reuse), compilers (disk cache), programs, and the device registry.
// The lowest layer above helpers/dtype: it knows nothing of UOps.
#include <dlfcn.h>
#include <unistd.h>
#include <atomic>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include "../dtype.hpp"

namespace tinygrad {

// raw device memory
struct Allocator {
  virtual ~Allocator() = default;
  virtual void* alloc_raw(size_t bytes) = 0;  // nullptr when out of memory
  virtual void free_raw(void* p, size_t bytes) = 0;
  virtual void copyin(void* dst, const void* src, size_t bytes) = 0;   // host -> device
  virtual void copyout(void* dst, const void* src, size_t bytes) = 0;  // device -> host
  virtual void copy(void* dst, const void* src, size_t bytes) { std::vector<char> h(bytes); copyout(h.data(), src, bytes); copyin(dst, h.data(), bytes); }

  // LRU reuse of freed buffers: a free keeps the memory for the next alloc of the same size
  void* alloc(size_t bytes) {
    std::lock_guard lk(mu);
    if (auto it = cache.find(bytes); it != cache.end() && !it->second.empty()) {
      void* p = it->second.back(); it->second.pop_back(); cached_bytes -= bytes; live++; return p;
    }
    void* p = alloc_raw(bytes);
    if (!p && cached_bytes) { free_cache_locked(); p = alloc_raw(bytes); }  // out of memory: drop the cache, retry once
    if (!p) throw DeviceError(cat("tinygrad: out of memory allocating ", bytes, " bytes on ", name));
    live++;
    return p;
  }
  void free(void* p, size_t bytes) {
    std::lock_guard lk(mu);
    live--;
    if (lru) { cache[bytes].push_back(p); cached_bytes += bytes; } else free_raw(p, bytes);
  }
  void free_cache() { std::lock_guard lk(mu); free_cache_locked(); }
  int64_t live_allocations() const { return live; }

  std::string name;
  bool lru = getenv_int("LRU", 1) != 0;

 private:
  void free_cache_locked() {
    for (auto& [sz, v] : cache) for (void* p : v) free_raw(p, sz);
    cache.clear(); cached_bytes = 0;
  }
  std::mutex mu;
  std::map<size_t, std::vector<void*>> cache;
  size_t cached_bytes = 0;
  std::atomic<int64_t> live{0};
};

// a compiled kernel; call() runs it and returns seconds when timing was asked for
struct Program {
  virtual ~Program() = default;
  virtual double call(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, bool wait) = 0;
};

// turns source into a binary; cache_key() names the compiler and its flags
struct Compiler {
  virtual ~Compiler() = default;
  virtual std::string cache_key() const = 0;
  virtual std::string compile(const std::string& src) = 0;  // throws CompileError
  // compile several sources at once (one compiler process where possible)
  virtual std::vector<std::string> compile_many(const std::vector<std::string>& srcs) {
    std::vector<std::string> r;
    for (auto& s : srcs) r.push_back(compile(s));
    return r;
  }
};

// a device's runtime pieces
struct DeviceRuntime {
  std::string name;
  std::unique_ptr<Allocator> allocator;
  std::unique_ptr<Compiler> compiler;
  // launch: CPU {threads}; GPUs {global x,y,z, local x,y,z}
  std::function<std::unique_ptr<Program>(const std::string& fn_name, const std::string& binary, const std::vector<int64_t>& launch)> load;
  std::function<void()> synchronize = [] {};
};

namespace detail {
struct RuntimeRegistry {
  std::mutex mu;
  std::map<std::string, std::function<std::unique_ptr<DeviceRuntime>(const std::string&)>> factories;  // name ("CUDA:1") -> runtime
  std::map<std::string, std::unique_ptr<DeviceRuntime>> opened;
  static RuntimeRegistry& get() { static auto* r = new RuntimeRegistry(); return *r; }  // NOTE: leaked on purpose (static destruction order)
};
}  // namespace detail

inline void register_runtime(const std::string& name, std::function<std::unique_ptr<DeviceRuntime>(const std::string&)> f) {
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  r.factories[name] = std::move(f);
}
// "CUDA:1" -> "CUDA"
inline std::string device_base(const std::string& d) { auto p = d.find(':'); return p == std::string::npos ? d : d.substr(0, p); }

inline DeviceRuntime& runtime(const std::string& device) {
  auto& r = detail::RuntimeRegistry::get();
  std::lock_guard lk(r.mu);
  if (auto it = r.opened.find(device); it != r.opened.end()) return *it->second;
  auto f = r.factories.find(device_base(device));
  if (f == r.factories.end()) throw DeviceError("tinygrad: unknown device '" + device + "'");
  auto rt = f->second(device);  // may throw DeviceError naming what is missing
  rt->name = device;
  rt->allocator->name = device;
  if (flags().debug >= 1) std::fprintf(stderr, "opened device %s\n", device.c_str());
  return *(r.opened[device] = std::move(rt));
}

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
  Buffer(std::string dev, DType dt, int64_t n) : device(std::move(dev)), dtype(dt), size(n) { checked_nbytes(n, itemsize(dt), "Buffer"); }
  // wraps external memory (Tensor::from_blob): never allocated or freed here
  Buffer(std::string dev, DType dt, int64_t n, void* external) : device(std::move(dev)), dtype(dt), size(n), ptr_(external) { checked_nbytes(n, itemsize(dt), "Buffer"); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { if (ptr_ && alloc_) alloc_->free(ptr_, nb_); }

  size_t nbytes() const { return size_t(size) * size_t(itemsize(dtype)); }
  bool allocated() const { return ptr_ != nullptr; }
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
inline std::filesystem::path cache_dir() {
  static std::filesystem::path dir = [] {
    std::string d = getenv_str("CACHEDIR");
    if (d.empty()) {
      std::string base = getenv_str("XDG_CACHE_HOME");
      if (base.empty()) base = getenv_str("HOME", "/tmp") + "/.cache";
      d = base + "/tinygrad.hpp";
    }
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    return std::filesystem::path(d);
  }();
  return dir;
}
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return {};
  return std::string(std::istreambuf_iterator<char>(f), {});
}
// write through a temporary name and rename, so a reader never sees a half-written file
inline void write_file_atomic(const std::filesystem::path& p, const std::string& data) {
  static std::atomic<int> n{0};
  auto tmp = p; tmp += cat(".tmp", ::getpid(), "_", n++);
  { std::ofstream f(tmp, std::ios::binary); f.write(data.data(), std::streamsize(data.size())); }
  std::error_code ec;
  std::filesystem::rename(tmp, p, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace tinygrad
