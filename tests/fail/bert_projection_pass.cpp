// PASS
// models/bert.hpp: the down projection takes the up projection's 1536 features (the twin of bert_projection_fail.cpp)
#include <tinygrad/models/bert.hpp>
using namespace tinygrad;

int main() {
  models::Dense<384, 1536, float> up;
  models::Dense<1536, 384, float> down;
  static_tensor<float, dyn, dyn, 384> x = static_tensor<float, dyn, dyn, 384>::zeros(2, 8);
  auto y = down(up(x).gelu());
}
