// FAIL-FIRST-REGEX: target_rank_does_not_fit<tinygrad::op::cross_entropy, tinygrad::error::shape<8, 10>, tinygrad::error::shape<8, 10, 1>
// static: cross_entropy of (8,10) logits with an (8,10,1) target: neither probabilities (8,10) nor labels (8)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logits;
  static_tensor<float, 8, 10, 1> target;
  auto l = cross_entropy(logits, target);
}
