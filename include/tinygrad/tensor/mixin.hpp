#pragma once
// What the Tensor mixins (elementwise, reduce, creation, movement, processing) share.
// Each mixin is `template <class T> struct XxxOps` with T = Tensor; Tensor derives from all of
// them, so their methods read like Tensor's own. A method name lives in exactly one class
// (overloads in different bases would be ambiguous).
#include <optional>
#include <variant>
#include "../engine/realize.hpp"

namespace tinygrad {

// one entry of t.slice({...}) / t[{...}]
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
struct NewAxis {};
struct Ellipsis {};
using Index = std::variant<int64_t, Slice, NewAxis, Ellipsis>;

}  // namespace tinygrad
