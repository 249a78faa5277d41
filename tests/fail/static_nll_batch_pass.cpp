// PASS
// static: nll_loss of (8,10) log-probabilities with 6 labels: 8 != 6 (the compiling twin of static_nll_batch_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logp;
  static_tensor<int32_t, 8> labels;
  auto l = nll_loss(logp, labels);
}
