// PASS
// static: argmax along axis 2 of a rank-2 tensor (the compiling twin of static_argmax_axis_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  auto i = a.argmax<-2>();
}
