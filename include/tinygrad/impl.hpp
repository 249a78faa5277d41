#pragma once
// The implementation TU of a TINYGRAD_SEPARATE_COMPILATION build: include this in exactly one .cpp of the program
// (the CMake target tinygrad::compiled does it), before any other tinygrad header; every other TU includes
// <tinygrad.hpp> as usual and compiles only declarations of the library's entry points. (With the single header:
// `#define TINYGRAD_IMPLEMENTATION` before `#include "tinygrad.hpp"` in that one TU.)
#if !defined(TINYGRAD_SEPARATE_COMPILATION)
#error "tinygrad/impl.hpp: define TINYGRAD_SEPARATE_COMPILATION for every translation unit of the program \
(header-only builds need no implementation file)"
#endif
#if defined(TINYGRAD_DEFINE_API) && !TINYGRAD_DEFINE_API
#error "tinygrad/impl.hpp must be included before any other tinygrad header in its translation unit"
#endif
#define TINYGRAD_IMPLEMENTATION
#include "../tinygrad.hpp"
