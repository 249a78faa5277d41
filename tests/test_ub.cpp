// Generated kernels have no undefined behaviour on any input, and the symbolic folder folds constants to the
// same defined results (docs: the "Defined results" list in include/tinygrad/renderer/cstyle.hpp):
//   integer x / 0 = 0, x % 0 = 0 (idiv, fmod, Python-style % and floor division alike);
//   MIN / -1 = MIN (wraps), MIN % -1 = 0; signed +, -, *, negation and << wrap (two's complement);
//   a << s with s outside [0, bits) = 0; a >> s with s outside [0, bits) = 0, or -1 for negative signed a;
//   float -> int: truncates toward zero, NaN -> 0, +-inf and out-of-range values saturate to the int type's min / max;
//   a bool buffer byte other than 0 reads as true.
// Every case runs with tensor operands (kernels) and with constant operands (folded by the simplifier), on the
// default device: CPU, DEV=CL, and CUDA_COMPILE_CHECK=1 compiles the kernels for CUDA too.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <limits>

using tinygrad::DType;
using tinygrad::Tensor;

namespace {
template <class T> constexpr T kMin = std::numeric_limits<T>::min();
template <class T> constexpr T kMax = std::numeric_limits<T>::max();
template <class T> using U = std::make_unsigned_t<T>;

// the documented results, computed without UB (unsigned arithmetic wraps; C++20 narrowing conversions wrap)
template <class T> T ref_idiv(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) if (b == T(-1)) return T(U<T>(0) - U<T>(a));
  return T(a / b);
}
template <class T> T ref_fmod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) if (b == T(-1)) return 0;
  return T(a % b);
}
template <class T> bool adjust(T r, T b) { return r != 0 && ((r < 0) != (b < 0)); }  // Python rounds toward -inf
template <class T> T ref_mod(T a, T b) { T r = ref_fmod(a, b); return adjust(r, b) ? T(r + b) : r; }
template <class T> T ref_floordiv(T a, T b) { T q = ref_idiv(a, b); return adjust(ref_fmod(a, b), b) ? T(q - 1) : q; }
template <class T> T ref_add(T a, T b) { return T(uint64_t(a) + uint64_t(b)); }
template <class T> T ref_mul(T a, T b) { return T(uint64_t(a) * uint64_t(b)); }
template <class T> T ref_sub(T a, T b) { return T(uint64_t(a) - uint64_t(b)); }
template <class T> T ref_neg(T a) { return T(uint64_t(0) - uint64_t(a)); }
template <class T> bool in_width(T s) { return s >= 0 && uint64_t(s) < sizeof(T) * 8; }
template <class T> T ref_shl(T a, T s) { return in_width(s) ? T(uint64_t(a) << uint64_t(s)) : T(0); }
template <class T> T ref_shr(T a, T s) { return in_width(s) ? T(a >> s) : a < 0 ? T(-1) : T(0); }
// float -> int
template <class T> T ref_cast(double x) {
  if (std::isnan(x)) return 0;
  if (x <= double(kMin<T>)) return kMin<T>;
  if (x >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return kMax<T>;  // 2^bits: max + 1, exact in a double
  return T(std::trunc(x));
}

template <class T> DType dt() { return tinygrad::dtype_of<T>(); }
template <class T> Tensor tensor(const std::vector<T>& v) { return Tensor(v); }
// a constant of any value (Tensor::full takes a double, which holds 53 bits)
template <class T> Tensor cnst(T v) {
  using namespace tinygrad;
  std::string dev = default_device();
  return Tensor(make_uop(Ops::CONST, dt<T>(), {make_uop(Ops::DEVICE, DType::Bool, {}, dev)}, int64_t(v)), dev);
}

// operands: every interesting pair, tiled past a vector's width so the vectorized kernels see them too
template <class T> std::pair<std::vector<T>, std::vector<T>> div_operands() {
  std::vector<T> xs{T(7), T(-7), T(0), T(1), kMin<T>, kMax<T>, T(kMin<T> + 1), T(100), T(-100)};
  std::vector<T> ds{T(0), T(-1), T(1), T(3), T(-3), kMin<T>, kMax<T>, T(7)};
  std::vector<T> a, b;
  for (auto x : xs) for (auto d : ds) { a.push_back(x); b.push_back(d); }
  return {a, b};
}

template <class T, class F> std::vector<T> apply(const std::vector<T>& a, const std::vector<T>& b, F f) {
  std::vector<T> r;
  for (size_t i = 0; i < a.size(); i++) r.push_back(f(a[i], b[i]));
  return r;
}
}  // namespace

#define TG_INT_TYPES int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t

