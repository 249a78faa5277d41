#pragma once
// Model state: parameters found by name (no base class: a model lists its members once with
// TINYGRAD_STATE), state dicts, and safetensors save/load.
#include <cstring>
#include <map>
#if TINYGRAD_WITH_INTERNALS
#include <filesystem>
#include <fstream>
#endif
#include "../json.hpp"
#include "../tensor/gradient.hpp"

// Makes a model's members discoverable by name: TINYGRAD_STATE(Model, conv1, bn1, fc) at global scope (it specializes
// a template of ours). Members may be Tensors, layers, other adapted structs, std::optional or std::vector of those;
// anything else is skipped.
#define TINYGRAD_STATE(T, ...)                                                                                      \
  template <> struct tinygrad::nn::detail::members<T> {                                                             \
    static constexpr bool adapted = true;                                                                           \
    template <class S, class F> static void each(S& s, F&& f) { TINYGRAD_DETAIL_FOR_EACH(TINYGRAD_DETAIL_VISIT, __VA_ARGS__) } \
  }
// The same for a class template (TINYGRAD_STATE needs a complete type), inside the class, declaring the members:
//   template <int64_t N> struct Block { using L = static_nn::Linear<N, N>; TINYGRAD_MEMBERS(Block, (L, fc1), (L, fc2)); };
// (a member type with a comma in it needs an alias, as L here)
#define TINYGRAD_MEMBERS(T, ...)                                                                                    \
  TINYGRAD_DETAIL_FOR_EACH(TINYGRAD_DETAIL_DECLARE, __VA_ARGS__)                                                    \
  template <class S, class F> static void tinygrad_members(S& s, F&& f) { TINYGRAD_DETAIL_FOR_EACH(TINYGRAD_DETAIL_VISIT_PAIR, __VA_ARGS__) } \
  static_assert(true)
// NOTE: the macros' machinery: a for-each over up to 63 arguments (each TINYGRAD_DETAIL_EXPAND level rescans 4 times)
#define TINYGRAD_DETAIL_VISIT(n) f(#n, s.n);
#define TINYGRAD_DETAIL_DECLARE(p) TINYGRAD_DETAIL_DECLARE_ p;
#define TINYGRAD_DETAIL_DECLARE_(T, n) T n
#define TINYGRAD_DETAIL_VISIT_PAIR(p) TINYGRAD_DETAIL_VISIT_PAIR_ p
#define TINYGRAD_DETAIL_VISIT_PAIR_(T, n) f(#n, s.n);
#define TINYGRAD_DETAIL_PARENS ()
#define TINYGRAD_DETAIL_EXPAND(...) TINYGRAD_DETAIL_EXPAND3(TINYGRAD_DETAIL_EXPAND3(TINYGRAD_DETAIL_EXPAND3(TINYGRAD_DETAIL_EXPAND3(__VA_ARGS__))))
#define TINYGRAD_DETAIL_EXPAND3(...) TINYGRAD_DETAIL_EXPAND2(TINYGRAD_DETAIL_EXPAND2(TINYGRAD_DETAIL_EXPAND2(TINYGRAD_DETAIL_EXPAND2(__VA_ARGS__))))
#define TINYGRAD_DETAIL_EXPAND2(...) TINYGRAD_DETAIL_EXPAND1(TINYGRAD_DETAIL_EXPAND1(TINYGRAD_DETAIL_EXPAND1(TINYGRAD_DETAIL_EXPAND1(__VA_ARGS__))))
#define TINYGRAD_DETAIL_EXPAND1(...) __VA_ARGS__
#define TINYGRAD_DETAIL_FOR_EACH(m, ...) __VA_OPT__(TINYGRAD_DETAIL_EXPAND(TINYGRAD_DETAIL_FOR_EACH_(m, __VA_ARGS__)))
#define TINYGRAD_DETAIL_FOR_EACH_(m, a, ...) m(a) __VA_OPT__(TINYGRAD_DETAIL_FOR_EACH_AGAIN TINYGRAD_DETAIL_PARENS(m, __VA_ARGS__))
#define TINYGRAD_DETAIL_FOR_EACH_AGAIN() TINYGRAD_DETAIL_FOR_EACH_

