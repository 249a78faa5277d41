#pragma once
// dtypes and tinygrad's promotion lattice. C++ scalars are "weak": they take the tensor's dtype.
#include <array>
#include <cmath>
#include <type_traits>
#include <cstring>
#include "helpers.hpp"

namespace tinygrad {

// one list: name, C++ storage type, itemsize, kind (b=bool, i=signed, u=unsigned, f=float), C spelling
#define TG_DTYPES(X)                                  \
  X(Bool, bool, 1, 'b', "bool")                       \
  X(Int8, int8_t, 1, 'i', "signed char")              \
  X(UInt8, uint8_t, 1, 'u', "unsigned char")          \
  X(Int16, int16_t, 2, 'i', "short")                  \
  X(UInt16, uint16_t, 2, 'u', "unsigned short")       \
  X(Int32, int32_t, 4, 'i', "int")                    \
  X(UInt32, uint32_t, 4, 'u', "unsigned int")         \
  X(Int64, int64_t, 8, 'i', "long long")              \
  X(UInt64, uint64_t, 8, 'u', "unsigned long long")   \
  X(Float16, uint16_t, 2, 'f', "half")                \
  X(BFloat16, uint16_t, 2, 'f', "__bf16")             \
  X(Float32, float, 4, 'f', "float")                  \
  X(Float64, double, 8, 'f', "double")

enum class DType : uint8_t {
#define TG_X(n, t, sz, k, c) n,
  TG_DTYPES(TG_X)
#undef TG_X
};
namespace detail {
inline constexpr int kNumDTypes = 13;

struct DTypeInfo { const char* name; int itemsize; char kind; const char* cname; };
inline constexpr std::array<DTypeInfo, kNumDTypes> kDTypeInfo = {{
#define TG_X(n, t, sz, k, c) {#n, sz, k, c},
    TG_DTYPES(TG_X)
#undef TG_X
}};

inline const DTypeInfo& info(DType d) { return kDTypeInfo[size_t(d)]; }
}  // namespace detail
inline int itemsize(DType d) { return detail::info(d).itemsize; }
inline bool is_float(DType d) { return detail::info(d).kind == 'f'; }
inline bool is_int(DType d) { return detail::info(d).kind == 'i' || detail::info(d).kind == 'u'; }
inline bool is_unsigned(DType d) { return detail::info(d).kind == 'u'; }
inline bool is_bool(DType d) { return d == DType::Bool; }
inline std::string to_string(DType d) {
  static const char* names[] = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                                "bfloat16", "float32", "float64"};
  return std::string("dtypes.") + names[size_t(d)];
}

namespace dtypes {
inline constexpr DType bool_ = DType::Bool, int8 = DType::Int8, uint8 = DType::UInt8, int16 = DType::Int16, uint16 = DType::UInt16,
                       int32 = DType::Int32, uint32 = DType::UInt32, int64 = DType::Int64, uint64 = DType::UInt64, float16 = DType::Float16,
                       half = DType::Float16, bfloat16 = DType::BFloat16, float32 = DType::Float32, float64 = DType::Float64;
inline DType default_float = DType::Float32;
inline DType default_int = DType::Int32;
}  // namespace dtypes

// C++ type -> DType
namespace detail {
// the extremes of a dtype as doubles (the identities of max / min; 64-bit ints: the nearest exactly representable value inside the range)
inline double dtype_max(DType d) {
  if (is_float(d)) return INFINITY;
  if (d == DType::Bool) return 1;
  int bits = itemsize(d) * 8 - !is_unsigned(d);
  return bits >= 63 ? std::ldexp(1.0, bits) - 2048 : std::ldexp(1.0, bits) - 1;
}
inline double dtype_min(DType d) { return is_float(d) ? -INFINITY : is_int(d) && !is_unsigned(d) ? -std::ldexp(1.0, itemsize(d) * 8 - 1) : 0; }
}  // namespace detail

template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return sizeof(T) == 1 ? DType::Int8 : sizeof(T) == 2 ? DType::Int16 : sizeof(T) == 4 ? DType::Int32 : DType::Int64;
  else if constexpr (std::is_integral_v<T>)
    return sizeof(T) == 1 ? DType::UInt8 : sizeof(T) == 2 ? DType::UInt16 : sizeof(T) == 4 ? DType::UInt32 : DType::UInt64;
  else static_assert(sizeof(T) == 0, "tinygrad: unsupported element type");
}

