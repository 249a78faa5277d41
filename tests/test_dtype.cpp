// dtype promotion at run time: tinygrad's lattice as a literal table (written out from tinygrad's
// dtype.py promo_lattice, with weakint/weakfloat/fp8 collapsed since this library has none of them),
// checked against least_upper_dtype and against what every Tensor op produces; then weak C++ scalars.
// test_dtype_static.cpp checks the same table at compile time.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <cstring>
#include <functional>

#include "promotion_table.hpp"

using tinygrad::DType;
using tinygrad::Tensor;

namespace {
using namespace promo;

Tensor ones_of(DType dt, tinygrad::Shape s = {3}) { return Tensor::ones(std::move(s), dt); }
}  // namespace

TEST_CASE("dtype: least_upper_dtype is tinygrad's lattice", "[dtype]") {
  for (int i = 0; i < 13; i++)
    for (int j = 0; j < 13; j++) {
      INFO(tinygrad::to_string(kAll[i]) << " + " << tinygrad::to_string(kAll[j]) << " -> want " << tinygrad::to_string(kPromo[i][j]));
      CHECK(tinygrad::least_upper_dtype(kAll[i], kAll[j]) == kPromo[i][j]);
    }
  // the rows the library's users hit most, spelled out
  CHECK(tinygrad::least_upper_dtype(I8, U8) == I16);
  CHECK(tinygrad::least_upper_dtype(F16, BF16) == F32);
  CHECK(tinygrad::least_upper_dtype(I32, F16) == F16);
  CHECK(tinygrad::least_upper_dtype(B, I8) == I8);
  CHECK(tinygrad::least_upper_dtype(U64, I64) == F16);
  CHECK(tinygrad::least_upper_dtype(I32, U32) == I64);
  CHECK(tinygrad::least_upper_dtype(U32, U64) == U64);
  CHECK(tinygrad::least_upper_dtype(I64, F32) == F32);
}

TEST_CASE("dtype: every binary Tensor op follows the promotion table", "[dtype]") {
  for (int i = 0; i < 13; i++)
    for (int j = 0; j < 13; j++) {
      DType a = kAll[i], b = kAll[j], want = kPromo[i][j];
      INFO(tinygrad::to_string(a) << " op " << tinygrad::to_string(b) << " -> want " << tinygrad::to_string(want));
      Tensor x = ones_of(a, {2, 3}), y = ones_of(b, {3});
      CHECK((x + y).dtype() == want);
      CHECK((x * y).dtype() == want);
      CHECK(x.maximum(y).dtype() == want);
      CHECK(Tensor::ones({3}, B).where(x, y).dtype() == want);
      CHECK((x < y).dtype() == B);
      CHECK((x == y).dtype() == B);
      if (want != B) CHECK((x - y).dtype() == want);
      CHECK((x / y).dtype() == (tinygrad::is_float(want) ? want : F32));
      CHECK(x.reshape({2, 3}).matmul(y.reshape({3, 1})).dtype() == want);
    }
}