namespace tinygrad::nn {

using StateDict = std::map<std::string, Tensor>;

namespace detail {
// a struct's members by name: TINYGRAD_STATE specializes it (TINYGRAD_MEMBERS declares S::tinygrad_members instead)
template <class S> struct members { static constexpr bool adapted = false; };

TINYGRAD_API std::string join(const std::string& a, const std::string& b) TINYGRAD_DEF({ return a.empty() ? b : a + "." + b; })

// NOTE: declared first so the optional and vector overloads see the struct one (a std::vector of layers)
template <class F> void visit(const std::string& name, Tensor& t, F& f);
template <class F, class T> void visit(const std::string& name, std::optional<T>& o, F& f);
template <class F, class T> void visit(const std::string& name, std::vector<T>& v, F& f);
template <class F, class S> void visit(const std::string& name, S& s, F& f);

template <class F> void visit(const std::string& name, Tensor& t, F& f) { f(name, t); }
template <class F, class T> void visit(const std::string& name, std::optional<T>& o, F& f) { if (o) visit(name, *o, f); }
template <class F, class T> void visit(const std::string& name, std::vector<T>& v, F& f) {
  for (size_t i = 0; i < v.size(); i++) visit(join(name, std::to_string(i)), v[i], f);
}
template <class F, class S>
void visit(const std::string& name, S& s, F& f) {
  if constexpr (std::is_invocable_v<F&, const std::string&, S&>) f(name, s);  // a walk over modules (nn::train) sees the structs
  auto member = [&](const char* n, auto& m) { visit(join(name, n), m, f); };
  if constexpr (members<std::remove_cv_t<S>>::adapted) members<std::remove_cv_t<S>>::each(s, member);
  else if constexpr (requires { S::tinygrad_members(s, member); }) S::tinygrad_members(s, member);
  else if constexpr (requires { { s.tensor() } -> std::same_as<const Tensor&>; }) {  // a static_tensor: its Tensor handle
    Tensor t = s.tensor();
    f(name, t);
  }
}
}  // namespace detail

// every Tensor of the model by dotted name ("layers.0.weight"); handles alias the model's tensors
template <class M>
StateDict get_state_dict(M& model) {
  StateDict d;
  auto f = [&](const std::string& n, Tensor& t) { d.emplace(n, t); };
  detail::visit("", model, f);
  return d;
}

// every Tensor of the model, in declaration order (tinygrad's get_parameters)
template <class M>
std::vector<Tensor> get_parameters(M& model) {
  std::vector<Tensor> v;
  auto f = [&](const std::string&, Tensor& t) { v.push_back(t); };
  detail::visit("", model, f);
  return v;
}

// PyTorch's model.train(mode) / model.eval(): sets the `training` member of every layer reachable through TINYGRAD_STATE
// (Dropout, BatchNorm; list them in the model's TINYGRAD_STATE even though Dropout holds no tensor). A layer's own
// setting wins over TrainingScope; nullopt makes the layers follow the scope again (the default).
template <class M>
void train(M& model, std::optional<bool> mode = true) {
  auto f = [&](const std::string&, auto& m) {
    if constexpr (requires { m.training = mode; }) m.training = mode;
  };
  detail::visit("", model, f);
}
template <class M>
void eval(M& model) { train(model, false); }

// copy values into the model's tensors (cast to each tensor's dtype, moved to its device); strict: missing and
// unexpected keys are errors. Shape mismatches are always errors. Everything is checked before anything is
// copied, so after an error the model is unchanged.
template <class M>
void load_state_dict(M& model, const StateDict& d, bool strict = true) {
  std::vector<std::string> missing, unexpected, mismatched;
  StateDict mine = get_state_dict(model);
  for (auto& [n, t] : mine) {
    auto it = d.find(n);
    if (it == d.end()) missing.push_back(n);
    else if (it->second.shape() != t.shape())
      mismatched.push_back("'" + n + "' has shape " + to_string(it->second.shape()) + " in the state dict but " +
                           to_string(t.shape()) + " in the model");
  }
  for (auto& [k, v] : d) if (!mine.count(k)) unexpected.push_back(k);
  auto list = [](const std::vector<std::string>& v) { std::string s; for (auto& x : v) s += (s.empty() ? "" : ", ") + x; return s; };
  std::vector<std::string> problems;
  if (!mismatched.empty()) problems.push_back(list(mismatched));
  if (strict && !missing.empty()) problems.push_back("missing keys: " + list(missing));
  if (strict && !unexpected.empty()) problems.push_back("unexpected keys: " + list(unexpected));
  if (!problems.empty()) {
    std::string msg;
    for (auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
    throw StateError("tinygrad::load_state_dict: " + msg);
  }
  std::vector<Tensor> loaded;
  for (auto& [n, t] : mine) {
    auto it = d.find(n);
    if (it == d.end()) continue;
    Tensor h = t;  // shares the model's tensor
    h.assign(it->second.to(t.device()));
    loaded.push_back(h);
  }
  Tensor::realize_all(loaded);
}

// ---- safetensors: u64 little-endian header length, JSON header, raw little-endian data ----
namespace detail {
inline const std::pair<DType, const char*> st_dtypes[] = {
    {DType::Bool, "BOOL"}, {DType::Int8, "I8"},   {DType::UInt8, "U8"},   {DType::Int16, "I16"}, {DType::UInt16, "U16"},
    {DType::Int32, "I32"}, {DType::UInt32, "U32"}, {DType::Int64, "I64"}, {DType::UInt64, "U64"}, {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"}, {DType::Float32, "F32"}, {DType::Float64, "F64"}};

using tinygrad::detail::Json;
using tinygrad::detail::JsonParser;
using tinygrad::detail::json_str;

TINYGRAD_API std::vector<char> tensor_bytes(const Tensor& t) TINYGRAD_DEF({
  auto buf = t.buffer();  // copyout reads any device
  std::vector<char> host(buf->nbytes());
  buf->copyout(host.data());
  return host;
})
}  // namespace detail

// write tensors to a .safetensors file (names sorted; metadata optional)
TINYGRAD_API void safe_save(const StateDict& d, const std::string& path, const std::map<std::string, std::string>& metadata = {}) TINYGRAD_DEF({
  std::string header = "{";
  std::vector<std::vector<char>> blobs;
  size_t off = 0;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (auto& [k, v] : metadata) {
      if (!first) header += ',';
      header += detail::json_str(k) + ":" + detail::json_str(v);
      first = false;
    }
    header += "},";
  }
  for (auto& [name, t] : d) {
    const char* code = nullptr;
    for (auto& [dt, c] : detail::st_dtypes) if (dt == t.dtype()) code = c;
    if (!code)
      throw StateError("tinygrad::safe_save: " + path + ": tensor '" + name + "' has dtype " + to_string(t.dtype()) +
                       ", which safetensors cannot store");
    blobs.push_back(detail::tensor_bytes(t));
    std::string shape;
    for (auto s : t.shape()) {
      if (!shape.empty()) shape += ',';
      shape += std::to_string(s);
    }
    header += detail::json_str(name) + ":{\"dtype\":\"" + code + "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(off) + "," +
              std::to_string(off + blobs.back().size()) + "]},";
    off += blobs.back().size();
  }
  if (header.back() == ',') header.pop_back();
  header += "}";
  while ((8 + header.size()) % 8) header += ' ';  // the format aligns the data to 8 bytes
  std::ofstream f(path, std::ios::binary);
  if (!f) throw StateError("tinygrad::safe_save: cannot open " + path + " for writing");
  uint64_t n = header.size();
  char len[8];
  for (int i = 0; i < 8; i++) len[i] = char((n >> (8 * i)) & 0xff);
  f.write(len, 8).write(header.data(), std::streamsize(header.size()));
  for (auto& b : blobs) f.write(b.data(), std::streamsize(b.size()));
  if (!f) throw StateError("tinygrad::safe_save: write to " + path + " failed");
})

namespace detail {
// a name from a file, quoted for an error message: at most ~100 bytes of it
TINYGRAD_API std::string quoted(const std::string& s) TINYGRAD_DEF({
  constexpr size_t kMax = 100;
  if (s.size() <= kMax) return "'" + s + "'";
  size_t n = kMax;
  while (n > 0 && (uint8_t(s[n]) & 0xC0) == 0x80) n--;  // NOTE: do not cut a UTF-8 sequence
  return "'" + s.substr(0, n) + "...' (" + std::to_string(s.size()) + " bytes)";
})
TINYGRAD_API bool valid_utf8(std::string_view s) TINYGRAD_DEF({
  for (size_t i = 0; i < s.size();) {
    uint8_t c = uint8_t(s[i]);
    size_t n = c < 0x80 ? 0 : c >= 0xC2 && c < 0xE0 ? 1 : c >= 0xE0 && c < 0xF0 ? 2 : c >= 0xF0 && c < 0xF5 ? 3 : 4;  // continuation bytes
    if (n == 4 || s.size() - i <= n) return false;
    uint32_t cp = c & (0x7Fu >> (n ? n + 1 : 0));
    for (size_t k = 1; k <= n; k++) {
      if ((uint8_t(s[i + k]) & 0xC0) != 0x80) return false;
      cp = cp << 6 | (uint8_t(s[i + k]) & 0x3Fu);
    }
    // overlong, surrogate
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
    i += n + 1;
  }
  return true;
})

struct SafeTensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;  // in the data region, which starts at 8 + header length
};
// the layout of a .safetensors image, checked as the reference implementation checks it: the header length fits
// the file (and 100 MB), the header is a UTF-8 JSON object with no duplicate keys, every tensor has a known dtype,
// a valid shape and byte size == numel * itemsize, and the tensors' data_offsets tile the data region exactly, in order
// (no overlaps, gaps or trailing bytes). read(offset, size) returns the bytes of the image at offset.
struct SafeLayout {
  static constexpr uint64_t kMaxHeader = 100'000'000;
  std::string what;  // the path, for messages
  uint64_t n = 0;    // header bytes; the data starts at 8 + n
  std::vector<SafeTensorInfo> tensors;  // in header order
  Json root;

  // "__metadata__" (nullptr when absent), not checked here: safe_load_metadata checks it
  const Json* metadata() const TINYGRAD_MEMBER_DEF({
    for (auto& m : root.obj) if (m.key == "__metadata__") return &m.value;
    return nullptr;
  })

  StateError fail(const std::string& why) const TINYGRAD_MEMBER_DEF({ return StateError("tinygrad::safe_load: " + what + ": " + why); })
  template <class Read>
  SafeLayout(std::string what_, uint64_t fsize, Read&& read) : what(std::move(what_)) {
    if (fsize < 8) throw fail("file is " + std::to_string(fsize) + " bytes, shorter than the 8-byte header length");
    const char* len = read(0, 8);
    for (int i = 0; i < 8; i++) n |= uint64_t(uint8_t(len[i])) << (8 * i);
    if (n > fsize - 8) throw fail("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(fsize));
    if (n > kMaxHeader) throw fail("header length " + std::to_string(n) + " is larger than the limit of " + std::to_string(kMaxHeader) + " bytes");
    std::string header(read(8, n), n);
    if (!valid_utf8(header)) throw fail("malformed header: not valid UTF-8");
    JsonParser jp{header, "tinygrad::safe_load: " + what + ": malformed header: "};
    root = jp.value();
    jp.ws();
    if (jp.p != header.size()) jp.fail("trailing characters after the JSON object");
    if (root.kind != Json::Obj) throw fail("header is not a JSON object");
    if (header[0] != '{') throw fail("malformed header: it must start with '{'");
    check_keys(root, "the header");
    parse_tensors(fsize - 8 - n);
  }

 private:
  void check_keys(const Json& o, const std::string& where) const TINYGRAD_MEMBER_DEF({
    std::vector<const std::string*> keys;
    for (auto& m : o.obj) keys.push_back(&m.key);
    std::sort(keys.begin(), keys.end(), [](auto* a, auto* b) { return *a < *b; });
    for (size_t i = 1; i < keys.size(); i++)
      if (*keys[i] == *keys[i - 1]) throw fail("key " + quoted(*keys[i]) + " appears twice in " + where);
  })
  void parse_tensors(uint64_t data_size) TINYGRAD_MEMBER_DEF({
    for (auto& member : root.obj) {
      const std::string& name = member.key;  // NOTE: not a structured binding: the lambdas below capture it (clang)
      const Json& e = member.value;
      if (name == "__metadata__") continue;
      std::string q = quoted(name);
      if (e.kind != Json::Obj) throw fail("entry " + q + " is not an object");
      check_keys(e, "tensor " + q);
      auto field = [&](const char* k, Json::Kind kind) -> const Json& {
        for (auto& [kk, v] : e.obj)
          if (kk == k) {
            if (v.kind != kind) throw fail("tensor " + q + " has a malformed \"" + k + "\"");
            return v;
          }
        throw fail("tensor " + q + " has no \"" + k + "\"");
      };
      const auto& dtj = field("dtype", Json::Str);
      std::optional<DType> dt;
      for (auto& [x, c] : st_dtypes) if (dtj.s == c) dt = x;
      if (!dt) throw fail("tensor " + q + " has unsupported dtype " + quoted(dtj.s));
      Shape shape;
      for (auto& s : field("shape", Json::Arr).arr) {
        if (s.kind != Json::Int || s.i < 0) throw fail("tensor " + q + " has a bad shape entry");
        shape.push_back(s.i);
      }
      const auto& offs = field("data_offsets", Json::Arr).arr;
      if (offs.size() != 2 || offs[0].kind != Json::Int || offs[1].kind != Json::Int) throw fail("tensor " + q + " has bad data_offsets");
      if (offs[0].i < 0 || offs[1].i < offs[0].i || uint64_t(offs[1].i) > data_size)
        throw fail("tensor " + q + " data [" + std::to_string(offs[0].i) + ", " + std::to_string(offs[1].i) + ") lies outside the " +
                   std::to_string(data_size) + " data bytes (file truncated?)");
      uint64_t b = uint64_t(offs[0].i), en = uint64_t(offs[1].i);
      int64_t numel = 0, need = 0;
      bool ok = tinygrad::detail::valid_shape(shape, &numel) && !__builtin_mul_overflow(numel, int64_t(itemsize(*dt)), &need);
      if (!ok || en - b != uint64_t(need))
        throw fail("tensor " + q + " of dtype " + dtj.s + " and shape " + to_string(shape) + " needs " +
                   (ok ? std::to_string(need) : "more than 2^63") + " bytes, data_offsets give " + std::to_string(en - b));
      tensors.push_back({name, *dt, shape, b, en});
    }
    // the data_offsets, in order, must tile [0, data_size)
    std::vector<const SafeTensorInfo*> order;
    for (auto& t : tensors) order.push_back(&t);
    std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return std::pair(a->begin, a->end) < std::pair(b->begin, b->end); });
    uint64_t at = 0;
    const SafeTensorInfo* prev = nullptr;
    auto range = [](const SafeTensorInfo& t) { return quoted(t.name) + " [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")"; };
    for (auto* t : order) {
      if (t->begin < at) throw fail("tensor " + range(*t) + " overlaps tensor " + range(*prev));
      if (t->begin > at)
        throw fail("data bytes [" + std::to_string(at) + ", " + std::to_string(t->begin) +
                   ") belong to no tensor (a gap before tensor " + range(*t) + ")");
      at = t->end;
      prev = t;
    }
    if (at != data_size)
      throw fail(std::to_string(data_size - at) + " trailing data bytes after the last tensor (data_offsets cover " + std::to_string(at) + " of " +
                 std::to_string(data_size) + ")");
  })
};

// the tensors of a checked layout; read(offset, size) as for SafeLayout
template <class Read>
StateDict load_tensors(const SafeLayout& l, Read&& read, const std::string& device) {
  StateDict d;
  for (auto& t : l.tensors) d.emplace(t.name, Tensor::from_bytes(read(8 + l.n + t.begin, t.end - t.begin), t.dtype, t.shape, device));
  return d;
}

#if TINYGRAD_WITH_INTERNALS  // safe_load's, compiled with the library
// reads a file at offsets, each read checked; the bytes stay valid until the next read
struct FileReader {
  std::string path;
  std::ifstream f;
  uint64_t size = 0;
  std::vector<char> buf;
  explicit FileReader(const std::string& p) : path(p) {
    std::error_code ec;
    auto st = std::filesystem::status(p, ec);
    // NOTE: a directory opens as a stream of size 0 or -1 whose reads fail: name it instead of reading garbage
    if (std::filesystem::is_directory(st)) throw StateError("tinygrad::safe_load: " + p + " is a directory, not a .safetensors file");
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw StateError("tinygrad::safe_load: " + p + " is not a regular file");
    f.open(p, std::ios::binary | std::ios::ate);
    if (!f) throw StateError("tinygrad::safe_load: cannot open " + p);
    auto end = f.tellg();
    if (end < 0) throw StateError("tinygrad::safe_load: cannot determine the size of " + p);
    size = uint64_t(end);
  }
  const char* operator()(uint64_t off, uint64_t n) TINYGRAD_MEMBER_DEF({
    buf.resize(n);
    f.seekg(std::streamoff(off));
    f.read(buf.data(), std::streamsize(n));
    if (!f || uint64_t(f.gcount()) != n)
      throw StateError("tinygrad::safe_load: " + path + ": reading " + std::to_string(n) + " bytes at offset " + std::to_string(off) + " failed");
    return buf.data();
  })
};
#endif
}  // namespace detail

// read a .safetensors file into CPU tensors (or `device`); every malformed part is an error naming the file.
// Everything is checked before any tensor is made.
TINYGRAD_API StateDict safe_load(const std::string& path, const std::string& device = "") TINYGRAD_DEF({
  detail::FileReader r(path);
  detail::SafeLayout l(path, r.size, r);
  return detail::load_tensors(l, r, device);
})
// the same from a .safetensors image in memory (a file read or mapped by the caller); `what` names it in errors
TINYGRAD_API StateDict safe_load_bytes(std::string_view data, const std::string& device = "", const std::string& what = "<memory>") TINYGRAD_DEF({
  auto read = [&](uint64_t off, uint64_t) { return data.data() + off; };  // NOTE: SafeLayout checks every range first
  detail::SafeLayout l(what, data.size(), read);
  return detail::load_tensors(l, read, device);
})

namespace detail {
// the "__metadata__" string map of a checked layout
TINYGRAD_API std::map<std::string, std::string> metadata_map(const SafeLayout& l) TINYGRAD_DEF({
  std::map<std::string, std::string> m;
  const Json* meta = l.metadata();
  if (!meta) return m;
  if (meta->kind != Json::Obj) throw l.fail("__metadata__ is not an object");
  for (auto& [k, v] : meta->obj) {
    if (v.kind != Json::Str) throw l.fail("__metadata__ value " + quoted(k) + " is not a string");
    m[k] = v.s;
  }
  return m;
})
}  // namespace detail

// the "__metadata__" string map of a .safetensors file (empty when it has none)
TINYGRAD_API std::map<std::string, std::string> safe_load_metadata(const std::string& path) TINYGRAD_DEF({
  detail::FileReader r(path);
  return detail::metadata_map(detail::SafeLayout(path, r.size, r));
})

}  // namespace tinygrad::nn
