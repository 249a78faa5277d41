// PASS
// static: cross_entropy of (8,10) logits with an (8,10,1) target: neither probabilities (8,10) nor labels (8)
// (the compiling twin of static_xent_target_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logits;
  static_tensor<float, 8, 10> target;
  auto l = cross_entropy(logits, target);
}
