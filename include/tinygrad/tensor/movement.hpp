#pragma once
// Tensor methods: movement and indexing.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
#include "mixin.hpp"

namespace tinygrad::detail {

template <class T>
struct MovementOps {
 private:
  const T& self() const { return static_cast<const T&>(*this); }
};

}  // namespace tinygrad::detail
