// FAIL-FIRST-REGEX: shapes_differ<tinygrad::op::assign, tinygrad::error::shape<3, 2>, tinygrad::error::shape<2, 3>
// static: the result is (2,3), the tensor it goes into (3,2)
#include <tinygrad.hpp>
using namespace tinygrad;

int main() {
  static_tensor<float, 2, 3> a;
  static_tensor<float, 3, 2> b = a * 2.0f;
}
