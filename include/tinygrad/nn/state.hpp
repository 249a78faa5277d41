#pragma once
// Model state: parameters found by name (no base class: a model lists its members once with
// TINYGRAD_STATE), state dicts, and safetensors save/load.
#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/for_each.hpp>
#include <cstring>
#include <fstream>
#include <map>
#include "../tensor/gradient.hpp"

// Makes a model's members discoverable by name: TINYGRAD_STATE(Model, conv1, bn1, fc)
// at namespace scope. Members may be Tensors, layers, other adapted structs, std::optional
// or std::vector of those; anything else is skipped.
#define TINYGRAD_STATE(...) BOOST_HANA_ADAPT_STRUCT(__VA_ARGS__)

namespace tinygrad::nn {

struct StateError : Error { using Error::Error; };

using StateDict = std::map<std::string, Tensor>;

namespace detail {
inline std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

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
  if constexpr (boost::hana::Struct<S>::value)
    boost::hana::for_each(boost::hana::accessors<S>(), [&](auto pair) {
      visit(join(name, boost::hana::to<const char*>(boost::hana::first(pair))), boost::hana::second(pair)(s), f);
    });
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
      mismatched.push_back("'" + n + "' has shape " + to_string(it->second.shape()) + " in the state dict but " + to_string(t.shape()) + " in the model");
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

// just enough JSON for a safetensors header: objects, arrays, strings, integers (floats/bools/null skipped)
struct JsonMember;
struct Json {
  enum Kind { Null, Int, Str, Arr, Obj } kind = Null;
  int64_t i = 0;
  std::string s;
  std::vector<Json> arr;
  std::vector<JsonMember> obj;  // NOTE: not std::pair<std::string, Json>: a pair needs Json complete here (clang)
};
struct JsonMember {
  std::string key;
  Json value;
};
struct JsonParser {
  const std::string& t;
  std::string file;
  size_t p = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw StateError("tinygrad::safe_load: " + file + ": malformed header: " + what + " at byte " + std::to_string(p));
  }
  void ws() { while (p < t.size() && std::isspace(uint8_t(t[p]))) p++; }
  char peek() { ws(); if (p >= t.size()) fail("unexpected end"); return t[p]; }
  void expect(char c) { if (peek() != c) fail(std::string("expected '") + c + "'"); p++; }
  std::string str() {
    expect('"');
    std::string r;
    while (true) {
      if (p >= t.size()) fail("unterminated string");
      char c = t[p++];
      if (c == '"') return r;
      if (c == '\\') {
        if (p >= t.size()) fail("unterminated escape");
        char e = t[p++];
        if (e == 'u') utf8(r, hex4());
        else if (std::strchr("\"\\/", e)) r += e;
        else if (std::strchr("bfnrt", e)) r += "\b\f\n\r\t"[std::strchr("bfnrt", e) - "bfnrt"];
        else fail(std::string("bad escape '\\") + e + "'");
      } else r += c;
    }
  }
  uint32_t hex4() {
    if (p + 4 > t.size()) fail("bad \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; k++, p++) {
      char h = t[p];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail("bad \\u escape");
      v = v * 16 + uint32_t(d);
    }
    return v;
  }
  void utf8(std::string& r, uint32_t c) {
    if (c >= 0xD800 && c < 0xDC00 && p + 6 <= t.size() && t[p] == '\\' && t[p + 1] == 'u') {  // surrogate pair
      size_t save = p;
      p += 2;
      uint32_t lo = hex4();
      if (lo >= 0xDC00 && lo < 0xE000) c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
      else p = save;
    }
    if (c < 0x80) r += char(c);
    else if (c < 0x800) { r += char(0xC0 | c >> 6); r += char(0x80 | (c & 0x3F)); }
    else if (c < 0x10000) { r += char(0xE0 | c >> 12); r += char(0x80 | (c >> 6 & 0x3F)); r += char(0x80 | (c & 0x3F)); }
    else { r += char(0xF0 | c >> 18); r += char(0x80 | (c >> 12 & 0x3F)); r += char(0x80 | (c >> 6 & 0x3F)); r += char(0x80 | (c & 0x3F)); }
  }
  Json value(int depth = 0) {
    if (depth > 64) fail("nesting too deep");
    Json j;
    char c = peek();
    if (c == '{') {
      p++; j.kind = Json::Obj;
      if (peek() == '}') { p++; return j; }
      while (true) {
        std::string k = str();
        expect(':');
        j.obj.push_back(JsonMember{std::move(k), value(depth + 1)});
        if (peek() == ',') { p++; continue; }
        expect('}'); return j;
      }
    }
    if (c == '[') {
      p++; j.kind = Json::Arr;
      if (peek() == ']') { p++; return j; }
      while (true) {
        j.arr.push_back(value(depth + 1));
        if (peek() == ',') { p++; continue; }
        expect(']'); return j;
      }
    }
    if (c == '"') { j.kind = Json::Str; j.s = str(); return j; }
    if (c == '-' || std::isdigit(uint8_t(c))) {
      bool neg = t[p] == '-';
      if (neg) p++;
      if (p >= t.size() || !std::isdigit(uint8_t(t[p]))) fail("bad number");
      uint64_t v = 0;
      bool big = false;
      for (; p < t.size() && std::isdigit(uint8_t(t[p])); p++) {
        uint64_t d = uint64_t(t[p] - '0');
        if (v > (uint64_t(INT64_MAX) - d) / 10) big = true;
        else v = v * 10 + d;
      }
      bool frac = false;
      while (p < t.size() && t[p] && std::strchr(".eE+-0123456789", t[p])) { frac = true; p++; }
      if (frac) return j;  // a float: not used by the format
      if (big) fail("integer too large");
      j.kind = Json::Int;
      j.i = neg ? -int64_t(v) : int64_t(v);
      return j;
    }
    for (const char* w : {"true", "false", "null"})
      if (t.compare(p, std::strlen(w), w) == 0) { p += std::strlen(w); return j; }
    fail(std::string("unexpected character '") + c + "'");
  }
};

inline std::string json_str(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { r += '\\'; r += c; }
    else if (uint8_t(c) < 0x20) { char u[8]; std::snprintf(u, sizeof(u), "\\u%04x", unsigned(uint8_t(c))); r += u; }
    else r += c;
  }
  return r + "\"";
}

