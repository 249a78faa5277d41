// A mistake static shapes catch at compile time, and its fix.
//
// The mistake: feeding 28x28 images straight into a dense layer. x is (batch, 1, 28, 28), the weight is
// (784, 128), and a matmul contracts x's last dim (28) with the weight's first (784). With Tensor this
// throws at run time, after loading the data; with static tensors it does not compile, and the first
// line of the error names the op and both shapes:
//
//   g++:     ... [with Err = tinygrad::error::inner_dims_differ<tinygrad::op::matmul,
//                 tinygrad::shape<-1, 1, 28, 28>, tinygrad::shape<784, 128> >]
//   clang++: error: implicit instantiation of undefined template 'tinygrad::error::inner_dims_differ<
//                 tinygrad::op::matmul, tinygrad::shape<-1, 1, 28, 28>, tinygrad::shape<784, 128>>'
//
// The fix: flatten the image first (x.flatten<1>() is (batch, 784)). This file builds with the fix;
// tests/fail/static_example_fail.cpp defines TG_STATIC_ERROR and checks the error above.
// EXPECT-OUTPUT: logits shape \(-1, 10\), batch 4
#include <tinygrad.hpp>
#include <cstdio>

using namespace tinygrad;

int main() {
  auto x = static_tensor<float, dyn, 1, 28, 28>::rand(4);  // a batch of 4 images; the batch size is dyn
  auto w1 = static_tensor<float, 784, 128>::uniform(0.03);
  auto w2 = static_tensor<float, 128, 10>::uniform(0.09);
#ifdef TG_STATIC_ERROR
  auto h = x.matmul(w1).relu();  // the mistake
#else
  auto h = x.flatten<1>().matmul(w1).relu();  // the fix
#endif
  static_tensor<float, dyn, 10> logits = h.matmul(w2);
  std::printf("logits shape (%lld, %lld), batch %lld\n", (long long)logits.shape()[0], (long long)logits.shape()[1], (long long)logits.rt_shape()[0]);
}
