#pragma once
// GGUF, ggml's model file (versions 2 and 3; little-endian): a strict reader over a read-only memory mapping and a
// writer. Opt-in: not part of <tinygrad.hpp>.
//
//   auto f = tinygrad::nn::GGUFFile::open("SmolLM2-135M-Instruct.Q4_1.gguf");   // maps the file, parses the header
//   int64_t layers = f.get_int("llama.block_count");
//   const auto* t = f.find_tensor("token_embd.weight");                            // ne {576, 49152}, Q8_0
//   std::span<const uint8_t> raw = f.data(*t);                                     // the file's bytes, not copied
//
// The reader checks what ggml's gguf.cpp checks, and fails with an nn::StateError naming "tinygrad::gguf", the file
// and the field: magic, version (1 is refused: it used 32-bit counts), counts and string lengths bounded by the bytes
// left (so an absurd count fails before any allocation) and by ggml's 2^30 limits, non-empty unique keys, known value
// types, bools 0 or 1, no nested arrays (ggml rejects them too), general.alignment a UINT32 power of two, tensor names
// unique and shorter than 64 bytes (GGML_MAX_NAME), at most 4 dims, each ne >= 0 (ggml allows 0: an empty tensor)
// with an element count and byte size that fit int64, known ggml types, ne[0] a multiple of the block size, and the
// data dense and in order as ggml requires: each tensor starts where the previous one ends, rounded up to the
// alignment (so offsets are aligned and tensors cannot overlap), and lies inside the file. String contents are not
// checked (ggml does not: they are bytes).
//
// NOTE: plain inline functions, not TINYGRAD_API/TINYGRAD_DEF: the header is opt-in, so the library's implementation
// TU (impl.hpp) does not include it and could not define them for a separate-compilation program. It needs nothing of
// the tensor engine (json.hpp for StateError, ggml_types.hpp), so including it alone is cheap.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <variant>
#include "../json.hpp"  // nn::StateError
#include "ggml_types.hpp"

namespace tinygrad::nn {

// the type of a metadata value (the file's ids)
enum class GGUFType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
  UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
inline std::string to_string(GGUFType t) {
  static constexpr const char* names[] = {"UINT8", "INT8",  "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
                                          "BOOL",  "STRING", "ARRAY", "UINT64", "INT64",  "FLOAT64"};
  return uint32_t(t) < std::size(names) ? names[uint32_t(t)] : "GGUF type " + std::to_string(uint32_t(t));
}

namespace detail {
inline constexpr uint32_t gguf_type_count = 13;
// a key or name from a file, quoted for a message: at most ~100 bytes of it, not cut inside a UTF-8 sequence
inline std::string gguf_quoted(const std::string& s) {
  if (s.size() <= 100) return "'" + s + "'";
  size_t n = 100;
  while (n > 0 && (uint8_t(s[n]) & 0xC0) == 0x80) n--;
  return "'" + s.substr(0, n) + "...' (" + std::to_string(s.size()) + " bytes)";
}
// bytes of a scalar of type t in the file (0 for STRING and ARRAY, which have a length)
constexpr uint64_t gguf_scalar_size(GGUFType t) {
  switch (t) {
    case GGUFType::UINT8: case GGUFType::INT8: case GGUFType::BOOL: return 1;
    case GGUFType::UINT16: case GGUFType::INT16: return 2;
    case GGUFType::UINT32: case GGUFType::INT32: case GGUFType::FLOAT32: return 4;
    case GGUFType::UINT64: case GGUFType::INT64: case GGUFType::FLOAT64: return 8;
    default: return 0;
  }
}
constexpr bool gguf_is_signed(GGUFType t) {
  return t == GGUFType::INT8 || t == GGUFType::INT16 || t == GGUFType::INT32 || t == GGUFType::INT64;
}
constexpr bool gguf_is_unsigned(GGUFType t) {
  return t == GGUFType::UINT8 || t == GGUFType::UINT16 || t == GGUFType::UINT32 || t == GGUFType::UINT64;
}
constexpr bool gguf_is_float(GGUFType t) { return t == GGUFType::FLOAT32 || t == GGUFType::FLOAT64; }
}  // namespace detail

// A metadata value: `type`, and for an ARRAY the element type `elem`. The reader stores unsigned integers as uint64_t,
// signed ones as int64_t, floats as double, and arrays as vectors of those (bool and string as themselves); the writer
// also takes an int64_t for an unsigned type (and uint64_t for a signed one) when the value fits.
struct GGUFValue {
  using Data = std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<uint64_t>, std::vector<int64_t>,
                            std::vector<double>, std::vector<bool>, std::vector<std::string>>;
  GGUFType type = GGUFType::UINT32;
  GGUFType elem = GGUFType::UINT32;  // the element type when type == ARRAY
  Data data = uint64_t(0);

