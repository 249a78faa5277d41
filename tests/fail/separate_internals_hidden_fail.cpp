// FAIL-REGEX: incomplete type
// A TU of a separate-compilation program (the runner defines TINYGRAD_SEPARATE_COMPILATION) that is not the library's
// parses declarations only: the IR is declared, not defined, so nothing of the engine is compiled here.
#include <tinygrad.hpp>
int main() { return int(sizeof(tinygrad::UOp)); }
