// Consumer of tinygrad (single_header); built and run by tests/consume/run.cmake.
// It only needs single_include/ to compile and its version to match the CMake project's.
#include <tinygrad.hpp>
#include <tinygrad/models/bert.hpp>      // the opt-in parts sit beside it in single_include/ at their include/ paths
#include <tinygrad/text/tokenizer.hpp>

int main() { return tinygrad::version_major == TG_EXPECTED_VERSION_MAJOR ? 0 : 1; }