  // shorthands for the writer
  static GGUFValue of(GGUFType t, Data d) { return {t, t, std::move(d)}; }
  static GGUFValue array(GGUFType elem_type, Data d) { return {GGUFType::ARRAY, elem_type, std::move(d)}; }
  static GGUFValue str(std::string s) { return of(GGUFType::STRING, std::move(s)); }
  static GGUFValue u32(uint32_t v) { return of(GGUFType::UINT32, uint64_t(v)); }
  static GGUFValue i32(int32_t v) { return of(GGUFType::INT32, int64_t(v)); }
  static GGUFValue f32(float v) { return of(GGUFType::FLOAT32, double(v)); }
  static GGUFValue boolean(bool v) { return of(GGUFType::BOOL, v); }
  static GGUFValue strings(std::vector<std::string> v) { return array(GGUFType::STRING, std::move(v)); }

  // "UINT32", "ARRAY of STRING"
  std::string type_name() const { return type == GGUFType::ARRAY ? "ARRAY of " + to_string(elem) : to_string(type); }
  // the number of elements of an array (1 for a scalar)
  size_t size() const {
    return std::visit([](const auto& v) -> size_t {
      if constexpr (requires { v.size(); } && !std::is_same_v<std::decay_t<decltype(v)>, std::string>) return v.size();
      else return 1;
    }, data);
  }

  // typed reads; StateError naming `what` (the file and key) and both types when the value is not of that kind.
  // as_int: any integer type whose value fits int64; as_uint: any integer type whose value is >= 0; as_float: FLOAT32
  // or FLOAT64 (not integers: a float key stored as an integer is a malformed file).
  int64_t as_int(const std::string& what = "value") const {
    if (!detail::gguf_is_signed(type) && !detail::gguf_is_unsigned(type)) throw mismatch(what, "an integer");
    return to_int(scalar_int(), what);
  }
  uint64_t as_uint(const std::string& what = "value") const {
    if (!detail::gguf_is_signed(type) && !detail::gguf_is_unsigned(type)) throw mismatch(what, "an integer");
    auto v = scalar_int();
    if (auto* i = std::get_if<int64_t>(&v); i && *i < 0)
      throw StateError("tinygrad::gguf: " + what + " is " + std::to_string(*i) + ", not an unsigned integer");
    return std::holds_alternative<int64_t>(v) ? uint64_t(std::get<int64_t>(v)) : std::get<uint64_t>(v);
  }
  double as_float(const std::string& what = "value") const {
    if (!detail::gguf_is_float(type) || !std::holds_alternative<double>(data)) throw mismatch(what, "a float");
    return std::get<double>(data);
  }
  bool as_bool(const std::string& what = "value") const {
    if (type != GGUFType::BOOL || !std::holds_alternative<bool>(data)) throw mismatch(what, "a bool");
    return std::get<bool>(data);
  }
  const std::string& as_string(const std::string& what = "value") const {
    if (type != GGUFType::STRING || !std::holds_alternative<std::string>(data)) throw mismatch(what, "a string");
    return std::get<std::string>(data);
  }
  const std::vector<std::string>& as_strings(const std::string& what = "value") const {
    if (type != GGUFType::ARRAY || elem != GGUFType::STRING || !std::holds_alternative<std::vector<std::string>>(data))
      throw mismatch(what, "an array of strings");
    return std::get<std::vector<std::string>>(data);
  }
  std::vector<int64_t> as_ints(const std::string& what = "value") const {
    if (type == GGUFType::ARRAY) {
      if (auto* s = std::get_if<std::vector<int64_t>>(&data); s && detail::gguf_is_signed(elem)) return *s;
      if (auto* u = std::get_if<std::vector<uint64_t>>(&data); u && detail::gguf_is_unsigned(elem)) {
        std::vector<int64_t> r;
        r.reserve(u->size());
        for (auto x : *u) r.push_back(to_int(x, what));
        return r;
      }
    }
    throw mismatch(what, "an array of integers");
  }
  std::vector<double> as_floats(const std::string& what = "value") const {
    if (auto* d = std::get_if<std::vector<double>>(&data); d && type == GGUFType::ARRAY && detail::gguf_is_float(elem)) return *d;
    throw mismatch(what, "an array of floats");
  }

