// PASS
// static: class labels given as floats (the compiling twin of static_dtype_labels_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logits;
  static_tensor<int32_t, 8> labels;
  auto l = sparse_categorical_crossentropy(logits, labels);
}
