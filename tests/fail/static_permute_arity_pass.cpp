// PASS
// static: a rank-3 tensor needs 3 axes in its permutation (the compiling twin of static_permute_arity_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3, 4> a;
  auto b = a.permute<1, 0, 2>();
}
