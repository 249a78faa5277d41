// PASS
// Harness sanity check: the compiling twin of sanity_fail.cpp (also proves that
// <tinygrad.hpp> is found on the include path and compiles on its own).
#include <tinygrad.hpp>

template <class T>
constexpr bool sanity_ok = sizeof(T) != 1;

template <class T>
void sanity() {
  static_assert(sanity_ok<T>, "sanity_check_failed");
}

int main() { sanity<int>(); }
