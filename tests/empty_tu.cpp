// An empty translation unit that includes the library header-only: it must emit nothing but main (no static
// registration, no vtable that pulls the library in). The test empty_tu_emits_nothing checks its object with nm.
#include <tinygrad.hpp>
int main() {}
