// PASS
// static: only one extent of a reshape target can be inferred (the compiling twin of static_reshape_two_dyn_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto a = static_tensor<float, dyn, 6>::zeros(2);
  auto b = a.reshape<dyn, 2, 3>();
}