TEMPLATE_TEST_CASE("ub: integer division and modulo by zero and MIN / -1 are defined", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  auto [a, b] = div_operands<T>();
  Tensor ta = tensor(a), tb = tensor(b);
  INFO(tinygrad::to_string(dt<T>()));
  CHECK(ta.idiv(tb).template to_vector<T>() == apply(a, b, ref_idiv<T>));
  CHECK(ta.fmod(tb).template to_vector<T>() == apply(a, b, ref_fmod<T>));
  CHECK((ta % tb).template to_vector<T>() == apply(a, b, ref_mod<T>));
  CHECK(ta.div(tb, "floor").template to_vector<T>() == apply(a, b, ref_floordiv<T>));
  CHECK(ta.div(tb, "trunc").template to_vector<T>() == apply(a, b, ref_idiv<T>));
  // a constant divisor: 0 and -1 (the compiler sees the value)
  for (T d : {T(0), T(-1)}) {
    INFO("constant divisor " << int64_t(d));
    std::vector<T> bd(a.size(), d);
    CHECK(ta.idiv(cnst(d)).template to_vector<T>() == apply(a, bd, ref_idiv<T>));
    CHECK(ta.fmod(cnst(d)).template to_vector<T>() == apply(a, bd, ref_fmod<T>));
    CHECK((ta % cnst(d)).template to_vector<T>() == apply(a, bd, ref_mod<T>));
    CHECK(ta.div(cnst(d), "floor").template to_vector<T>() == apply(a, bd, ref_floordiv<T>));
  }
  // both constant: the simplifier folds them
  for (T x : {T(7), T(-7), kMin<T>}) for (T d : {T(0), T(-1), T(3)}) {
    INFO("constants " << int64_t(x) << ", " << int64_t(d));
    CHECK(cnst(x).idiv(cnst(d)).template item<T>() == ref_idiv(x, d));
    CHECK(cnst(x).fmod(cnst(d)).template item<T>() == ref_fmod(x, d));
    CHECK((cnst(x) % cnst(d)).template item<T>() == ref_mod(x, d));
    CHECK(cnst(x).div(cnst(d), "floor").template item<T>() == ref_floordiv(x, d));
  }
}

TEST_CASE("ub: bool division by false is defined", "[ub]") {
  Tensor a(std::vector<bool>{false, true, false, true}), b(std::vector<bool>{false, false, true, true});
  CHECK(a.idiv(b).to_vector<bool>() == std::vector<bool>{false, false, false, true});
  CHECK(Tensor::full({2}, 1, DType::Bool).idiv(Tensor::full({2}, 0, DType::Bool)).to_vector<bool>() == std::vector<bool>{false, false});
}

TEMPLATE_TEST_CASE("ub: integer add, sub, mul and neg wrap", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  auto [a, b] = div_operands<T>();
  Tensor ta = tensor(a), tb = tensor(b);
  INFO(tinygrad::to_string(dt<T>()));
  CHECK((ta + tb).template to_vector<T>() == apply(a, b, ref_add<T>));
  CHECK((ta * tb).template to_vector<T>() == apply(a, b, ref_mul<T>));
  CHECK((ta - tb).template to_vector<T>() == apply(a, b, ref_sub<T>));
  CHECK((-ta).template to_vector<T>() == apply(a, b, [](T x, T) { return ref_neg(x); }));
  CHECK((ta * tb + ta).template to_vector<T>() == apply(a, b, [](T x, T y) { return ref_add(ref_mul(x, y), x); }));
  // constants fold with the same wrap-around
  for (T x : {kMin<T>, T(-1), T(100)}) for (T y : {kMin<T>, T(-1), T(3)}) {
    INFO("constants " << int64_t(x) << ", " << int64_t(y));
    CHECK((cnst(x) + cnst(y)).template item<T>() == ref_add(x, y));
    CHECK((cnst(x) * cnst(y)).template item<T>() == ref_mul(x, y));
    CHECK((cnst(x) - cnst(y)).template item<T>() == ref_sub(x, y));
    CHECK((-cnst(x)).template item<T>() == ref_neg(x));
  }
  // a sum that overflows wraps (ints of 4 bytes or more accumulate in their own dtype)
  if constexpr (sizeof(T) >= 4) CHECK(tensor(std::vector<T>{kMax<T>, T(1), T(2)}).sum().template item<T>() == T(kMin<T> + 2));
}

TEST_CASE("ub: products of int64 constants fold exactly", "[ub]") {
  // 3037000499^2 needs 63 bits: folded through a double it would round
  int64_t x = 3037000499;
  CHECK((cnst<int64_t>(x) * cnst<int64_t>(x)).item<int64_t>() == x * x);
  CHECK((tensor(std::vector<int64_t>{x}) * cnst<int64_t>(x)).item<int64_t>() == x * x);
  CHECK((cnst<int64_t>(x) * cnst<int64_t>(x) + cnst<int64_t>(1)).item<int64_t>() == x * x + 1);
  CHECK((cnst<uint64_t>(4294967295u) * cnst<uint64_t>(4294967297u)).item<uint64_t>() == 18446744073709551615ull);
}

