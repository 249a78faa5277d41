#pragma once
// What the layers above (tensor/, nn/, static/) use of the engine: its entry points as declarations. They are defined
// in realize.hpp (inline when header-only; once, in the implementation TU, with TINYGRAD_SEPARATE_COMPILATION).
#include "../uop/ops.hpp"

namespace tinygrad {

struct RunStats { int64_t kernels_run = 0, kernels_compiled = 0, schedules_built = 0, schedule_cache_hits = 0; };
TINYGRAD_API RunStats& run_stats();

// realize a set of tensor-graph nodes: afterwards each root's value lives in root->realized
TINYGRAD_API void realize(const std::vector<UOpRef>& roots);

// forget every loaded program and cached schedule: the next realize reloads from the disk cache (or recompiles)
TINYGRAD_API void clear_program_cache();

// bound the caches: at most `programs` loaded programs per device, and cached schedules of `schedule_kernels` kernels
// in all (defaults: env PROGRAM_CACHE=512, SCHEDULE_CACHE=512); the least recently used are dropped, and a program is
// released once no cached schedule or static plan holds it
TINYGRAD_API void set_cache_limits(size_t programs, size_t schedule_kernels);

// CUDA_COMPILE_CHECK=1: compile the kernels still waiting for their check (they compile in batches; see
// detail::compile_checks). Call it before the program exits (the tests' main does); throws the CompileError of a kernel
// that fails
TINYGRAD_API void flush_compile_checks();

// write what PROFILE (a Chrome trace: chrome://tracing, Perfetto) and VIZ (an HTML page) collected so far to `path`
// (both are also written at exit to the flag's file; see flags().profile and .viz); Error where it cannot
TINYGRAD_API void write_profile(const std::string& path);
TINYGRAD_API void write_viz(const std::string& path);

// TinyJit's engine half (engine/jit.hpp; the Tensor half is tensor/jit.hpp)
namespace detail {
struct JitProgram;  // the launches of one captured call over a table of buffers
// from now until jit_capture_end (or _abort), every kernel launch and copy this thread runs is recorded
TINYGRAD_API void jit_capture_begin();
TINYGRAD_API void jit_capture_abort();
// realize roots with this thread's capture paused: their kernels run now and are not recorded (what a recorded call
// reads that was made before it enters the capture as a value, never as the graph that computes it)
TINYGRAD_API void realize_uncaptured(const std::vector<UOpRef>& roots);
// what was recorded, as a program of `inputs` (bound anew on each replay) to `outputs` (fresh buffers on each replay)
TINYGRAD_API std::shared_ptr<JitProgram> jit_capture_end(const std::vector<std::shared_ptr<Buffer>>& inputs,
                                                         const std::vector<std::shared_ptr<Buffer>>& outputs);
// run the program again over new input buffers (as many as captured, same sizes) with these values of its variables
// (by DEFINE_VAR; a variable not given keeps its captured value); returns the outputs
TINYGRAD_API std::vector<std::shared_ptr<Buffer>> jit_replay(JitProgram& p, const std::vector<std::shared_ptr<Buffer>>& inputs,
                                                             const std::vector<std::pair<const UOp*, int64_t>>& vars = {});
// why two captures of one function differ ("" where they run the same kernels over the same buffers)
TINYGRAD_API std::string jit_difference(const JitProgram& a, const JitProgram& b);
TINYGRAD_API size_t jit_kernel_count(const JitProgram& p);
}  // namespace detail

}  // namespace tinygrad
