#pragma once
// What the Tensor mixins (elementwise, reduce, creation, movement, processing) share.
// Each mixin is `template <class T> struct XxxOps` with T = Tensor; Tensor derives from all of
// them, so their methods read like Tensor's own. A method name lives in exactly one class
// (overloads in different bases would be ambiguous).
#include <optional>
#include <variant>
#include "../engine/api.hpp"
#if TINYGRAD_WITH_INTERNALS
#include "../engine/jit.hpp"  // the engine itself (realize.hpp and TinyJit's half), where the library is compiled
#endif

namespace tinygrad {

// one entry of t.slice({...}) / t[{...}]
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
struct NewAxis {};
struct Ellipsis {};
using Index = std::variant<int64_t, Slice, NewAxis, Ellipsis>;

// training mode (tinygrad's TRAINING): dropout drops, BatchNorm uses and updates batch statistics.
// Per thread, like the graph being built on it.
TINYGRAD_API bool& training() TINYGRAD_DEF({ static thread_local bool on = false; return on; })
// RAII: training mode on (or off) for a scope
struct TrainingScope {
  bool prev;
  explicit TrainingScope(bool on = true) : prev(training()) { training() = on; }
  ~TrainingScope() { training() = prev; }
  TrainingScope(const TrainingScope&) = delete;
  TrainingScope& operator=(const TrainingScope&) = delete;
};

// torch.is_grad_enabled(): while off, every op's result is detached (no gradient flows back through it). Per thread.
TINYGRAD_API bool& grad_enabled() TINYGRAD_DEF({ static thread_local bool on = true; return on; })
// RAII, torch.no_grad() (libtorch's NoGradGuard): `{ NoGrad g; y = model(x); }` builds no backward graph; tensors
// keep requires_grad, and assign() into them works as before
struct NoGrad {
  bool prev;
  NoGrad() : prev(grad_enabled()) { grad_enabled() = false; }
  ~NoGrad() { grad_enabled() = prev; }
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;
};

}  // namespace tinygrad
