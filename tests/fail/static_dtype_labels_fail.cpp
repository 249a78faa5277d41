// FAIL-FIRST-REGEX: needs_integer_dtype<tinygrad::op::sparse_categorical_crossentropy, float>
// static: class labels given as floats
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logits;
  static_tensor<float, 8> labels;
  auto l = sparse_categorical_crossentropy(logits, labels);
}
