// Row-major index helpers for the tests' host references (test_ops.cpp, test_api_math.cpp, api_shape_ref.hpp),
// written once and independent of the library's own index math.
#pragma once
#include <tinygrad.hpp>

#include <algorithm>

namespace ref_index {
using tinygrad::Shape;

inline Shape unravel(int64_t i, const Shape& s) {
  Shape idx(s.size());
  for (size_t k = s.size(); k-- > 0;) { idx[k] = s[k] ? i % s[k] : 0; i = s[k] ? i / s[k] : 0; }
  return idx;
}
inline int64_t ravel(const Shape& idx, const Shape& s) {
  int64_t r = 0;
  for (size_t k = 0; k < s.size(); k++) r = r * s[k] + idx[k];
  return r;
}
// numpy broadcasting of two shapes (compatibility is the caller's business)
inline Shape bshape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; i++) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())], y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    r[i] = x == 1 ? y : x;
  }
  return r;
}
}  // namespace ref_index