TEST_CASE("dtype: promoted ops compute in the promoted dtype", "[dtype]") {
  // int8 + uint8 -> int16: neither side wraps
  Tensor a = Tensor(std::vector<int8_t>{127, -128}) + Tensor(std::vector<uint8_t>{255, 255});
  CHECK(a.dtype() == I16);
  CHECK(a.to_vector<int16_t>() == std::vector<int16_t>{382, 127});
  // int32 * uint32 -> int64
  Tensor b = Tensor(std::vector<int32_t>{-2, 70000}) * Tensor(std::vector<uint32_t>{4000000000u, 70000});
  CHECK(b.dtype() == I64);
  CHECK(b.to_vector<int64_t>() == std::vector<int64_t>{-8000000000LL, 4900000000LL});
  // float16 + bfloat16 -> float32, exact for these values
  Tensor c = Tensor(std::vector<float>{1.5f, 1024.f}).cast(F16) + Tensor(std::vector<float>{0.25f, 3.f}).cast(BF16);
  CHECK(c.dtype() == F32);
  CHECK(c.to_vector<float>() == std::vector<float>{1.75f, 1027.f});
  // int32 + float16 -> float16
  Tensor d = Tensor(std::vector<int32_t>{3, -7}) + Tensor(std::vector<float>{0.5f, 0.25f}).cast(F16);
  CHECK(d.dtype() == F16);
  CHECK(d.to_vector<float>() == std::vector<float>{3.5f, -6.75f});
  // bool + int8 -> int8
  Tensor e = Tensor(std::vector<bool>{true, false}) + Tensor(std::vector<int8_t>{127, -5});
  CHECK(e.dtype() == I8);
  CHECK(e.to_vector<int8_t>() == std::vector<int8_t>{-128, -5});
  // uint8 < int8 compares in int16
  CHECK((Tensor(std::vector<uint8_t>{200}) < Tensor(std::vector<int8_t>{-1})).to_vector<bool>() == std::vector<bool>{false});
  // float32 + float64 -> float64 keeps double precision
  Tensor f = Tensor(std::vector<float>{1.f}) + Tensor(std::vector<double>{1e-12});
  CHECK(f.dtype() == F64);
  CHECK(f.item<double>() == 1.0 + 1e-12);
}

TEST_CASE("dtype: a float32 sum of float16 or bfloat16 products takes each product exactly, a product alone rounds", "[dtype][half]") {
  // x = 1 + 2^-m is exact in the half type (m = its mantissa bits); x * x = 1 + 2^(1-m) + 2^-2m needs 2m + 1 bits, so
  // the half type rounds it to 1 + 2^(1-m), a float keeps it. 16 of them sum exactly in a float32 accumulator.
  for (auto [dt, m] : {std::pair{F16, 10}, std::pair{BF16, 7}}) {
    CAPTURE(tinygrad::to_string(dt));
    const double x = 1 + std::ldexp(1.0, -m), exact = x * x, rounded = 1 + std::ldexp(1.0, 1 - m);
    Tensor a = Tensor::full({3, 16}, x).cast(dt).realize();  // a buffer: products of constants would fold
    // the product alone is an elementwise op of the half type: rounded, with or without a cast after it
    Tensor p = (a * a).realize();
    CHECK(p.cast(F32).to_vector<float>()[0] == float(rounded));
    // in a float32 sum (a dot product, a matmul's reduce), the products are exact, as tensor cores and PyTorch's
    // matmul take them: the same result with and without the TC opt
    std::vector<float> s = (a * a).cast(F32).sum(-1).to_vector<float>();
    CHECK(s == std::vector<float>(3, float(16 * exact)));
    CHECK(float(16 * exact) != float(16 * rounded));
  }
}

