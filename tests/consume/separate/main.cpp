// Consumer of tinygrad::compiled (TINYGRAD_SEPARATE_COMPILATION): main.cpp and model.cpp both include
// <tinygrad.hpp>, the library is compiled once in tinygrad_compiled. Exit 0 when every check passes.
#include <cmath>
#include <cstdio>
#include "model.hpp"

using tinygrad::Tensor;

#ifndef TINYGRAD_SEPARATE_COMPILATION
#error "tinygrad::compiled must define TINYGRAD_SEPARATE_COMPILATION for its users"
#endif

static int failures = 0;
static void check(bool ok, const char* what) {
  std::printf("%-44s %s\n", what, ok ? "ok" : "WRONG");
  failures += !ok;
}

int main() {
  // the Tensor API, realize and the code generation behind it
  auto y = (Tensor({{1.f, -2.f, 3.f}, {4.f, 5.f, -6.f}}).matmul(Tensor({{1.f, 0.f}, {0.f, 1.f}, {1.f, 1.f}})) + 0.5f).relu().to_vector<float>();
  check(y == std::vector<float>{4.5f, 1.5f, 0.f, 0.f}, "matmul + bias + relu");
  // a graph built in the other translation unit
  check(scaled_sum(Tensor({{1.f, 2.f}, {3.f, 4.f}})).to_vector<float>() == std::vector<float>{10.f, 14.f}, "graph from model.cpp");
  // autograd
  Tensor w = Tensor({1.f, -3.f, 2.f}).requires_grad_();
  (w * w).sum().backward();
  check(w.grad()->to_vector<float>() == std::vector<float>{2.f, -6.f, 4.f}, "backward");
  // static shapes through the plan cache
  auto a = tinygrad::static_tensor<float, 2, 2>::from(std::vector<float>{1, 2, 3, 4});
  auto s = (a + a).realize();
  check(s.tensor().to_vector<float>() == std::vector<float>{2, 4, 6, 8}, "static tensor");
  // TinyJit (its core is compiled once, with the library)
  tinygrad::TinyJit twice([](const Tensor& x) { return x * 2 + 1; }, "twice");
  bool jit_ok = true;
  for (int i = 0; i < 4; i++) jit_ok &= twice(Tensor({float(i), 1.f})).to_vector<float>() == std::vector<float>{2.f * float(i) + 1, 3.f};
  check(jit_ok && twice.captured(), "TinyJit replays");
  // training (nn, optim) in model.cpp
  float first = train_mlp(1), last = train_mlp(60);
  std::printf("loss after 1 step %.4f, after 60 steps %.4f\n", first, last);
  check(std::isfinite(last) && last < 0.5f * first, "training lowers the loss");
  return failures ? 1 : 0;
}
