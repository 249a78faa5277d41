// FAIL-REGEX: sanity_check_failed
// Harness sanity check: this file must NOT compile, and the diagnostic must carry the
// message below. Its twin sanity_pass.cpp differs only in the instantiated type and must
// compile, so together they prove the harness tells the two outcomes apart.
#include <tinygrad.hpp>

template <class T>
constexpr bool sanity_ok = sizeof(T) != 1;

template <class T>
void sanity() {
  static_assert(sanity_ok<T>, "sanity_check_failed");
}

int main() { sanity<char>(); }
