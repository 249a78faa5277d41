// nn/quant.hpp: dequantize() (lazy Tensor ops over ggml's raw blocks) against a float64 reference written here straight
// from ggml-common.h's block layouts (plain loops over the bytes), against literal blocks dequantized by python's gguf
// package, and fused into a matvec as one kernel; quantize() against gguf's bytes for the legacy types.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>
#include <tinygrad/nn/quant.hpp>
#include "one_kernel.hpp"

#include <cmath>
#include <cstring>
#include <random>

using tinygrad::DType;
using tinygrad::Tensor;
using tinygrad::nn::dequantize;
using tinygrad::nn::GGMLType;
using tinygrad::nn::quantize;

namespace {
// Made with gguf 0.x (python): the inputs are xs(96) below; Q4_K / Q6_K are one random block (numpy
// default_rng(7), d and dmin set to small fp16 values) and gguf.quants.dequantize's float32 values:
//   x = (((i * 37) % 64) - 31.5) / 8; x[5] = 40; x[40] = -23.25; x[64:96] = 0
//   gguf.quants.quantize(x, T).tobytes().hex();  gguf.quants.dequantize(raw, T)
const char* kQ4_0_bytes =
    "00c589788978889088897888988887888978d041988798877988799880998779987798870080888888888888888888888888"
    "88888888";
const char* kQ4_1_bytes =
    "dc41e0c310221032210f21102211022113211032373fd0cdedcbfedcbeeccfedc0fedcbfedcbeddb00000000000000000000"
    "00000000000000000000";
const char* kQ8_0_bytes =
    "0a35f302f706fb7ffff503f907fd0b01f605fa09fe0d02f706fb0afff403f807fc0bdc3100ee07f50efc15028109f710feeb"
    "04f20bf91200ed06f40dfb1402ef09f60ffd0000000000000000000000000000000000000000000000000000000000000000"
    "0000";
const char* kQ4_K_bytes =
    "4122422aa94106a0956a26afbccdafe562f90a945f5693c642276ad5ab2da7394551370e99b2d74c3427fa48d732a1df70ac"
    "a1e926115901dd06f27f8f063cd25e19a621f9bd0ccc21397c1ec795ca7748dc03d17a88934d85527357a2e64647f03e2fb8"
    "1f223f4192c58efd5185f0711ef7677a1f132a818d882195a100b28d6b236b82481bd9fe630dc3ce3be4ebca";
const std::vector<float> kQ4_K_values = {
    -0.0250701904f, 3.48053741f, 3.9813385f, 0.976531982f, 6.48534393f, 1.97813416f, 0.475730896f, 1.97813416f, -0.0250701904f, 2.47893524f,
    3.9813385f, 1.47733307f, 4.48213959f, 5.48374176f, 2.47893524f, 3.48053741f, 1.47733307f, -0.525871277f, 2.47893524f, 5.98454285f,
    3.48053741f, -0.0250701904f, 2.47893524f, 4.98294067f, 0.976531982f, 2.47893524f, 3.9813385f, 2.97973633f, 2.47893524f, -0.0250701904f,
    -0.525871277f, 6.48534393f, -1.98005676f, -1.87012482f, -2.05334473f, -1.94341278f, -1.99227142f, -1.99227142f, -1.94341278f, -1.9067688f,
    -2.00448608f, -2.02891541f, -1.98005676f, -1.89455414f, -1.93119812f, -2.02891541f, -1.93119812f, -2.01670074f, -2.00448608f, -1.99227142f,
    -2.01670074f, -2.05334473f, -1.94341278f, -1.91898346f, -1.89455414f, -2.00448608f, -2.01670074f, -2.02891541f, -1.87012482f, -2.00448608f,
    -1.89455414f, -2.01670074f, -1.93119812f, -1.89455414f, -1.85778809f, -0.97833252f, -1.78450012f, -1.19819641f, -1.4180603f, -1.78450012f,
    -1.19819641f, -1.78450012f, -0.905044556f, -1.4180603f, -1.71121216f, -0.758468628f, -0.758468628f, -1.4180603f, -0.97833252f, -1.71121216f,
    -0.831756592f, -1.19819641f, -1.4180603f, -1.78450012f, -1.19819641f, -0.905044556f, -0.97833252f, -0.97833252f, -1.78450012f, -1.19819641f,
    -0.97833252f, -0.831756592f, -1.34477234f, -1.49134827f, -1.12490845f, -1.34477234f, 0.438293457f, 1.61090088f, 1.61090088f, 3.17437744f,
    -1.51605225f, -1.90692139f, -0.343444824f, -2.29779053f, 2.7835083f, -2.29779053f, 3.56524658f, 0.438293457f, 0.829162598f, -2.29779053f,
    -1.12518311f, 2.7835083f, -0.343444824f, -1.90692139f, 1.61090088f, -1.51605225f, 3.56524658f, 2.00177002f, -2.29779053f, 2.39263916f,
    -1.51605225f, -1.12518311f, 0.438293457f, -1.90692139f, 2.39263916f, 1.22003174f, 2.39263916f, 0.438293457f, 2.19732666f, 4.34710693f,
    -0.489898682f, -1.56478882f, 3.2722168f, 2.19732666f, -0.489898682f, 4.884552f, 0.584991455f, -1.02734375f, -0.489898682f, 1.65988159f,
    -1.02734375f, 1.12243652f, 1.12243652f, 1.65988159f, -2.10223389f, 5.42199707f, 5.95944214f, 2.19732666f, 5.95944214f, -1.02734375f,
    5.95944214f, -1.56478882f, -1.02734375f, 0.584991455f, 5.42199707f, 4.884552f, -1.56478882f, 0.584991455f, -2.10223389f, -1.56478882f,
    0.0480041504f, 3.23603058f, -1.36889648f, 3.23603058f, 1.11067963f, 1.46490479f, 1.81912994f, 0.0480041504f, 1.46490479f, 0.402229309f,
    1.11067963f, 0.402229309f, 2.1733551f, 3.59025574f, 0.0480041504f, 0.0480041504f, 3.9444809f, -0.306221008f, -0.660446167f, 2.52758026f,
    -1.01467133f, -0.660446167f, -0.306221008f, 0.0480041504f, 1.81912994f, 2.88180542f, 1.46490479f, 3.9444809f, 0.402229309f, 1.46490479f,
    3.9444809f, 1.11067963f, 2.07618713f, 0.793647766f, 0.793647766f, 1.3433075f, 2.25940704f, 0.0607681274f, 1.3433075f, -0.305671692f,
    1.89296722f, 0.976867676f, -0.305671692f, 0.427207947f, -0.305671692f, -0.488891602f, -0.122451782f, 1.89296722f, 1.5265274f, 0.0607681274f,
    1.5265274f, -0.122451782f, 0.976867676f, 1.5265274f, 1.16008759f, 2.07618713f, 0.0607681274f, 1.89296722f, 0.0607681274f, 2.07618713f,
    1.5265274f, 0.243988037f, 1.5265274f, 1.3433075f, -1.79695892f, 4.53023529f, 0.462753296f, 0.91469574f, -1.79695892f, -1.79695892f,
    -1.34501648f, 1.36663818f, 1.36663818f, 1.36663818f, -1.34501648f, 1.81858063f, 2.27052307f, -2.24890137f, 2.72246552f, 1.36663818f,
    0.462753296f, -1.34501648f, 0.462753296f, 1.36663818f, -0.441131592f, -1.79695892f, 3.6263504f, 4.53023529f, 0.462753296f, -2.24890137f,
    3.17440796f, 3.17440796f, -0.893074036f, 4.07829285f, 4.07829285f, 3.17440796f,
};
const char* kQ6_K_bytes =
    "e9e15a7789781e3721a557d8e5a703296dcb81db3f65cf9c1bdc5d1d8fc83f0b0bb4db71be572209851d3d24f4c0cf83fe43"
    "63f82f4759778955f6ced681cbea7179ced2c8f814a13472ff70ce369d8385452a44f318337f08cd1e614f235d3f83bc45fe"
    "e9ee0403a79be118544441317c9311f85e0429b19f7ec0e156f65a3322e791b880ee995e3f0d307d2fbaf400693a179e0d02"
    "7ed4e58be7a9ebc28a271d43a78855638144eb6603f7b2725de11fe6ac2f88a68182869793f0aad6ded8116e3ab51681c4a3"
    "74fec70a68b3e4bd371c";
const std::vector<float> kQ6_K_values = {
    0.629756927f, 1.18954086f, -0.419837952f, -1.7493248f, -1.60937881f, 0.559783936f, -0.139945984f, 0.489810944f, 1.18954086f, -0.769702911f,
    -1.7493248f, -0.559783936f, 1.46943283f, 0.489810944f, -2.02921677f, -1.60937881f, -1.35829926f, 4.9804306f, 7.69702911f, 4.9804306f,
    -0.452766418f, 2.26383209f, 6.79149628f, -9.05532837f, -2.26383209f, 12.6774597f, 13.1302261f, -1.35829926f, 14.035759f, 3.62213135f,
    6.79149628f, 12.2246933f, -5.01335907f, -2.86477661f, -5.01335907f, 0.238731384f, -4.29716492f, 5.49082184f, 0.477462769f, 5.96828461f,
    5.01335907f, 6.92321014f, -4.5358963f, 4.77462769f, 4.77462769f, 0.0f, -0.238731384f, -6.92321014f, -4.32186127f, -0.926113129f,
    4.01315689f, -7.40890503f, -9.56983566f, 7.71760941f, -7.71760941f, 2.77833939f, 2.16093063f, -1.54352188f, 3.08704376f, -4.32186127f,
    -1.85222626f, 9.56983566f, -3.39574814f, 1.85222626f, 1.26774597f, 1.26774597f, -0.996086121f, 2.08272552f, -2.17327881f, 0.633872986f,
    -1.35829926f, -1.17719269f, 1.62995911f, -1.99217224f, 1.90161896f, 2.62604523f, 1.26774597f, 2.35438538f, 1.44885254f, -2.71659851f,
    -3.13643646f, -14.6367035f, 4.18191528f, 1.56821823f, 15.1594429f, 13.5912247f, -14.6367035f, 3.65917587f, -0.52273941f, 9.9320488f,
    -2.61369705f, -0.52273941f, -4.18191528f, 10.4547882f, 15.1594429f, -0.0f, 7.90283203f, -6.66801453f, -3.21052551f, -1.72874451f,
    -2.71659851f, -5.18623352f, -0.493927002f, 3.95141602f, 5.92712402f, 7.65586853f, 7.16194153f, 3.45748901f, 4.19837952f, -2.96356201f,
    -6.91497803f, 5.92712402f, 0.382793427f, 10.7182159f, 9.95262909f, -5.7419014f, 11.4838028f, 10.7182159f, 4.21072769f, -8.80424881f,
    -9.18704224f, -1.91396713f, -11.8665962f, -4.59352112f, -11.1010094f, -9.18704224f, -4.59352112f, 6.89028168f, -7.16194153f, 11.9365692f,
    14.3238831f, -14.3238831f, -3.81970215f, 11.4591064f, -5.72955322f, -14.8013458f, 9.54925537f, 0.954925537f, 14.8013458f, 7.6394043f,
    6.68447876f, 2.86477661f, -1.43238831f, -6.20701599f, -0.172874451f, -0.0411605835f, 0.181106567f, -0.164642334f, 0.238731384f, -0.0658569336f,
    0.107017517f, -0.12348175f, -0.0658569336f, -0.238731384f, -0.246963501f, 0.255195618f, -0.12348175f, -0.0246963501f, -0.107017517f, 0.139945984f,
    -4.45769119f, 4.69230652f, 2.58076859f, -3.28461456f, 1.64230728f, 4.22307587f, 6.56922913f, 3.04999924f, -1.64230728f, 1.17307663f,
    7.2730751f, 1.87692261f, 6.56922913f, 6.56922913f, -3.98846054f, 7.2730751f, 1.15249634f, -0.535087585f, 0.699729919f, 0.987854004f,
    0.576248169f, -0.493927002f, -0.94669342f, -1.27597809f, -0.0411605835f, -0.082321167f, -1.31713867f, -1.27597809f, 0.246963501f, -0.411605835f,
    1.07017517f, 0.12348175f, -3.85263062f, -10.7017517f, 5.13684082f, -8.1333313f, -1.71228027f, 6.42105103f, -13.2701721f, -9.4175415f,
    1.28421021f, 2.99649048f, -7.27719116f, 9.84561157f, 11.9859619f, 8.1333313f, -2.99649048f, 3.42456055f, 2.53549194f, -1.26774597f,
    -0.633872986f, -1.26774597f, 5.38792038f, -0.316936493f, 9.19115829f, 7.92341232f, 10.1419678f, 1.26774597f, 4.75404739f, -6.97260284f,
    -1.26774597f, 4.4371109f, 3.48630142f, 4.12017441f, 2.76599121f, 0.576248169f, -0.460998535f, -1.72874451f, 0.230499268f, 0.230499268f,
    -0.0f, 1.84399414f, -2.99649048f, 0.806747437f, 2.07449341f, -1.95924377f, -0.576248169f, 1.38299561f, 1.38299561f, -2.18974304f,
    6.89439774f, -6.89439774f, -0.275775909f, 4.68819046f, -1.37887955f, -0.0f, -0.551551819f, -3.033535f, -2.48198318f, -1.93043137f,
    -3.30931091f, -8.27327728f, -1.37887955f, -8.54905319f, -5.7912941f, -5.23974228f,
};

std::vector<uint8_t> unhex(const char* s) {
  std::vector<uint8_t> r;
  for (size_t i = 0; s[i] && s[i + 1]; i += 2) r.push_back(uint8_t(std::stoi(std::string(s + i, 2), nullptr, 16)));
  return r;
}
std::vector<float> xs(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; i++) x[i] = float(double(int64_t((i * 37) % 64)) - 31.5) / 8;
  x[5] = 40;
  x[40] = -23.25f;
  for (size_t i = 64; i < 96 && i < n; i++) x[i] = 0;
  return x;
}

