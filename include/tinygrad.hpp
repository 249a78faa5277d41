#pragma once
// tinygrad.hpp: the one include. A header-only tensor compiler in the spirit of tinygrad.
#include "tinygrad/helpers.hpp"
#include "tinygrad/dtype.hpp"
#include "tinygrad/runtime/device.hpp"  // and, where the library is compiled, the built-in devices (devices.hpp)
#include "tinygrad/uop/ops.hpp"
#include "tinygrad/engine/api.hpp"
#if TINYGRAD_WITH_INTERNALS  // header-only, the implementation TU, or TINYGRAD_INTERNALS: the whole pipeline
#include "tinygrad/uop/upat.hpp"
#include "tinygrad/uop/symbolic.hpp"
#include "tinygrad/renderer/cstyle.hpp"
#include "tinygrad/codegen/opt.hpp"
#include "tinygrad/codegen/linearize.hpp"
#include "tinygrad/codegen/codegen.hpp"
#include "tinygrad/engine/schedule.hpp"
#include "tinygrad/engine/search.hpp"
#include "tinygrad/engine/realize.hpp"
#include "tinygrad/engine/jit.hpp"
#endif
#include "tinygrad/tensor/tensor.hpp"
#include "tinygrad/tensor/gradient.hpp"
#include "tinygrad/tensor/jit.hpp"
#include "tinygrad/nn/nn.hpp"
#include "tinygrad/nn/optim.hpp"
#include "tinygrad/nn/datasets.hpp"
#include "tinygrad/nn/static.hpp"

namespace tinygrad {
inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;
}  // namespace tinygrad
