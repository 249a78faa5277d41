// One rank of test_dist.cpp's groups, started with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set:
//   tinygrad_dist_worker CPU|CUDA <elements>
// joins the group, all-reduces known vectors on its device ("CPU", or "CUDA:" + LOCAL_RANK) and checks them against
// what every rank's vector gives. Prints "ok" and how it reduced (NCCL or host); exit 1: a wrong result, 2: an Error,
// 3: a DeviceError (a rank that never joined)
#include <tinygrad.hpp>
#include <cstdio>

using namespace tinygrad;

namespace {
float value(int rank, size_t i) { return float((i * 7 + size_t(rank) * 13) % 1000) - 500.f; }  // exact sums in float
int16_t value16(int rank, size_t i) { return int16_t(uint16_t(i * 977 + size_t(rank) * 30011)); }  // sums that wrap
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) { std::fprintf(stderr, "usage: %s CPU|CUDA <elements>\n", argv[0]); return 2; }
  try {
    dist::init();
    std::string base = argv[1], device = base == "CUDA" ? "CUDA:" + std::to_string(dist::local_rank()) : base;
    int me = dist::rank(), world = dist::world_size();
    size_t n = std::stoul(argv[2]), bad = 0;
    Communicator& comm = dist::world(device);
    bool nccl = dynamic_cast<detail::DistNccl*>(&comm) != nullptr;

    std::vector<float> x(n), y(n);
    for (size_t i = 0; i < n; i++) x[i] = value(me, i);
    Buffer a(device, DType::Float32, int64_t(n)), out(device, DType::Float32, int64_t(n));
    a.copyin(x.data());
    comm.all_reduce({&a}, {&out}, ReduceKind::Sum);
    out.copyout(y.data());
    for (size_t i = 0; i < n; i++) {
      float s = 0;
      for (int r = 0; r < world; r++) s += value(r, i);
      bad += y[i] != s;
    }
    comm.all_reduce({&a}, {&a}, ReduceKind::Max);  // in place
    a.copyout(y.data());
    for (size_t i = 0; i < n; i++) {
      float m = value(0, i);
      for (int r = 1; r < world; r++) m = std::max(m, value(r, i));
      bad += y[i] != m;
    }
    // int16: NCCL has none, so through rank 0 on every device
    std::vector<int16_t> h(n), hy(n);
    for (size_t i = 0; i < n; i++) h[i] = value16(me, i);
    Buffer b(device, DType::Int16, int64_t(n));
    b.copyin(h.data());
    comm.all_reduce({&b}, {&b}, ReduceKind::Sum);
    b.copyout(hy.data());
    for (size_t i = 0; i < n; i++) {
      uint16_t s = 0;
      for (int r = 0; r < world; r++) s = uint16_t(s + uint16_t(value16(r, i)));
      bad += hy[i] != int16_t(s);
    }
    if (bad) { std::printf("rank %d: %zu wrong elements\n", me, bad); return 1; }
    std::printf("ok rank %d of %d on %s via %s\n", me, world, device.c_str(), nccl ? "NCCL" : "host");
    return 0;
  } catch (const DeviceError& e) {
    std::printf("DeviceError: %s\n", e.what());
    return 3;
  } catch (const Error& e) {
    std::printf("Error: %s\n", e.what());
    return 2;
  }
}