 private:
  StateError mismatch(const std::string& what, const char* wanted) const {
    return StateError("tinygrad::gguf: " + what + " is " + type_name() + ", not " + wanted);
  }
  std::variant<uint64_t, int64_t> scalar_int() const {
    if (auto* u = std::get_if<uint64_t>(&data)) return *u;
    if (auto* i = std::get_if<int64_t>(&data)) return *i;
    throw mismatch("value", "an integer");
  }
  static int64_t to_int(std::variant<uint64_t, int64_t> v, const std::string& what) {
    if (auto* i = std::get_if<int64_t>(&v)) return *i;
    uint64_t u = std::get<uint64_t>(v);
    if (u > uint64_t(INT64_MAX)) throw StateError("tinygrad::gguf: " + what + " is " + std::to_string(u) + ", more than int64 holds");
    return int64_t(u);
  }
};

// metadata in file order
using GGUFMetadata = std::vector<std::pair<std::string, GGUFValue>>;

// a tensor's header entry
struct GGUFTensor {
  std::string name;
  std::vector<int64_t> ne;  // the file's order: ne[0] is the innermost (contiguous) dimension
  GGMLType type = GGMLType::F32;
  uint64_t offset = 0;  // of its first byte, from the start of the file
  uint64_t nbytes = 0;
  // the row-major shape: ne reversed
  std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
  int64_t numel() const {
    int64_t n = 1;
    for (auto x : ne) n *= x;  // NOTE: the reader checked that the product fits
    return n;
  }
};

namespace detail {
inline constexpr uint64_t gguf_max_string = uint64_t(1) << 30;  // ggml's GGUF_MAX_STRING_LENGTH
inline constexpr uint64_t gguf_max_array = uint64_t(1) << 30;   // ggml's GGUF_MAX_ARRAY_ELEMENTS
inline constexpr uint64_t gguf_max_name = 64;                   // ggml's GGML_MAX_NAME, with the NUL
inline constexpr uint32_t gguf_max_dims = 4;
inline constexpr uint64_t gguf_default_alignment = 32;

// the bytes of a tensor of type t and dims ne, or an error message (ne[0] not a multiple of the block, overflow)
inline std::variant<uint64_t, std::string> gguf_nbytes(const std::vector<int64_t>& ne, GGMLType t) {
  auto info = ggml_type_info(t);
  int64_t n = 1;
  bool zero = false;
  for (size_t i = 0; i < ne.size(); i++) {
    if (ne[i] < 0) return "dimension " + std::to_string(i) + " is " + std::to_string(ne[i]) + " (negative)";
    if (ne[i] == 0) zero = true;
    else if (__builtin_mul_overflow(n, ne[i], &n)) return std::string("its element count overflows int64");
  }
  int64_t ne0 = ne.empty() ? 1 : ne[0];
  if (ne0 % info.block)
    return "ne[0] = " + std::to_string(ne0) + " is not a multiple of the block size " + std::to_string(info.block) + " of " + info.name;
  if (zero) return uint64_t(0);
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n / info.block, info.bytes, &bytes)) return std::string("its byte size overflows int64");
  return uint64_t(bytes);
}
inline std::string gguf_ne(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); i++) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}
// round n up to a multiple of a (a power of two); false when that overflows
inline bool gguf_pad(uint64_t n, uint64_t a, uint64_t* out) {
  if (n > UINT64_MAX - (a - 1)) return false;
  *out = (n + a - 1) & ~(a - 1);
  return true;
}

// bounds-checked little-endian reads over the file's bytes; errors name the file, the field and the offset
struct GGUFCursor {
  std::span<const uint8_t> b;
  const std::string& file;
  uint64_t pos = 0;
  std::string ctx;  // what is being read ("key 'general.name'", "tensor 3 'blk.0.attn_q.weight'")

