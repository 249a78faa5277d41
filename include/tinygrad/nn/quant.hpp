#pragma once
// ggml's quantized weights (GGUF) kept quantized: dequantize() is a lazy graph of ordinary Tensor ops over the raw
// blocks (byte fields cut with shrink, bytes joined with shifts and ors, fp16 scales by bitcast, nibbles by masks), so
// a consumer such as a matvec fuses it and reads the packed bytes, never a float copy of the weight. quantize() is the
// host side (tests, small models): ggml's reference quantizers for the legacy types; the K types are quantized more
// simply than ggml's searching quantizers (different bytes, same layout, see quantize()).
// NOTE: plain inline functions (not TINYGRAD_API): this header is not part of <tinygrad.hpp>, so the compiled library
// does not carry it; it calls only the public Tensor API.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include "../../tinygrad.hpp"
#include "ggml_types.hpp"

namespace tinygrad::nn {

namespace detail {
// "Q4_K (2, 512)" for error messages
inline std::string quant_desc(GGMLType t, const std::vector<int64_t>& shape) { return to_string(t) + " " + tinygrad::to_string(shape); }

// ---- device side: pieces of the graph ----
// bytes [b, b + n) of every block of blocks {nblocks, block_bytes}
inline Tensor field(const Tensor& blocks, int64_t b, int64_t n) { return blocks.shrink({{0, blocks.shape()[0]}, {b, b + n}}); }
// little-endian uint16 (uint32) from the consecutive bytes starting at b, as {nblocks, 1}
inline Tensor le16(const Tensor& blocks, int64_t b) {
  return field(blocks, b, 1).cast(DType::UInt16) | (field(blocks, b + 1, 1).cast(DType::UInt16) << 8);
}
inline Tensor le32(const Tensor& blocks, int64_t b) {
  return le16(blocks, b).cast(DType::UInt32) | (le16(blocks, b + 2).cast(DType::UInt32) << 16);
}
// ggml_half at byte b of every block, as float32 {nblocks, 1}
// NOTE: decoding the half with integer ops instead (exponent rebias, subnormals as m * 2^-24) ran the matvecs 3-10x
// faster on the CPU, but its ~20 ops exceed the scheduler's limit for a value recomputed under an expand (16 ALU ops),
// so the scales became kernels of their own; bitcast keeps the matvec one kernel
inline Tensor half_at(const Tensor& blocks, int64_t b) { return le16(blocks, b).bitcast(DType::Float16).cast(DType::Float32); }
// {1, .., n, .., 1} (n at dim `at` of `ndim`) holding 0, step, 2 step, ...: per-position shift amounts, built lazily
inline Tensor steps(int64_t n, int64_t step, size_t at, size_t ndim, DType dt, const std::string& dev) {
  Shape s(ndim, 1);
  s[at] = n;
  return Tensor::arange(0, double(n * step), double(step), dt, dev).reshape(s);
}

// float32 {nblocks, block} from blocks {nblocks, block_bytes}; the formulas are ggml's dequantize_row_*
inline Tensor dequantize_blocks(const Tensor& bl, GGMLType type) {
  const int64_t nb = bl.shape()[0];
  const std::string& dev = bl.device();
  constexpr DType F = DType::Float32, U8 = DType::UInt8;
  switch (type) {
    case GGMLType::F32: return le32(bl, 0).bitcast(F);
    case GGMLType::F16: return half_at(bl, 0);
    case GGMLType::BF16: return (le16(bl, 0).cast(DType::UInt32) << 16).bitcast(F);
    case GGMLType::Q8_0:  // {half d; int8 qs[32]}: d * q
      return half_at(bl, 0) * field(bl, 2, 32).bitcast(DType::Int8).cast(F);
    case GGMLType::Q4_0:
    case GGMLType::Q4_1: {  // {half d; [half m;] uint8 qs[16]}: element j < 16 is the low nibble of qs[j], j + 16 the high
      int64_t q0 = type == GGMLType::Q4_0 ? 2 : 4;
      auto q = ((field(bl, q0, 16).reshape({nb, 1, 16}) >> steps(2, 4, 1, 3, U8, dev)) & 15).reshape({nb, 32}).cast(F);
      return type == GGMLType::Q4_0 ? (q - 8.0) * half_at(bl, 0) : half_at(bl, 0) * q + half_at(bl, 2);
    }
    case GGMLType::Q4_K: {
      // {half d, dmin; uint8 scales[12]; uint8 qs[128]}: 8 sub-blocks of 32, each with a 6-bit scale and min
      // (get_scale_min_k4): sub-block s < 4 keeps them in the low 6 bits of bytes s and s + 4; s >= 4 in the nibbles
      // of byte s + 4, with the top 2 bits in the spare high bits of bytes s - 4 and s
      auto a = field(bl, 4, 4), b = field(bl, 8, 4), c = field(bl, 12, 4);
      auto first = steps(2, 1, 1, 3, DType::Int32, dev) == 0.0;  // {1, 2, 1}: the sub-blocks 0..3
      auto pick = [&](const Tensor& lo, const Tensor& hi) { return first.where(lo.reshape({nb, 1, 4}), hi.reshape({nb, 1, 4})).reshape({nb, 8, 1}); };
      auto sc = pick(a & 63, (c & 15) | ((a >> 6) << 4)), mn = pick(b & 63, (c >> 4) | ((b >> 6) << 4));
      // 4 groups of 32 bytes: the low nibbles are sub-block 2g, the high ones 2g + 1
      auto q = ((field(bl, 16, 128).reshape({nb, 4, 1, 32}) >> steps(2, 4, 2, 4, U8, dev)) & 15).reshape({nb, 8, 32});
      auto y = half_at(bl, 0).reshape({nb, 1, 1}) * sc.cast(F) * q.cast(F) - half_at(bl, 2).reshape({nb, 1, 1}) * mn.cast(F);
      return y.reshape({nb, 256});
    }
    case GGMLType::Q6_K: {
      // {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d}: two halves of 128 elements, each 4 groups g of 32;
      // element l of group g: low 4 bits from ql[64 h + 32 (g & 1) + l] (nibble g >> 1), high 2 bits from
      // qh[32 h + l] (bits 2g, 2g + 1); minus 32; scales[i] covers elements 16 i ..
      auto lo = (field(bl, 0, 128).reshape({nb, 2, 1, 2, 32}) >> steps(2, 4, 2, 5, U8, dev)) & 15;
      auto hi = (field(bl, 128, 64).reshape({nb, 2, 1, 32}) >> steps(4, 2, 2, 4, U8, dev)) & 3;
      auto q = (lo.reshape({nb, 2, 4, 32}) | (hi << 4)).cast(F) - 32.0;
      auto scale = half_at(bl, 208) * field(bl, 192, 16).bitcast(DType::Int8).cast(F);
      return (scale.reshape({nb, 16, 1}) * q.reshape({nb, 16, 16})).reshape({nb, 256});
    }
    default: throw DTypeError("tinygrad::nn::dequantize: unsupported ggml type " + to_string(type));
  }
}

// ---- host side ----
// float to int rounded half away from zero (roundf) or truncated, clamped to [lo, hi] before the conversion (so no
// NaN, infinity or overflow reaches the cast: ggml's inputs stay within range and give the same ints)
inline int clamp_int(float v, int lo, int hi) { return !(v >= float(lo)) ? lo : v > float(hi) ? hi : int(v); }
inline int round_away(float v, int lo, int hi) { return clamp_int(std::round(v), lo, hi); }
inline int round_even(float v, int lo, int hi) { return clamp_int(std::nearbyint(v), lo, hi); }  // ggml's nearest_int
inline void put_half(uint8_t* p, float v) {
  uint16_t h = tinygrad::detail::f32_to_f16(v);
  p[0] = uint8_t(h & 0xff);
  p[1] = uint8_t(h >> 8);
}
inline float half_val(float v) { return tinygrad::detail::f16_to_f32(tinygrad::detail::f32_to_f16(v)); }

// quantize_row_q4_0_ref / q4_1_ref / q8_0_ref on one block of 32 values
inline void quantize_q4_0(const float* x, uint8_t* y) {
  float amax = 0, mx = 0;  // the value of largest magnitude, with its sign
  for (int j = 0; j < 32; j++)
    if (amax < std::fabs(x[j])) { amax = std::fabs(x[j]); mx = x[j]; }
  float d = mx / -8, id = d != 0 ? 1.0f / d : 0.0f;
  put_half(y, d);
  for (int j = 0; j < 16; j++)
    y[2 + j] = uint8_t(clamp_int(x[j] * id + 8.5f, 0, 15) | clamp_int(x[16 + j] * id + 8.5f, 0, 15) << 4);
}
inline void quantize_q4_1(const float* x, uint8_t* y) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; j++) { mn = std::min(mn, x[j]); mx = std::max(mx, x[j]); }
  float d = (mx - mn) / 15, id = d != 0 ? 1.0f / d : 0.0f;
  put_half(y, d);
  put_half(y + 2, mn);
  for (int j = 0; j < 16; j++)
    y[4 + j] = uint8_t(clamp_int((x[j] - mn) * id + 0.5f, 0, 15) | clamp_int((x[16 + j] - mn) * id + 0.5f, 0, 15) << 4);
}
inline void quantize_q8_0(const float* x, uint8_t* y) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
  float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
  put_half(y, d);
  for (int j = 0; j < 32; j++) y[2 + j] = uint8_t(int8_t(round_away(x[j] * id, -127, 127)));
}
// Q4_K on one super-block of 256: per sub-block of 32 the scale (max - min) / 15 and min -min (min clamped to <= 0,
// as ggml does), both quantized to 6 bits against the super-block's d = max scale / 63 and dmin = max min / 63, then
// the nibbles against the stored (rounded) scales. ggml searches scale and min for the least error (make_qkx2_quants);
// this keeps its layout and its second pass, not its search, so its bytes differ from ggml's.
inline void quantize_q4_k(const float* x, uint8_t* y) {
  float scale[8], mins[8], max_scale = 0, max_min = 0;
  for (int s = 0; s < 8; s++) {
    float mn = 0, mx = x[32 * s];
    for (int l = 0; l < 32; l++) { mn = std::min(mn, x[32 * s + l]); mx = std::max(mx, x[32 * s + l]); }
    scale[s] = (mx - mn) / 15;
    mins[s] = -mn;
    max_scale = std::max(max_scale, scale[s]);
    max_min = std::max(max_min, mins[s]);
  }
  float inv_scale = max_scale > 0 ? 63 / max_scale : 0, inv_min = max_min > 0 ? 63 / max_min : 0;
  uint8_t* sc = y + 4;
  std::memset(sc, 0, 12);
  int ls[8], lm[8];
  for (int s = 0; s < 8; s++) {
    ls[s] = round_even(inv_scale * scale[s], 0, 63);
    lm[s] = round_even(inv_min * mins[s], 0, 63);
    if (s < 4) {
      sc[s] = uint8_t(ls[s]);
      sc[s + 4] = uint8_t(lm[s]);
    } else {
      sc[s + 4] = uint8_t((ls[s] & 15) | (lm[s] & 15) << 4);
      sc[s - 4] = uint8_t(sc[s - 4] | (ls[s] >> 4) << 6);
      sc[s] = uint8_t(sc[s] | (lm[s] >> 4) << 6);
    }
  }
  put_half(y, max_scale / 63);
  put_half(y + 2, max_min / 63);
  float d = half_val(max_scale / 63), dmin = half_val(max_min / 63);
  uint8_t q[256] = {};
  for (int s = 0; s < 8; s++) {
    float ds = d * float(ls[s]), dm = dmin * float(lm[s]);
    if (ds == 0) continue;
    for (int l = 0; l < 32; l++) q[32 * s + l] = uint8_t(round_even((x[32 * s + l] + dm) / ds, 0, 15));
  }
  for (int g = 0; g < 4; g++)
    for (int l = 0; l < 32; l++) y[16 + 32 * g + l] = uint8_t(q[64 * g + l] | q[64 * g + 32 + l] << 4);
}
// Q6_K on one super-block of 256: per sub-block of 16 the scale (signed max) / -32 (ggml's make_qx_quants without its
// rmse search), int8 scales against d = (largest scale) / -128, then the 6-bit values against the stored scales. Same
// layout as ggml, different bytes.
inline void quantize_q6_k(const float* x, uint8_t* y) {
  float scale[16], max_scale = 0, max_abs = 0;
  for (int s = 0; s < 16; s++) {
    float amax = 0, mx = 0;
    for (int l = 0; l < 16; l++)
      if (amax < std::fabs(x[16 * s + l])) { amax = std::fabs(x[16 * s + l]); mx = x[16 * s + l]; }
    scale[s] = mx / -32;
    if (std::fabs(scale[s]) > max_abs) { max_abs = std::fabs(scale[s]); max_scale = scale[s]; }
  }
  std::memset(y, 0, 210);
  if (max_abs == 0) return;  // an all-zero block: d = 0, every scale and value 0 (ggml stores the same)
  float iscale = -128 / max_scale;
  int8_t sc[16];
  for (int s = 0; s < 16; s++) sc[s] = int8_t(round_even(iscale * scale[s], -128, 127));
  std::memcpy(y + 192, sc, 16);
  put_half(y + 208, 1 / iscale);
  float d = half_val(1 / iscale);
  uint8_t q[256];
  for (int s = 0; s < 16; s++) {
    float ds = d * float(sc[s]);
    for (int l = 0; l < 16; l++) q[16 * s + l] = uint8_t(ds == 0 ? 32 : round_even(x[16 * s + l] / ds, -32, 31) + 32);
  }
  for (int h = 0; h < 2; h++)
    for (int l = 0; l < 32; l++) {
      const uint8_t* v = q + 128 * h + l;  // the 4 groups' element l
      y[64 * h + l] = uint8_t((v[0] & 15) | (v[64] & 15) << 4);
      y[64 * h + 32 + l] = uint8_t((v[32] & 15) | (v[96] & 15) << 4);
      y[128 + 32 * h + l] = uint8_t(v[0] >> 4 | (v[32] >> 4) << 2 | (v[64] >> 4) << 4 | (v[96] >> 4) << 6);
    }
}
}  // namespace detail

