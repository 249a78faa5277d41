// PASS
// static: pad needs (before, after) for every dim (the compiling twin of static_pad_count_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto b = a.pad<0, 0, 1, 1>();
}
