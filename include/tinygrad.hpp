#pragma once
// tinygrad.hpp: the one include. A header-only tensor compiler in the spirit of tinygrad.
//
// Namespaces. tinygrad:: is the API: Tensor and its free functions, TinyJit, nn, dtypes, the Error family, devices
// (and registering your own: DeviceSpec, Allocator, Compiler, Program, Renderer), flags(), run statistics, the IR's
// nodes (UOp, Ops, make_uop) and the kernel-opt search space (Kernel, Opt, OptOp, BeamScope); static_tensor and
// static_nn for compile-time shapes; models:: and text:: in their opt-in headers. tinygrad::detail is the pipeline
// (scheduler, codegen, renderers, device runtimes) and its helpers: internal, changed without notice.
// tests/public_names.txt lists every name in tinygrad::, and a test (tools/public_names.py) fails when one leaks.
#include "tinygrad/helpers.hpp"
#include "tinygrad/dtype.hpp"
#include "tinygrad/runtime/device.hpp"  // and, where the library is compiled, the built-in devices (devices.hpp)
#include "tinygrad/uop/ops.hpp"
#include "tinygrad/engine/api.hpp"
#include "tinygrad/json.hpp"  // NOTE: before the internals (engine/profile.hpp includes it too): single_include inlines it once
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
#include "tinygrad/tensor/print.hpp"
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