// whether dequantize() and quantize() handle type
inline bool can_dequantize(GGMLType type) {
  switch (type) {
    case GGMLType::F32: case GGMLType::F16: case GGMLType::BF16: case GGMLType::Q4_0: case GGMLType::Q4_1:
    case GGMLType::Q8_0: case GGMLType::Q4_K: case GGMLType::Q6_K: return true;
    default: return false;
  }
}

// A lazy tensor of `shape` (row-major; the last dim is GGUF's ne[0], a multiple of the type's block) and dtype `out`
// (a float dtype) holding the values of raw: the blocks exactly as stored, a uint8 tensor of any shape with the right
// byte count. Elementwise over the output: nothing is realized or copied here.
inline Tensor dequantize(const Tensor& raw, GGMLType type, const std::vector<int64_t>& shape, DType out = DType::Float32) {
  const std::string fn = "tinygrad::nn::dequantize(" + detail::quant_desc(type, shape) + "): ";
  if (!can_dequantize(type)) throw DTypeError(fn + "unsupported ggml type " + to_string(type));
  if (raw.dtype() != DType::UInt8) throw DTypeError(fn + "raw must be uint8, got " + to_string(raw.dtype()));
  if (!is_float(out)) throw DTypeError(fn + "out must be a float dtype, got " + to_string(out));
  int64_t n = tinygrad::detail::checked_prod(shape, "nn::dequantize");
  auto info = ggml_type_info(type);
  if (shape.empty() || shape.back() % info.block != 0)
    throw ShapeError(fn + "the last dim must be a multiple of the block size " + std::to_string(info.block));
  if (raw.is_symbolic()) throw ShapeError(fn + "raw has a symbolic shape " + raw.sym_str());
  int64_t nblocks = n / info.block, nbytes = tinygrad::detail::size_mul(nblocks, info.bytes, "nn::dequantize");
  if (raw.numel() != nbytes)
    throw ShapeError(fn + "needs " + std::to_string(nbytes) + " bytes, raw has " + std::to_string(raw.numel()) + " (shape " +
                     tinygrad::to_string(raw.shape()) + ")");
  Tensor y = detail::dequantize_blocks(raw.reshape({nblocks, info.bytes}), type).reshape(shape);
  return out == DType::Float32 ? y : y.cast(out);
}