  [[noreturn]] void fail(const std::string& why) const {
    throw StateError("tinygrad::gguf: " + file + ": " + (ctx.empty() ? "" : ctx + ": ") + why);
  }
  uint64_t left() const { return b.size() - pos; }
  void need(uint64_t n, const char* what) const {
    if (n > left())
      fail(std::string("truncated: ") + what + " at offset " + std::to_string(pos) + " needs " + std::to_string(n) +
           " bytes, the file (" + std::to_string(b.size()) + " bytes) has " + std::to_string(left()) + " left");
  }
  uint64_t uint(unsigned bytes, const char* what) {
    need(bytes, what);
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++) v |= uint64_t(b[pos + i]) << (8 * i);
    pos += bytes;
    return v;
  }
  uint32_t u32(const char* what) { return uint32_t(uint(4, what)); }
  uint64_t u64(const char* what) { return uint(8, what); }
  std::string str(const char* what) {
    uint64_t n = u64(what);
    if (n > gguf_max_string) fail(std::string(what) + " of " + std::to_string(n) + " bytes exceeds ggml's limit of 2^30");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(b.data() + pos), size_t(n));
    pos += n;
    return s;
  }
  // a count of items of at least `min_bytes` each: bounded by the bytes left before anything is allocated
  uint64_t count(uint64_t min_bytes, uint64_t limit, const char* what) {
    uint64_t n = u64(what);
    if (n > limit) fail(std::string(what) + " " + std::to_string(n) + " exceeds the limit of " + std::to_string(limit));
    if (n > left() / min_bytes)
      fail(std::string(what) + " " + std::to_string(n) + " cannot fit in the " + std::to_string(left()) + " bytes left (each takes at least " +
           std::to_string(min_bytes) + ")");
    return n;
  }
  GGUFType type(const char* what) {
    uint32_t t = u32(what);
    if (t >= gguf_type_count) { pos -= 4; fail("unknown " + std::string(what) + " " + std::to_string(t)); }
    return GGUFType(t);
  }
  // a scalar of type t (not STRING or ARRAY)
  template <class T> T scalar(GGUFType t);
};
template <> inline uint64_t GGUFCursor::scalar<uint64_t>(GGUFType t) { return uint(unsigned(gguf_scalar_size(t)), "value"); }
template <> inline int64_t GGUFCursor::scalar<int64_t>(GGUFType t) {
  unsigned n = unsigned(gguf_scalar_size(t));
  uint64_t u = uint(n, "value");
  if (n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t(0) << (8 * n);  // sign-extend
  return int64_t(u);
}
template <> inline double GGUFCursor::scalar<double>(GGUFType t) {
  if (t == GGUFType::FLOAT32) {
    uint32_t u = uint32_t(uint(4, "value"));
    float f;
    std::memcpy(&f, &u, 4);
    return double(f);
  }
  uint64_t u = uint(8, "value");
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
template <> inline bool GGUFCursor::scalar<bool>(GGUFType) {
  uint64_t v = uint(1, "value");
  if (v > 1) { pos -= 1; fail("bool byte is " + std::to_string(v) + ", not 0 or 1"); }
  return v == 1;
}

template <class T> std::vector<T> gguf_read_array(GGUFCursor& c, GGUFType t, uint64_t n) {
  std::vector<T> v;  // NOTE: not reserved: n elements of the file may take 8x n bytes here (UINT8 as uint64_t)
  for (uint64_t i = 0; i < n; i++) {
    if constexpr (std::is_same_v<T, std::string>) v.push_back(c.str("string length"));
    else v.push_back(c.scalar<T>(t));
  }
  return v;
}
inline GGUFValue gguf_read_value(GGUFCursor& c) {
  GGUFType t = c.type("value type");
  if (t == GGUFType::STRING) return GGUFValue::str(c.str("string length"));
  if (t == GGUFType::BOOL) return GGUFValue::of(t, c.scalar<bool>(t));
  if (gguf_is_float(t)) return GGUFValue::of(t, c.scalar<double>(t));
  if (gguf_is_signed(t)) return GGUFValue::of(t, c.scalar<int64_t>(t));
  if (gguf_is_unsigned(t)) return GGUFValue::of(t, c.scalar<uint64_t>(t));
  GGUFType e = c.type("array element type");
  if (e == GGUFType::ARRAY) { c.pos -= 4; c.fail("nested arrays are not supported (ggml rejects them too)"); }
  uint64_t n = c.count(e == GGUFType::STRING ? 8 : gguf_scalar_size(e), gguf_max_array, "array count");
  if (e == GGUFType::STRING) return GGUFValue::array(e, gguf_read_array<std::string>(c, e, n));
  if (e == GGUFType::BOOL) return GGUFValue::array(e, gguf_read_array<bool>(c, e, n));
  if (gguf_is_float(e)) return GGUFValue::array(e, gguf_read_array<double>(c, e, n));
  if (gguf_is_signed(e)) return GGUFValue::array(e, gguf_read_array<int64_t>(c, e, n));
  return GGUFValue::array(e, gguf_read_array<uint64_t>(c, e, n));
}
}  // namespace detail

// A parsed GGUF file: its metadata and tensor infos, and the tensors' bytes as spans into the file. Copies share the
// mapping (shared ownership): a span from data() stays valid while any copy of the GGUFFile opened from a path lives.
// NOTE: a file truncated by another process while it is mapped makes a later read of its bytes fault (SIGBUS).
class GGUFFile {
 public:
  // map `path` read-only and parse its header (the tensor data is not read)
  static GGUFFile open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw StateError("tinygrad::gguf: cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      bool dir = S_ISDIR(st.st_mode);
      ::close(fd);
      throw StateError("tinygrad::gguf: " + path + (dir ? " is a directory" : " is not a regular file") + ", not a GGUF file");
    }
    size_t n = size_t(st.st_size);
    std::shared_ptr<const void> owner;
    const uint8_t* p = nullptr;
    if (n > 0) {
      void* m = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        int e = errno;
        ::close(fd);
        throw StateError("tinygrad::gguf: cannot map " + path + " (" + std::to_string(n) + " bytes): " + std::strerror(e));
      }
      owner = std::shared_ptr<const void>(m, [n](const void* q) { ::munmap(const_cast<void*>(q), n); });
      p = static_cast<const uint8_t*>(m);
    }
    ::close(fd);  // NOTE: the mapping keeps the file
    GGUFFile f = parse({p, n}, path);
    f.owner_ = std::move(owner);
    return f;
  }
  // parse a GGUF image owned by the caller, who keeps it alive while this file (or a span from it) is used;
  // `name` names it in errors
  static GGUFFile parse(std::span<const uint8_t> bytes, std::string name = "<memory>") {
    GGUFFile f;
    f.name_ = std::move(name);
    f.bytes_ = bytes;
    f.parse_header();
    return f;
  }

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }  // where the data section starts
  const std::string& name() const { return name_; }
  std::span<const uint8_t> bytes() const { return bytes_; }  // the whole file

  const GGUFMetadata& metadata() const { return metadata_; }
  bool has(const std::string& key) const { return keys_.count(key) > 0; }
  const GGUFValue* find(const std::string& key) const {  // nullptr when absent
    auto it = keys_.find(key);
    return it == keys_.end() ? nullptr : &metadata_[it->second].second;
  }
  const GGUFValue& at(const std::string& key) const {
    if (auto* v = find(key)) return *v;
    throw StateError("tinygrad::gguf: " + name_ + ": no metadata key " + detail::gguf_quoted(key));
  }
  int64_t get_int(const std::string& key) const { return at(key).as_int(what(key)); }
  uint64_t get_uint(const std::string& key) const { return at(key).as_uint(what(key)); }
  double get_float(const std::string& key) const { return at(key).as_float(what(key)); }
  bool get_bool(const std::string& key) const { return at(key).as_bool(what(key)); }
  const std::string& get_string(const std::string& key) const { return at(key).as_string(what(key)); }
  const std::vector<std::string>& get_array_strings(const std::string& key) const { return at(key).as_strings(what(key)); }
  std::vector<int64_t> get_array_ints(const std::string& key) const { return at(key).as_ints(what(key)); }
  std::vector<double> get_array_floats(const std::string& key) const { return at(key).as_floats(what(key)); }

  const std::vector<GGUFTensor>& tensors() const { return tensors_; }
  const GGUFTensor* find_tensor(const std::string& name) const {  // nullptr when absent
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
  }
  // the metadata dropped (has() is false for every key after it), and a mapped file's header pages given back to the
  // system (read from the file again if touched); the tensor infos and data stay. A model that has read its config and
  // tokenizer keeps only its weights (SmolLM2's vocabulary and merges: ~5 MB parsed, ~2 MB of pages)
  void drop_metadata() {
    metadata_ = {}, keys_ = {};
    size_t page = size_t(::sysconf(_SC_PAGESIZE)), head = size_t(data_offset_) / page * page;
    if (owner_ && head > 0) ::madvise(const_cast<uint8_t*>(bytes_.data()), head, MADV_DONTNEED);
  }
  // a tensor's bytes in the file (a tensor of this file, or one with the same offset and size)
  std::span<const uint8_t> data(const GGUFTensor& t) const {
    if (t.offset > bytes_.size() || t.nbytes > bytes_.size() - t.offset)
      throw StateError("tinygrad::gguf: " + name_ + ": tensor " + detail::gguf_quoted(t.name) + " is not in this file");
    return bytes_.subspan(size_t(t.offset), size_t(t.nbytes));
  }

 private:
  std::string name_;
  std::span<const uint8_t> bytes_;
  std::shared_ptr<const void> owner_;  // the mapping, for a file from open()
  uint32_t version_ = 0;
  uint64_t alignment_ = detail::gguf_default_alignment, data_offset_ = 0;
  GGUFMetadata metadata_;
  std::map<std::string, size_t> keys_, tensor_index_;
  std::vector<GGUFTensor> tensors_;

  std::string what(const std::string& key) const { return name_ + ": key " + detail::gguf_quoted(key); }

  void parse_header() {
    detail::GGUFCursor c{bytes_, name_, 0, {}};
    c.need(4, "magic");
    if (std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
      std::string m;
      for (int i = 0; i < 4; i++) m += std::isprint(bytes_[size_t(i)]) ? char(bytes_[size_t(i)]) : '?';
      c.fail("not a GGUF file: the magic is '" + m + "', not 'GGUF'");
    }
    c.pos = 4;
    version_ = c.u32("version");
    if (version_ == 1) c.fail("GGUF version 1 is not supported (it used 32-bit counts): convert the file with a newer llama.cpp");
    if (version_ != 2 && version_ != 3)
      c.fail("GGUF version " + std::to_string(version_) + " is not supported (2 and 3 are)" +
             ((version_ & 0xFFFF) == 0 ? ": a big-endian file?" : ""));
    uint64_t n_tensors = c.u64("tensor count"), n_kv = c.u64("metadata count");
    // each key/value takes at least 8 + 1 (a non-empty key) + 4 (type) + 1 bytes, each tensor info 8 + 4 + 4 + 8
    if (n_kv > c.left() / 14 || n_tensors > c.left() / 24)
      c.fail("a header of " + std::to_string(n_kv) + " keys and " + std::to_string(n_tensors) + " tensors cannot fit in the " +
             std::to_string(c.left()) + " bytes left");
    for (uint64_t i = 0; i < n_kv; i++) {
      c.ctx = "key " + std::to_string(i);
      std::string key = c.str("key length");
      if (key.empty()) c.fail("the key is empty");
      c.ctx = "key " + detail::gguf_quoted(key);
      if (keys_.count(key)) c.fail("duplicate key");
      GGUFValue v = detail::gguf_read_value(c);
      keys_.emplace(key, metadata_.size());
      metadata_.emplace_back(std::move(key), std::move(v));
    }
    c.ctx.clear();
    if (auto* a = find("general.alignment")) {
      c.ctx = "key 'general.alignment'";
      if (a->type != GGUFType::UINT32) c.fail("is " + a->type_name() + ", not UINT32");
      alignment_ = std::get<uint64_t>(a->data);
      if (alignment_ == 0 || (alignment_ & (alignment_ - 1))) c.fail(std::to_string(alignment_) + " is not a power of two");
      c.ctx.clear();
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
      GGUFTensor t;
      c.ctx = "tensor " + std::to_string(i);
      t.name = c.str("name length");
      c.ctx = "tensor " + detail::gguf_quoted(t.name);
      if (t.name.size() >= detail::gguf_max_name)
        c.fail("the name is " + std::to_string(t.name.size()) + " bytes, ggml allows at most " + std::to_string(detail::gguf_max_name - 1));
      if (tensor_index_.count(t.name)) c.fail("duplicate tensor name");
      uint32_t n_dims = c.u32("dimension count");
      if (n_dims > detail::gguf_max_dims) c.fail(std::to_string(n_dims) + " dimensions, ggml allows at most 4");
      for (uint32_t j = 0; j < n_dims; j++) {
        uint64_t d = c.u64("dimension");
        if (d > uint64_t(INT64_MAX)) c.fail("ne[" + std::to_string(j) + "] = " + std::to_string(d) + " is negative as int64");
        t.ne.push_back(int64_t(d));
      }
      uint32_t id = c.u32("ggml type");
      auto info = ggml_type_info(id);
      if (!info) c.fail("unknown ggml type id " + std::to_string(id));
      t.type = info->type;
      auto nb = detail::gguf_nbytes(t.ne, t.type);
      if (auto* err = std::get_if<std::string>(&nb)) c.fail("ne " + detail::gguf_ne(t.ne) + " of type " + info->name + ": " + *err);
      t.nbytes = std::get<uint64_t>(nb);
      t.offset = c.u64("data offset");
      if (t.offset % alignment_)
        c.fail("data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
      tensor_index_.emplace(t.name, tensors_.size());
      tensors_.push_back(std::move(t));
    }
    c.ctx.clear();
    data_offset_ = c.pos;
    if (n_tensors > 0) {
      if (!detail::gguf_pad(c.pos, alignment_, &data_offset_) || data_offset_ > bytes_.size())
        c.fail("the data section (at offset " + std::to_string(c.pos) + " rounded up to the alignment " + std::to_string(alignment_) +
               ") starts past the end of the file (" + std::to_string(bytes_.size()) + " bytes)");
    }
    // dense and in order, as ggml requires; then each tensor in the file
    uint64_t expect = 0, file_left = bytes_.size() - data_offset_;
    for (size_t i = 0; i < tensors_.size(); i++) {
      GGUFTensor& t = tensors_[i];
      c.ctx = "tensor " + detail::gguf_quoted(t.name);
      auto range = [](uint64_t b, uint64_t n) { return "[" + std::to_string(b) + ", " + std::to_string(b + n) + ")"; };
      if (t.offset < expect)
        c.fail("data at " + range(t.offset, t.nbytes) + " overlaps tensor " + detail::gguf_quoted(tensors_[i - 1].name) + " at " +
               range(tensors_[i - 1].offset - data_offset_, tensors_[i - 1].nbytes) + " (offsets are relative to the data section)");
      if (t.offset > expect)
        c.fail("data offset " + std::to_string(t.offset) + " leaves a gap: ggml requires the tensors dense and in order, so it must be " +
               std::to_string(expect));
      if (t.nbytes > file_left || t.offset > file_left - t.nbytes)
        c.fail("data " + range(t.offset, t.nbytes) + " (from the data section at " + std::to_string(data_offset_) +
               ") lies past the end of the file (" + std::to_string(bytes_.size()) + " bytes)");
      t.offset += data_offset_;
      detail::gguf_pad(expect + t.nbytes, alignment_, &expect);  // NOTE: expect + nbytes <= file size: no overflow
    }
  }
};