// ---- the reference: ggml-common.h's layouts read byte by byte, in float64 ----
double f16(const uint8_t* p) {
  int h = p[0] | p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}
struct Ref { double v, mag; };  // a value and the size of the terms it is made of (for the float32 rounding bound)
// one block of type t at p, appended to out
void ref_block(GGMLType t, const uint8_t* p, std::vector<Ref>& out) {
  auto s8 = [](uint8_t b) { return double(int8_t(b)); };
  switch (t) {
    case GGMLType::F32: { float f; std::memcpy(&f, p, 4); out.push_back({f, std::fabs(f)}); break; }
    case GGMLType::F16: out.push_back({f16(p), std::fabs(f16(p))}); break;
    case GGMLType::BF16: {
      uint32_t u = uint32_t(p[0] | p[1] << 8) << 16;
      float f; std::memcpy(&f, &u, 4); out.push_back({f, std::fabs(f)}); break;
    }
    case GGMLType::Q4_0: case GGMLType::Q4_1: {  // d, [m,] qs[16]: y[j] = low nibble of qs[j], y[j + 16] the high one
      bool q1 = t == GGMLType::Q4_1;
      double d = f16(p), m = q1 ? f16(p + 2) : 0;
      const uint8_t* qs = p + (q1 ? 4 : 2);
      for (int h = 0; h < 2; h++)
        for (int j = 0; j < 16; j++) {
          double q = (qs[j] >> (4 * h)) & 15;
          if (q1) out.push_back({d * q + m, std::fabs(d * q) + std::fabs(m)});
          else out.push_back({d * (q - 8), std::fabs(d * (q - 8))});
        }
      break;
    }
    case GGMLType::Q8_0:
      for (int j = 0; j < 32; j++) out.push_back({f16(p) * s8(p[2 + j]), std::fabs(f16(p) * s8(p[2 + j]))});
      break;
    case GGMLType::Q4_K: {  // d, dmin, scales[12], qs[128]
      double d = f16(p), dmin = f16(p + 2);
      const uint8_t *sc = p + 4, *qs = p + 16;
      for (int sub = 0; sub < 8; sub++) {
        int s, m;
        if (sub < 4) { s = sc[sub] & 63; m = sc[sub + 4] & 63; }
        else { s = (sc[sub + 4] & 15) | (sc[sub - 4] >> 6) << 4; m = (sc[sub + 4] >> 4) | (sc[sub] >> 6) << 4; }
        for (int l = 0; l < 32; l++) {
          int q = (qs[32 * (sub / 2) + l] >> (4 * (sub % 2))) & 15;
          out.push_back({d * s * q - dmin * m, std::fabs(d * s * q) + std::fabs(dmin * m)});
        }
      }
      break;
    }
    case GGMLType::Q6_K: {  // ql[128], qh[64], scales[16] (int8), d
      const uint8_t *ql = p, *qh = p + 128, *sc = p + 192;
      double d = f16(p + 208);
      std::vector<Ref> y(256);
      for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++)
          for (int g = 0; g < 4; g++) {
            int lo = (ql[64 * h + 32 * (g % 2) + l] >> (4 * (g / 2))) & 15, hi = (qh[32 * h + l] >> (2 * g)) & 3;
            int e = 128 * h + 32 * g + l;
            double v = d * s8(sc[e / 16]) * ((lo | hi << 4) - 32);
            y[size_t(e)] = {v, std::fabs(v)};
          }
      out.insert(out.end(), y.begin(), y.end());
      break;
    }
    default: FAIL("no reference for " << tinygrad::nn::to_string(t));
  }
}
std::vector<Ref> ref_dequantize(GGMLType t, const std::vector<uint8_t>& raw) {
  auto info = tinygrad::nn::ggml_type_info(t);
  std::vector<Ref> out;
  for (size_t b = 0; b + size_t(info.bytes) <= raw.size(); b += size_t(info.bytes)) ref_block(t, raw.data() + b, out);
  return out;
}

