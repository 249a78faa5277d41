// Collectives: a group of CPU devices through the host (every dtype and reduction against plain loops), groups of
// processes (tests/dist_worker.cpp, started twice with posix_spawn: no shell), and, with 2 GPUs and libnccl, NCCL
// in one process and across two ([nccl]: skipped elsewhere)
#include <catch2/catch.hpp>
#include <tinygrad.hpp>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <fstream>
#include <random>
#include <thread>

extern char** environ;
using namespace tinygrad;

namespace {

// the reference: one reduction step in plain arithmetic (ints wrap, bool or/and, halves through float)
template <class T, DType D>
T ref_step(T a, T b, ReduceKind op) {
  auto f = [&](auto x, auto y) {
    return op == ReduceKind::Sum ? x + y : op == ReduceKind::Prod ? x * y : op == ReduceKind::Max ? std::max(x, y) : std::min(x, y);
  };
  if constexpr (D == DType::Float16) return detail::f32_to_f16(f(detail::f16_to_f32(a), detail::f16_to_f32(b)));
  else if constexpr (D == DType::BFloat16) return detail::f32_to_bf16(f(detail::bf16_to_f32(a), detail::bf16_to_f32(b)));
  else if constexpr (std::is_same_v<T, bool>) return op == ReduceKind::Sum || op == ReduceKind::Max ? a || b : a && b;
  else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return op == ReduceKind::Max ? std::max(a, b) : op == ReduceKind::Min ? std::min(a, b) : T(U(f(uint64_t(U(a)), uint64_t(U(b)))));
  } else {
    return f(a, b);
  }
}
template <class T, DType D>
T random_value(std::mt19937_64& rng) {
  if constexpr (D == DType::Float16) return detail::f32_to_f16(float(int(rng() % 64) - 32) / 4);
  else if constexpr (D == DType::BFloat16) return detail::f32_to_bf16(float(int(rng() % 64) - 32) / 4);
  else if constexpr (std::is_floating_point_v<T>) return T(int(rng() % 2000) - 1000) / 8;
  else if constexpr (std::is_same_v<T, bool>) return (rng() & 1) != 0;
  else return T(rng());  // every bit pattern: sums and products wrap
}

template <class T, DType D>
void check_host_group(const std::vector<std::string>& devs, ReduceKind op, bool in_place) {
  using S = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;  // NOTE: a bool's bytes, not vector<bool>'s bits
  const size_t n = 257;
  std::mt19937_64 rng(static_cast<uint64_t>(D) * 7 + static_cast<uint64_t>(op));
  std::vector<std::vector<S>> xs(devs.size(), std::vector<S>(n));
  std::vector<std::unique_ptr<Buffer>> send, recv;
  std::vector<Buffer*> s, r;
  for (size_t m = 0; m < devs.size(); m++) {
    for (auto& v : xs[m]) v = S(random_value<T, D>(rng));
    send.push_back(std::make_unique<Buffer>(devs[m], D, int64_t(n)));
    send.back()->copyin(xs[m].data());
    recv.push_back(in_place ? nullptr : std::make_unique<Buffer>(devs[m], D, int64_t(n)));
    s.push_back(send.back().get());
    r.push_back(in_place ? send.back().get() : recv.back().get());
  }
  communicator(devs).all_reduce(s, r, op);
  std::vector<S> want = xs[0], got(n);
  for (size_t m = 1; m < devs.size(); m++)
    for (size_t i = 0; i < n; i++) want[i] = S(ref_step<T, D>(T(want[i]), T(xs[m][i]), op));
  for (size_t m = 0; m < devs.size(); m++) {
    r[m]->copyout(got.data());
    INFO(to_string(D) << " op " << int(op) << " member " << m << (in_place ? " in place" : ""));
    CHECK(std::memcmp(got.data(), want.data(), n * sizeof(S)) == 0);
  }
}