namespace detail {
struct GGUFWriter {
  std::vector<uint8_t> out;
  void uint(uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; i++) out.push_back(uint8_t(v >> (8 * i)));
  }
  void str(const std::string& s) {
    uint(s.size(), 8);
    out.insert(out.end(), s.begin(), s.end());
  }
  void pad(uint64_t a) {
    while (out.size() % a) out.push_back(0);
  }
};
[[noreturn]] inline void gguf_write_fail(const std::string& why) { throw StateError("tinygrad::gguf_write: " + why); }

// one scalar of type t from an int64/uint64/double/bool; what names the key
inline void gguf_write_scalar(GGUFWriter& w, GGUFType t, const std::variant<uint64_t, int64_t, double, bool>& v, const std::string& what) {
  auto bad = [&](const std::string& why) { gguf_write_fail(what + ": " + why); };
  unsigned n = unsigned(gguf_scalar_size(t));
  if (t == GGUFType::BOOL) {
    if (!std::holds_alternative<bool>(v)) bad("a BOOL value needs a bool");
    w.uint(std::get<bool>(v) ? 1 : 0, 1);
  } else if (gguf_is_float(t)) {
    if (!std::holds_alternative<double>(v)) bad("a " + to_string(t) + " value needs a double");
    double d = std::get<double>(v);
    if (t == GGUFType::FLOAT32) {
      float f = float(d);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      w.uint(u, 4);
    } else {
      uint64_t u;
      std::memcpy(&u, &d, 8);
      w.uint(u, 8);
    }
  } else {
    if (!std::holds_alternative<uint64_t>(v) && !std::holds_alternative<int64_t>(v)) bad("a " + to_string(t) + " value needs an integer");
    bool neg = std::holds_alternative<int64_t>(v) && std::get<int64_t>(v) < 0;
    uint64_t u = neg ? uint64_t(std::get<int64_t>(v)) : std::holds_alternative<int64_t>(v) ? uint64_t(std::get<int64_t>(v)) : std::get<uint64_t>(v);
    std::string shown = neg ? std::to_string(std::get<int64_t>(v)) : std::to_string(u);
    bool fits = gguf_is_unsigned(t) ? !neg && (n == 8 || u < (uint64_t(1) << (8 * n)))
                                    : neg ? (n == 8 || int64_t(u) >= -(int64_t(1) << (8 * n - 1)))
                                          : u < (uint64_t(1) << (8 * n - 1));
    if (!fits) bad(shown + " does not fit " + to_string(t));
    w.uint(u, n);
  }
}
inline void gguf_write_value(GGUFWriter& w, const GGUFValue& v, const std::string& what) {
  auto bad = [&](const std::string& why) { gguf_write_fail(what + ": " + why); };
  if (uint32_t(v.type) >= gguf_type_count) bad("unknown value type " + std::to_string(uint32_t(v.type)));
  w.uint(uint32_t(v.type), 4);
  auto scalar = [&](GGUFType t, const auto& x) -> std::variant<uint64_t, int64_t, double, bool> {
    using X = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<X, uint64_t> || std::is_same_v<X, int64_t> || std::is_same_v<X, double> || std::is_same_v<X, bool>) return x;
    else gguf_write_fail(what + ": a " + to_string(t) + " value cannot hold a " + (std::is_same_v<X, std::string> ? "string" : "vector"));
  };
  if (v.type == GGUFType::STRING) {
    auto* s = std::get_if<std::string>(&v.data);
    if (!s) bad("a STRING value needs a std::string");
    w.str(*s);
  } else if (v.type != GGUFType::ARRAY) {
    std::visit([&](const auto& x) { gguf_write_scalar(w, v.type, scalar(v.type, x), what); }, v.data);
  } else {
    if (uint32_t(v.elem) >= gguf_type_count) bad("unknown array element type " + std::to_string(uint32_t(v.elem)));
    if (v.elem == GGUFType::ARRAY) bad("nested arrays are not supported (ggml rejects them)");
    w.uint(uint32_t(v.elem), 4);
    std::visit([&](const auto& x) {
      using X = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<X, std::vector<std::string>>) {
        if (v.elem != GGUFType::STRING) bad("an ARRAY of " + to_string(v.elem) + " cannot hold strings");
        w.uint(x.size(), 8);
        for (auto& s : x) w.str(s);
      } else if constexpr (requires { x.size(); typename X::value_type; } && !std::is_same_v<X, std::string>) {
        if (v.elem == GGUFType::STRING) bad("an ARRAY of STRING needs a std::vector<std::string>");
        w.uint(x.size(), 8);
        for (auto e : x) gguf_write_scalar(w, v.elem, scalar(v.elem, typename X::value_type(e)), what);
      } else {
        bad("an ARRAY value needs a std::vector");
      }
    }, v.data);
  }
}
}  // namespace detail