TEST_CASE("dtype: weak C++ scalars take the tensor's dtype unless their kind is wider", "[dtype][weak]") {
  SECTION("int8 tensor + 1 stays int8") {
    Tensor t = Tensor(std::vector<int8_t>{1, 127}) + 1;
    CHECK(t.dtype() == I8);
    CHECK(t.to_vector<int8_t>() == std::vector<int8_t>{2, -128});
    CHECK((1 + Tensor(std::vector<int8_t>{1})).dtype() == I8);
    CHECK((Tensor(std::vector<int8_t>{1}) * 3).dtype() == I8);
    CHECK((Tensor(std::vector<uint8_t>{1}) - 1).dtype() == U8);
    CHECK((Tensor(std::vector<int16_t>{1}) + 1).dtype() == I16);
    CHECK((Tensor(std::vector<int64_t>{1}) + 1).dtype() == I64);
    CHECK((Tensor(std::vector<uint64_t>{1}) + 1).dtype() == U64);
  }
  SECTION("float16 * 2.5 stays float16") {
    Tensor h = Tensor(std::vector<float>{1.5f, -2.f}).cast(F16) * 2.5;
    CHECK(h.dtype() == F16);
    CHECK(h.to_vector<float>() == std::vector<float>{3.75f, -5.f});
    CHECK((Tensor::ones({2}, BF16) * 2.5).dtype() == BF16);
    CHECK((Tensor::ones({2}, F64) + 0.1).dtype() == F64);
    CHECK((Tensor::ones({2}, F64) + 0.1).to_vector<double>() == std::vector<double>{1.1, 1.1});
    CHECK((Tensor::ones({2}, F16) + 1).dtype() == F16);
  }
  SECTION("int tensor * 2.5 becomes float32") {
    Tensor t = Tensor(std::vector<int32_t>{2, -3}) * 2.5;
    CHECK(t.dtype() == F32);
    CHECK(t.to_vector<float>() == std::vector<float>{5.f, -7.5f});
    CHECK((Tensor(std::vector<int8_t>{1}) + 0.5).dtype() == F32);
    CHECK((Tensor(std::vector<uint64_t>{1}) + 0.5).dtype() == F32);
    CHECK((Tensor(std::vector<int32_t>{1}) * 2.0).dtype() == I32);  // an integral double is an int literal
  }
  SECTION("bool + 1 becomes int32, bool * 2.5 float32") {
    Tensor t = Tensor(std::vector<bool>{true, false}) + 1;
    CHECK(t.dtype() == I32);
    CHECK(t.to_vector<int>() == std::vector<int>{2, 1});
    Tensor f = Tensor(std::vector<bool>{true, false}) * 2.5;
    CHECK(f.dtype() == F32);
    CHECK(f.to_vector<float>() == std::vector<float>{2.5f, 0.f});
  }
  SECTION("comparisons with scalars give bool; maximum/where with scalars keep the dtype") {
    CHECK((Tensor(std::vector<int8_t>{1}) < 1).dtype() == B);
    CHECK((Tensor(std::vector<int8_t>{1}) == 1.5).dtype() == B);
    CHECK(Tensor(std::vector<int8_t>{1}).maximum(3).dtype() == I8);
    CHECK(Tensor::ones({2}, F16).maximum(0.5).dtype() == F16);
    CHECK(Tensor(std::vector<bool>{true}).where(Tensor::ones({1}, F16), 2.0).dtype() == F16);
    CHECK(Tensor(std::vector<int8_t>{1}).relu().dtype() == I8);
    CHECK(Tensor::ones({2}, BF16).relu().dtype() == BF16);
  }
  SECTION("weak_result directly") {
    CHECK(tinygrad::detail::weak_result(I8, false, false) == I8);
    CHECK(tinygrad::detail::weak_result(I8, true, false) == F32);
    CHECK(tinygrad::detail::weak_result(F16, true, false) == F16);
    CHECK(tinygrad::detail::weak_result(B, false, false) == I32);
    CHECK(tinygrad::detail::weak_result(B, false, true) == B);
    CHECK(tinygrad::detail::weak_result(B, true, false) == F32);
  }
}

TEST_CASE("dtype: metadata and defaults", "[dtype]") {
  CHECK(tinygrad::itemsize(B) == 1);
  CHECK(tinygrad::itemsize(F16) == 2);
  CHECK(tinygrad::itemsize(BF16) == 2);
  CHECK(tinygrad::itemsize(U32) == 4);
  CHECK(tinygrad::itemsize(F64) == 8);
  int nf = 0, ni = 0, nu = 0;
  for (DType d : kAll) { nf += tinygrad::is_float(d); ni += tinygrad::is_int(d); nu += tinygrad::is_unsigned(d); }
  CHECK(nf == 4);
  CHECK(ni == 8);
  CHECK(nu == 4);
  CHECK_FALSE(tinygrad::is_int(B));
  CHECK(tinygrad::is_bool(B));
  CHECK(tinygrad::to_string(BF16) == "dtypes.bfloat16");
  CHECK(tinygrad::to_string(U8) == "dtypes.uint8");
  CHECK(tinygrad::dtypes::default_float == F32);
  CHECK(tinygrad::dtypes::default_int == I32);
  CHECK(Tensor(std::vector<int>{1}).dtype() == I32);
  CHECK(Tensor(std::vector<float>{1}).dtype() == F32);
  CHECK(Tensor::arange(3).dtype() == I32);
  CHECK(Tensor::arange(0.5, 3).dtype() == F32);
  CHECK(Tensor::zeros({2}).dtype() == F32);
  CHECK(Tensor::rand({2}).dtype() == F32);
}

