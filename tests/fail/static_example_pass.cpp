// PASS
// static: examples/static_error.cpp as shipped (the compiling twin of static_example_fail.cpp)
#include "../../examples/static_error.cpp"