inline std::vector<char> tensor_bytes(const Tensor& t) {
  auto buf = t.buffer();  // copyout reads any device
  std::vector<char> host(buf->nbytes());
  buf->copyout(host.data());
  return host;
}
}  // namespace detail

// write tensors to a .safetensors file (names sorted; metadata optional)
inline void safe_save(const StateDict& d, const std::string& path, const std::map<std::string, std::string>& metadata = {}) {
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
    if (!code) throw StateError("tinygrad::safe_save: " + path + ": tensor '" + name + "' has dtype " + to_string(t.dtype()) + ", which safetensors cannot store");
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
}

namespace detail {
// an open .safetensors file with its parsed JSON header; every malformed part is an error naming the file
struct SafeFile {
  std::string path;
  std::ifstream f;
  uint64_t fsize = 0, n = 0;
  Json root;
  StateError fail(const std::string& what) const { return StateError("tinygrad::safe_load: " + path + ": " + what); }
  explicit SafeFile(const std::string& p) : path(p), f(p, std::ios::binary | std::ios::ate) {
    if (!f) throw StateError("tinygrad::safe_load: cannot open " + path);
    fsize = uint64_t(f.tellg());
    if (fsize < 8) throw fail("file is " + std::to_string(fsize) + " bytes, shorter than the 8-byte header length");
    f.seekg(0);
    unsigned char len[8];
    f.read(reinterpret_cast<char*>(len), 8);
    for (int i = 0; i < 8; i++) n |= uint64_t(len[i]) << (8 * i);
    if (n > fsize - 8) throw fail("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(fsize));
    std::string header(n, '\0');
    f.read(header.data(), std::streamsize(n));
    if (!f) throw fail("reading the header failed");
    JsonParser jp{header, path};
    root = jp.value();
    if (root.kind != Json::Obj) throw fail("header is not a JSON object");
  }
};
}  // namespace detail

// read a .safetensors file into CPU tensors (or `device`); every malformed part is an error naming the file
inline StateDict safe_load(const std::string& path, const std::string& device = "") {
  detail::SafeFile sf(path);
  auto fail = [&](const std::string& what) { return sf.fail(what); };
  uint64_t data_size = sf.fsize - 8 - sf.n;
  StateDict d;
  for (auto& member : sf.root.obj) {
    const std::string& name = member.key;  // NOTE: not a structured binding: the lambdas below capture it (clang)
    const detail::Json& e = member.value;
    if (name == "__metadata__") continue;
    if (e.kind != detail::Json::Obj) throw fail("entry '" + name + "' is not an object");
    auto field = [&](const char* k, detail::Json::Kind kind) -> const detail::Json& {
      for (auto& [kk, v] : e.obj)
        if (kk == k) {
          if (v.kind != kind) throw fail("tensor '" + name + "' has a malformed \"" + k + "\"");
          return v;
        }
      throw fail("tensor '" + name + "' has no \"" + k + "\"");
    };
    const auto& dtj = field("dtype", detail::Json::Str);
    std::optional<DType> dt;
    for (auto& [x, c] : detail::st_dtypes) if (dtj.s == c) dt = x;
    if (!dt) throw fail("tensor '" + name + "' has unsupported dtype '" + dtj.s + "'");
    Shape shape;
    uint64_t need = uint64_t(itemsize(*dt));
    for (auto& s : field("shape", detail::Json::Arr).arr) {
      if (s.kind != detail::Json::Int || s.i < 0) throw fail("tensor '" + name + "' has a bad shape entry");
      shape.push_back(s.i);
      if (s.i && need > data_size / uint64_t(s.i)) need = UINT64_MAX;  // more bytes than the file has (and no overflow)
      else need *= uint64_t(s.i);
    }
    const auto& offs = field("data_offsets", detail::Json::Arr).arr;
    if (offs.size() != 2 || offs[0].kind != detail::Json::Int || offs[1].kind != detail::Json::Int) throw fail("tensor '" + name + "' has bad data_offsets");
    if (offs[0].i < 0 || offs[1].i < offs[0].i || uint64_t(offs[1].i) > data_size)
      throw fail("tensor '" + name + "' data [" + std::to_string(offs[0].i) + ", " + std::to_string(offs[1].i) + ") lies outside the " + std::to_string(data_size) +
                 " data bytes (file truncated?)");
    uint64_t b = uint64_t(offs[0].i), en = uint64_t(offs[1].i);
    if (en - b != need)
      throw fail("tensor '" + name + "' of dtype " + dtj.s + " and shape " + to_string(shape) + " needs " + (need == UINT64_MAX ? "more" : std::to_string(need)) +
                 " bytes, data_offsets give " + std::to_string(en - b));
    if (d.count(name)) throw fail("tensor '" + name + "' appears twice");
    std::vector<char> bytes(need);
    sf.f.seekg(std::streamoff(8 + sf.n + b));
    sf.f.read(bytes.data(), std::streamsize(need));
    if (!sf.f) throw fail("reading tensor '" + name + "' failed");
    d.emplace(name, Tensor::from_bytes(bytes.data(), *dt, shape, device));
  }
  return d;
}

// the "__metadata__" string map of a .safetensors file (empty when it has none)
inline std::map<std::string, std::string> safe_load_metadata(const std::string& path) {
  detail::SafeFile sf(path);
  std::map<std::string, std::string> m;
  for (auto& [name, e] : sf.root.obj) {
    if (name != "__metadata__") continue;
    if (e.kind != detail::Json::Obj) throw sf.fail("__metadata__ is not an object");
    for (auto& [k, v] : e.obj) {
      if (v.kind != detail::Json::Str) throw sf.fail("__metadata__ value '" + k + "' is not a string");
      m[k] = v.s;
    }
  }
  return m;
}

}  // namespace tinygrad::nn
