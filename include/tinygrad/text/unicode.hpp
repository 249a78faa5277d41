#pragma once
// UTF-8 decoding and encoding and the lookup in the generated Unicode tables, shared by the tokenizers.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include "unicode_data.hpp"

namespace tinygrad::text::detail {
using namespace tinygrad::text::detail::unicode;

// whether c is in a sorted table of ranges
template <size_t N>
bool in(const Range (&t)[N], char32_t c) {
  auto it = std::upper_bound(t, t + N, c, [](char32_t x, const Range& r) { return x < r.lo; });
  return it != t && c <= it[-1].hi;
}

// the code point at s[i] and its length in bytes; a maximal invalid subpart (as Rust's String::from_utf8_lossy and
// Python's bytes.decode("utf-8", "replace") see them) is U+FFFD of its length. i < s.size().
inline std::pair<char32_t, size_t> next_utf8(std::string_view s, size_t i) {
  uint8_t c = uint8_t(s[i]);
  if (c < 0x80) return {char32_t(c), 1};
  size_t n = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;  // continuation bytes
  uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;  // of the 2nd byte
  char32_t cp = c & (0x7Fu >> (n + 1));
  size_t k = 1;
  for (; k <= n && i + k < s.size(); k++) {
    uint8_t b = uint8_t(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
    cp = cp << 6 | (b & 0x3Fu);
  }
  return {n && k == n + 1 ? cp : U'\uFFFD', k};
}

// the code points of s; invalid UTF-8 as from_utf8_lossy: one U+FFFD per maximal invalid subpart
inline std::u32string decode_utf8(std::string_view s) {
  std::u32string r;
  for (size_t i = 0; i < s.size();) {
    auto [cp, len] = next_utf8(s, i);
    r += cp;
    i += len;
  }
  return r;
}

inline void append_utf8(std::string& r, char32_t c) {
  if (c < 0x80) r += char(c);
  else if (c < 0x800) { r += char(0xC0 | c >> 6); r += char(0x80 | (c & 0x3F)); }
  else if (c < 0x10000) { r += char(0xE0 | c >> 12); r += char(0x80 | (c >> 6 & 0x3F)); r += char(0x80 | (c & 0x3F)); }
  else { r += char(0xF0 | c >> 18); r += char(0x80 | (c >> 12 & 0x3F)); r += char(0x80 | (c >> 6 & 0x3F)); r += char(0x80 | (c & 0x3F)); }
}
}  // namespace tinygrad::text::detail
