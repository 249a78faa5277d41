// Consumer of tinygrad (find_package); built and run by tests/consume/run.cmake.
// It only needs <tinygrad.hpp> (precompiled: target_precompile_headers) to compile and its version to match the
// CMake project's.
#include <tinygrad.hpp>

int main() { return tinygrad::version_major == TG_EXPECTED_VERSION_MAJOR ? 0 : 1; }
