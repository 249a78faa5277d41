#pragma once
// The tensor types of ggml (GGUF files): their ids, names and block layouts. Shared by the GGUF reader and writer
// (nn/gguf.hpp) and the dequantizers (nn/quant.hpp). Ids are the file's; ids ggml retired are not listed.
#include <cstdint>
#include <optional>
#include <string>

namespace tinygrad::nn {

enum class GGMLType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12,
  Q5_K = 13, Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
  IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34,
  TQ2_0 = 35, MXFP4 = 39,
};

// A block of `block` elements is stored in `bytes` bytes (1 element for the plain types).
struct GGMLTypeInfo {
  GGMLType type;
  const char* name;
  int64_t block, bytes;
};

namespace detail {
inline constexpr GGMLTypeInfo ggml_types[] = {
    {GGMLType::F32, "F32", 1, 4},          {GGMLType::F16, "F16", 1, 2},          {GGMLType::Q4_0, "Q4_0", 32, 18},
    {GGMLType::Q4_1, "Q4_1", 32, 20},      {GGMLType::Q5_0, "Q5_0", 32, 22},      {GGMLType::Q5_1, "Q5_1", 32, 24},
    {GGMLType::Q8_0, "Q8_0", 32, 34},      {GGMLType::Q8_1, "Q8_1", 32, 36},      {GGMLType::Q2_K, "Q2_K", 256, 84},
    {GGMLType::Q3_K, "Q3_K", 256, 110},    {GGMLType::Q4_K, "Q4_K", 256, 144},    {GGMLType::Q5_K, "Q5_K", 256, 176},
    {GGMLType::Q6_K, "Q6_K", 256, 210},    {GGMLType::Q8_K, "Q8_K", 256, 292},    {GGMLType::IQ2_XXS, "IQ2_XXS", 256, 66},
    {GGMLType::IQ2_XS, "IQ2_XS", 256, 74}, {GGMLType::IQ3_XXS, "IQ3_XXS", 256, 98}, {GGMLType::IQ1_S, "IQ1_S", 256, 50},
    {GGMLType::IQ4_NL, "IQ4_NL", 32, 18},  {GGMLType::IQ3_S, "IQ3_S", 256, 110},  {GGMLType::IQ2_S, "IQ2_S", 256, 82},
    {GGMLType::IQ4_XS, "IQ4_XS", 256, 136}, {GGMLType::I8, "I8", 1, 1},          {GGMLType::I16, "I16", 1, 2},
    {GGMLType::I32, "I32", 1, 4},          {GGMLType::I64, "I64", 1, 8},          {GGMLType::F64, "F64", 1, 8},
    {GGMLType::IQ1_M, "IQ1_M", 256, 56},   {GGMLType::BF16, "BF16", 1, 2},        {GGMLType::TQ1_0, "TQ1_0", 256, 54},
    {GGMLType::TQ2_0, "TQ2_0", 256, 66},   {GGMLType::MXFP4, "MXFP4", 32, 17},
};
}  // namespace detail

// The layout of a type id read from a file; nullopt for an id ggml does not define (or retired).
constexpr std::optional<GGMLTypeInfo> ggml_type_info(uint32_t id) {
  for (const auto& t : detail::ggml_types)
    if (uint32_t(t.type) == id) return t;
  return std::nullopt;
}
inline GGMLTypeInfo ggml_type_info(GGMLType t) { return *ggml_type_info(uint32_t(t)); }
inline std::string to_string(GGMLType t) {
  auto i = ggml_type_info(uint32_t(t));
  return i ? i->name : "ggml type " + std::to_string(uint32_t(t));
}

}  // namespace tinygrad::nn
