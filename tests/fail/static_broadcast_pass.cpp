// PASS
// static: adding a (2,3) and a (4) tensor: trailing dims 3 and 4 do not broadcast (the compiling twin of static_broadcast_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  static_tensor<float, 3> b;
  auto c = a + b;
}