// ---- float16 on OpenCL: vload_half / vstore_half_rte and the device's rounding give the CPU's bits ----
namespace {
std::vector<uint16_t> half_bits(const Tensor& t) {
  REQUIRE(t.dtype() == DType::Float16);
  auto b = t.host_bytes();
  std::vector<uint16_t> v(b.size() / 2);
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}
std::vector<uint32_t> float_bits(const Tensor& t) {
  auto b = t.cast(DType::Float32).host_bytes();
  std::vector<uint32_t> v(b.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}
// every NaN as one: IEEE leaves a NaN result's sign and payload open (an NVIDIA GPU's arithmetic returns its one
// canonical NaN; x86 keeps the operand's)
std::vector<uint16_t> any_nan(std::vector<uint16_t> v) {
  for (auto& h : v) if ((h & 0x7fff) > 0x7c00) h = 0x7e00;
  return v;
}
std::vector<uint32_t> any_nan(std::vector<uint32_t> v) {
  for (auto& u : v) if ((u & 0x7fffffffu) > 0x7f800000u) u = 0x7fc00000u;
  return v;
}
// the OpenCL devices to compare: CL as its extensions render it and, where it has cl_khr_fp16, CL rendered without
// it (CLHALFCORE: the core vload_half / vstore_half_rte rounding); empty without OpenCL
std::vector<std::string> cl_half_devices() {
  try { tinygrad::runtime("CL"); } catch (const tinygrad::DeviceError&) { return {}; }
  if (!tinygrad::runtime("CL").fp16) return {"CL"};
  tinygrad::register_renderer("OpenCL-core-half",
                              [](const tinygrad::DeviceRuntime&) { return std::make_unique<tinygrad::detail::OpenCLRenderer>(false); });
  auto spec = tinygrad::detail::cl_device();
  spec.name = "CLHALFCORE";
  spec.renderer = "OpenCL-core-half";
  tinygrad::register_device(spec);
  return {"CL", "CLHALFCORE"};
}
}  // namespace

TEST_CASE("dtype: float16 OpenCL kernels convert with vload_half / vstore_half_rte, or native half with cl_khr_fp16", "[dtype][half][cl]") {
  Tensor a = Tensor::empty({256}, DType::Float16, "CPU");
  Tensor t = (a * 3 + 1).cast(DType::Float16);
  std::unordered_map<const tinygrad::UOp*, int> slots;
  int nslots = 0;
  for (auto& u : tinygrad::detail::toposort(t.uop())) if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = nslots++;
  auto ks = tinygrad::detail::create_schedule({t.uop()}, slots, nslots).kernels;
  REQUIRE(ks.size() == 1);
  tinygrad::detail::OpenCLRenderer core, native(true);
  std::string c = tinygrad::detail::to_program(ks[0].ast, core).src, n = tinygrad::detail::to_program(ks[0].ast, native).src;
  using Catch::Matchers::Contains;
  // (0x1fu: the integer path's exponent mask)
  CHECK_THAT(c, Contains("vload_half(") && Contains("vstore_half_rte(") && !Contains("0x1fu") && !Contains("cl_khr_fp16"));
  CHECK_THAT(n,
      Contains("#pragma OPENCL EXTENSION cl_khr_fp16 : enable") && Contains("convert_half_rte(") && Contains("as_half(") && !Contains("0x1fu"));
}

TEST_CASE("dtype: float16 on OpenCL equals the CPU bit for bit: casts of special values and ops", "[dtype][half][cl]") {
  auto devs = cl_half_devices();
  if (devs.empty()) { WARN("CL is not available here: skipped"); return; }
  const float inf = INFINITY, nan = NAN;
  // +-0, half denormals (and ties between them), the largest half, overflow, ties to even, float denormals, inf, NaN
  std::vector<float> special{0.f, -0.f, 0x1p-24f, -0x1p-24f, 0x1p-25f, 0x1.8p-24f, 0x1.0002p-25f, 0x1p-26f, 0x1.ff8p-15f, 0x1p-14f, 0x1.ffep-15f,
                             65504.f, -65504.f, 65519.f, 65520.f, -65520.f, 1e6f, 3.4028235e38f, inf, -inf, nan, -nan,
                             1.f + 0x1p-11f, 1.f + 0x3p-11f, 2049.f, 2051.f, 1.f / 3, 0.1f, 1e-40f, -1e-40f, 3.14159265f};
  Tensor s(special, {int64_t(special.size())}, "CPU");
  auto want_cast = half_bits(s.cast(DType::Float16));
  // the CPU's values themselves: ties to even, denormals, overflow to inf, NaN stays NaN
  CHECK(want_cast[4] == 0x0000);   // 2^-25: a tie, to 0
  CHECK(want_cast[5] == 0x0002);   // 1.5 * 2^-24: a tie, to 2 * 2^-24
  CHECK(want_cast[6] == 0x0001);   // just above the tie
  CHECK(want_cast[8] == 0x03ff);   // the largest denormal
  CHECK(want_cast[11] == 0x7bff);  // 65504
  CHECK(want_cast[13] == 0x7bff);  // 65519 rounds down
  CHECK(want_cast[14] == 0x7c00);  // 65520 overflows
  CHECK(want_cast[22] == 0x3c00);  // 1 + 2^-11: a tie, to 1
  CHECK(want_cast[23] == 0x3c02);  // 1 + 3 * 2^-11: a tie, to 1 + 2^-9
  CHECK(want_cast[24] == 0x6800);  // 2049 -> 2048
  CHECK(want_cast[25] == 0x6802);  // 2051 -> 2052
  CHECK(want_cast[20] == 0x7e00);  // NaN: a quiet NaN with its sign
  CHECK(want_cast[21] == 0xfe00);

  // half inputs: values a float16 holds (so the CPU's cast is exact), random in [-2, 2), with a few specials
  auto halves = [](const tinygrad::Shape& shape, uint32_t seed) {
    Tensor::manual_seed(seed);
    return ((Tensor::rand(shape, DType::Float32, "CPU") - 0.5) * 4).cast(DType::Float16).realize();
  };
  Tensor a = halves({64, 48}, 1), b = halves({64, 48}, 2), v = halves({48}, 3), col = halves({64, 1}, 4), sp = s.cast(DType::Float16).realize();
  // ops on half tensors (a binary op's result rounds to half; sums and matmuls accumulate in float32)
  std::vector<std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&)>>> cases{
      {"a + b", [](auto& x, auto& y, auto&, auto&, auto&) { return x + y; }},
      {"a * b", [](auto& x, auto& y, auto&, auto&, auto&) { return x * y; }},
      {"a * b + a (fused, rounded twice)", [](auto& x, auto& y, auto&, auto&, auto&) { return x * y + x; }},
      {"a * 1e-4 (denormals)", [](auto& x, auto&, auto&, auto&, auto&) { return x * 1e-4; }},
      {"a * b * 20000 (overflow)", [](auto& x, auto& y, auto&, auto&, auto&) { return x * y * 20000; }},
      {"specials * 3 + 1", [](auto&, auto&, auto&, auto&, auto& z) { return z * 3 + 1; }},
      {"a.T() * 2 - b.T() (non-contiguous)", [](auto& x, auto& y, auto&, auto&, auto&) { return x.T() * 2 - y.T(); }},
      {"a[::2, 1:40] + 1 (a strided view)",
       [](auto& x, auto&, auto&, auto&, auto&) { return x.reshape({32, 2, 48}).shrink({{0, 32}, {0, 1}, {1, 40}}) + 1; }},
      {"a + v, a * col (broadcasts)", [](auto& x, auto&, auto& w, auto& c, auto&) { return (x + w) * c; }},
      {"a.sum(1)", [](auto& x, auto&, auto&, auto&, auto&) { return x.sum(1); }},
      {"(a * b).sum(0)", [](auto& x, auto& y, auto&, auto&, auto&) { return (x * y).sum(0); }},
      {"a.sum()", [](auto& x, auto&, auto&, auto&, auto&) { return x.sum(); }},
      {"a @ b.T()", [](auto& x, auto& y, auto&, auto&, auto&) { return x.matmul(y.T()); }},
      {"a.T() @ b", [](auto& x, auto& y, auto&, auto&, auto&) { return x.T().matmul(y); }},
      {"half -> float", [](auto&, auto&, auto&, auto&, auto& z) { return z.cast(DType::Float32) * 1; }},
  };
  for (auto& d : devs) {
    INFO(d);
    CHECK(any_nan(half_bits(s.to(d).cast(DType::Float16))) == any_nan(want_cast));
    for (auto& [name, f] : cases) {
      INFO(name);
      Tensor want = f(a, b, v, col, sp), got = f(a.to(d), b.to(d), v.to(d), col.to(d), sp.to(d));
      if (want.dtype() == DType::Float16) CHECK(any_nan(half_bits(got)) == any_nan(half_bits(want)));
      CHECK(any_nan(float_bits(got)) == any_nan(float_bits(want)));
    }
  }
}

