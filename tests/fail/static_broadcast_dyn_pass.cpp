// PASS
// static: the static extents are checked even next to a dyn one (the compiling twin of static_broadcast_dyn_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto a = static_tensor<float, 2, dyn>::zeros(5);
  auto b = static_tensor<float, 2, dyn>::zeros(5);
  auto c = a * b;
}
