// dtype promotion at compile time: pure static_asserts. If this file compiles, the lattice is right.
// The table is tinygrad's dtype.py promo_lattice with weakint/weakfloat/fp8 collapsed (see test_dtype.cpp).
#include <tinygrad/dtype.hpp>

#include "promotion_table.hpp"

namespace {
using tinygrad::DType;
using tinygrad::least_upper_dtype;
namespace detail = tinygrad::detail;

using namespace promo;
constexpr int N = tinygrad::detail::kNumDTypes;
static_assert(N == 13);

// the enum order is the table order (and tinygrad's priority order)
constexpr bool enum_order_matches() {
  for (int i = 0; i < N; i++) if (int(kAll[i]) != i) return false;
  return true;
}
static_assert(enum_order_matches());

// ---- spot checks, the ones tinygrad's own tests name ----
static_assert(least_upper_dtype(I8, U8) == I16);
static_assert(least_upper_dtype(F16, BF16) == F32);
static_assert(least_upper_dtype(I32, F16) == F16);
static_assert(least_upper_dtype(B, I8) == I8);
static_assert(least_upper_dtype(U64, I64) == F16);  // tinygrad: weakfloat, which collapses to float16 here
static_assert(least_upper_dtype(I32, U32) == I64);
static_assert(least_upper_dtype(U8, U16) == U16);
static_assert(least_upper_dtype(I16, U16) == I32);
static_assert(least_upper_dtype(U32, I8) == I64);
static_assert(least_upper_dtype(BF16, I64) == BF16);
static_assert(least_upper_dtype(F32, F64) == F64);
static_assert(least_upper_dtype(B, B) == B);

// ---- the whole table ----
constexpr int table_mismatches() {
  int bad = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) bad += least_upper_dtype(kAll[i], kAll[j]) != kPromo[i][j];
  return bad;
}
static_assert(table_mismatches() == 0, "least_upper_dtype disagrees with tinygrad's promotion table");

// ---- lattice laws ----
constexpr bool commutative() {
  for (DType a : kAll) for (DType b : kAll) if (least_upper_dtype(a, b) != least_upper_dtype(b, a)) return false;
  return true;
}
constexpr bool idempotent() {
  for (DType a : kAll) if (least_upper_dtype(a, a) != a) return false;
  return true;
}
// NOTE: associative except for 16 triples, all permutations of {signed int, uint64, bfloat16}: with no
// weakfloat node, int64 | uint64 = float16, so (int64 | uint64) | bfloat16 = float32 while
// int64 | (uint64 | bfloat16) = bfloat16. tinygrad's weakfloat sits below both halves and stays associative.
constexpr int non_associative_triples(bool only_unexpected) {
  int n = 0;
  for (DType a : kAll) for (DType b : kAll) for (DType c : kAll) {
    if (least_upper_dtype(least_upper_dtype(a, b), c) == least_upper_dtype(a, least_upper_dtype(b, c))) continue;
    bool has_u64 = a == U64 || b == U64 || c == U64, has_bf16 = a == BF16 || b == BF16 || c == BF16;
    bool has_sint = false;
    for (DType x : {a, b, c}) has_sint |= x == I8 || x == I16 || x == I32 || x == I64;
    n += only_unexpected ? !(has_u64 && has_bf16 && has_sint) : 1;
  }
  return n;
}
constexpr bool bool_is_bottom_f64_is_top() {
  for (DType a : kAll) if (least_upper_dtype(B, a) != a || least_upper_dtype(F64, a) != F64) return false;
  return true;
}
// the join is an upper bound of both (an ancestor of each) and, among all common ancestors, the one of
// lowest priority (enum order). NOTE: not a true lattice join: int64 and uint64 share float16 and bfloat16,
// neither above the other, and priority picks float16 (tinygrad picks weakfloat there).
constexpr bool least_upper_bound() {
  for (DType a : kAll)
    for (DType b : kAll) {
      DType j = least_upper_dtype(a, b);
      uint32_t common = detail::lattice_ancestors(a) & detail::lattice_ancestors(b);
      if (!(common >> int(j) & 1)) return false;
      for (int c = 0; c < int(j); c++) if (common >> c & 1) return false;
    }
  return true;
}
static_assert(!(detail::lattice_ancestors(F16) & (uint32_t(1) << int(BF16))) && !(detail::lattice_ancestors(BF16) & (uint32_t(1) << int(F16))));
// a float never promotes to an int, an int never to bool
constexpr bool kinds_only_widen() {
  for (DType a : kAll)
    for (DType b : kAll) {
      DType j = least_upper_dtype(a, b);
      bool af = a >= F16, bf = b >= F16, jf = j >= F16;
      if ((af || bf) && !jf) return false;
      if ((a != B || b != B) && j == B) return false;
    }
  return true;
}
static_assert(commutative());
static_assert(idempotent());
static_assert(non_associative_triples(false) == 16);
static_assert(non_associative_triples(true) == 0);
static_assert(least_upper_dtype(least_upper_dtype(I64, U64), BF16) == F32 && least_upper_dtype(I64, least_upper_dtype(U64, BF16)) == BF16);
static_assert(bool_is_bottom_f64_is_top());
static_assert(least_upper_bound());
static_assert(kinds_only_widen());

// ---- the lattice's edges ----
constexpr uint32_t bit(DType d) { return uint32_t(1) << int(d); }
static_assert(detail::lattice_parents(B) == (bit(I8) | bit(U8)));
static_assert(detail::lattice_parents(U8) == (bit(I16) | bit(U16)));
static_assert(detail::lattice_parents(I64) == (bit(F16) | bit(BF16)));
static_assert(detail::lattice_parents(U64) == (bit(F16) | bit(BF16)));
static_assert(detail::lattice_parents(F16) == bit(F32));
static_assert(detail::lattice_parents(F64) == 0);
static_assert(detail::lattice_ancestors(F64) == bit(F64));
static_assert(detail::lattice_ancestors(B) == (1u << N) - 1);  // bool reaches everything
static_assert(detail::lattice_ancestors(I8) == (bit(I8) | bit(I16) | bit(I32) | bit(I64) | bit(F16) | bit(BF16) | bit(F32) | bit(F64)));

// ---- C++ types -> dtypes, and the info table ----
static_assert(tinygrad::dtype_of<bool>() == B);
static_assert(tinygrad::dtype_of<int8_t>() == I8);
static_assert(tinygrad::dtype_of<uint8_t>() == U8);
static_assert(tinygrad::dtype_of<int16_t>() == I16);
static_assert(tinygrad::dtype_of<uint16_t>() == U16);
static_assert(tinygrad::dtype_of<int32_t>() == I32);
static_assert(tinygrad::dtype_of<uint32_t>() == U32);
static_assert(tinygrad::dtype_of<int64_t>() == I64);
static_assert(tinygrad::dtype_of<uint64_t>() == U64);
static_assert(tinygrad::dtype_of<float>() == F32);
static_assert(tinygrad::dtype_of<double>() == F64);
static_assert(tinygrad::detail::kDTypeInfo[size_t(F16)].itemsize == 2 && tinygrad::detail::kDTypeInfo[size_t(F16)].kind == 'f');
static_assert(tinygrad::detail::kDTypeInfo[size_t(U64)].itemsize == 8 && tinygrad::detail::kDTypeInfo[size_t(U64)].kind == 'u');
static_assert(tinygrad::detail::kDTypeInfo[size_t(B)].kind == 'b');
}  // namespace
