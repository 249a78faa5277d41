#pragma once
// Tensor methods: creation helpers and random tensors.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
#include "mixin.hpp"

namespace tinygrad::detail {

template <class T>
struct CreationOps {
 private:
  const T& self() const { return static_cast<const T&>(*this); }
};

}  // namespace tinygrad::detail