// ---- float16 and bfloat16 statistics accumulate in float32 and round once (torch's numbers) ----
namespace {
using HV = std::vector<double>;
struct HalfView { const char* name; tinygrad::Shape base; std::function<Tensor(const Tensor&)> view; };
// |got - want| within `ulps` units of the half type's precision (2^-10 float16, 2^-7 bfloat16) of the scale
void near_half(const HV& got, const HV& want, DType dt, double scale, double ulps = 1) {
  REQUIRE(got.size() == want.size());
  double eps = dt == DType::Float16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  for (size_t i = 0; i < got.size(); i++) {
    INFO("element " << i << ": got " << got[i] << " want " << want[i]);
    if (dt == DType::Float16 && std::abs(want[i]) >= 65520) { CHECK(got[i] == std::copysign(INFINITY, want[i])); continue; }
    CHECK(std::abs(got[i] - want[i]) <= ulps * eps * std::max(std::abs(want[i]), scale));
  }
}
}  // namespace

TEST_CASE("dtype: float16 and bfloat16 mean, var, std and layer_norm accumulate in float32 (values and gradients)", "[dtype][half]") {
  // torch: float16 mean([60000, 60000]) = 60000, std([300, -300]) = 424.25, layer_norm([300, -300]) = [1, -1]
  Tensor big = Tensor(std::vector<float>{60000, 60000}).cast(DType::Float16);
  CHECK(big.mean().item<double>() == 60000);
  CHECK(big.sum().item<double>() == INFINITY);  // the sum itself is a float16: it overflows, as torch's
  Tensor pm = Tensor(std::vector<float>{300, -300}).cast(DType::Float16);
  CHECK(pm.std().item<double>() == 424.25);
  CHECK(pm.var().dtype() == DType::Float16);
  CHECK(pm.var().item<double>() == INFINITY);  // 180000 is past float16's range, its root is not
  CHECK(pm.layer_norm({2}).to_vector<double>() == std::vector<double>{1, -1});
  // views: contiguous, permuted, a stepped slice, size-1 dims; values 1e4..3e4 overflow a float16 sum of 4 and square
  std::vector<HalfView> views = {
      {"contiguous (2,3,4)", {2, 3, 4}, [](const Tensor& t) { return t; }},
      {"permuted (4,2,3)", {2, 3, 4}, [](const Tensor& t) { return t.permute({2, 0, 1}); }},
      {"sliced (5,6)[1:5:2, ::2]", {5, 6}, [](const Tensor& t) { return t.slice({tinygrad::Slice{1, 5, 2}, tinygrad::Slice{0, std::nullopt, 2}}); }},
      {"size-1 dims (1,5,1)", {1, 5, 1}, [](const Tensor& t) { return t; }},
  };
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    for (auto& v : views) {
      int64_t n = 1;
      for (auto d : v.base) n *= d;
      HV src;
      for (int64_t i = 0; i < n; i++) src.push_back(10000 + double((i * 7919) % 97) * 200 - (i % 3 ? 0 : 9000));
      Tensor base = Tensor(src, v.base).cast(dt).realize();
      Tensor x = v.view(base);
      HV xv = x.to_vector<double>();  // the half values, row-major in x's shape
      tinygrad::Shape s = x.shape();
      for (int64_t axis = 0; axis < int64_t(s.size()); axis++) {
        INFO(to_string(dt) << " " << v.name << " axis " << axis);
        // reference per output row along axis, in double
        int64_t len = s[size_t(axis)], inner = 1;
        for (size_t d = size_t(axis) + 1; d < s.size(); d++) inner *= s[d];
        int64_t outer = int64_t(xv.size()) / (len * inner);
        HV mean, var, sd, ln, dmean(xv.size()), dvar(xv.size()), dstd(xv.size()), dln(xv.size());
        auto at = [&](int64_t o, int64_t k, int64_t i) { return size_t((o * len + k) * inner + i); };
        HV w(xv.size());  // a weight per layer_norm output: the gradient of sum(w * y)
        for (size_t i = 0; i < w.size(); i++) w[i] = double(int(i % 5) - 2);
        for (int64_t o = 0; o < outer; o++)
          for (int64_t i = 0; i < inner; i++) {
            double m = 0, q = 0;
            for (int64_t k = 0; k < len; k++) m += xv[at(o, k, i)];
            m /= double(len);
            for (int64_t k = 0; k < len; k++) q += (xv[at(o, k, i)] - m) * (xv[at(o, k, i)] - m);
            double vr = len > 1 ? q / double(len - 1) : NAN, sg = std::sqrt(q / double(len) + 1e-5), wm = 0, wy = 0;
            mean.push_back(m); var.push_back(vr); sd.push_back(std::sqrt(vr));
            for (int64_t k = 0; k < len; k++) {
              double y = (xv[at(o, k, i)] - m) / sg;
              ln.push_back(y);
              wm += w[at(o, k, i)];
              wy += w[at(o, k, i)] * y;
            }
            for (int64_t k = 0; k < len; k++) {
              size_t j = at(o, k, i);
              dmean[j] = wm / double(len);  // sum(mean(x, keepdim) * w): the row's weights
              dvar[j] = 2 * (xv[j] - m) / double(len - 1);
              dstd[j] = (xv[j] - m) / (double(len - 1) * std::sqrt(vr));
              dln[j] = (w[j] - wm / double(len) - (xv[j] - m) / sg * wy / double(len)) / sg;
            }
          }
        near_half(x.mean(axis).to_vector<double>(), mean, dt, 0);
        CHECK(x.mean(axis).dtype() == dt);
        if (len > 1) {
          near_half(x.var(axis).to_vector<double>(), var, dt, 0);
          near_half(x.std(axis).to_vector<double>(), sd, dt, 0);
        }
        Tensor y = x.layernorm({axis});
        REQUIRE(y.dtype() == dt);
        std::vector<int64_t> last;  // axis moved last, the others in order: ln's (outer, inner, len) order
        for (int64_t d = 0; d < int64_t(s.size()); d++) if (d != axis) last.push_back(d);
        last.push_back(axis);
        near_half(y.permute(last).contiguous().to_vector<double>(), ln, dt, 1, 2);
        // gradients with respect to the view (a weight per element so they are not uniform)
        Tensor wt = Tensor(w, s).cast(dt);
        auto grad = [&](const Tensor& loss) { return tinygrad::gradient(loss, {x})[0].to_vector<double>(); };
        near_half(grad((x.mean(axis, true) * wt).sum()), dmean, dt, 1e-3);
        if (len > 1) {
          HV gv = grad(x.var(axis).sum()), gs = grad(x.std(axis).sum());
          near_half(gv, dvar, dt, 1, 2);
          near_half(gs, dstd, dt, 1e-3, 2);
        }
        near_half(grad((y * wt).sum()), dln, dt, 6.2e-5, 8);  // float16 denormals below 6.1e-5: absolute steps
      }
    }
  }
}
