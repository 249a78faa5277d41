#pragma once
// kernel opts, in include order: ranges.hpp (OptOp, Opt, range facts) -> gemm.hpp (the TC and TILE recipes) ->
// kernel.hpp (the opt table and the Kernel) -> heuristics.hpp (the opts a kernel gets without BEAM)
#include "heuristics.hpp"
