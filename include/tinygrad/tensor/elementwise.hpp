#pragma once
// Tensor methods: unary and binary math, activations, dtype shorthands.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
#include "mixin.hpp"

namespace tinygrad::detail {

template <class T>
struct ElementwiseOps {
 public:
  T relu6() const { return self().relu().minimum(6.0); }

 private:
  const T& self() const { return static_cast<const T&>(*this); }
};

}  // namespace tinygrad::detail