// ---- promotion lattice (tinygrad's): edges to the next wider types ----
namespace detail {
constexpr uint32_t lattice_parents(DType d) {
  using D = DType;
  auto bit = [](D x) { return uint32_t(1) << uint32_t(x); };
  switch (d) {
    case D::Bool: return bit(D::Int8) | bit(D::UInt8);
    case D::Int8: return bit(D::Int16);
    case D::Int16: return bit(D::Int32);
    case D::Int32: return bit(D::Int64);
    case D::Int64: return bit(D::Float16) | bit(D::BFloat16);
    case D::UInt8: return bit(D::Int16) | bit(D::UInt16);
    case D::UInt16: return bit(D::Int32) | bit(D::UInt32);
    case D::UInt32: return bit(D::Int64) | bit(D::UInt64);
    case D::UInt64: return bit(D::Float16) | bit(D::BFloat16);
    case D::Float16: case D::BFloat16: return bit(D::Float32);
    case D::Float32: return bit(D::Float64);
    case D::Float64: return 0;
  }
  return 0;
}
constexpr uint32_t lattice_ancestors(DType d) {  // d and everything it promotes to
  uint32_t r = uint32_t(1) << uint32_t(d), p = lattice_parents(d);
  for (int i = 0; i < kNumDTypes; i++) if (p >> i & 1) r |= lattice_ancestors(DType(i));
  return r;
}
}  // namespace detail

// the least dtype both promote to (enum order is tinygrad's priority order)
constexpr DType least_upper_dtype(DType a, DType b) {
  uint32_t common = detail::lattice_ancestors(a) & detail::lattice_ancestors(b);
  for (int i = 0; i < detail::kNumDTypes; i++) if (common >> i & 1) return DType(i);
  return DType::Float64;
}

// a scalar literal meets a tensor: keep the tensor's dtype unless the literal's kind is wider
namespace detail {
inline DType weak_result(DType tensor, bool scalar_is_float, bool scalar_is_bool) {
  if (scalar_is_float && !is_float(tensor)) return dtypes::default_float;
  if (!scalar_is_float && !scalar_is_bool && is_bool(tensor)) return dtypes::default_int;
  return tensor;
}
}  // namespace detail

// ---- float16 / bfloat16 bit conversions (host side) ----
namespace detail {
inline float f16_to_f32(uint16_t h) {
  uint32_t s = uint32_t(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, r;
  if (e == 0) {
    if (m == 0) r = s;
    else { e = 127 - 15 + 1; while (!(m & 0x400)) { m <<= 1; e--; } m &= 0x3ff; r = s | (e << 23) | (m << 13); }
  } else if (e == 31) r = s | 0x7f800000u | (m << 13);
  else r = s | ((e + 127 - 15) << 23) | (m << 13);
  float f; std::memcpy(&f, &r, 4); return f;
}
inline uint16_t f32_to_f16(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  uint32_t s = (x >> 16) & 0x8000; int e = int((x >> 23) & 0xff) - 127 + 15; uint32_t m = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(s | 0x7c00 | (m ? 0x200 : 0));
  if (e >= 31) return uint16_t(s | 0x7c00);
  if (e <= 0) {
    if (e < -10) return uint16_t(s);
    m |= 0x800000; uint32_t shift = uint32_t(14 - e), half = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return uint16_t(s | half);
  }
  uint32_t half = s | (uint32_t(e) << 10) | (m >> 13), rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return uint16_t(half);
}
inline float bf16_to_f32(uint16_t h) { uint32_t r = uint32_t(h) << 16; float f; std::memcpy(&f, &r, 4); return f; }
inline uint16_t f32_to_bf16(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
}  // namespace detail

namespace detail {
// one element of dtype D in its storage type T, to double and back
// NOTE: templates, so that the branches of the other dtypes are discarded (in a plain function they are compiled)
template <DType D, class T>
double elem_to_double(T v) {
  if constexpr (D == DType::Float16) return f16_to_f32(v);
  else if constexpr (D == DType::BFloat16) return bf16_to_f32(v);
  else return double(v);
}
template <DType D, class T, char K>
T elem_from_double(double x) {
  if constexpr (D == DType::Float16) return f32_to_f16(float(x));
  else if constexpr (D == DType::BFloat16) return f32_to_bf16(float(x));
  else if constexpr (K == 'i' || K == 'u') return std::isfinite(x) ? T(int64_t(x)) : T(0);
  else return T(x);
}
}  // namespace detail

// read/write one element of a raw buffer as double (host-side conversions for creation and readback)
namespace detail {
inline double load_as_double(const void* p, DType d, size_t i) {
  switch (d) {
#define TG_X(n, t, sz, k, c) \
  case DType::n: { t v; std::memcpy(&v, static_cast<const char*>(p) + i * sz, sz); return detail::elem_to_double<DType::n>(v); }
    TG_DTYPES(TG_X)
#undef TG_X
  }
  return 0;
}
inline void store_from_double(void* p, DType d, size_t i, double x) {
  switch (d) {
#define TG_X(n, t, sz, k, c) \
  case DType::n: { t v = detail::elem_from_double<DType::n, t, k>(x); std::memcpy(static_cast<char*>(p) + i * sz, &v, sz); return; }
    TG_DTYPES(TG_X)
#undef TG_X
  }
}
}  // namespace detail

}  // namespace tinygrad