// random values: normal, a few outliers, negative runs, and every fifth block all zero
std::vector<float> random_values(size_t n, size_t block, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; i++) x[i] = nd(g);
  for (size_t i = 0; i < n; i += 97) x[i] *= 50;                 // outliers
  for (size_t i = 7; i < n; i += 61) x[i] = -std::fabs(x[i]) - 3;  // strongly negative
  for (size_t b = 2 * block; b < n; b += 5 * block) std::fill(x.begin() + long(b), x.begin() + long(b + block), 0.0f);
  return x;
}
Tensor raw_tensor(const std::vector<uint8_t>& raw) { return Tensor(raw, {int64_t(raw.size())}); }

const GGMLType kTypes[] = {GGMLType::F32, GGMLType::F16, GGMLType::BF16, GGMLType::Q4_0, GGMLType::Q4_1,
                           GGMLType::Q8_0, GGMLType::Q4_K, GGMLType::Q6_K};
std::vector<std::vector<int64_t>> shapes_for(GGMLType t) {
  int64_t b = tinygrad::nn::ggml_type_info(t).block;
  if (b == 1) return {{7}, {3, 5}, {2, 3, 64}};
  if (b == 32) return {{32}, {4, 64}, {2, 3, 96}};
  return {{256}, {3, 512}, {2, 2, 768}};  // K types: 2 and 3 super-blocks per row
}
void check_close(const std::vector<float>& got, const std::vector<Ref>& want, double rel) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (!(std::fabs(double(got[i]) - want[i].v) <= rel * want[i].mag) && bad++ < 5)
      UNSCOPED_INFO("element " << i << ": got " << got[i] << ", want " << want[i].v);
  CHECK(bad == 0);
}
}  // namespace

