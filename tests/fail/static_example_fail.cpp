// FAIL-REGEX: error: [a-z ]*'(struct )?tinygrad::error::inner_dims_differ<tinygrad::op::matmul, tinygrad::error::shape<tinygrad::dyn, 1, 28, 28>, tinygrad::error::shape<784, 128>
// static: examples/static_error.cpp with its mistake switched on (an image fed to a dense layer unflattened)
// NOTE: FAIL-REGEX, not FAIL-FIRST-REGEX: the example's file name, on an "included from" line, contains "error"
#define TG_STATIC_ERROR
#include "../../examples/static_error.cpp"