// a free TCP port of 127.0.0.1 (bound to port 0, then released)
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// a started rank: its process and the file that holds its output
struct Rank {
  pid_t pid = -1;
  std::string log;
};
// the worker with a fixed argv and this environment plus `vars` (NCCL_NVLS_ENABLE=0 always); no shell
Rank spawn_worker(const std::vector<std::string>& args, std::map<std::string, std::string> vars) {
  vars["NCCL_NVLS_ENABLE"] = "0";
  std::vector<std::string> env;
  for (char** e = environ; *e; e++) {
    std::string kv = *e;
    if (!vars.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (auto& [k, v] : vars) env.push_back(k + "=" + v);
  static int serial = 0;
  Rank r;
  r.log = (std::filesystem::temp_directory_path() / detail::cat("tg_dist_", ::getpid(), "_", serial++, ".log")).string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, r.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr), envp.push_back(nullptr);
  int e = ::posix_spawn(&r.pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(e == 0);
  return r;
}
// waits for the rank (killed past `limit` seconds): its exit status (-1 killed) and output
std::pair<int, std::string> finish(const Rank& r, double limit) {
  auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  while (::waitpid(r.pid, &st, WNOHANG) == 0) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit) {
      ::kill(r.pid, SIGKILL);
      ::waitpid(r.pid, &st, 0);
      st = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream f(r.log);
  std::string out((std::istreambuf_iterator<char>(f)), {});
  std::filesystem::remove(r.log);
  return {st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}
// two ranks of `device` ("CPU", "CUDA") on 127.0.0.1, each checking its all-reduces
std::vector<std::string> run_pair(const std::string& device, size_t n, double limit) {
  std::string port = std::to_string(free_port());
  std::vector<Rank> ranks;
  for (int r = 0; r < 2; r++)
    ranks.push_back(spawn_worker({TG_DIST_WORKER, device, std::to_string(n)}, {{"RANK", std::to_string(r)}, {"LOCAL_RANK", std::to_string(r)},
                                 {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}, {"DIST_TIMEOUT", "60"}}));
  std::vector<std::string> outs;
  for (auto& r : ranks) {
    auto [code, out] = finish(r, limit);
    INFO(out);
    CHECK(code == 0);
    outs.push_back(out);
  }
  return outs;
}

// the environment of one dist::init call, restored after
struct ScopedEnv {
  std::map<std::string, std::optional<std::string>> saved;
  explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& vars) {
    for (auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved[k] = old ? std::optional<std::string>(old) : std::nullopt;
      if (v) ::setenv(k.c_str(), v->c_str(), 1);
      else ::unsetenv(k.c_str());
    }
  }
  ~ScopedEnv() {
    for (auto& [k, v] : saved) {
      if (v) ::setenv(k.c_str(), v->c_str(), 1);
      else ::unsetenv(k.c_str());
    }
  }
};

int cuda_devices() {
  try {
    detail::CudaDevice d(0);
    int n = 0;
    d.api->cuDeviceGetCount(&n);
    return n;
  } catch (const DeviceError&) {
    return 0;
  }
}
// [nccl] tests need two GPUs and libnccl; elsewhere they say why and pass
bool nccl_here() {
  if (cuda_devices() < 2) { WARN("fewer than 2 CUDA devices: NCCL test skipped"); return false; }
  if (!detail::nccl()) { WARN("NCCL test skipped: " << detail::nccl_missing()); return false; }
  return true;
}
}  // namespace

TEST_CASE("a group of CPU devices all-reduces every dtype through the host", "[dist]") {
  std::vector<std::string> devs{"CPU:0", "CPU:1", "CPU:2"};
  for (auto op : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min})
    for (bool in_place : {false, true}) {
#define TG_X(n, t, sz, k, c) check_host_group<t, DType::n>(devs, op, in_place);
      TG_DTYPES(TG_X)
#undef TG_X
    }
  CHECK(dynamic_cast<detail::HostCommunicator*>(&communicator(devs)) != nullptr);
  CHECK(&communicator(devs) == &communicator(devs));  // made once
}

TEST_CASE("dist::init names the variable that is missing or bad", "[dist]") {
  using V = std::optional<std::string>;
  std::map<std::string, V> good{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"},
                                {"MASTER_PORT", "29500"}, {"DIST_TIMEOUT", "1"}};
  std::vector<std::tuple<std::string, V, std::string>> cases{
      {"WORLD_SIZE", std::nullopt, "WORLD_SIZE is not set"}, {"WORLD_SIZE", "2x", "WORLD_SIZE='2x' is not an integer"},
      {"WORLD_SIZE", "0", "WORLD_SIZE='0'"},                 {"RANK", "2", "RANK='2' is not an integer in [0, 1]"},
      {"RANK", "-1", "RANK='-1'"},                           {"RANK", " 1", "RANK=' 1'"},
      {"LOCAL_RANK", std::nullopt, "LOCAL_RANK is not set"}, {"MASTER_ADDR", std::nullopt, "MASTER_ADDR is not set"},
      {"MASTER_PORT", "70000", "MASTER_PORT='70000'"},       {"MASTER_PORT", "port", "MASTER_PORT='port'"},
      {"DIST_TIMEOUT", "abc", "DIST_TIMEOUT='abc'"},         {"DIST_TIMEOUT", "-3", "DIST_TIMEOUT='-3'"}};
  for (auto& [name, value, msg] : cases) {
    auto vars = good;
    vars[name] = value;
    ScopedEnv env(vars);
    INFO(name);
    CHECK_THROWS_WITH(dist::init(), Catch::Contains(msg) && Catch::Contains("tinygrad::dist::init"));
  }
  CHECK_FALSE(dist::initialized());
  CHECK_THROWS_WITH(dist::world("CPU"), Catch::Contains("call tinygrad::dist::init() first"));
}