TEST_CASE("quant: dequantize matches the float64 reference of ggml's layouts", "[quant][cl]") {
  unsigned seed = 1;
  for (GGMLType t : kTypes)
    for (auto& shape : shapes_for(t)) {
      INFO(tinygrad::nn::to_string(t) << " " << tinygrad::to_string(shape));
      size_t n = size_t(tinygrad::detail::prod(shape));
      auto x = random_values(n, size_t(tinygrad::nn::ggml_type_info(t).block), seed++);
      auto raw = quantize(x, t);
      auto want = ref_dequantize(t, raw);
      // as 1-D bytes and as {nblocks, bytes}
      Tensor y = dequantize(raw_tensor(raw), t, shape);
      CHECK(y.shape() == shape);
      CHECK(y.dtype() == DType::Float32);
      check_close(y.to_vector<float>(), want, 1e-6);
      auto bytes = tinygrad::nn::ggml_type_info(t).bytes;
      Tensor raw2 = raw_tensor(raw).reshape({int64_t(raw.size()) / bytes, bytes});
      check_close(dequantize(raw2, t, shape).to_vector<float>(), want, 1e-6);
      // the quantizer is close to its input: within half a step (plus the 6-bit scales' rounding for K types)
      double tol = t == GGMLType::Q4_0 || t == GGMLType::Q4_1 || t == GGMLType::Q4_K ? 0.2 : t == GGMLType::Q8_0 || t == GGMLType::Q6_K ? 0.04 : 0.01;
      double err = 0, amax = 0;
      for (size_t i = 0; i < n; i++) { err = std::max(err, std::fabs(want[i].v - x[i])); amax = std::max(amax, double(std::fabs(x[i]))); }
      CHECK(err <= tol * amax);
      // float16 out: the float32 values rounded once more
      auto h = dequantize(raw_tensor(raw), t, shape, DType::Float16).cast(DType::Float32).to_vector<float>();
      std::vector<Ref> want_h;
      for (auto& r : want) want_h.push_back({tinygrad::detail::f16_to_f32(tinygrad::detail::f32_to_f16(float(r.v))), r.mag});
      check_close(h, want_h, 2e-3);
    }
}