TEST_CASE("ub: comparisons of wrapping sums are not folded as if they could not wrap", "[ub]") {
  const int32_t mx = kMax<int32_t>, mn = kMin<int32_t>;
  Tensor x = tensor(std::vector<int32_t>{mx, 0, 1 << 30});
  CHECK(((x + 1) < cnst<int32_t>(mn + 1)).to_vector<bool>() == std::vector<bool>{true, false, false});
  CHECK(((x * 2) < cnst<int32_t>(0)).to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(((x + 1) < 0).to_vector<bool>() == std::vector<bool>{true, false, false});
}

TEMPLATE_TEST_CASE("ub: shifts by the bit width or more, or by a negative amount, are defined", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  constexpr int bits = int(sizeof(T) * 8);
  std::vector<T> a, s;
  for (T x : {T(1), T(-1), kMin<T>, kMax<T>, T(5)})
    for (T k : {T(0), T(1), T(bits - 1), T(bits), T(bits + 3), T(-1), T(kMax<T> - 1)}) { a.push_back(x); s.push_back(k); }
  Tensor ta = tensor(a), ts = tensor(s);
  INFO(tinygrad::to_string(dt<T>()));
  CHECK((ta << ts).template to_vector<T>() == apply(a, s, ref_shl<T>));
  CHECK((ta >> ts).template to_vector<T>() == apply(a, s, ref_shr<T>));
  for (int64_t k : {int64_t(1), int64_t(bits), int64_t(bits + 3)}) {
    INFO("shift by the scalar " << k);
    std::vector<T> sk(a.size(), T(k));
    CHECK((ta << k).template to_vector<T>() == apply(a, sk, ref_shl<T>));
    CHECK((ta >> k).template to_vector<T>() == apply(a, sk, ref_shr<T>));
  }
  for (T x : {T(-1), T(5)}) for (T k : {T(1), T(bits), T(-1)}) {
    INFO("constants " << int64_t(x) << ", " << int64_t(k));
    CHECK((cnst(x) << cnst(k)).template item<T>() == ref_shl(x, k));
    CHECK((cnst(x) >> cnst(k)).template item<T>() == ref_shr(x, k));
  }
}

TEMPLATE_TEST_CASE("ub: float to int casts truncate, NaN gives 0, inf and out-of-range values saturate", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  const double inf = INFINITY;
  std::vector<double> xs{NAN, inf, -inf, 1e30, -1e30, 2.7, -2.7, 0.5, -0.5, 0.0, -0.0, 100.9, -100.9, 255.5, 256.0, -128.5, -129.0,
                         32767.9, 32768.0, -32768.9, 65535.5, 65536.0, 2147483647.5, 2147483648.0, -2147483648.9, -2147483649.0,
                         4294967295.5, 4294967296.0, 9223372036854775807.0, -9223372036854775808.0, 1.8446744073709552e19, 3e19};
  INFO(tinygrad::to_string(dt<T>()));
  for (DType from : {DType::Float64, DType::Float32, DType::Float16}) {
    INFO("from " << tinygrad::to_string(from));
    // the value as the source dtype holds it
    auto held = [&](double x) { return Tensor(std::vector<double>{x}).cast(from).template item<double>(); };
    std::vector<T> want;
    for (double x : xs) want.push_back(ref_cast<T>(held(x)));
    CHECK(Tensor(xs).cast(from).cast(dt<T>()).template to_vector<T>() == want);
    for (size_t i = 0; i < xs.size(); i++) {
      INFO("constant " << xs[i]);
      CHECK(Tensor::full({}, xs[i], from).cast(dt<T>()).template item<T>() == want[i]);
    }
  }
}

TEST_CASE("ub: bool buffers holding bytes other than 0 and 1 read as true", "[ub]") {
  std::vector<uint8_t> bytes{0, 1, 2, 255, 128, 0};
  Tensor b = Tensor::from_bytes(bytes.data(), DType::Bool, {6});
  CHECK(b.cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1, 1, 0});
  CHECK(b.logical_not().to_vector<bool>() == std::vector<bool>{true, false, false, false, false, true});
  CHECK((b & Tensor(std::vector<bool>{true, true, true, true, true, true})).cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1, 1, 0});
  CHECK(b.where(1, 2).cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{2, 1, 1, 1, 1, 2});
  Tensor u = Tensor(bytes).bitcast(DType::Bool);
  CHECK(u.cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1, 1, 0});
  CHECK(u.sum().item<int32_t>() == 4);
}
