#pragma once
// tinygrad's dtype.py promo_lattice as a literal table (weakint/weakfloat/fp8 collapsed, since this
// library has none of them): kPromo[a][b] = least_upper_dtype(a, b), rows/cols in kAll order.
// Shared by test_dtype.cpp (run time) and test_dtype_static.cpp (static_asserts).
#include <tinygrad/dtype.hpp>

namespace promo {
using tinygrad::DType;
constexpr DType B = DType::Bool, I8 = DType::Int8, U8 = DType::UInt8, I16 = DType::Int16, U16 = DType::UInt16, I32 = DType::Int32,
                U32 = DType::UInt32, I64 = DType::Int64, U64 = DType::UInt64, F16 = DType::Float16, BF16 = DType::BFloat16, F32 = DType::Float32,
                F64 = DType::Float64;
constexpr DType kAll[13] = {B, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64};

// kPromo[a][b] = least_upper_dtype(a, b), rows/cols in kAll order
constexpr DType kPromo[13][13] = {
    //  B    I8    U8   I16   U16   I32   U32   I64   U64   F16  BF16   F32   F64
    {   B,   I8,   U8,  I16,  U16,  I32,  U32,  I64,  U64,  F16, BF16,  F32,  F64},  // bool
    {  I8,   I8,  I16,  I16,  I32,  I32,  I64,  I64,  F16,  F16, BF16,  F32,  F64},  // int8
    {  U8,  I16,   U8,  I16,  U16,  I32,  U32,  I64,  U64,  F16, BF16,  F32,  F64},  // uint8
    { I16,  I16,  I16,  I16,  I32,  I32,  I64,  I64,  F16,  F16, BF16,  F32,  F64},  // int16
    { U16,  I32,  U16,  I32,  U16,  I32,  U32,  I64,  U64,  F16, BF16,  F32,  F64},  // uint16
    { I32,  I32,  I32,  I32,  I32,  I32,  I64,  I64,  F16,  F16, BF16,  F32,  F64},  // int32
    { U32,  I64,  U32,  I64,  U32,  I64,  U32,  I64,  U64,  F16, BF16,  F32,  F64},  // uint32
    { I64,  I64,  I64,  I64,  I64,  I64,  I64,  I64,  F16,  F16, BF16,  F32,  F64},  // int64
    { U64,  F16,  U64,  F16,  U64,  F16,  U64,  F16,  U64,  F16, BF16,  F32,  F64},  // uint64
    { F16,  F16,  F16,  F16,  F16,  F16,  F16,  F16,  F16,  F16,  F32,  F32,  F64},  // float16
    {BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16,  F32, BF16,  F32,  F64},  // bfloat16
    { F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F64},  // float32
    { F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64},  // float64
};
}  // namespace promo