TEST_CASE("quant: quantize gives ggml's bytes for the legacy types", "[quant]") {
  auto x = xs(96);
  CHECK(quantize(x, GGMLType::Q4_0) == unhex(kQ4_0_bytes));
  CHECK(quantize(x, GGMLType::Q4_1) == unhex(kQ4_1_bytes));
  CHECK(quantize(x, GGMLType::Q8_0) == unhex(kQ8_0_bytes));
  // by hand: a block of 32 values -k..: Q8_0 d = 31 / 127, q = round(x / d); Q4_0 d = -31 / -8... (the extreme's sign)
  std::vector<float> ramp(32);
  for (int i = 0; i < 32; i++) ramp[size_t(i)] = float(i - 31);  // -31 .. 0: the extreme is -31, d = 31 / 8
  auto q4 = quantize(ramp, GGMLType::Q4_0);
  CHECK(tinygrad::detail::f16_to_f32(uint16_t(q4[0] | q4[1] << 8)) == tinygrad::detail::f16_to_f32(tinygrad::detail::f32_to_f16(31.0f / 8)));
  // x = -31 -> -31 * (8 / 31) + 8.5 = 0.5 -> 0; x = 0 -> 8; the pair (x[0], x[16]) = (-31, -15) -> (0, 4)
  CHECK(q4[2] == (0 | 4 << 4));
  auto q8 = quantize(ramp, GGMLType::Q8_0);
  CHECK(int8_t(q8[2]) == -127);  // -31 is the largest magnitude
  CHECK(int8_t(q8[2 + 31]) == 0);
  CHECK(int8_t(q8[2 + 16]) == int8_t(std::round(-15 * (127.0f / 31))));
  // the plain types: little-endian bits
  CHECK(quantize(std::vector<float>{1.0f}, GGMLType::F16) == std::vector<uint8_t>{0x00, 0x3c});
  CHECK(quantize(std::vector<float>{-2.0f}, GGMLType::BF16) == std::vector<uint8_t>{0x00, 0xc0});
  CHECK(quantize(std::vector<float>{1.0f}, GGMLType::F32) == std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3f});
}

TEST_CASE("quant: dequantize matches gguf's dequantizer on literal K-quant blocks", "[quant][cl]") {
  for (auto [t, hex, values] : {std::tuple{GGMLType::Q4_K, kQ4_K_bytes, &kQ4_K_values}, std::tuple{GGMLType::Q6_K, kQ6_K_bytes, &kQ6_K_values}}) {
    INFO(tinygrad::nn::to_string(t));
    auto raw = unhex(hex);
    std::vector<Ref> want;
    for (float v : *values) want.push_back({v, std::fabs(v)});
    auto mine = ref_dequantize(t, raw);  // the reference agrees with gguf
    REQUIRE(mine.size() == want.size());
    for (size_t i = 0; i < mine.size(); i++) CHECK(std::fabs(mine[i].v - want[i].v) <= 1e-6 * mine[i].mag);
    check_close(dequantize(raw_tensor(raw), t, {256}).to_vector<float>(), mine, 1e-6);
  }
  // and the legacy types on gguf's bytes
  auto x = xs(96);
  for (auto [t, hex] : {std::pair{GGMLType::Q4_0, kQ4_0_bytes}, std::pair{GGMLType::Q4_1, kQ4_1_bytes}, std::pair{GGMLType::Q8_0, kQ8_0_bytes}}) {
    auto raw = unhex(hex);
    check_close(dequantize(raw_tensor(raw), t, {3, 32}).to_vector<float>(), ref_dequantize(t, raw), 1e-6);
  }
}

