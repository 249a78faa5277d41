#pragma once
// Variables (tinygrad's Variable): an integer a kernel takes as an argument, so one compiled kernel, one schedule and
// one captured TinyJit step serve every value in its range.
//
//   Variable pos("pos", 0, 2047);
//   Tensor seen = Tensor::arange(2048) <= Tensor(pos.bind(37));   // the same kernel for every pos
//
// A BoundVariable is a variable with a value. As a tensor it is an int32 scalar; realize passes the value to the
// kernels, which see the variable with its range (the symbolic simplifier folds with [min, max]). Passed to a TinyJit'd
// function as an argument, each call's value reaches the replay. Names are C identifiers; a name with another range is
// another variable.
//
// An SInt is a size that may be symbolic: an int, or an expression of variables (pos + 1). Tensors take SInts where a
// dim's extent may vary (x.shrink({{0, pos + 1}, {0, 64}}), x.reshape(...)): the dim is symbolic, its bound (the
// expression's max) sizes the buffers, and the kernels loop over the bound value only.
#include <algorithm>
#include <cctype>
#include <concepts>
#include <cstdint>
#include <string>
#include "../uop/ops.hpp"

namespace tinygrad {

struct UOp;
class BoundVariable;

class Variable {
 public:
  Variable(std::string name, int64_t min, int64_t max);
  // the variable with a value in [min, max]
  BoundVariable bind(int64_t value) const;  // NOTE: defined below BoundVariable
  const std::string& name() const { return name_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  const std::shared_ptr<const UOp>& uop() const { return uop_; }  // its DEFINE_VAR
  bool operator==(const Variable& o) const { return uop_ == o.uop_; }
  std::string str() const { return name_ + "[" + std::to_string(min_) + ".." + std::to_string(max_) + "]"; }
  std::string range() const { return "[" + std::to_string(min_) + ", " + std::to_string(max_) + "]"; }

 private:
  std::string name_;
  int64_t min_, max_;
  std::shared_ptr<const UOp> uop_;
};

class BoundVariable {
 public:
  const Variable& var() const { return var_; }
  int64_t value() const { return value_; }
  // BIND(variable, value) on a device: the int32 scalar a Tensor made from it holds
  std::shared_ptr<const UOp> uop(const std::string& device) const;

 private:
  friend class Variable;
  BoundVariable(Variable v, int64_t x) : var_(std::move(v)), value_(x) {}
  Variable var_;
  int64_t value_;
};

// a size: an int, or an int32 expression of (bound) variables
class SInt {
 public:
  template <std::integral I>
  SInt(I v) : v_(int64_t(v)) {}  // NOLINT: implicit, an int is a size
  SInt(const BoundVariable& b);  // NOLINT: implicit
  SInt(const Variable& v);       // NOLINT: implicit (unbound: realizing needs a value)
  bool is_int() const { return !u_; }
  int64_t min() const;
  int64_t max() const;
  int64_t value() const;  // the int, or the value of the bound variables (VariableError when one is unbound)
  std::string str() const;
  const std::shared_ptr<const UOp>& uop() const { return u_; }  // null for an int
  friend SInt operator+(const SInt& a, const SInt& b);
  friend SInt operator-(const SInt& a, const SInt& b);
  friend SInt operator*(const SInt& a, const SInt& b);
  friend bool operator==(const SInt& a, const SInt& b) { return a.u_ == b.u_ && (a.u_ || a.v_ == b.v_); }
  friend class Tensor;  // a tensor's symbolic dims as SInts (sym_shape)

