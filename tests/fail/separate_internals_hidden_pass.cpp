// PASS
// A TU of a separate-compilation program (the runner defines TINYGRAD_SEPARATE_COMPILATION) that is not the library's
// parses declarations only: the Tensor API is there in full.
#include <tinygrad.hpp>
int main() { return int(sizeof(tinygrad::Tensor)); }
