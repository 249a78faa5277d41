// Catch2's runner; every tests/test_*.cpp links against this one translation unit.
//
// ctest runs each TEST_CASE as a process of its own (catch_discover_tests), and Catch's discovery gives each one
// environment entry at most (it splits a list of them into property names), so what every test process wants of its
// environment is set here, where the environment does not say otherwise.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <tinygrad/helpers.hpp>  // CompileError

namespace tinygrad {
void flush_compile_checks();  // engine/api.hpp (the tests are a separate-compilation program; this TU stays small)
}

#include <cstdio>
#include <cstdlib>

// the sanitizer builds (tools/ci-sanitize): stop at the first finding, with a stack
extern "C" const char* __asan_default_options() { return "detect_leaks=1:abort_on_error=1"; }
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }
// the OpenCL driver (PoCL, and the LLVM it loads) keeps allocations for the life of the process that LeakSanitizer
// reports at exit (a test of the OpenCL cache runs in the ASan build): theirs, not ours
extern "C" const char* __lsan_default_suppressions() { return "leak:libpocl.so\nleak:libLLVM\nleak:libOpenCL.so\n"; }

int main(int argc, char** argv) {
#ifdef TG_TEST_CACHEDIR
  setenv("CACHEDIR", TG_TEST_CACHEDIR, 0);  // the kernels the tests compile stay in the build tree
#endif
#ifdef TG_TEST_KERNEL_CC
  setenv("CC", TG_TEST_KERNEL_CC, 0);  // gcc: it starts in a third of clang's time (tests/CMakeLists.txt)
#endif
  setenv("SPEC", "1", 0);  // every stage's IR checked against its spec (uop/spec.hpp) after every pass
  // PoCL builds a kernel once for any work-group size and again for the one of its first launch; the first alone
  // runs every kernel, and the suite's cold run on OpenCL takes a fifth less
  setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);
  // an opt of a heuristic that its kernel refuses fails the test (to_program), where a user's program skips it
  tinygrad::flags().strict_opts = true;
  int rc = Catch::Session().run(argc, argv);
  try {
    tinygrad::flush_compile_checks();  // CUDA_COMPILE_CHECK=1 (unit_cuda_compile): the kernels still waiting
  } catch (const std::exception& e) {
    std::fprintf(stderr, "a kernel's CUDA_COMPILE_CHECK failed: %s\n", e.what());
    if (auto* ce = dynamic_cast<const tinygrad::CompileError*>(&e)) std::fprintf(stderr, "%s\n%s\n", ce->source.c_str(), ce->log.c_str());
    return 1;
  }
  return rc;
}
