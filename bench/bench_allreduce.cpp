// bench_allreduce: all-reduce (sum) of float32 over every visible GPU (or GPUS=n) in one process, through NCCL
// (tinygrad::communicator, ncclCommInitAll), at 1 GiB and 25 MB, next to PyTorch's dist.all_reduce with the NCCL backend
// (one process per GPU: bench/allreduce_torch.py, started with posix_spawn, no shell) measured in the same run.
// Bus bandwidth = 2(n-1)/n * bytes / time (NCCL's busbw); time = the median of 10 samples after 3 warmup calls, each
// sample ITERS back-to-back calls between synchronizations of every GPU. ratio = ours / PyTorch's (>= 1: we are faster).
// Exits 0 with a message where fewer than 2 GPUs or no libnccl are usable; prints ours alone without python3 or torch.
#include <tinygrad.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cstdio>
#include "peer.hpp"

using namespace tinygrad;

namespace {
// a free TCP port of 127.0.0.1, from the kernel (bound to port 0, then released)
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : 29531;
}
int iters(size_t bytes) { return bytes < (size_t(256) << 20) ? 20 : 5; }

// seconds a call of the group's all-reduce of `bytes` takes
double time_allreduce(const std::vector<std::string>& devs, size_t bytes) {
  int64_t n = int64_t(bytes / 4);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Buffer*> b;
  std::vector<float> ones(size_t(n), 1.f);
  for (auto& d : devs) {
    bufs.push_back(std::make_unique<Buffer>(d, DType::Float32, n));
    bufs.back()->copyin(ones.data());
    b.push_back(bufs.back().get());
  }
  Communicator& comm = communicator(devs);
  auto sync = [&] { for (auto& d : devs) synchronize(d); };
  for (int i = 0; i < 3; i++) comm.all_reduce(b, b, ReduceKind::Sum);
  std::vector<double> samples;
  for (int s = 0; s < 10; s++) {
    sync();
    double t0 = detail::now_s();
    for (int i = 0; i < iters(bytes); i++) comm.all_reduce(b, b, ReduceKind::Sum);
    sync();
    samples.push_back((detail::now_s() - t0) / iters(bytes));
  }
  std::sort(samples.begin(), samples.end());
  return (samples[4] + samples[5]) / 2;
}
}  // namespace

int main() {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast stays off here and in the peer's processes (issue 41)
  ::setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  ::setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  int visible = 0;
  try {
    detail::CudaDevice d(0);
    d.api->cuDeviceGetCount(&visible);
  } catch (const DeviceError& e) {
    std::printf("bench_allreduce: no CUDA GPU (%s)\n", e.what());
    return 0;
  }
  int gpus = int(detail::getenv_int("GPUS", visible));
  if (gpus < 2 || gpus > visible) { std::printf("bench_allreduce: needs 2..%d GPUs (GPUS=%d)\n", visible, gpus); return 0; }
  if (!detail::nccl()) { std::printf("bench_allreduce: %s\n", detail::nccl_missing().c_str()); return 0; }
  std::vector<std::string> devs;
  for (int i = 0; i < gpus; i++) devs.push_back(detail::cat("CUDA:", i));
  const std::vector<size_t> sizes{size_t(1) << 30, size_t(25) * 1000 * 1000};
  double factor = 2.0 * (gpus - 1) / gpus;
  std::vector<double> ours;
  for (size_t bytes : sizes) ours.push_back(factor * double(bytes) / time_allreduce(devs, bytes) / 1e9);

  // the peer, one process per GPU
  std::vector<std::string> args{"python3", TG_BENCH_DIR "/allreduce_torch.py", std::to_string(gpus), std::to_string(free_port())};
  for (size_t bytes : sizes) args.push_back(std::to_string(bytes));
  std::string out, why;
  try {
    auto [st, o] = detail::run_process(args);
    out = o;
    if (st != 0) why = detail::cat("allreduce_torch.py: ", detail::describe_wait_status(st));
  } catch (const DeviceError& e) {
    why = e.what();  // no python3
  }
  if (auto at = out.find("{\"error\""); at != std::string::npos) why = out.substr(at, out.find('\n', at) - at);
  std::string json = out.substr(std::min(out.size(), out.rfind("{\"torch\"")));
  std::printf("bench_allreduce: %d GPUs, NCCL %d (ours: one process, ncclCommInitAll; PyTorch: %s)\n", gpus, detail::nccl()->version,
              json.empty() ? "not measured" : "one process per GPU");
  if (json.empty()) std::printf("  PyTorch peer missing: %s\n", why.empty() ? out.c_str() : why.c_str());
  std::printf("  %-10s %14s %14s %8s\n", "size", "ours GB/s", "torch GB/s", "ratio");
  for (size_t i = 0; i < sizes.size(); i++) {
    double peer = NAN;
    if (auto at = json.find("\"" + std::to_string(sizes[i]) + "\""); at != std::string::npos) peer = peer_key(json.substr(at), "busbw_GBps");
    std::printf("  %-10s %14.1f %14.1f %8.3f\n", sizes[i] >= (size_t(1) << 30) ? "1 GiB" : "25 MB", ours[i], peer, ours[i] / peer);
  }
  if (!json.empty()) std::printf("  peer: %s", json.c_str());
  return 0;
}
