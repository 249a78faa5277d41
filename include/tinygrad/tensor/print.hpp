#pragma once
// Printing a tensor the way PyTorch does: `std::cout << t` prints `tensor([[1., 2.],\n        [3., 4.]])`.
// torch/_tensor_str.py with its default print options: precision 4, more than 1000 elements summarised to the first
// and last 3 of each dim, lines of at most 80 columns, dtype= for all but float32, int64 and bool.
#include <ostream>
#include "tensor.hpp"

namespace tinygrad {

namespace detail {
// the elements of a tensor as torch prints them: one width for all, chosen from the elements shown
class TensorFormat {
 public:
  explicit TensorFormat(const Tensor& t) TINYGRAD_MEMBER_DEF(: shape_(t.shape()), dt_(t.dtype()) {
    int64_t n = prod(shape_);
    summarize_ = n > 1000;
    if (is_int(dt_)) ints_ = t.to_vector<int64_t>();
    else vals_ = t.to_vector<double>();
    strides_ = strides_for(shape_);
    std::vector<int64_t> shown;
    walk(0, 0, [&](int64_t i) { shown.push_back(i); });
    if (!is_float(dt_)) {
      for (auto i : shown) width_ = std::max(width_, elem(i).size());
      return;
    }
    double mn = INFINITY, mx = 0;
    bool ints = true, any = false;
    for (auto i : shown) {
      double v = vals_[size_t(i)];
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      mn = std::min(mn, std::abs(v)), mx = std::max(mx, std::abs(v));
      ints &= v == std::ceil(v);
    }
    if (!any) return;
    int_mode_ = ints;
    sci_ = mx / mn > 1000.0 || mx > 1.0e8 || (!ints && mn < 1.0e-4);
    for (auto i : shown) {
      double v = vals_[size_t(i)];
      if (std::isfinite(v) && v != 0) width_ = std::max(width_, elem(i).size());
    }
  })
  // the tensor's values between "tensor(" and the suffixes
  std::string body() const TINYGRAD_MEMBER_DEF({
    if (prod(shape_) == 0) return "[]";
    return shape_.empty() ? pad(elem(0)) : rec(0, 0, 7);
  })

 private:
  static constexpr int64_t kEdge = 3;
  Shape shape_, strides_;
  DType dt_;
  std::vector<double> vals_;
  std::vector<int64_t> ints_;
  bool summarize_ = false, sci_ = false, int_mode_ = true;
  size_t width_ = 1;

  // the indices shown along dim d: all, or the first and last kEdge with -1 for the "..." between
  std::vector<int64_t> rows(size_t d) const TINYGRAD_MEMBER_DEF({
    int64_t n = shape_[d];
    std::vector<int64_t> r;
    for (int64_t i = 0; i < n; i++) {
      if (summarize_ && n > 2 * kEdge && i == kEdge) { r.push_back(-1); i = n - kEdge; }
      r.push_back(i);
    }
    return r;
  })
  template <class F>
  void walk(size_t d, int64_t off, F&& f) const {
    if (d == shape_.size()) return f(off);
    for (auto i : rows(d))
      if (i >= 0) walk(d + 1, off + i * strides_[d], f);
  }
  std::string elem(int64_t i) const TINYGRAD_MEMBER_DEF({
    if (dt_ == DType::Bool) return vals_[size_t(i)] != 0 ? "True" : "False";
    if (is_int(dt_)) return std::to_string(ints_[size_t(i)]);
    double v = vals_[size_t(i)];
    if (std::isnan(v)) return "nan";  // NOTE: printf writes "-nan" for a NaN with its sign bit set, Python never does
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, sci_ ? "%.4e" : int_mode_ ? "%.0f." : "%.4f", v);
    return buf;
  })
  std::string pad(std::string s) const TINYGRAD_MEMBER_DEF({ return std::string(width_ - std::min(width_, s.size()), ' ') + s; })
  // torch's _tensor_str_with_formatter: dim d of the element at off, its text starting at column indent
  std::string rec(size_t d, int64_t off, size_t indent) const TINYGRAD_MEMBER_DEF({
    std::vector<std::string> parts;
    if (d + 1 == shape_.size()) {
      for (auto i : rows(d)) parts.push_back(i < 0 ? " ..." : pad(elem(off + i * strides_[d])));
      size_t per_line = std::max<size_t>(1, (80 - std::min<size_t>(80, indent)) / (width_ + 2));
      std::string r = "[";
      for (size_t i = 0; i < parts.size(); i++) r += (i == 0 ? "" : i % per_line ? ", " : ",\n" + std::string(indent + 1, ' ')) + parts[i];
      return r + "]";
    }
    for (auto i : rows(d)) parts.push_back(i < 0 ? "..." : rec(d + 1, off + i * strides_[d], indent + 1));
    std::string sep = "," + std::string(shape_.size() - d - 1, '\n') + std::string(indent + 1, ' '), r = "[";
    for (size_t i = 0; i < parts.size(); i++) r += (i ? sep : "") + parts[i];
    return r + "]";
  })
};
}  // namespace detail

// what `std::cout << t` prints (realizes t): torch's repr, `tensor([1., 2.])`, `tensor([1, 2], dtype=torch.int32)`
TINYGRAD_API std::string to_string(const Tensor& t) TINYGRAD_DEF({
  if (t.is_symbolic()) throw ShapeError("tinygrad::to_string: cannot print a tensor of symbolic shape " + t.sym_str());
  std::string s = "tensor(" + detail::TensorFormat(t).body();
  std::vector<std::string> suffixes;
  // NOTE: the default device, not the CPU: torch names a device other than its default one (set_default_device)
  if (t.device() != default_device()) suffixes.push_back("device='" + t.device() + "'");
  if (t.numel() == 0 && t.ndim() != 1) {
    std::string sz = "(";
    for (size_t i = 0; i < t.ndim(); i++) sz += (i ? ", " : "") + std::to_string(t.shape()[i]);
    suffixes.push_back("size=" + sz + ")");
  }
  DType dt = t.dtype();
  if (dt != DType::Float32 && (t.numel() == 0 || (dt != DType::Int64 && dt != DType::Bool)))
    suffixes.push_back("dtype=torch." + to_string(dt).substr(7));
  if (t.requires_grad()) suffixes.push_back("requires_grad=True");
  // torch's _add_suffixes: a suffix that would pass column 80 starts a line of its own
  size_t nl = s.rfind('\n'), last = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;  // (sic) torch's count
  for (auto& x : suffixes) {
    if (last + x.size() + 2 > 80) { s += ",\n       " + x; last = 7 + x.size(); }
    else { s += ", " + x; last += x.size() + 2; }
  }
  return s + ")";
})
TINYGRAD_API std::ostream& operator<<(std::ostream& os, const Tensor& t) TINYGRAD_DEF({ return os << to_string(t); })

}  // namespace tinygrad
