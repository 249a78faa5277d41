// bench_cl: float16 on an OpenCL device (PoCL on the CPU in CI), each row next to the same op in float32:
//   1. a fused 4-op elementwise chain over 16M elements (GB/s, bytes read + written)
//   2. a sum of 16M elements into one value (GB/s read)
// float16 converts with the device (vload_half / vstore_half_rte, or cl_khr_fp16's native half: DEBUG=1 says which).
// Exits 0 with a message where no OpenCL device opens.
#include <tinygrad.hpp>

#include <cstdio>

using tinygrad::DType;
using tinygrad::Tensor;

namespace {
// best of reps wall times of f, each synchronized
template <class F> double best_time(int reps, F&& f) {
  double b = 1e30;
  for (int i = 0; i < reps; i++) {
    tinygrad::runtime("CL").synchronize();
    double t0 = tinygrad::detail::now_s();
    f();
    tinygrad::runtime("CL").synchronize();
    b = std::min(b, tinygrad::detail::now_s() - t0);
  }
  return b;
}
}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try { tinygrad::runtime("CL"); } catch (const tinygrad::Error& e) { std::printf("bench_cl: no OpenCL device (%s)\n", e.what()); return 0; }
  const int64_t n = int64_t(1) << 24;
  for (DType dt : {DType::Float32, DType::Float16}) {
    Tensor x = Tensor::rand({n}, DType::Float32, "CL").cast(dt).realize();
    auto chain = [&] { return ((x * 1.5f + 0.5f).relu() * x).realize(); };
    auto sum = [&] { return x.sum().realize(); };
    chain(), sum();  // compile
    double ew = 2.0 * double(n) * itemsize(dt) / best_time(5, chain) / 1e9, rd = double(n) * itemsize(dt) / best_time(5, sum) / 1e9;
    std::printf("%-8s 16M: elementwise chain %7.2f GB/s | sum %7.2f GB/s\n", to_string(dt).c_str(), ew, rd);
  }
}
