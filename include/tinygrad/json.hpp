#pragma once
// A small JSON reader (safetensors headers, tokenizer.json) and string quoting for the writer.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>
#include "helpers.hpp"

namespace tinygrad::nn {
// a malformed or unsupported file of saved state: safetensors, tokenizer.json
struct StateError : Error { using Error::Error; };
}  // namespace tinygrad::nn

namespace tinygrad::detail {

struct JsonMember;
// one JSON value; numbers without fraction or exponent are Int (they must fit int64), the others Float
struct Json {
  enum Kind { Null, Bool, Int, Float, Str, Arr, Obj } kind = Null;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<Json> arr;
  std::vector<JsonMember> obj;  // NOTE: not std::pair<std::string, Json>: a pair needs Json complete here (clang)
};
struct JsonMember {
  std::string key;
  Json value;
};

// the member `key` of an object (the first one), or nullptr when `j` is not an object or has no such key
TINYGRAD_API const Json* find(const Json& j, std::string_view key) TINYGRAD_DEF({
  if (j.kind != Json::Obj) return nullptr;
  for (auto& m : j.obj) if (m.key == key) return &m.value;
  return nullptr;
})

// recursive descent, nesting limited to 64; errors are StateErrors "<prefix><what> at byte N"
struct JsonParser {
  std::string_view t;
  std::string prefix;  // e.g. "tinygrad::safe_load: FILE: malformed header: "
  size_t p = 0;
  [[noreturn]] void fail(const std::string& what) const TINYGRAD_MEMBER_DEF({
    throw nn::StateError(prefix + what + " at byte " + std::to_string(p));
  })
  void ws() TINYGRAD_MEMBER_DEF({ while (p < t.size() && std::isspace(uint8_t(t[p]))) p++; })
  char peek() TINYGRAD_MEMBER_DEF({ ws(); if (p >= t.size()) fail("unexpected end"); return t[p]; })
  void expect(char c) TINYGRAD_MEMBER_DEF({ if (peek() != c) fail(std::string("expected '") + c + "'"); p++; })
  bool digit() const TINYGRAD_MEMBER_DEF({ return p < t.size() && t[p] >= '0' && t[p] <= '9'; })
  std::string str() TINYGRAD_MEMBER_DEF({
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
        else if (e && std::strchr("\"\\/", e)) r += e;
        else if (e && std::strchr("bfnrt", e)) r += "\b\f\n\r\t"[std::strchr("bfnrt", e) - "bfnrt"];
        else fail(std::string("bad escape '\\") + e + "'");
      } else r += c;
    }
  })
  uint32_t hex4() TINYGRAD_MEMBER_DEF({
    if (p + 4 > t.size()) fail("bad \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; k++, p++) {
      char h = t[p];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail("bad \\u escape");
      v = v * 16 + uint32_t(d);
    }
    return v;
  })
  void utf8(std::string& r, uint32_t c) TINYGRAD_MEMBER_DEF({
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
  })
  Json number() TINYGRAD_MEMBER_DEF({
    Json j;
    size_t start = p;
    bool neg = t[p] == '-';
    if (neg) p++;
    if (!digit()) fail("bad number");
    uint64_t v = 0;
    bool big = false;
    for (; digit(); p++) {
      uint64_t d = uint64_t(t[p] - '0');
      if (v > (uint64_t(INT64_MAX) - d) / 10) big = true;
      else v = v * 10 + d;
    }
    bool frac = p < t.size() && (t[p] == '.' || t[p] == 'e' || t[p] == 'E');
    if (!frac) {
      if (big) fail("integer too large");
      j.kind = Json::Int;
      j.i = neg ? -int64_t(v) : int64_t(v);
      return j;
    }
    if (t[p] == '.') { p++; if (!digit()) fail("bad number"); while (digit()) p++; }
    if (p < t.size() && (t[p] == 'e' || t[p] == 'E')) {
      p++;
      if (p < t.size() && (t[p] == '+' || t[p] == '-')) p++;
      if (!digit()) fail("bad number");
      while (digit()) p++;
    }
    // NOTE: from_chars is exact (correctly rounded) and ignores the locale; out of range is an error
    auto [end, ec] = std::from_chars(t.data() + start, t.data() + p, j.f);
    if (ec != std::errc() || end != t.data() + p) fail("number out of range");
    j.kind = Json::Float;
    return j;
  })
  Json value(int depth = 0) TINYGRAD_MEMBER_DEF({
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
    if (c == '-' || std::isdigit(uint8_t(c))) return number();
    for (const char* w : {"true", "false", "null"})
      if (t.compare(p, std::strlen(w), w) == 0) {
        p += std::strlen(w);
        if (w[0] != 'n') { j.kind = Json::Bool; j.b = w[0] == 't'; }
        return j;
      }
    fail(std::string("unexpected character '") + c + "'");
  })
};

// a whole document: one value and nothing after it but whitespace
TINYGRAD_API Json parse_json(std::string_view text, std::string prefix) TINYGRAD_DEF({
  JsonParser jp{text, std::move(prefix)};
  Json j = jp.value();
  jp.ws();
  if (jp.p != text.size()) jp.fail("trailing characters after the JSON value");
  return j;
})
// a JSON file; its errors are StateErrors "<who>: <path>: cannot open the file" or "<who>: <path>: malformed JSON: ..."
TINYGRAD_API Json parse_json_file(const std::string& path, const std::string& who) TINYGRAD_DEF({
  std::ifstream in(path, std::ios::binary);
  if (!in) throw nn::StateError(who + ": " + path + ": cannot open the file");
  return parse_json(std::string(std::istreambuf_iterator<char>(in), {}), who + ": " + path + ": malformed JSON: ");
})

TINYGRAD_API std::string json_str(const std::string& s) TINYGRAD_DEF({
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { r += '\\'; r += c; }
    else if (uint8_t(c) < 0x20) { char u[8]; std::snprintf(u, sizeof(u), "\\u%04x", unsigned(uint8_t(c))); r += u; }
    else r += c;
  }
  return r + "\"";
})
}  // namespace tinygrad::detail
