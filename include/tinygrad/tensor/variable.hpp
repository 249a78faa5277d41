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
#include <algorithm>
#include <cctype>
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
#endif

}  // namespace tinygrad
