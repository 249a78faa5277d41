#pragma once
// helpers: errors, shapes, env flags, hashing, timing, parallel loops. The bottom layer: includes only the STL.

// ---- compilation mode (Boost.Asio's scheme) ----
// Header-only by default: everything is inline in every translation unit that includes the library.
// With TINYGRAD_SEPARATE_COMPILATION defined for every TU of a program, the library is compiled once, in the one TU
// that includes <tinygrad/impl.hpp> (or the CMake target tinygrad::compiled); every other TU sees the entry points
// (TINYGRAD_API: realize, the device registry, autograd, the static plan cache) as declarations, parses none of the
// engine, code generation, renderers or device runtimes, and compiles none of the Tensor methods.
#if defined(TINYGRAD_SEPARATE_COMPILATION)
#define TINYGRAD_API
#if defined(TINYGRAD_IMPLEMENTATION)
#define TINYGRAD_DEFINE_API 1
#else
#define TINYGRAD_DEFINE_API 0
#endif
#else
#define TINYGRAD_API inline
#define TINYGRAD_DEFINE_API 1
#endif
// A function body of the library, compiled where the library is (header-only: inline in every TU; the implementation
// TU), and only a declaration in the other TUs of a separate-compilation program:
//   TINYGRAD_API R f(args) TINYGRAD_DEF({ ... })          a function at namespace scope
//   R f(args) const TINYGRAD_MEMBER_DEF({ ... })          a member defined in its class (constructor init lists too)
// NOTE: a member defined in its class is inline; in the implementation TU `used` makes the compiler emit it although
// nothing there calls it (the mixin templates are emitted by their explicit instantiations)
#if !defined(TINYGRAD_SEPARATE_COMPILATION)
#define TINYGRAD_DEF(...) __VA_ARGS__
#define TINYGRAD_MEMBER_DEF(...) __VA_ARGS__
#elif TINYGRAD_DEFINE_API
#define TINYGRAD_DEF(...) __VA_ARGS__
#define TINYGRAD_MEMBER_DEF(...) __attribute__((used)) __VA_ARGS__
#else
#define TINYGRAD_DEF(...) ;
#define TINYGRAD_MEMBER_DEF(...) ;
#endif
// the internal headers (engine, codegen, renderers, devices) come with <tinygrad.hpp> where the library is compiled,
// and in a separate-compilation TU that defines TINYGRAD_INTERNALS (the library's own tests and benchmarks)
#if TINYGRAD_DEFINE_API || defined(TINYGRAD_INTERNALS)
#define TINYGRAD_WITH_INTERNALS 1
#else
#define TINYGRAD_WITH_INTERNALS 0
#endif

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#if TINYGRAD_WITH_INTERNALS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <sstream>
#include <thread>
#endif

namespace tinygrad::detail {
__extension__ typedef __int128 i128;  // exact products and sums of int64s (__extension__: no -Wpedantic warning)
}  // namespace tinygrad::detail