#ifdef TG_DIST_WORKER
TEST_CASE("two processes on the CPU all-reduce through rank 0", "[dist]") {
  for (auto& out : run_pair("CPU", 10000, 60)) CHECK_THAT(out, Catch::Contains("ok rank") && Catch::Contains("via host"));
}

TEST_CASE("a rank that never joins is a DeviceError within DIST_TIMEOUT, not a hang", "[dist]") {
  std::map<std::string, std::string> vars{{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(free_port())},
                                          {"DIST_TIMEOUT", "2"}};
  for (int r : {0, 1}) {  // rank 0 alone waits for rank 1; rank 1 alone finds no rank 0
    vars["RANK"] = vars["LOCAL_RANK"] = std::to_string(r);
    auto t0 = std::chrono::steady_clock::now();
    auto [code, out] = finish(spawn_worker({TG_DIST_WORKER, "CPU", "16"}, vars), 30);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(out);
    CHECK(code == 3);
    CHECK(s < 10);
    CHECK_THAT(out, Catch::Contains(r == 0 ? "rank(s) 1 did not join rank 0 at 127.0.0.1:" : "rank 1 could not reach rank 0 at 127.0.0.1:") &&
                        Catch::Contains("within 2 s (DIST_TIMEOUT)"));
  }
}
#endif

TEST_CASE("NCCL all-reduces a group of CUDA devices in one process", "[dist][nccl]") {
  if (!nccl_here()) return;
  std::vector<std::string> devs{"CUDA:0", "CUDA:1"};
  Communicator& comm = communicator(devs);
  REQUIRE(dynamic_cast<detail::NcclCommunicator*>(&comm) != nullptr);
  const size_t n = 1 << 20;
  auto check = [&](DType dt, ReduceKind op) {
    std::mt19937 rng(42);
    std::vector<std::vector<float>> xs(2, std::vector<float>(n));
    std::vector<std::unique_ptr<Buffer>> bufs;
    for (size_t m = 0; m < 2; m++) {
      for (auto& v : xs[m]) v = float(int(rng() % 512) - 256) / 4;  // exact in half, and their sums too
      bufs.push_back(std::make_unique<Buffer>(devs[m], dt, int64_t(n)));
      if (dt == DType::Float32) bufs.back()->copyin(xs[m].data());
      else {
        std::vector<uint16_t> h(n);
        for (size_t i = 0; i < n; i++) h[i] = detail::f32_to_f16(xs[m][i]);
        bufs.back()->copyin(h.data());
      }
    }
    comm.all_reduce({bufs[0].get(), bufs[1].get()}, {bufs[0].get(), bufs[1].get()}, op);
    for (size_t m = 0; m < 2; m++) {
      std::vector<float> got(n);
      if (dt == DType::Float32) bufs[m]->copyout(got.data());
      else {
        std::vector<uint16_t> h(n);
        bufs[m]->copyout(h.data());
        for (size_t i = 0; i < n; i++) got[i] = detail::f16_to_f32(h[i]);
      }
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) bad += got[i] != (op == ReduceKind::Sum ? xs[0][i] + xs[1][i] : std::max(xs[0][i], xs[1][i]));
      INFO(to_string(dt) << " op " << int(op) << " member " << m);
      CHECK(bad == 0);
    }
  };
  for (auto dt : {DType::Float32, DType::Float16})
    for (auto op : {ReduceKind::Sum, ReduceKind::Max}) check(dt, op);
  // dtypes NCCL lacks go through the host, on the same group
  check_host_group<int16_t, DType::Int16>(devs, ReduceKind::Sum, true);
  check_host_group<bool, DType::Bool>(devs, ReduceKind::Max, false);
}

#ifdef TG_DIST_WORKER
TEST_CASE("two processes on CUDA:0 and CUDA:1 all-reduce through NCCL", "[dist][nccl]") {
  if (!nccl_here()) return;
  for (auto& out : run_pair("CUDA", 1 << 20, 180)) CHECK_THAT(out, Catch::Contains("ok rank") && Catch::Contains("via NCCL"));
}
#endif