// The blocks of `values` (a multiple of the block size) as ggml stores them. F32, F16, BF16, Q4_0, Q4_1 and Q8_0 give
// ggml's bytes (quantize_row_*_ref: the same arithmetic and rounding); Q4_K and Q6_K are quantized without ggml's
// error search (see detail::quantize_q4_k / q6_k): valid blocks in ggml's layout, not byte-equal to ggml's.
inline std::vector<uint8_t> quantize(std::span<const float> values, GGMLType type) {
  const char* fn = "tinygrad::nn::quantize: ";
  if (!can_dequantize(type)) throw DTypeError(fn + std::string("unsupported ggml type ") + to_string(type));
  auto info = ggml_type_info(type);
  auto bs = size_t(info.block), bb = size_t(info.bytes);
  if (values.size() % bs != 0)
    throw ShapeError(fn + std::to_string(values.size()) + " values are not a multiple of " + to_string(type) + "'s block size " + std::to_string(bs));
  std::vector<uint8_t> r(values.size() / bs * bb);
  for (size_t i = 0; i < values.size() / bs; i++) {
    const float* x = values.data() + i * bs;
    uint8_t* y = r.data() + i * bb;
    switch (type) {
      case GGMLType::F32: {  // little-endian, as in the file
        uint32_t u;
        std::memcpy(&u, x, 4);
        for (int k = 0; k < 4; k++) y[k] = uint8_t(u >> (8 * k));
        break;
      }
      case GGMLType::F16: detail::put_half(y, *x); break;
      case GGMLType::BF16: {
        uint16_t h = tinygrad::detail::f32_to_bf16(*x);
        y[0] = uint8_t(h & 0xff);
        y[1] = uint8_t(h >> 8);
        break;
      }
      case GGMLType::Q4_0: detail::quantize_q4_0(x, y); break;
      case GGMLType::Q4_1: detail::quantize_q4_1(x, y); break;
      case GGMLType::Q8_0: detail::quantize_q8_0(x, y); break;
      case GGMLType::Q4_K: detail::quantize_q4_k(x, y); break;
      default: detail::quantize_q6_k(x, y); break;
    }
  }
  return r;
}

}  // namespace tinygrad::nn
