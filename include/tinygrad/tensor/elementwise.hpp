#pragma once
// Tensor methods: unary and binary math, activations, dtype shorthands.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
// Ints and bools promote to default_float for transcendental ops; C++ scalars are weak (take the tensor's dtype).
// dtype shorthands are spelled with a trailing underscore where the name is a C++ keyword: float_(), int_(), bool_().
#include <string_view>
#include "mixin.hpp"

namespace tinygrad {

namespace detail {

template <class T>
struct ElementwiseOps {
 public:
  // ---- unary ----
  /// -x (logical not for bools)
  T neg() const TINYGRAD_MEMBER_DEF({ return self().dtype() == DType::Bool ? logical_not() : self().unary(Ops::NEG); })
  /// !x as a bool tensor
  T logical_not() const TINYGRAD_MEMBER_DEF({ auto b = self().cast(DType::Bool); return T(alu(Ops::CMPNE, {b.uop(), b.like(1).uop()}), b.device()); })
  /// ~x: ints and bools only (x ^ -1 for signed; -(x + 1) wraps to the same bits for unsigned)
  T bitwise_not() const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (is_float(x.dtype())) throw DTypeError("tinygrad::bitwise_not: needs an integer or bool tensor, got " + to_string(x.dtype()));
    if (x.dtype() == DType::Bool) return logical_not();
    return is_unsigned(x.dtype()) ? (x + x.like(1)).unary(Ops::NEG) : x ^ x.like(-1);
  })
  /// 2^x (ints become the default float)
  T exp2() const TINYGRAD_MEMBER_DEF({ return self().fl().unary(Ops::EXP2); })
  /// log base 2
  T log2() const TINYGRAD_MEMBER_DEF({ return self().fl().unary(Ops::LOG2); })
  /// e^x
  T exp() const TINYGRAD_MEMBER_DEF({ return (self().fl() * (1.0 / std::log(2.0))).exp2(); })
  /// natural log
  T log() const TINYGRAD_MEMBER_DEF({ return self().fl().log2() * std::log(2.0); })
  /// log base 10
  T log10() const TINYGRAD_MEMBER_DEF({ return self().fl().log2() * std::log10(2.0); })
  /// square root
  T sqrt() const TINYGRAD_MEMBER_DEF({ return self().fl().unary(Ops::SQRT); })
  /// 1 / sqrt(x)
  T rsqrt() const TINYGRAD_MEMBER_DEF({ return sqrt().reciprocal(); })
  /// 1 / x
  T reciprocal() const TINYGRAD_MEMBER_DEF({ return self().fl().unary(Ops::RECIPROCAL); })
  /// x * x
  T square() const TINYGRAD_MEMBER_DEF({ return self() * self(); })
  /// -1, 0 or 1 (NaN stays NaN); the gradient is 0
  T sign() const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (x.dtype() == DType::Bool) return x;
    if (is_unsigned(x.dtype())) return (x != 0.0).cast(x.dtype());
    auto s = (x != 0.0).where((x < 0.0).where(x.like(-1), x.like(1)), x.like(0));
    return is_float(x.dtype()) ? isnan().where(x, s) : s;
  })
  /// |x|
  T abs() const TINYGRAD_MEMBER_DEF({ return self().dtype() == DType::Bool ? self() : self() * sign(); })
  /// sine
  T sin() const TINYGRAD_MEMBER_DEF({ return self().fl().unary(Ops::SIN); })
  /// cosine
  T cos() const TINYGRAD_MEMBER_DEF({ return (M_PI / 2 - self().fl()).sin(); })
  /// tangent
  T tan() const TINYGRAD_MEMBER_DEF({ return sin() / cos(); })
  /// Abramowitz-Stegun 4.4.46 (|error| <= 2e-8), as tinygrad
  T asin() const TINYGRAD_MEMBER_DEF({
    auto x = self().fl(), a = x.abs();
    auto p = poly(a, {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810, -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050});
    return x.sign() * (M_PI / 2 - (1.0 - a).sqrt() * p);
  })
  /// arccosine
  T acos() const TINYGRAD_MEMBER_DEF({ return M_PI / 2 - asin(); })
  /// arctangent
  T atan() const TINYGRAD_MEMBER_DEF({ auto x = self().fl(); return (x / (1.0 + x * x).sqrt()).asin(); })
  /// hyperbolic sine
  T sinh() const TINYGRAD_MEMBER_DEF({ auto x = self().fl(); return (x.exp() - (-x).exp()) * 0.5; })
  /// hyperbolic cosine
  T cosh() const TINYGRAD_MEMBER_DEF({ auto x = self().fl(); return (x.exp() + (-x).exp()) * 0.5; })
  /// hyperbolic tangent
  T tanh() const TINYGRAD_MEMBER_DEF({ return 2.0 * (2.0 * self().fl()).sigmoid() - 1.0; })
  /// odd, so compute on |x| (no cancellation for large negative x)
  T asinh() const TINYGRAD_MEMBER_DEF({ auto x = self().fl(), a = x.abs(); return x.sign() * (a + (a * a + 1.0).sqrt()).log(); })
  /// inverse hyperbolic cosine
  T acosh() const TINYGRAD_MEMBER_DEF({ auto x = self().fl(); return (x + (x * x - 1.0).sqrt()).log(); })
  /// inverse hyperbolic tangent
  T atanh() const TINYGRAD_MEMBER_DEF({ auto x = self().fl(); return ((1.0 + x) / (1.0 - x)).log() * 0.5; })
  /// relative error of a few ulp over the whole range, float64 too: x * P(x^2) below 0.75, +-(1 - erfc(|x|)) above
  /// (the erfc in erfc_of). Coefficients: relative least-squares fits, one set for float32 and one for float64;
  /// float16 and bfloat16 compute in float32.
  T erf() const TINYGRAD_MEMBER_DEF({
    auto x = self().fl();
    if (itemsize(x.dtype()) < 4) return x.cast(DType::Float32).erf().cast(x.dtype());
    auto a = x.abs();
    auto small = a < kErfSmall;
    auto big = 1.0 - erfc_of(a, false);
    return with_grad_rule(small.where(erf_small(x, small), (x < 0.0).where(-big, big)), x, M_2_SQRTPI * exp_neg_square(a, false));
  })
  /// round toward zero
  T trunc() const TINYGRAD_MEMBER_DEF({ return is_float(self().dtype()) ? self().unary(Ops::TRUNC) : self(); })
  /// round down
  T floor() const TINYGRAD_MEMBER_DEF({ auto& x = self(); if (!is_float(x.dtype())) return x; auto t = trunc(); return (x < t).where(t - 1.0, t); })
  /// round up
  T ceil() const TINYGRAD_MEMBER_DEF({ auto& x = self(); if (!is_float(x.dtype())) return x; auto t = trunc(); return (x > t).where(t + 1.0, t); })
  /// half to even (like torch and tinygrad); x - trunc(x) and t / 2 are exact, so ties are found exactly
  T round() const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (!is_float(x.dtype())) return x;
    auto t = trunc(), d = (x - t).abs(), odd = (t * 0.5).trunc() * 2.0 != t;
    return ((d > 0.5) | ((d == 0.5) & odd)).where(t + (x > 0.0).where(x.like(1), x.like(-1)), t);
  })
  /// x is +-inf (or only +inf / -inf)
  T isinf(bool detect_positive = true, bool detect_negative = true) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    return ((x == INFINITY) & x.like(detect_positive).cast(DType::Bool)) | ((x == -INFINITY) & x.like(detect_negative).cast(DType::Bool));
  })
  /// x is NaN
  T isnan() const TINYGRAD_MEMBER_DEF({ return self() != self(); })
  /// x is neither inf nor NaN
  T isfinite() const TINYGRAD_MEMBER_DEF({ return (isinf() | isnan()).logical_not(); })

  // ---- binary (Tensor or weak scalar) ----
  /// x + o (broadcast, torch's type promotion)
  T add(const T& o) const TINYGRAD_MEMBER_DEF({ return self() + o; })
  /// x + scalar
  T add(double o) const TINYGRAD_MEMBER_DEF({ return self() + o; })
  /// x - o (broadcast)
  T sub(const T& o) const TINYGRAD_MEMBER_DEF({ return self() - o; })
  /// x - scalar
  T sub(double o) const TINYGRAD_MEMBER_DEF({ return self() - o; })
  /// x * o (broadcast)
  T mul(const T& o) const TINYGRAD_MEMBER_DEF({ return self() * o; })
  /// x * scalar
  T mul(double o) const TINYGRAD_MEMBER_DEF({ return self() * o; })
  /// true division (ints -> default_float); rounding_mode "trunc" or "floor" keeps int dtypes (x // 0 = 0, as idiv)
  T div(const T& o, std::string_view rounding_mode = {}) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self(), o, "div");
    if (rounding_mode.empty()) {
      if (!is_float(a.dtype())) { a = a.cast(dtypes::default_float); b = b.cast(dtypes::default_float); }
      return a * b.reciprocal();
    }
    if (rounding_mode != "trunc" && rounding_mode != "floor")
      throw Error("tinygrad::div: rounding_mode must be \"trunc\" or \"floor\", got \"" + std::string(rounding_mode) + "\"");
    if (is_float(a.dtype())) return rounding_mode == "trunc" ? a.div(b).trunc() : a.div(b).floor();
    if (a.dtype() == DType::Bool) throw DTypeError("tinygrad::div: rounding division of bool tensors is not supported");
    auto q = a.idiv(b);
    if (rounding_mode == "trunc") return q;
    // a nonzero remainder whose sign differs from b's rounded toward zero (x // 0 = 0: the remainder is 0)
    auto r = a.fmod(b);
    return ((r != 0.0) & ((r < 0.0) != (b < 0.0))).where(q - 1.0, q);
  })
  /// x / scalar (rounding_mode as the tensor overload)
  T div(double o, std::string_view rounding_mode = {}) const TINYGRAD_MEMBER_DEF({ return div(self().like(o, true), rounding_mode); })
  /// integer division truncating toward zero, like C, but defined for every input: x / 0 = 0, MIN / -1 = MIN (uop/ops.hpp)
  T idiv(const T& o) const TINYGRAD_MEMBER_DEF({ return self().binop(Ops::IDIV, o, "idiv"); })
  /// remainder with the sign of the divisor (Python's %); ints: x % 0 = 0
  T mod(const T& o) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self(), o, "mod");
    if (is_float(a.dtype())) return a - a.div(b, "floor") * b;
    auto r = a.fmod(b);
    return ((r != 0.0) & ((r < 0.0) != (b < 0.0))).where(r + b, r);
  })
  /// x % scalar (Python's sign, as torch.remainder)
  T mod(double o) const TINYGRAD_MEMBER_DEF({ return mod(self().like(o, true)); })
  /// remainder with the sign of the dividend (C's fmod / %); ints: x % 0 = 0, MIN % -1 = 0
  T fmod(const T& o) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self(), o, "fmod");
    if (a.dtype() == DType::Bool) throw DTypeError("tinygrad::fmod: needs numbers, got " + to_string(a.dtype()));
    if (is_float(a.dtype())) return a - a.div(b, "trunc") * b;
    return T(alu(Ops::MOD, {a.uop(), b.uop()}), a.device());
  })
  /// torch.fmod with a scalar
  T fmod(double o) const TINYGRAD_MEMBER_DEF({ return fmod(self().like(o, true)); })
  /// x ** e; negative bases with integer exponents keep their sign; int ** int stays int (computed in float64, rounded)
  T pow(const T& e) const TINYGRAD_MEMBER_DEF({
    DType rd = least_upper_dtype(self().dtype(), e.dtype());
    if (!is_float(rd)) return self().cast(DType::Float64).pow(e.cast(DType::Float64)).round().cast(rd);
    auto [b, x] = T::broadcast_pair(self().fl(), e, "pow");
    // |b|^x, with the sign of b restored for odd integer exponents (NaN for other exponents of negative bases)
    auto mag = (x * b.abs().log2()).exp2();
    auto isint = x.trunc() == x, odd = isint & ((x.abs() - ((x.abs() * 0.5).trunc() * 2.0)) == 1.0);
    auto signed_mag = (b < 0.0).where(odd.where(-mag, isint.where(mag, b.like(NAN))), mag);
    return (x == 0.0).where(b.like(1), signed_mag);
  })
  /// x ^ scalar
  T pow(double e) const TINYGRAD_MEMBER_DEF({ return pow(self().like(e, true)); })
  /// torch.maximum (NaN propagates)
  T maximum(const T& o) const TINYGRAD_MEMBER_DEF({ return self().binop(Ops::MAX, o, "maximum"); })
  /// torch.maximum with a scalar
  T maximum(double o) const TINYGRAD_MEMBER_DEF({ return maximum(self().like(o, true)); })
  /// through the order-reversing inverse, so unsigned and bool work too
  T minimum(const T& o) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self(), o, "minimum");
    return a.order_inverse().maximum(b.order_inverse()).order_inverse();
  })
  /// torch.minimum with a scalar
  T minimum(double o) const TINYGRAD_MEMBER_DEF({ return minimum(self().like(o, true)); })