// a tensor to write: its bytes (ggml's layout for `type`; the caller keeps them alive during the call)
struct GGUFTensorData {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] innermost, as in GGUFTensor
  GGMLType type = GGMLType::F32;
  std::span<const uint8_t> bytes;
};

namespace detail {
// everything before the data section (padded to the alignment), checked; sets *alignment
inline std::vector<uint8_t> gguf_header(const GGUFMetadata& metadata, const std::vector<GGUFTensorData>& tensors, uint32_t version,
                                        uint64_t* alignment) {
  if (version != 2 && version != 3) gguf_write_fail("version " + std::to_string(version) + " is not supported (2 and 3 are)");
  *alignment = gguf_default_alignment;
  GGUFWriter w;
  w.out.insert(w.out.end(), {'G', 'G', 'U', 'F'});
  w.uint(version, 4);
  w.uint(tensors.size(), 8);
  w.uint(metadata.size(), 8);
  std::map<std::string, int> seen;
  for (auto& [key, v] : metadata) {
    std::string what = "key " + gguf_quoted(key);
    if (key.empty()) gguf_write_fail("an empty key");
    if (key.size() > gguf_max_string) gguf_write_fail(what + ": longer than 2^30 bytes");
    if (seen[key]++) gguf_write_fail(what + " appears twice");
    if (key == "general.alignment") {
      auto* a = std::get_if<uint64_t>(&v.data);
      if (v.type != GGUFType::UINT32 || !a) gguf_write_fail(what + " must be UINT32 (as a uint64_t), not " + v.type_name());
      if (*a == 0 || *a > UINT32_MAX || (*a & (*a - 1))) gguf_write_fail(what + ": " + std::to_string(*a) + " is not a power of two");
      *alignment = *a;
    }
    w.str(key);
    gguf_write_value(w, v, what);
  }
  std::map<std::string, int> names;
  uint64_t off = 0;
  for (auto& t : tensors) {
    std::string what = "tensor " + gguf_quoted(t.name);
    if (t.name.size() >= gguf_max_name) gguf_write_fail(what + ": the name is longer than ggml's 63 bytes");
    if (names[t.name]++) gguf_write_fail(what + " appears twice");
    if (t.ne.size() > gguf_max_dims) gguf_write_fail(what + ": " + std::to_string(t.ne.size()) + " dimensions, ggml allows at most 4");
    if (!ggml_type_info(uint32_t(t.type))) gguf_write_fail(what + ": unknown ggml type " + std::to_string(uint32_t(t.type)));
    auto nb = gguf_nbytes(t.ne, t.type);
    std::string desc = what + ": ne " + gguf_ne(t.ne) + " of type " + to_string(t.type);
    if (auto* err = std::get_if<std::string>(&nb)) gguf_write_fail(desc + ": " + *err);
    if (t.bytes.size() != std::get<uint64_t>(nb))
      gguf_write_fail(desc + " needs " + std::to_string(std::get<uint64_t>(nb)) + " bytes, it has " + std::to_string(t.bytes.size()));
    w.str(t.name);
    w.uint(t.ne.size(), 4);
    for (auto d : t.ne) w.uint(uint64_t(d), 8);
    w.uint(uint32_t(t.type), 4);
    w.uint(off, 8);
    if (!gguf_pad(off + t.bytes.size(), *alignment, &off)) gguf_write_fail(what + ": the data section overflows 2^64 bytes");
  }
  if (!tensors.empty()) w.pad(*alignment);
  return std::move(w.out);
}
}  // namespace detail

