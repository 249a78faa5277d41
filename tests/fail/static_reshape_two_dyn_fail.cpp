// FAIL-FIRST-REGEX: reshape_can_infer_only_one_dyn<tinygrad::op::reshape<-1, -1>, tinygrad::error::shape<tinygrad::dyn, 6>
// static: only one extent of a reshape target can be inferred
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  auto a = static_tensor<float, dyn, 6>::zeros(2);
  auto b = a.reshape<dyn, dyn>();
}