#define TG_CMP(NAME, OP)                                             \
  T NAME(const T& o) const { return self() OP o; }                 \
  T NAME(double o) const { return self() OP o; }
  /// torch.eq, ne, lt, le, gt, ge: a bool tensor (o broadcast, or a scalar)
  ///@{
  TG_CMP(eq, ==) TG_CMP(ne, !=) TG_CMP(lt, <) TG_CMP(le, <=) TG_CMP(gt, >) TG_CMP(ge, >=)
  ///@}
#undef TG_CMP
  /// x & o (ints and bools)
  T bitwise_and(const T& o) const TINYGRAD_MEMBER_DEF({ return self() & o; })
  /// x | o (ints and bools)
  T bitwise_or(const T& o) const TINYGRAD_MEMBER_DEF({ return self() | o; })
  /// x ^ o (ints and bools)
  T bitwise_xor(const T& o) const TINYGRAD_MEMBER_DEF({ return self() ^ o; })
  /// x & scalar
  T bitwise_and(int64_t o) const TINYGRAD_MEMBER_DEF({ return self() & int_scalar(o); })
  /// x | scalar
  T bitwise_or(int64_t o) const TINYGRAD_MEMBER_DEF({ return self() | int_scalar(o); })
  /// x ^ scalar
  T bitwise_xor(int64_t o) const TINYGRAD_MEMBER_DEF({ return self() ^ int_scalar(o); })
  /// x << o
  T lshift(const T& o) const TINYGRAD_MEMBER_DEF({ return shift_op(Ops::SHL, o, "lshift"); })
  /// x >> o (arithmetic for signed)
  T rshift(const T& o) const TINYGRAD_MEMBER_DEF({ return shift_op(Ops::SHR, o, "rshift"); })
  /// x << bits
  T lshift(int64_t o) const TINYGRAD_MEMBER_DEF({ return lshift(int_scalar(o)); })
  /// x >> bits
  T rshift(int64_t o) const TINYGRAD_MEMBER_DEF({ return rshift(int_scalar(o)); })
  /// |x| with the sign of o (o == -0.0 counts as positive)
  T copysign(const T& o) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self().fl(), o, "copysign");
    return (b < 0.0).where(-a.abs(), a.abs());
  })
  /// torch.copysign with a scalar
  T copysign(double o) const TINYGRAD_MEMBER_DEF({ return copysign(self().like(o, true)); })
  /// log(e^x + e^o), stable
  T logaddexp(const T& o) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self().fl(), o, "logaddexp");
    auto m = a.maximum(b);
    return m + ((a - m).exp() + (b - m).exp()).log();
  })
  /// log(e^x + e^o) with a scalar
  T logaddexp(double o) const TINYGRAD_MEMBER_DEF({ return logaddexp(self().like(o, true)); })
  /// |x - o| <= atol + rtol * |o|, or equal (infs); NaNs are close only with equal_nan
  T isclose(const T& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self(), o, "isclose");
    auto r = (a == b) | (a.isfinite() & b.isfinite() & ((a - b).abs() <= (b.abs() * rtol + atol)));
    return equal_nan ? r | (a.isnan() & b.isnan()) : r;
  })
  /// x + weight * (end - x)
  T lerp(const T& end, const T& weight) const TINYGRAD_MEMBER_DEF({ return self() + (end - self()) * weight; })
  /// x + weight * (end - x), scalar weight
  T lerp(const T& end, double weight) const TINYGRAD_MEMBER_DEF({ return self() + (end - self()) * weight; })
  /// clip to [lo, hi]; either bound may be absent
  T clip(std::optional<double> lo, std::optional<double> hi = std::nullopt) const TINYGRAD_MEMBER_DEF({
    if (!lo && !hi) throw Error("tinygrad::clip: needs at least one of min and max");
    T x = self();
    if (lo) x = x.maximum(*lo);
    return hi ? x.minimum(*hi) : x;
  })
  /// alias of clamp with tensor bounds
  T clip(const T& lo, const T& hi) const TINYGRAD_MEMBER_DEF({ return maximum(lo).minimum(hi); })
  /// torch.clamp with scalar bounds (either may be unset)
  T clamp(std::optional<double> lo, std::optional<double> hi = std::nullopt) const TINYGRAD_MEMBER_DEF({ return clip(lo, hi); })
  /// torch.clamp with tensor bounds
  T clamp(const T& lo, const T& hi) const TINYGRAD_MEMBER_DEF({ return clip(lo, hi); })
  /// value where mask is true, else x
  T masked_fill(const T& mask, const T& value) const TINYGRAD_MEMBER_DEF({ return mask.where(value, self()); })
  /// value where mask is true, else x (scalar value)
  T masked_fill(const T& mask, double value) const TINYGRAD_MEMBER_DEF({ return mask.where(self().like(value, true), self()); })

  // ---- activations (tinygrad's formulas) ----
  /// max(x, 0)
  T relu() const TINYGRAD_MEMBER_DEF({ return maximum(0.0); })
  /// min(max(x, 0), 6)
  T relu6() const TINYGRAD_MEMBER_DEF({ return relu().minimum(6.0); })
  /// x where positive, else neg_slope * x
  T leaky_relu(double neg_slope = 0.01) const TINYGRAD_MEMBER_DEF({ return (self() < 0.0).where(self() * neg_slope, self()); })
  /// torch.nn.functional.elu
  T elu(double alpha = 1.0) const TINYGRAD_MEMBER_DEF({ return relu() - alpha * (1.0 - self().exp()).relu(); })
  /// torch.nn.functional.celu
  T celu(double alpha = 1.0) const TINYGRAD_MEMBER_DEF({ return maximum(0.0) + (alpha * ((self() / alpha).exp() - 1.0)).minimum(0.0); })
  /// torch.nn.functional.selu
  T selu(double alpha = 1.67326, double gamma = 1.0507) const TINYGRAD_MEMBER_DEF({
    return gamma * (self() >= 0.0).detach().where(self(), alpha * (self().exp() - 1.0));
  })
  /// torch's F.gelu: the exact x * Phi(x) (Hugging Face's "gelu"), or with approximate = "tanh" the tanh approximation
  /// (tinygrad's default, Hugging Face's "gelu_new"). Phi(x) = erfc(-x / sqrt 2) / 2 from erfc_of below -0.75 sqrt 2, so it
  /// keeps its relative accuracy where 1 + erf cancels to 0
  T gelu(std::string_view approximate = "none") const TINYGRAD_MEMBER_DEF({
    if (approximate == "tanh") {
      auto& x = self();
      return 0.5 * x * (1.0 + (std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)).tanh());
    }
    if (approximate != "none")
      throw Error("tinygrad::gelu: approximate must be \"none\" or \"tanh\", got \"" + std::string(approximate) + "\"");
    auto x = self().fl();
    if (itemsize(x.dtype()) < 4) return x.cast(DType::Float32).gelu().cast(x.dtype());
    // one erfc, of |x| / sqrt 2: 1 + erf(x / sqrt 2) is erfc(-x / sqrt 2) below -0.75, 2 - erfc(x / sqrt 2) above 0.75
    auto xs = x * M_SQRT1_2, small = xs.abs() < kErfSmall, e = erfc_of(x.abs(), true);
    auto v = 0.5 * x * small.where(1.0 + erf_small(xs, small), (x < 0.0).where(e, 2.0 - e));
    // Phi + x phi, Phi as v / x: the derivative reads the value, not a second copy of its polynomials
    return with_grad_rule(v, x, (x == 0.0).where(0.5, v / x) + x * exp_neg_square(x.abs(), true) * (0.5 * M_2_SQRTPI * M_SQRT1_2));
  })
  /// x * sigmoid(1.702 x)
  T quick_gelu() const TINYGRAD_MEMBER_DEF({ return self() * (self() * 1.702).sigmoid(); })
  /// 1 / (1 + e^-x)
  T sigmoid() const TINYGRAD_MEMBER_DEF({ return (1.0 + (-self().fl()).exp()).reciprocal(); })
  /// x * sigmoid(x)
  T silu() const TINYGRAD_MEMBER_DEF({ return self() * sigmoid(); })
  /// alias of silu
  T swish() const TINYGRAD_MEMBER_DEF({ return silu(); })
  /// torch's hardsigmoid: clamp(alpha x + beta, 0, 1)
  T hardsigmoid(double alpha = 1.0 / 6, double beta = 0.5) const TINYGRAD_MEMBER_DEF({
    return (alpha * self() + beta).relu() - (alpha * self() + beta - 1.0).relu();
  })
  /// x * hardsigmoid(x)
  T hardswish() const TINYGRAD_MEMBER_DEF({ return self() * (self() + 3.0).relu6() * (1.0 / 6); })
  /// clamp(x, min_val, max_val)
  T hardtanh(double min_val = -1, double max_val = 1) const TINYGRAD_MEMBER_DEF({ return clip(min_val, max_val); })
  /// log(1 + e^(beta x)) / beta
  T softplus(double beta = 1.0) const TINYGRAD_MEMBER_DEF({ return (self() * beta).logaddexp(0.0) * (1.0 / beta); })
  /// log(sigmoid(x)), stable
  T logsigmoid() const TINYGRAD_MEMBER_DEF({ return -(-self()).softplus(); })
  /// x * tanh(softplus(x))
  T mish() const TINYGRAD_MEMBER_DEF({ return self() * softplus().tanh(); })
  /// x / (1 + |x|)
  T softsign() const TINYGRAD_MEMBER_DEF({ return self() / (1.0 + abs()); })

  // ---- dtype shorthands ----
  /// cast to float32
  T float_() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Float32); })
  /// cast to float16
  T half() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Float16); })
  /// cast to bfloat16
  T bfloat16() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::BFloat16); })
  /// cast to float64
  T double_() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Float64); })
  /// cast to int16
  T short_() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Int16); })
  /// cast to int32
  T int_() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Int32); })
  /// cast to int64
  T long_() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Int64); })
  /// cast to bool
  T bool_() const TINYGRAD_MEMBER_DEF({ return self().cast(DType::Bool); })
  /// whether the dtype is a float type
  bool is_floating_point() const TINYGRAD_MEMBER_DEF({ return is_float(self().dtype()); })
  /// bytes per element
  int64_t element_size() const TINYGRAD_MEMBER_DEF({ return itemsize(self().dtype()); })

  // ---- operators (C++ scalars are weak) ----
  friend T operator%(const T& a, const T& b) { return a.mod(b); }
  friend T operator%(const T& a, double b) { return a.mod(b); }
  friend T operator%(double a, const T& b) { return b.like(a, true).mod(b); }
  friend T operator<<(const T& a, const T& b) { return a.lshift(b); }
  friend T operator<<(const T& a, int64_t b) { return a.lshift(b); }
  friend T operator>>(const T& a, const T& b) { return a.rshift(b); }
  friend T operator>>(const T& a, int64_t b) { return a.rshift(b); }
  friend T operator~(const T& a) { return a.bitwise_not(); }
  friend T operator&(const T& a, int64_t b) { return a.bitwise_and(b); }
  friend T operator|(const T& a, int64_t b) { return a.bitwise_or(b); }
  friend T operator^(const T& a, int64_t b) { return a.bitwise_xor(b); }
  // compound assignment rebinds this handle (other handles keep the old value; use assign() to update all)