TEST_CASE("quant: a matvec on quantized weights is one kernel over the raw bytes", "[quant][cl]") {
  for (GGMLType t : {GGMLType::Q4_1, GGMLType::Q4_0, GGMLType::Q8_0, GGMLType::Q4_K, GGMLType::Q6_K, GGMLType::F16}) {
    INFO(tinygrad::nn::to_string(t));
    int64_t n = 24, k = 512;
    auto raw = quantize(random_values(size_t(n * k), 256, 11), t);
    auto w = ref_dequantize(t, raw);
    std::mt19937 g(3);
    std::uniform_real_distribution<float> ud(-1, 1);
    std::vector<float> xv(static_cast<size_t>(k));
    for (auto& v : xv) v = ud(g);
    Tensor x(xv, {1, k}), r = raw_tensor(raw);
    REQUIRE(x.is_realized());
    REQUIRE(r.is_realized());
    Tensor y = x.matmul(dequantize(r, t, {n, k}).transpose());
    int64_t before = tinygrad::run_stats().kernels_run;
    y.realize();
    CHECK(tinygrad::run_stats().kernels_run - before == 1);
    auto got = y.to_vector<float>();
    REQUIRE(got.size() == size_t(n));
    for (size_t i = 0; i < size_t(n); i++) {
      double want = 0, mag = 0;
      for (size_t j = 0; j < size_t(k); j++) {
        want += double(xv[j]) * w[i * size_t(k) + j].v;
        mag += std::fabs(double(xv[j]) * w[i * size_t(k) + j].v);
      }
      CHECK(std::fabs(got[i] - want) <= 1e-5 * mag);
    }
  }
}

// the CPU as the default device while a test of the CPU's kernels runs (its tensors must live there), whatever DEV says
struct OnCPU {
  std::string was = tinygrad::default_device();
  OnCPU() { tinygrad::default_device() = "CPU"; }
  ~OnCPU() { tinygrad::default_device() = was; }
};

TEST_CASE("quant: a CPU matvec prefetches its weight rows ahead, a matmul does not", "[quant][cpu]") {
  OnCPU cpu;
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  auto src = [&](const Tensor& y) {
    auto ast = one_kernel_schedule(y).spec.kernels[0].ast;
    return tinygrad::detail::to_program(ast, ren, tinygrad::detail::hand_coded_optimizations(ast, ren)).src;
  };
  auto count = [](const std::string& s) {
    size_t n = 0;
    for (size_t at = 0; (at = s.find("__builtin_prefetch", at)) != std::string::npos; at++) n++;
    return n;
  };
  int64_t n = 64, k = 512;
  Tensor x = Tensor(random_values(size_t(k), 256, 5), {1, k}).realize();
  for (GGMLType t : {GGMLType::Q8_0, GGMLType::Q4_1, GGMLType::Q4_K}) {
    INFO(tinygrad::nn::to_string(t));
    Tensor r = raw_tensor(quantize(random_values(size_t(n * k), 256, 12), t));
    std::string s = src(x.matmul(dequantize(r, t, {n, k}).transpose()));
    INFO(s);
    // one a cache line of each row's stream in the loop (the register tile's rows), not one a load
    CHECK(count(s) >= 1);
    CHECK(count(s) <= 16);
  }
  // a matmul's operands are reused from cache by its loops: no prefetch; nor an elementwise kernel (no reduce loop)
  Tensor a = Tensor(random_values(size_t(64 * 64), 256, 7), {64, 64}).realize();
  CHECK(count(src(a.matmul(a))) == 0);
  CHECK(count(src(a * 2.0 + 1.0)) == 0);
}

// y's one kernel on the CPU with opts (not the heuristic's), its output
std::vector<float> run_with_opts(const Tensor& y, const std::vector<tinygrad::Opt>& opts) {
  auto s = one_kernel_schedule(y);
  auto& kern = s.spec.kernels[0];
  auto& d = tinygrad::detail::get_device("CPU");
  auto prog = tinygrad::detail::to_program(kern.ast, *d.renderer, opts);
  INFO(prog.src);
  auto bin = d.rt.compiler->compile_many({prog.src})[0];
  auto bufs = s.bufs;
  for (auto& [dt, n] : s.spec.new_slots) bufs.push_back(std::make_shared<tinygrad::Buffer>("CPU", dt, n));
  std::vector<void*> ptrs;
  for (int slot : kern.slots) ptrs.push_back(bufs[size_t(slot)]->ptr());
  d.rt.load(prog.fn, bin, prog.launch)->call(ptrs, {}, true);
  auto& out = *bufs[size_t(kern.slots[0])];
  std::vector<float> r(size_t(out.size));
  out.copyout(r.data());
  return r;
}

