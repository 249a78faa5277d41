// The library compiled once for the test executables: they build with TINYGRAD_SEPARATE_COMPILATION (each test TU
// compiles only what it calls itself) and TINYGRAD_INTERNALS (the tests look inside the engine and code generation).
#define TINYGRAD_IMPLEMENTATION
#include <tinygrad.hpp>
