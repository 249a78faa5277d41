// PASS
// static: only extents of 1 can be expanded (the compiling twin of static_expand_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 1, 3> a;
  auto b = a.expand<4, 3>();
}
