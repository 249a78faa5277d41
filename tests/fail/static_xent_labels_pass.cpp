// PASS
// static: cross_entropy with class labels (the logits' shape without the class dim) given as floats
// (the compiling twin of static_xent_labels_fail.cpp)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 8, 10> logits;
  static_tensor<int32_t, 8> labels;
  auto l = cross_entropy(logits, labels);
}
