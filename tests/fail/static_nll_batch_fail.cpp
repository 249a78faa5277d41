// FAIL-FIRST-REGEX: batch_sizes_differ<tinygrad::op::nll_loss, tinygrad::error::shape<8, 10>, tinygrad::error::shape<6>
// static: nll_loss of (8,10) log-probabilities with 6 labels: 8 != 6
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logp;
  static_tensor<int32_t, 6> labels;
  auto l = nll_loss(logp, labels);
}
