// Generated kernels have no undefined behaviour on any input, and the symbolic folder folds constants to the
// same defined results (docs: "Defined results" in include/tinygrad/uop/ops.hpp, the op table):
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

// results of one shape gathered into one tensor: one kernel to compile (constants: each element folded by the simplifier)
template <class T> std::vector<T> values(const std::vector<Tensor>& ts) { return Tensor::stack(ts).template to_vector<T>(); }
template <class T> std::vector<T> concat(const std::vector<std::vector<T>>& vs) {
  std::vector<T> r;
  for (auto& v : vs) r.insert(r.end(), v.begin(), v.end());
  return r;
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
  CHECK(values<T>({ta.fmod(tb), ta % tb, ta.div(tb, "floor"), ta.div(tb, "trunc")}) ==
        concat<T>({apply(a, b, ref_fmod<T>), apply(a, b, ref_mod<T>), apply(a, b, ref_floordiv<T>), apply(a, b, ref_idiv<T>)}));
  // a constant divisor: 0 and -1 (the compiler sees the value)
  std::vector<Tensor> by_const;
  std::vector<std::vector<T>> want_const;
  for (T d : {T(0), T(-1)}) {
    std::vector<T> bd(a.size(), d);
    for (Tensor t : {ta.idiv(cnst(d)), ta.fmod(cnst(d)), ta % cnst(d), ta.div(cnst(d), "floor")}) by_const.push_back(t);
    for (auto& w : {apply(a, bd, ref_idiv<T>), apply(a, bd, ref_fmod<T>), apply(a, bd, ref_mod<T>), apply(a, bd, ref_floordiv<T>)})
      want_const.push_back(w);
  }
  CHECK(values<T>(by_const) == concat(want_const));
  // both constant: the simplifier folds them
  std::vector<Tensor> got;
  std::vector<T> want;
  for (T x : {T(7), T(-7), kMin<T>}) for (T d : {T(0), T(-1), T(3)}) {
    for (Tensor t : {cnst(x).idiv(cnst(d)), cnst(x).fmod(cnst(d)), cnst(x) % cnst(d), cnst(x).div(cnst(d), "floor")}) got.push_back(t);
    for (T r : {ref_idiv(x, d), ref_fmod(x, d), ref_mod(x, d), ref_floordiv(x, d)}) want.push_back(r);
  }
  CHECK(values<T>(got) == want);
}

TEST_CASE("ub: bool division by false is defined", "[ub]") {
  Tensor a(std::vector<bool>{false, true, false, true}), b(std::vector<bool>{false, false, true, true});
  CHECK(a.idiv(b).to_vector<bool>() == std::vector<bool>{false, false, false, true});
  CHECK(Tensor::full({2}, 1, DType::Bool).idiv(Tensor::full({2}, 0, DType::Bool)).to_vector<bool>() == std::vector<bool>{false, false});
}