TEST_CASE("quant: the CPU heuristic decodes a block's scales once a block and vector lanes gather the bytes", "[quant][cpu]") {
  OnCPU cpu;
  using tinygrad::Opt;
  using tinygrad::OptOp;
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  int64_t lanes = ren.vector_lanes(DType::Float32);
  int64_t n = 24, k = 512;
  std::vector<float> xv = random_values(size_t(k), 256, 5);
  Tensor x = Tensor(xv, {1, k}).realize();
  for (GGMLType t : {GGMLType::Q4_1, GGMLType::Q4_0, GGMLType::Q8_0, GGMLType::Q4_K, GGMLType::Q6_K}) {
    INFO(tinygrad::nn::to_string(t));
    auto raw = quantize(random_values(size_t(n * k), 256, 12), t);
    Tensor r = raw_tensor(raw);
    Tensor y = x.matmul(dequantize(r, t, {n, k}).transpose());
    auto ast = one_kernel_schedule(y).spec.kernels[0].ast;
    auto opts = tinygrad::detail::hand_coded_optimizations(ast, ren);
    std::string s;
    for (auto& o : opts) s += o.str() + " ";
    INFO(s);
    // the reduce unrolled over the rest of the block: 32 in all, the lanes on it too (a K type's super-block index,
    // (32 b + 8 u + lane) / 256, folds to b / 8: one scale for every lane of a sub-block)
    int64_t unroll = 1, red_lanes = 1;
    tinygrad::Kernel kern(ast, ren);
    int64_t red = -1;
    for (auto& rr : kern.ranges()) if (tinygrad::detail::axis_type(rr) == tinygrad::detail::AxisType::REDUCE) red = rr->range_id();
    for (auto& o : opts) {
      if (o.op == OptOp::UNROLL && o.axis == red) unroll *= o.amt;
      if (o.op == OptOp::VECTOR && o.axis == red) red_lanes *= o.amt;
    }
    bool legacy = t == GGMLType::Q4_1 || t == GGMLType::Q4_0 || t == GGMLType::Q8_0;
    if (lanes > 1) CHECK(red_lanes == lanes);
    CHECK(unroll * red_lanes == 32);
    // the K types' lanes, also with an unroll: values right
    if (lanes > 1 && !legacy) {
      auto w = ref_dequantize(t, raw);
      std::vector<double> want(static_cast<size_t>(n));
      for (size_t i = 0; i < size_t(n); i++)
        for (size_t j = 0; j < size_t(k); j++) want[i] += double(xv[j]) * w[i * size_t(k) + j].v;
      for (auto& os : {std::vector<Opt>{{OptOp::VECTOR, red, lanes}}, std::vector<Opt>{{OptOp::VECTOR, red, lanes}, {OptOp::UNROLL, red, 4}}}) {
        auto got = run_with_opts(y, os);
        REQUIRE(got.size() >= want.size());
        for (size_t i = 0; i < want.size(); i++) CHECK(std::fabs(got[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])));
      }
    }
  }
}

TEST_CASE("quant: bad input names the function, the type and the shape", "[quant]") {
  using Catch::Matchers::Contains;
  auto raw = quantize(std::vector<float>(64, 1.0f), GGMLType::Q4_0);  // 2 blocks, 36 bytes
  CHECK_THROWS_AS(dequantize(raw_tensor(raw), GGMLType::Q4_0, {3, 32}), tinygrad::ShapeError);
  CHECK_THROWS_WITH(dequantize(raw_tensor(raw), GGMLType::Q4_0, {3, 32}),
                    Contains("tinygrad::nn::dequantize") && Contains("Q4_0 (3, 32)") && Contains("needs 54 bytes, raw has 36"));
  CHECK_THROWS_AS(dequantize(raw_tensor(raw), GGMLType::Q4_0, {4, 16}), tinygrad::ShapeError);
  CHECK_THROWS_WITH(dequantize(raw_tensor(raw), GGMLType::Q4_0, {4, 16}), Contains("(Q4_0 (4, 16))") && Contains("multiple of the block size 32"));
  CHECK_THROWS_AS(dequantize(raw_tensor(raw), GGMLType::Q4_0, {}), tinygrad::ShapeError);
  CHECK_THROWS_AS(dequantize(raw_tensor(raw), GGMLType::Q4_0, {-64}), tinygrad::ShapeError);
  CHECK_THROWS_AS(dequantize(raw_tensor(raw), GGMLType::Q5_0, {2, 32}), tinygrad::DTypeError);
  CHECK_THROWS_WITH(dequantize(raw_tensor(raw), GGMLType::Q5_0, {2, 32}),
                    Contains("tinygrad::nn::dequantize(Q5_0 (2, 32))") && Contains("unsupported ggml type Q5_0"));
  CHECK_THROWS_AS(dequantize(raw_tensor(raw).cast(DType::Int32), GGMLType::Q4_0, {2, 32}), tinygrad::DTypeError);
  CHECK_THROWS_AS(dequantize(raw_tensor(raw), GGMLType::Q4_0, {2, 32}, DType::Int32), tinygrad::DTypeError);
  CHECK_THROWS_AS(quantize(std::vector<float>(33, 1.0f), GGMLType::Q8_0), tinygrad::ShapeError);
  CHECK_THROWS_WITH(quantize(std::vector<float>(33, 1.0f), GGMLType::Q8_0), Contains("tinygrad::nn::quantize") && Contains("Q8_0"));
  CHECK_THROWS_AS(quantize(std::vector<float>(256, 1.0f), GGMLType::Q2_K), tinygrad::DTypeError);
  CHECK(tinygrad::nn::can_dequantize(GGMLType::Q6_K));
  CHECK_FALSE(tinygrad::nn::can_dequantize(GGMLType::IQ2_XXS));
  // non-finite inputs quantize without undefined behaviour (the values they give are unspecified, as in ggml)
  std::vector<float> odd(256, 1.0f);
  odd[3] = NAN; odd[9] = INFINITY; odd[200] = 1e-44f;
  for (GGMLType t : kTypes) CHECK_NOTHROW(quantize(odd, t));
}

