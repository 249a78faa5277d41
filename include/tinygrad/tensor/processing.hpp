#pragma once
// Tensor methods: convolutions, pooling, normalization, attention, einsum.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
#include "mixin.hpp"

namespace tinygrad::detail {

template <class T>
struct ProcessingOps {
 private:
  const T& self() const { return static_cast<const T&>(*this); }
};

}  // namespace tinygrad::detail