TEMPLATE_TEST_CASE("ub: integer add sub mul and neg wrap around", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  auto [a, b] = div_operands<T>();
  Tensor ta = tensor(a), tb = tensor(b);
  INFO(tinygrad::to_string(dt<T>()));
  CHECK((ta * tb).template to_vector<T>() == apply(a, b, ref_mul<T>));
  CHECK(values<T>({ta + tb, ta - tb, -ta, ta * tb + ta}) ==
        concat<T>({apply(a, b, ref_add<T>), apply(a, b, ref_sub<T>), apply(a, b, [](T x, T) { return ref_neg(x); }),
                   apply(a, b, [](T x, T y) { return ref_add(ref_mul(x, y), x); })}));
  // constants fold with the same wrap-around
  std::vector<Tensor> got;
  std::vector<T> want;
  for (T x : {kMin<T>, T(-1), T(100), kMax<T>}) for (T y : {kMin<T>, T(-1), T(3), kMax<T>}) {
    for (Tensor t : {cnst(x) + cnst(y), cnst(x) * cnst(y), cnst(x) - cnst(y), -cnst(x)}) got.push_back(t);
    for (T r : {ref_add(x, y), ref_mul(x, y), ref_sub(x, y), ref_neg(x)}) want.push_back(r);
  }
  CHECK(values<T>(got) == want);
  // a sum accumulates in int64 (as torch) and wraps there: past int32's range it is exact, past int64's it wraps
  if constexpr (sizeof(T) >= 4) {
    Tensor s = tensor(std::vector<T>{kMax<T>, T(1), T(2)}).sum();
    CHECK(s.dtype() == tinygrad::DType::Int64);
    CHECK(s.template item<int64_t>() == int64_t(uint64_t(kMax<T>) + 3u));
  }
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

TEMPLATE_TEST_CASE("ub: shifts by the bit width or more or by a negative count are defined", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  constexpr int bits = int(sizeof(T) * 8);
  std::vector<T> a, s;
  for (T x : {T(1), T(-1), kMin<T>, kMax<T>, T(5)})
    for (T k : {T(0), T(1), T(bits - 1), T(bits), T(bits + 3), T(-1), T(kMax<T> - 1)}) { a.push_back(x); s.push_back(k); }
  Tensor ta = tensor(a), ts = tensor(s);
  INFO(tinygrad::to_string(dt<T>()));
  CHECK(values<T>({ta << ts, ta >> ts}) == concat<T>({apply(a, s, ref_shl<T>), apply(a, s, ref_shr<T>)}));
  // by scalars
  std::vector<Tensor> by_scalar;
  std::vector<std::vector<T>> want_scalar;
  for (int64_t k : {int64_t(1), int64_t(bits), int64_t(bits + 3)}) {
    std::vector<T> sk(a.size(), T(k));
    by_scalar.push_back(ta << k); by_scalar.push_back(ta >> k);
    want_scalar.push_back(apply(a, sk, ref_shl<T>)); want_scalar.push_back(apply(a, sk, ref_shr<T>));
  }
  CHECK(values<T>(by_scalar) == concat(want_scalar));
  std::vector<Tensor> got;
  std::vector<T> want;
  for (T x : {T(-1), T(5), kMin<T>}) for (T k : {T(1), T(bits - 1), T(bits), T(-1)}) {
    for (Tensor t : {cnst(x) << cnst(k), cnst(x) >> cnst(k)}) got.push_back(t);
    for (T r : {ref_shl(x, k), ref_shr(x, k)}) want.push_back(r);
  }
  CHECK(values<T>(got) == want);
}

TEMPLATE_TEST_CASE("ub: float to int casts truncate and saturate and NaN gives 0", "[ub]", TG_INT_TYPES) {
  using T = TestType;
  const double inf = INFINITY;
  std::vector<double> xs{NAN, inf, -inf, 1e30, -1e30, 2.7, -2.7, 0.5, -0.5, 0.0, -0.0, 100.9, -100.9, 255.5, 256.0, -128.5, -129.0,
                         32767.9, 32768.0, -32768.9, 65535.5, 65536.0, 2147483647.5, 2147483648.0, -2147483648.9, -2147483649.0,
                         4294967295.5, 4294967296.0, 9223372036854775807.0, -9223372036854775808.0, 1.8446744073709552e19, 3e19};
  INFO(tinygrad::to_string(dt<T>()));
  std::vector<Tensor> got, got_const;
  std::vector<T> want;
  for (DType from : {DType::Float64, DType::Float32, DType::Float16}) {
    for (double x : Tensor(xs).cast(from).template to_vector<double>()) want.push_back(ref_cast<T>(x));  // the values as `from` holds them
    got.push_back(Tensor(xs).cast(from).cast(dt<T>()));
    for (double x : xs) got_const.push_back(Tensor::full({}, x, from).cast(dt<T>()));
  }
  CHECK(values<T>(got) == want);  // float64, then float32, then float16
  CHECK(values<T>(got_const) == want);
}

TEST_CASE("ub: bool buffers holding bytes other than 0 and 1 read as true", "[ub]") {
  std::vector<uint8_t> bytes{0, 1, 2, 255, 128, 0};
  Tensor b = Tensor::from_bytes(bytes.data(), DType::Bool, {6});
  CHECK(b.cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1, 1, 0});
  CHECK(b.logical_not().to_vector<bool>() == std::vector<bool>{true, false, false, false, false, true});
  CHECK((b & Tensor(std::vector<bool>{true, true, true, true, true, true})).cast(DType::Int32).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 1, 1, 1, 1, 0});
  CHECK(b.where(1, 2).cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{2, 1, 1, 1, 1, 2});
  Tensor u = Tensor(bytes).bitcast(DType::Bool);
  CHECK(u.cast(DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1, 1, 0});
  CHECK(u.sum().item<int32_t>() == 4);
}
