// The main example: build a lazy graph, let tinygrad.hpp fuse it into kernels, compile them
// with the system C compiler, run them, and read the results back.
// EXPECT-OUTPUT: matmul\+bias\+relu ok
#include <tinygrad.hpp>

#include <cmath>
#include <cstdio>

using tinygrad::Tensor;

int main() {
  Tensor::manual_seed(42);
  // a 2-layer MLP forward pass on random data: each layer is one fused kernel
  Tensor x = Tensor::randn({64, 784});
  Tensor w1 = Tensor::randn({784, 128}) * (1.0 / std::sqrt(784.0)), b1 = Tensor::zeros({128});
  Tensor w2 = Tensor::randn({128, 10}) * (1.0 / std::sqrt(128.0)), b2 = Tensor::zeros({10});
  Tensor logits = (x.matmul(w1) + b1).relu().matmul(w2) + b2;
  Tensor probs = logits.softmax(-1);

  auto p = probs.to_vector<float>();
  double row0 = 0;
  for (int j = 0; j < 10; j++) row0 += p[size_t(j)];
  std::printf("probs shape (%lld, %lld), row 0 sums to %.6f\n", (long long)probs.shape(0), (long long)probs.shape(1), row0);

  // check one fused kernel against a plain loop
  Tensor a = Tensor({{1.f, -2.f, 3.f}, {4.f, 5.f, -6.f}});
  Tensor b = Tensor({{1.f, 0.f}, {0.f, 1.f}, {1.f, 1.f}});
  auto y = (a.matmul(b) + Tensor({0.5f, 10.f})).relu().to_vector<float>();
  const float want[] = {4.5f, 11.f, 0.f, 9.f};
  bool ok = std::fabs(row0 - 1.0) < 1e-4;
  for (int i = 0; i < 4; i++) ok &= std::fabs(y[size_t(i)] - want[i]) < 1e-6f;
  std::printf("matmul+bias+relu %s: [%g %g; %g %g]\n", ok ? "ok" : "WRONG", y[0], y[1], y[2], y[3]);
  return ok ? 0 : 1;
}