// A GGUF image: metadata in the order given, then the tensor infos, then the data, each tensor padded with zeros to
// the alignment (general.alignment when the metadata has it: a UINT32 power of two; else 32), as ggml writes it.
// Checks what the reader checks (StateError naming "tinygrad::gguf_write" and the key or tensor), and that each
// tensor's bytes are exactly the size of its ne and type.
inline std::vector<uint8_t> gguf_write_bytes(const GGUFMetadata& metadata, const std::vector<GGUFTensorData>& tensors, uint32_t version = 3) {
  uint64_t alignment = 0;
  detail::GGUFWriter w{detail::gguf_header(metadata, tensors, version, &alignment)};
  for (auto& t : tensors) {
    w.out.insert(w.out.end(), t.bytes.begin(), t.bytes.end());
    w.pad(alignment);
  }
  return std::move(w.out);
}
// the same, written to `path` (the tensors' bytes are streamed, not copied)
inline void gguf_write(const std::string& path, const GGUFMetadata& metadata, const std::vector<GGUFTensorData>& tensors, uint32_t version = 3) {
  uint64_t alignment = 0;
  auto header = detail::gguf_header(metadata, tensors, version, &alignment);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw StateError("tinygrad::gguf_write: cannot open " + path + " for writing");
  f.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size()));
  const std::vector<char> zeros(size_t(alignment), 0);
  for (auto& t : tensors) {
    f.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
    f.write(zeros.data(), std::streamsize((alignment - t.bytes.size() % alignment) % alignment));
  }
  if (!f) throw StateError("tinygrad::gguf_write: writing " + path + " failed");
}

}  // namespace tinygrad::nn