#define TG_COMPOUND(OP)                                                             \
  T& operator OP##=(const T& o) { return mut() = self() OP o; }                      \
  T& operator OP##=(double o) { return mut() = self() OP o; }
  /// x op= o: rebinds this handle to x op o (other handles keep the old value; assign() updates all)
  ///@{
  TG_COMPOUND(+) TG_COMPOUND(-) TG_COMPOUND(*) TG_COMPOUND(/) TG_COMPOUND(%)
  ///@}
#undef TG_COMPOUND
  /// x &= o (rebinds this handle, as the arithmetic ones)
  T& operator&=(const T& o) { return mut() = self() & o; }
  /// x |= o
  T& operator|=(const T& o) { return mut() = self() | o; }
  /// x ^= o
  T& operator^=(const T& o) { return mut() = self() ^ o; }
  /// x <<= bits
  T& operator<<=(int64_t o) TINYGRAD_MEMBER_DEF({ return mut() = self() << o; })
  /// x >>= bits (rebinds this handle)
  T& operator>>=(int64_t o) TINYGRAD_MEMBER_DEF({ return mut() = self() >> o; })

 private:
  const T& self() const TINYGRAD_MEMBER_DEF({ return static_cast<const T&>(*this); })
  T& mut() TINYGRAD_MEMBER_DEF({ return static_cast<T&>(*this); })
  // order-reversing map: -x for floats, ~x for ints, !x for bools (so min = inverse(max(inverse)))
  T order_inverse() const TINYGRAD_MEMBER_DEF({ return is_float(self().dtype()) ? neg() : bitwise_not(); })
  static constexpr double kErfSmall = 0.75;
  // v, whose derivative autograd takes as d (uop/ops.hpp GRAD_RULE) instead of differentiating v's ops
  static T with_grad_rule(const T& v, const T& x, const T& d) TINYGRAD_MEMBER_DEF({
    return T(make_uop(Ops::GRAD_RULE, v.dtype(), {v.uop(), x.uop(), d.uop()}, std::vector<int64_t>{int64_t(GradRule::Elementwise)}), x.device());
  })
  // exp(-(v s)^2) to a few ulp for v >= 0 or NaN (s: 1, or 1/sqrt 2 when halve): v = vh + vl with vh on a 1/32 grid,
  // so k = (vh s)^2 and k * L1 (L1: the leading bits of log2 e) are exact, and exp(-(v s)^2) = 2^(-k L1)
  // 2^(-k (log2 e - L1)) exp(-vl (v + vh) s^2). Above hi it is 0 in the dtype (denormals too)
  static T exp_neg_square(const T& v0, bool halve) TINYGRAD_MEMBER_DEF({
    double s2 = halve ? 0.5 : 1.0;  // NOTE: s2, not s * s: exactly 1/2
    bool f64 = v0.dtype() == DType::Float64;
    double hi = (f64 ? 27.5 : 10.5) * (halve ? M_SQRT2 : 1.0);
    auto v = (v0 > hi).where(hi, v0);
    auto vh = (v * 32.0).floor() * (1.0 / 32), k = vh * vh * s2;
    // log2 e = l1 + l2: l1 has 31 (float32: 6) significant bits, as vh^2 has at most 22 (18); l2 rounds the rest
    double l1 = f64 ? 0x1.7154765p+0 : 0x1.7p+0, l2 = f64 ? 6.331784189566044e-10 : 0.005195040888963407;
    return (k * -l1).exp2() * (k * -l2).exp2() * (-(v - vh) * (v + vh) * s2).exp();
  })
  // erfc(v s) for v s >= kErfSmall (s: 1, or 1/sqrt 2 when halve; v >= 0 or NaN) = exp(-(v s)^2) R(v s).
  // R: a polynomial in t = 1/(1 + a) - tm up to 3, in 1/a^2 (times 1/a) above (exp_neg_square keeps the first
  // factor's relative accuracy for large v).
  static T erfc_of(const T& v0, bool halve) TINYGRAD_MEMBER_DEF({
    double s = halve ? M_SQRT1_2 : 1.0;
    bool f64 = v0.dtype() == DType::Float64;
    double hi = (f64 ? 27.5 : 10.5) / s, lo = kErfSmall / s;  // exp(-hi^2 s^2) is 0 in the dtype (denormals too)
    auto v = (v0 > hi).where(hi, (v0 < lo).where(lo, v0));
    auto e = exp_neg_square(v, halve);
    auto a = v * s, mid = a < 3.0, am = mid.where(a, 3.0), at = mid.where(3.0, a);
    auto t = (1.0 + am).reciprocal() - 0.4107142857142857, u = (at * at).reciprocal();
    auto r_mid = f64 ? poly(t, {-7.589373949077808, -6.282487317923743, 9.850973834331814, -5.131663870724971,
                                0.41369007549479414, 2.0514692541664825, -2.2573031109923427, 1.1426970375659158,
                                0.13244187837386637, -0.799813155804834, 0.696558822702821, -0.1399014941272227,
                                -0.3692300929345804, 0.4531213140947339, -0.06529582769262622, -0.4452855161836398,
                                0.4037797759513913, 1.0314486590665133, 0.332589753060272})
                     : poly(t, {-0.09545782842924548, -0.7133676128942115, 0.7051317897614857, -0.14215939407928724,
                                -0.3693778561869202, 0.45314674875773187, -0.0652946761669666, -0.4452856320812809,
                                0.4037797726438183, 1.0314486592129297, 0.33258975306183824});
    auto r_tail = f64 ? poly(u, {-2271308731.441205, 2470805763.3838744, -1261162287.4119492, 404026787.5641267,
                                 -92068179.7373364, 16147485.345032567, -2328346.7759383433, 295501.8906209098,
                                 -35608.19140904187, 4399.861422162802, -594.1674684597248, 91.61296604698259,
                                 -16.660951135503257, 3.702492048514976, -1.0578554592752085, 0.42314218763606326,
                                 -0.28209479177385344, 0.5641895835477563})
                      : poly(u, {262.43938124619893, -177.02650585980948, 59.80819138269078, -14.996555090427924,
                                 3.6468435081336046, -1.05676032443706, 0.4231310837325726, -0.28209474762881925,
                                 0.564189583518494});
    return e * mid.where(r_mid, r_tail / at);
  })
  // erf(x) for |x| < kErfSmall (where small) as x P(x^2); elsewhere a finite value (every branch gets an input it is
  // finite at, so gradients are too)
  static T erf_small(const T& x, const T& small) TINYGRAD_MEMBER_DEF({
    auto xs = small.where(x, 0.0), z = xs * xs;
    return xs * (x.dtype() == DType::Float64
                     ? poly(z, {7.266960838296243e-11, -1.1956457482987052e-09, 1.4776335761229966e-08, -1.6363988794887314e-07,
                                1.646203864690677e-06, -1.4925648231557947e-05, 0.00012055332940821716, -0.0008548327022921267,
                                0.005223977625437788, -0.026866170645131034, 0.11283791670955125, -0.37612638903183754,
                                1.1283791670955126})
                     : poly(z, {9.458728049733621e-05, -0.0008354935799757303, 0.005216662485135245, -0.026864734411813564,
                                0.11283778144000502, -0.3761263842223159, 1.1283791670673726}));
  })
  // Horner: c[0] * x^(n-1) + ... + c[n-1]
  static T poly(const T& x, std::initializer_list<double> c) TINYGRAD_MEMBER_DEF({
    T r = x.like(*c.begin());
    for (auto it = c.begin() + 1; it != c.end(); ++it) r = r * x + *it;
    return r;
  })
  // an int scalar for bit ops: keeps int and bool dtypes (bool only for 0/1)
  T int_scalar(int64_t v) const TINYGRAD_MEMBER_DEF({
    DType d = self().dtype();
    return T::scalar(double(v), is_float(d) ? d : d == DType::Bool && v != 0 && v != 1 ? dtypes::default_int : d, self().device());
  })
  T shift_op(Ops op, const T& o, const char* name) const TINYGRAD_MEMBER_DEF({
    auto [a, b] = T::broadcast_pair(self(), o, name);
    if (!is_int(a.dtype())) throw DTypeError(std::string("tinygrad::") + name + ": needs integer tensors, got " + to_string(a.dtype()));
    return T(alu(op, {a.uop(), b.uop()}), a.device());
  })
};

}  // namespace detail
}  // namespace tinygrad