 private:
  explicit SInt(std::shared_ptr<const UOp> u);
  static SInt arith(int op, const SInt& a, const SInt& b);
  int64_t v_ = 0;
  std::shared_ptr<const UOp> u_;
};

inline BoundVariable Variable::bind(int64_t value) const {
  if (value < min_ || value > max_)
    throw VariableError("tinygrad::Variable::bind: " + name_ + " = " + std::to_string(value) + " is outside " + range());
  return BoundVariable(*this, value);
}

// NOTE: out of the class, where the library is compiled (a member defined in the class and never called there is not
// emitted by clang in the implementation TU of a separate-compilation program)
#if TINYGRAD_DEFINE_API
TINYGRAD_API Variable::Variable(std::string name, int64_t min, int64_t max) : name_(std::move(name)), min_(min), max_(max) {
  auto ident = [](const std::string& s) {
    if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  if (!ident(name_)) throw VariableError("tinygrad::Variable: the name '" + name_ + "' is no C identifier of at most 64 characters");
  if (min > max || min < INT32_MIN || max > INT32_MAX)
    throw VariableError(detail::cat("tinygrad::Variable ", name_, ": the range [", min, ", ", max, "] is empty or leaves int32"));
  uop_ = detail::define_var(name_, min, max);
}
TINYGRAD_API std::shared_ptr<const UOp> BoundVariable::uop(const std::string& device) const {
  return detail::bind_var(var_.uop(), value_, device);
}
namespace detail {
// the value of an int expression whose variables are bound; VariableError naming a variable that is not
inline int64_t sym_value(const UOpRef& e) {
  VarVals vv;
  for (auto& x : toposort(e)) if (x->op == Ops::BIND) vv.push_back({x->src[0].get(), x->src[1]->iarg()});
  return eval_int(e, vv);
}
// e with its variables unbound (BIND -> DEFINE_VAR): the expression for every value
inline UOpRef sym_unbound(const UOpRef& e) {
  std::unordered_map<const UOp*, UOpRef> sub;
  for (auto& x : toposort(e)) if (x->op == Ops::BIND) sub[x.get()] = x->src[0];
  return sub.empty() ? e : substitute(e, sub);
}
// an unbound e (sym_unbound) with its variables bound on device dev to their values in vv
inline UOpRef sym_bound(const UOpRef& e, const VarVals& vv, const std::string& dev) {
  std::unordered_map<const UOp*, UOpRef> sub;
  for (auto& x : toposort(e))
    for (auto& [var, val] : vv) if (x.get() == var) sub[var] = bind_var(x, val, dev);
  return sub.empty() ? e : substitute(e, sub);
}
// an SInt as an int32 node of the tensor graph on device dev (its variables bound there): a CONST for an int
inline UOpRef sym_node(const SInt& v, const std::string& dev) {
  if (v.is_int()) return v.max() < INT32_MIN ? const_int(DType::Int64, v.max()) : size_const(v.max());
  std::unordered_map<const UOp*, UOpRef> sub;
  for (auto& x : toposort(v.uop()))
    if (x->op == Ops::BIND && x->src[2]->arg != Arg(dev)) sub[x.get()] = bind_var(x->src[0], x->src[1]->iarg(), dev);
  return sub.empty() ? v.uop() : substitute(v.uop(), sub);
}
}  // namespace detail
TINYGRAD_API SInt::SInt(std::shared_ptr<const UOp> u) {
  u = detail::simplify(u);
  if (u->op == Ops::CONST) v_ = u->iarg(); else u_ = std::move(u);
}
TINYGRAD_API SInt::SInt(const BoundVariable& b) : SInt(b.uop(default_device())) {}
TINYGRAD_API SInt::SInt(const Variable& v) : SInt(v.uop()) {}
TINYGRAD_API int64_t SInt::min() const { return u_ ? u_->vmin : v_; }
TINYGRAD_API int64_t SInt::max() const { return u_ ? u_->vmax : v_; }
TINYGRAD_API int64_t SInt::value() const { return u_ ? detail::sym_value(u_) : v_; }
TINYGRAD_API std::string SInt::str() const { return u_ ? detail::sym_str(u_) : std::to_string(v_); }
TINYGRAD_API SInt SInt::arith(int op, const SInt& a, const SInt& b) {
  if (a.is_int() && b.is_int()) {
    int64_t r = 0;
    bool over = op == 0   ? __builtin_add_overflow(a.v_, b.v_, &r)
                : op == 1 ? __builtin_sub_overflow(a.v_, b.v_, &r)
                          : __builtin_mul_overflow(a.v_, b.v_, &r);
    if (over) throw ShapeError(detail::cat("tinygrad::SInt: ", a.v_, op == 0 ? " + " : op == 1 ? " - " : " * ", b.v_, " overflows int64"));
    return r;
  }
  if (b.is_int() && b.v_ == (op == 2 ? 1 : 0)) return a;  // x + 0, x - 0, x * 1: no expression to build and fold
  if (op != 1 && a.is_int() && a.v_ == (op == 2 ? 1 : 0)) return b;
  auto node = [](const SInt& x) { return x.u_ ? x.u_ : detail::const_int(DType::Int32, x.v_); };
  auto wide = [](const SInt& x) { return x.is_int() && (x.v_ > INT32_MAX || x.v_ < INT32_MIN); };
  if (wide(a) || wide(b))
    throw ShapeError("tinygrad::SInt: a symbolic size with an int beyond int32");
  UOpRef x = node(a), y = node(b);
  UOpRef r = op == 0 ? x + y : op == 1 ? x - y : x * y;
  if (r->vmin < INT32_MIN || r->vmax > INT32_MAX)
    throw ShapeError(detail::cat("tinygrad::SInt: ", detail::sym_str(r), " may leave int32 (range [", r->vmin, ", ", r->vmax, "])"));
  return SInt(r);
}
TINYGRAD_API SInt operator+(const SInt& a, const SInt& b) { return SInt::arith(0, a, b); }
TINYGRAD_API SInt operator-(const SInt& a, const SInt& b) { return SInt::arith(1, a, b); }
TINYGRAD_API SInt operator*(const SInt& a, const SInt& b) { return SInt::arith(2, a, b); }
#endif

}  // namespace tinygrad