namespace tinygrad {

// ---- errors: everything the library throws derives from Error ----
struct Error : std::runtime_error { using std::runtime_error::runtime_error; };
struct ShapeError : Error { using Error::Error; };    // shapes that do not fit an op
struct DTypeError : Error { using Error::Error; };    // dtypes that do not fit an op
struct IndexError : Error { using Error::Error; };    // axes, slices, indices out of range
struct DeviceError : Error { using Error::Error; };   // missing driver/compiler/device, out of memory
struct JitError : Error { using Error::Error; };      // a TinyJit call that does not fit what was captured
struct VariableError : Error { using Error::Error; };  // a variable's bad range or name, a value outside its range
struct CompileError : Error {                         // a kernel that failed to compile
  std::string source, log;
  CompileError(const std::string& what, std::string src, std::string lg)
      : Error(what + "\n--- compiler log ---\n" + lg + "\n--- source ---\n" + src), source(std::move(src)), log(std::move(lg)) {}
};

using Shape = std::vector<int64_t>;

inline std::string to_string(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

namespace detail {
// NOTE: unchecked (hot path): every shape is checked by checked_prod where it enters the library
inline int64_t prod(const Shape& s) { int64_t r = 1; for (auto x : s) r *= x; return r; }

// ---- checked sizes: a shape is valid when no dim is negative and the product of its nonzero dims fits int64 ----
// NOTE: a zero dim does not excuse the others: strides and sub-products (a reshape, a pad, a byte offset) are still
// products of the nonzero dims, so (2^40, 2^40, 0) is rejected like (2^40, 2^40) (as PyTorch and safetensors do).
// Then every product of some of the dims of a valid shape fits int64 too.
inline bool valid_shape(const Shape& s, int64_t* numel = nullptr) {
  int64_t n = 1;
  bool zero = false;
  for (auto x : s) {
    if (x < 0) return false;
    if (x == 0) zero = true;
    else if (__builtin_mul_overflow(n, x, &n)) return false;
  }
  if (numel) *numel = zero ? 0 : n;
  return true;
}
// the number of elements of a shape entering op; ShapeError naming op and shape when it is not valid
inline int64_t checked_prod(const Shape& s, const char* op) {
  int64_t n = 0;
  if (valid_shape(s, &n)) return n;
  for (auto x : s)
    if (x < 0) throw ShapeError(std::string("tinygrad::") + op + ": negative dimension in " + to_string(s));
  throw ShapeError(std::string("tinygrad::") + op + ": shape " + to_string(s) +
                   " has more than 2^63 elements (the product of its dims overflows int64)");
}
// a * b and a + b of sizes (a window, a padded or repeated dim); ShapeError naming op when they overflow int64
inline int64_t size_mul(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw ShapeError(std::string("tinygrad::") + op + ": size " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
  return r;
}
inline int64_t size_add(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw ShapeError(std::string("tinygrad::") + op + ": size " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
  return r;
}
// numel * itemsize, the bytes of a buffer; ShapeError naming op when it overflows int64
inline int64_t checked_nbytes(int64_t numel, int64_t itemsize, const char* op) {
  int64_t r = 0;
  if (numel < 0 || __builtin_mul_overflow(numel, itemsize, &r))
    throw ShapeError(std::string("tinygrad::") + op + ": " + std::to_string(numel) + " elements of " + std::to_string(itemsize) +
                     " bytes do not fit in 2^63 bytes");
  return r;
}

// strides of a contiguous row-major layout
inline Shape strides_for(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// normalize a possibly negative axis; throws IndexError naming the op
inline int norm_axis(int64_t axis, size_t ndim, const char* op) {
  int64_t n = int64_t(ndim), m = n > 1 ? n : 1;  // a scalar takes axis 0 and -1
  if (axis < -m || axis >= m)
    throw IndexError(std::string("tinygrad::") + op + ": axis " + std::to_string(axis) +
                     " is out of range for a tensor of rank " + std::to_string(n));
  return int(axis < 0 ? axis + n : axis);
}

// ---- env flags (read once, writable at run time: tinygrad::flags().debug = 2) ----
inline int64_t getenv_int(const char* name, int64_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  long long r = std::strtoll(v, &end, 10);
  return end && *end == 0 ? r : dflt;
}
inline std::string getenv_str(const char* name, std::string dflt = "") {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

// a flag naming a file: unset or 0 off (""), 1 the default file, anything else the path itself (taken literally)
inline std::string getenv_path(const char* name, const char* dflt) {
  std::string v = getenv_str(name);
  return v == "0" ? "" : v == "1" ? dflt : v;
}

}  // namespace detail

struct Flags {
  int debug = int(detail::getenv_int("DEBUG", 0));      // 1 counts, 2 per-kernel timing, 3 opts, 4 source, 5 uops
  bool spec = detail::getenv_int("SPEC", 0) != 0;       // check each stage's IR against its spec (uop/spec.hpp); DEBUG>=3 too
  int noopt = int(detail::getenv_int("NOOPT", 0));      // no kernel opts
  int beam = int(detail::getenv_int("BEAM", 0));        // BEAM search width
  int threads = int(detail::getenv_int("THREADS", 0));  // CPU threads (0: hardware concurrency)
  int scache = int(detail::getenv_int("SCACHE", 1));    // schedule cache
  // float32 matmuls may run on tensor cores in TF32 (10-bit mantissa products, float32 sums), as PyTorch's
  // allow_tf32; off by default. Set it before the kernels it should change are first built (they are cached)
  bool tf32 = detail::getenv_int("TF32", 0) != 0;
  // the heuristic's tensor-core tile (TC's amount): -1 its choice, 0 fragments loaded from memory (no staged tile),
  // n > 0 tile n where it fits (comparisons and tests; kernels already built are cached: clear_program_cache())
  int tc_stage = int(detail::getenv_int("TC_STAGE", -1));
  int tile = int(detail::getenv_int("TILE", -1));  // the same for TILE's float32 tiles (0: none)
  // an opt of a heuristic that its kernel refuses (a heuristic's bug) is an error, not skipped (the tests set it)
  bool strict_opts = detail::getenv_int("STRICT_OPTS", 0) != 0;
  std::string dev = detail::getenv_str("DEV");          // default device
  // PROFILE=1: a Chrome trace (chrome://tracing, Perfetto) of kernel launches, copies and compiles, written at exit to
  // ./tinygrad_profile.json (PROFILE=path.json: there) and by write_profile(path); kernels are timed (a sync each)
  std::string profile = detail::getenv_path("PROFILE", "tinygrad_profile.json");
  // VIZ=1: an HTML page of the schedules, kernels, their sources and rewrites, written at exit to ./tinygrad_viz.html
  // (VIZ=path.html: there) and by write_viz(path)
  std::string viz = detail::getenv_path("VIZ", "tinygrad_viz.html");
};
inline Flags& flags() { static Flags f; return f; }

namespace detail {
// ---- hashing ----
inline uint64_t hash_mix(uint64_t h, uint64_t v) {
  v *= 0x9E3779B97F4A7C15ull; v ^= v >> 32;
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}
inline uint64_t hash_bytes(std::string_view s) {  // FNV-1a 64, stable across processes
  uint64_t h = 1469598103934665603ull;
  for (char c : s) { h ^= uint8_t(c); h *= 1099511628211ull; }
  return h;
}
#if TINYGRAD_WITH_INTERNALS  // what only the library's own code uses
inline std::string hex64(uint64_t h) { char b[17]; std::snprintf(b, sizeof b, "%016llx", (unsigned long long)h); return b; }

// f(0), ..., f(n - 1) on up to one thread a core, this one included. NOTE: an exception must not escape a thread
// (std::terminate): each is kept, and the first in index order is rethrown once every call has finished
inline void parallel_for(size_t n, const std::function<void(size_t)>& f) {
  std::vector<std::exception_ptr> err(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) try { f(i); } catch (...) { err[i] = std::current_exception(); }
  };
  std::vector<std::thread> ts;
  for (size_t t = 1; t < std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency())); t++) ts.emplace_back(work);
  work();
  for (auto& t : ts) t.join();
  for (auto& e : err) if (e) std::rethrow_exception(e);
}
inline double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class... A> std::string cat(const A&... a) { std::ostringstream os; (os << ... << a); return os.str(); }
#endif
}  // namespace detail

}  // namespace tinygrad