// the renderer holds half and bfloat16 values as floats: a bitcast to or from them must go through their 16 bits
TEST_CASE("quant: bitcast between 16-bit ints and half / bfloat16", "[quant][cl]") {
  std::vector<uint16_t> bits{0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x4049};
  Tensor u(bits, {6});
  std::vector<float> h, b;
  for (uint16_t x : bits) { h.push_back(tinygrad::detail::f16_to_f32(x)); b.push_back(tinygrad::detail::bf16_to_f32(x)); }
  CHECK(u.bitcast(DType::Float16).cast(DType::Float32).to_vector<float>() == h);
  CHECK(u.bitcast(DType::BFloat16).cast(DType::Float32).to_vector<float>() == b);
  CHECK(u.bitcast(DType::Int16).bitcast(DType::Float16).bitcast(DType::BFloat16).bitcast(DType::UInt16).to_vector<uint16_t>() == bits);
  // back to bits from computed values (1.0 + 1.0 = 2.0: 0x4000 in both)
  CHECK((Tensor::ones({2}, DType::Float16) * 2.0).bitcast(DType::UInt16).to_vector<uint16_t>() == std::vector<uint16_t>{0x4000, 0x4000});
  CHECK((Tensor::ones({2}, DType::BFloat16) * 2.0).bitcast(DType::Int16).to_vector<int16_t>() == std::vector<int16_t>{0x4000, 0x4000});
}

TEST_CASE("quant: fp16 fields decode every class of half (zero, subnormal, normal, inf, NaN)", "[quant][cl]") {
  std::vector<uint16_t> bits{0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x3c00, 0xc000, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x1234};
  std::vector<uint8_t> raw;
  for (uint16_t b : bits) { raw.push_back(uint8_t(b & 0xff)); raw.push_back(uint8_t(b >> 8)); }
  auto got = dequantize(raw_tensor(raw), GGMLType::F16, {int64_t(bits.size())}).to_vector<float>();
  for (size_t i = 0; i < bits.size(); i++) {
    INFO("half bits " << bits[i]);
    float want = tinygrad::detail::f16_to_f32(bits[i]);
    if (std::isnan(want)) CHECK(std::isnan(got[i]));
    else CHECK((got[i] == want && std::signbit(got[i]) == std::signbit(want)));
  }
  // as a block scale: Q8_0 with d = the smallest subnormal and q = -127
  std::vector<uint8_t> q8(34, 0);
  q8[0] = 1;
  q8[2] = uint8_t(int8_t(-127));
  CHECK(dequantize(raw_tensor(q8), GGMLType::Q8_0, {32}).to_vector<float>()[0] == -127 * std::ldexp(1.0f, -24));
}

TEST_CASE("quant: the CPU heuristic dequantizes a weight into floats a block at a time in vector lanes", "[quant]") {
  using tinygrad::OptOp;
  auto& ren = *tinygrad::detail::get_device("CPU").renderer;
  int64_t lanes = ren.vector_lanes(DType::Float32);
  int64_t n = 24, k = 512;
  for (GGMLType t : {GGMLType::Q4_1, GGMLType::Q4_0, GGMLType::Q8_0}) {
    INFO(tinygrad::nn::to_string(t));
    auto raw = quantize(random_values(size_t(n * k), 256, 13), t);
    Tensor w = dequantize(raw_tensor(raw), t, {n, k});
    auto ast = one_kernel_schedule(w).spec.kernels[0].ast;
    auto opts = tinygrad::detail::hand_coded_optimizations(ast, ren);
    std::string s;
    for (auto& o : opts) s += o.str() + " ";
    INFO(s);
    // the store's axis: vector lanes, the rest of the block upcast (the block's scales decoded once)
    int64_t per_block = 1;
    for (auto& o : opts) if (o.op == OptOp::VECTOR || o.op == OptOp::UPCAST) per_block *= o.amt;
    if (lanes > 1) CHECK(per_block == 32);
    auto want = ref_dequantize(t, raw);
    auto got = w.to_vector<float>();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); i++) REQUIRE(double(got[i]) == want[i].v);
  }
}
