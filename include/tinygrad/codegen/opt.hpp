#pragma once
// kernel opts, in include order: ranges.hpp (OptOp, Opt, range facts) -> gemm.hpp (the TC and TILE recipes) ->
// kernel.hpp (the opt table and the Kernel) -> heuristics.hpp (the opts a kernel gets without BEAM)
#include "heuristics.hpp"

namespace tinygrad {
// the kernel-opt search space is API (README: kernels as a search space); the rest of codegen is internal
using detail::Kernel;
using detail::KernelOptError;
using detail::Opt;
using detail::OptOp;
}  // namespace tinygrad
