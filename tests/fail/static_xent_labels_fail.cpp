// FAIL-FIRST-REGEX: needs_integer_dtype<tinygrad::op::cross_entropy, float>
// static: cross_entropy with class labels (the logits' shape without the class dim) given as floats
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logits;
  static_tensor<float, 8> labels;
  auto l = cross_entropy(logits, labels);
}
