#pragma once
// One process per device (torchrun's way), on one machine or several. Each process of the group is started with the
// variables torchrun sets:
//   RANK          this process's rank, 0 .. WORLD_SIZE-1
//   WORLD_SIZE    the processes in the group (all machines)
//   LOCAL_RANK    its rank among the processes of its machine: the GPU it drives ("CUDA:" + LOCAL_RANK)
//   MASTER_ADDR   the address of rank 0's machine, as the other machines reach it (127.0.0.1 on one machine)
//   MASTER_PORT   a free TCP port there: rank 0 listens on it
//   DIST_TIMEOUT  seconds any step waits for another rank (default 300); past it a DeviceError, never a hang
// dist::init() joins the group over TCP (rank 0 listens, the others connect). dist::world(device) is this process's
// member of the group: NCCL (ncclCommInitRank, rank 0's unique id sent over those sockets) on CUDA where every rank
// loads libnccl, else the host: each rank's buffer to rank 0, reduced there, the result sent back. Across machines
// NCCL picks its own transports (NCCL_SOCKET_IFNAME, NCCL_IB_HCA... as NCCL documents).
#include "device.hpp"

namespace tinygrad::dist {
// joins the group the environment names (above); a second call does nothing. An Error names a variable that is missing
// or bad, a DeviceError the ranks that did not join within DIST_TIMEOUT
TINYGRAD_API void init();
// whether init() has joined the group
TINYGRAD_API bool initialized();
// this process's rank, the group's size, its rank on its machine (0, 1, 0 before init)
TINYGRAD_API int rank();
TINYGRAD_API int world_size();
TINYGRAD_API int local_rank();
}  // namespace tinygrad::dist

#if TINYGRAD_WITH_INTERNALS
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <charconv>
#include <cmath>
#include "nccl.hpp"

namespace tinygrad::detail {

// a socket, closed with its owner
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Fd& operator=(Fd&& o) noexcept { std::swap(fd, o.fd); return *this; }
  ~Fd() { if (fd >= 0) ::close(fd); }
};

// every blocking step of the group is a poll() bounded by DIST_TIMEOUT
inline void sock_wait(int fd, short events, int ms, const std::string& what) {
  pollfd p{fd, events, 0};
  for (;;) {
    int r = ::poll(&p, 1, ms);
    if (r > 0) return;
    if (r == 0) throw DeviceError(cat("tinygrad::dist: ", what, ": nothing within ", double(ms) / 1000, " s (DIST_TIMEOUT)"));
    if (errno != EINTR) throw DeviceError(cat("tinygrad::dist: ", what, ": poll: ", std::strerror(errno)));
  }
}
inline void send_all(int fd, const void* data, size_t n, int ms, const std::string& what) {
  auto* p = static_cast<const char*>(data);
  while (n) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k > 0) { p += k, n -= size_t(k); continue; }
    if (errno == EAGAIN || errno == EWOULDBLOCK) sock_wait(fd, POLLOUT, ms, what);
    else if (errno != EINTR) throw DeviceError(cat("tinygrad::dist: ", what, ": ", std::strerror(errno)));
  }
}
inline void recv_all(int fd, void* data, size_t n, int ms, const std::string& what) {
  auto* p = static_cast<char*>(data);
  while (n) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k > 0) { p += k, n -= size_t(k); continue; }
    if (k == 0) throw DeviceError(cat("tinygrad::dist: ", what, ": the other side closed the connection (its process ended?)"));
    if (errno == EAGAIN || errno == EWOULDBLOCK) sock_wait(fd, POLLIN, ms, what);
    else if (errno != EINTR) throw DeviceError(cat("tinygrad::dist: ", what, ": ", std::strerror(errno)));
  }
}

// this process's place in the group
struct DistGroup {
  std::mutex mu;
  bool ready = false;
  int rank = 0, world = 1, local = 0;
  double timeout = 300;
  std::vector<Fd> peers;  // rank 0: rank r's socket at [r]; the others: rank 0's at [0]
  std::map<std::string, std::unique_ptr<Communicator>> worlds;
  int ms() const { return int(std::min(timeout * 1000, 2e9)); }
};
inline DistGroup& dist_group() {
  static auto* g = new DistGroup();  // NOTE: leaked (static destruction order), like the communicators
  return *g;
}

// an integer variable, strictly: all of it decimal digits, within [lo, hi]
inline int dist_env_int(const char* name, int lo, int hi) {
  std::string v = getenv_str(name);
  if (v.empty())
    throw Error(cat("tinygrad::dist::init: ", name, " is not set (set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, as torchrun does)"));
  int r = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
  if (ec != std::errc() || end != v.data() + v.size() || r < lo || r > hi)
    throw Error(cat("tinygrad::dist::init: ", name, "='", v, "' is not an integer in [", lo, ", ", hi, "]"));
  return r;
}
inline double dist_timeout() {
  std::string v = getenv_str("DIST_TIMEOUT");
  if (v.empty()) return 300;
  char* end = nullptr;
  double t = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || !std::isfinite(t) || t <= 0 || t > 1e6)
    throw Error(cat("tinygrad::dist::init: DIST_TIMEOUT='", v, "' is not a number of seconds in (0, 1e6]"));
  return t;
}

constexpr uint32_t kDistMagic = 0x54474431;  // "TGD1": a hello from one of ours, not a stray connection
using DistClock = std::chrono::steady_clock;
inline int ms_left(DistClock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - DistClock::now()).count();
  return int(std::clamp<int64_t>(ms, 0, 2000000000));
}
inline Fd tcp_socket(const addrinfo* ai) {
  Fd s(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd < 0) throw DeviceError(cat("tinygrad::dist::init: socket: ", std::strerror(errno)));
  int one = 1;
  ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // NOTE: the headers and verdicts are small messages
  return s;
}

// rank 0: every other rank's connection, by rank; a DeviceError names the ranks missing at the deadline
inline std::vector<Fd> dist_listen(const addrinfo* ai, int world, double timeout, const std::string& where) {
  auto deadline = DistClock::now() + std::chrono::duration_cast<DistClock::duration>(std::chrono::duration<double>(timeout));
  Fd l = tcp_socket(ai);
  int one = 1;
  ::setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(l.fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(l.fd, world) != 0)
    throw DeviceError(cat("tinygrad::dist::init: rank 0 cannot listen on ", where, ": ", std::strerror(errno)));
  std::vector<Fd> peers(static_cast<size_t>(world));
  for (int joined = 1; joined < world;) {
    pollfd p{l.fd, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0 || ::poll(&p, 1, left) == 0) break;
    Fd c(::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (c.fd < 0) continue;
    int32_t hello[3] = {0, 0, 0};  // magic, rank, world
    try { recv_all(c.fd, hello, sizeof hello, std::max(ms_left(deadline), 1), "rank 0 reading a rank's hello"); }
    catch (const DeviceError&) { continue; }  // not one of ours
    if (uint32_t(hello[0]) != kDistMagic) continue;
    if (hello[2] != world) throw DeviceError(cat("tinygrad::dist::init: rank ", hello[1], " has WORLD_SIZE=", hello[2], ", rank 0 ", world));
    if (hello[1] < 1 || hello[1] >= world || peers[size_t(hello[1])].fd >= 0)
      throw DeviceError(cat("tinygrad::dist::init: a second process has RANK=", hello[1]));
    int one_nd = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one_nd, sizeof one_nd);
    peers[size_t(hello[1])] = std::move(c);
    joined++;
  }
  std::string missing;
  for (int r = 1; r < world; r++) if (peers[size_t(r)].fd < 0) missing += cat(missing.empty() ? "" : ", ", r);
  if (!missing.empty())
    throw DeviceError(cat("tinygrad::dist::init: rank(s) ", missing, " did not join rank 0 at ", where, " within ", timeout, " s (DIST_TIMEOUT)"));
  char ok = 1;
  for (int r = 1; r < world; r++) send_all(peers[size_t(r)].fd, &ok, 1, std::max(ms_left(deadline), 1000), cat("rank 0 answering rank ", r));
  return peers;
}

// another rank: its connection to rank 0, retried until the deadline, and rank 0's word that every rank joined
inline std::vector<Fd> dist_connect(const addrinfo* ai, int rank, int world, double timeout, const std::string& where) {
  auto deadline = DistClock::now() + std::chrono::duration_cast<DistClock::duration>(std::chrono::duration<double>(timeout));
  std::string last = "no attempt";
  for (;;) {
    Fd s = tcp_socket(ai);
    if (::connect(s.fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
      pollfd p{s.fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (::poll(&p, 1, ms_left(deadline)) > 0 && ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        int32_t hello[3] = {int32_t(kDistMagic), rank, world};
        send_all(s.fd, hello, sizeof hello, std::max(ms_left(deadline), 1000), cat("rank ", rank, " greeting rank 0 at ", where));
        char ok = 0;
        try { recv_all(s.fd, &ok, 1, std::max(ms_left(deadline), 1), cat("rank ", rank, " waiting for the group at ", where)); }
        catch (const DeviceError& e) {
          throw DeviceError(cat(e.what(), " (rank 0 answers once every rank has joined, within DIST_TIMEOUT=", timeout, " s)"));
        }
        std::vector<Fd> r;
        r.push_back(std::move(s));
        return r;
      }
      last = err ? std::strerror(err) : "no answer";
    } else {
      last = std::strerror(errno);
    }
    if (ms_left(deadline) == 0)
      throw DeviceError(cat("tinygrad::dist::init: rank ", rank, " could not reach rank 0 at ", where, " within ", timeout,
                            " s (DIST_TIMEOUT): ", last));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, ms_left(deadline))));
  }
}

// the group's all-reduce through rank 0: a header and the buffer from each rank, reduced there in rank order, a
// verdict and the result back
struct DistTcp : Communicator {
  DistGroup& g;
  explicit DistTcp(DistGroup& grp) : g(grp) {}
  void reduce(const std::vector<AllReduce>& batch) override { for (auto& a : batch) one(a.send, a.recv, a.op); }

 private:
  void one(const std::vector<Buffer*>& send, const std::vector<Buffer*>& recv, ReduceKind op) {
    check_members(send, recv, 1, "tinygrad::dist::world(device)");
    std::vector<char> acc(send[0]->nbytes());
    send[0]->copyout(acc.data());
    uint64_t head[3] = {acc.size(), uint64_t(send[0]->dtype), uint64_t(op)};
    char verdict = 0;  // 0: the result follows; 1: the ranks' calls differ
    if (g.rank == 0) {
      std::vector<char> x(acc.size());
      std::string bad;
      for (int r = 1; r < g.world && bad.empty(); r++) {
        uint64_t h[3];
        recv_all(g.peers[size_t(r)].fd, h, sizeof h, g.ms(), cat("rank 0 waiting for rank ", r, "'s all-reduce"));
        if (h[0] != head[0] || h[1] != head[1] || h[2] != head[2]) {
          bad = cat("rank ", r, " all-reduces ", h[0], " bytes (dtype ", h[1], ", op ", h[2], "), rank 0 ", head[0], " (dtype ", head[1],
                    ", op ", head[2], ")");
          break;
        }
        recv_all(g.peers[size_t(r)].fd, x.data(), x.size(), g.ms(), cat("rank 0 receiving rank ", r, "'s buffer"));
        host_reduce(send[0]->dtype, acc, x, op);
      }
      verdict = bad.empty() ? 0 : 1;
      for (int r = 1; r < g.world; r++) {
        send_all(g.peers[size_t(r)].fd, &verdict, 1, g.ms(), cat("rank 0 answering rank ", r));
        if (!verdict) send_all(g.peers[size_t(r)].fd, acc.data(), acc.size(), g.ms(), cat("rank 0 sending the result to rank ", r));
      }
      if (verdict) throw DeviceError("tinygrad::dist: the ranks' all-reduces differ: " + bad);
    } else {
      int fd = g.peers[0].fd;
      send_all(fd, head, sizeof head, g.ms(), cat("rank ", g.rank, " sending its all-reduce to rank 0"));
      send_all(fd, acc.data(), acc.size(), g.ms(), cat("rank ", g.rank, " sending its buffer to rank 0"));
      recv_all(fd, &verdict, 1, g.ms(), cat("rank ", g.rank, " waiting for rank 0's result"));
      if (verdict) throw DeviceError(cat("tinygrad::dist: rank ", g.rank, ": the ranks' all-reduces differ (rank 0 says which)"));
      recv_all(fd, acc.data(), acc.size(), g.ms(), cat("rank ", g.rank, " receiving the result"));
    }
    recv[0]->copyin(acc.data());
  }
};

// the group's all-reduce through NCCL: a communicator made with the non-blocking config (so a rank that never comes
// is a timeout, not a hang), an all-reduce on this device's blocking stream; dtypes NCCL lacks go through rank 0
class DistNccl : public Communicator {
 public:
  DistNccl(NcclApi& api, DistGroup& g, const std::string& device, const NcclApi::UniqueId& id)
      : api_(api), g_(g), tcp_(g), stream_(cuda_ordinal(device)) {
    stream_.dev->current();
    NcclApi::Config cfg;
    cfg.blocking = 0;
    int r = api_.ncclCommInitRankConfig(&comm_, g.world, id, g.rank, &cfg);
    if (r != NcclApi::kInProgress) api_.check(r, "ncclCommInitRankConfig", comm_);
    wait("ncclCommInitRankConfig");
  }
  ~DistNccl() override { if (comm_) stream_.dev->current(), api_.ncclCommDestroy(comm_); }
  void reduce(const std::vector<AllReduce>& batch) override {
    std::vector<AllReduce> host;
    auto mine = nccl_part(batch, 1, "tinygrad::dist::world(device)", host);
    tcp_.all_reduce(host);
    if (mine.empty()) return;
    stream_.dev->current();
    api_.check(api_.ncclGroupStart(), "ncclGroupStart");
    int r = NcclApi::kSuccess;
    for (size_t i = 0; i < mine.size() && (r == NcclApi::kSuccess || r == NcclApi::kInProgress); i++) {
      const AllReduce& a = *mine[i];
      r = api_.ncclAllReduce(a.send[0]->ptr(), a.recv[0]->ptr(), size_t(a.send[0]->size), nccl_dtype(a.send[0]->dtype), nccl_op(a.op), comm_,
                             stream_.s);
    }
    int end = api_.ncclGroupEnd();  // NOTE: also after a failed call: the group must be closed
    if (r != NcclApi::kInProgress) api_.check(r, "ncclAllReduce", comm_);
    if (end != NcclApi::kInProgress) api_.check(end, "ncclGroupEnd", comm_);
    wait("ncclAllReduce");
  }

 private:
  // a non-blocking communicator's call is done when its state leaves ncclInProgress; past DIST_TIMEOUT it is aborted
  void wait(const char* what) {
    auto deadline = DistClock::now() + std::chrono::duration_cast<DistClock::duration>(std::chrono::duration<double>(g_.timeout));
    for (;;) {
      int st = NcclApi::kInProgress;
      api_.check(api_.ncclCommGetAsyncError(comm_, &st), "ncclCommGetAsyncError", comm_);
      if (st == NcclApi::kSuccess) return;
      std::string err;
      if (st != NcclApi::kInProgress) err = api_.message(st, what, comm_);
      else if (DistClock::now() > deadline)
        err = cat("tinygrad::dist: NCCL ", what, " on rank ", g_.rank, " did not finish within ", g_.timeout,
                  " s (DIST_TIMEOUT): a rank did not join");
      if (!err.empty()) {
        api_.ncclCommAbort(comm_);
        comm_ = nullptr;
        throw DeviceError(err);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  NcclApi& api_;
  DistGroup& g_;
  DistTcp tcp_;
  CudaStream stream_;
  NcclApi::Comm comm_ = nullptr;
};
}  // namespace tinygrad::detail

namespace tinygrad::dist {
TINYGRAD_API void init() TINYGRAD_DEF({
  auto& g = detail::dist_group();
  std::lock_guard lk(g.mu);
  if (g.ready) return;
  int world = detail::dist_env_int("WORLD_SIZE", 1, 1 << 20);
  int rank = detail::dist_env_int("RANK", 0, world - 1), local = detail::dist_env_int("LOCAL_RANK", 0, world - 1);
  std::string addr = detail::getenv_str("MASTER_ADDR");
  if (addr.empty()) throw Error("tinygrad::dist::init: MASTER_ADDR is not set (the address of rank 0's machine)");
  int port = detail::dist_env_int("MASTER_PORT", 1, 65535);
  double timeout = detail::dist_timeout();
  std::string where = detail::cat(addr, ":", port);
  if (world > 1) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    if (int e = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &res); e != 0 || !res)
      throw Error(detail::cat("tinygrad::dist::init: MASTER_ADDR='", addr, "' does not resolve: ", ::gai_strerror(e)));
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> hold(res, ::freeaddrinfo);
    g.peers = rank == 0 ? detail::dist_listen(res, world, timeout, where) : detail::dist_connect(res, rank, world, timeout, where);
  }
  g.rank = rank, g.world = world, g.local = local, g.timeout = timeout, g.ready = true;
})
TINYGRAD_API bool initialized() TINYGRAD_DEF({ auto& g = detail::dist_group(); std::lock_guard lk(g.mu); return g.ready; })
TINYGRAD_API int rank() TINYGRAD_DEF({ auto& g = detail::dist_group(); std::lock_guard lk(g.mu); return g.rank; })
TINYGRAD_API int world_size() TINYGRAD_DEF({ auto& g = detail::dist_group(); std::lock_guard lk(g.mu); return g.world; })
TINYGRAD_API int local_rank() TINYGRAD_DEF({ auto& g = detail::dist_group(); std::lock_guard lk(g.mu); return g.local; })

// this process's member of the group on `device`, made on first use: all_reduce({b}, {r}, op) reduces its one buffer
// with every rank's (each rank calls it in the same order). Through NCCL on CUDA where every rank loads libnccl
// (COLLECTIVE=host forces the host), else through rank 0
TINYGRAD_API Communicator& world(const std::string& device) TINYGRAD_DEF({
  auto& g = detail::dist_group();
  std::lock_guard lk(g.mu);
  if (!g.ready) throw Error("tinygrad::dist::world: call tinygrad::dist::init() first");
  auto& c = g.worlds[device];
  if (c) return *c;
  detail::NcclApi* api = detail::device_base(device) == "CUDA" && detail::getenv_str("COLLECTIVE") != "host" ? detail::nccl() : nullptr;
  if (!api && detail::device_base(device) == "CUDA" && flags().debug >= 1)
    std::fprintf(stderr, "tinygrad::dist: collectives through rank 0's host: %s\n", detail::nccl_missing().c_str());
  // NCCL only where every rank has it: rank 0 gathers a yes or no from each, then sends the verdict and its unique id
  struct { char all; detail::NcclApi::UniqueId id; } v{char(api != nullptr), {}};
  if (g.rank == 0) {
    for (int r = 1; r < g.world; r++) {
      char has = 0;
      detail::recv_all(g.peers[size_t(r)].fd, &has, 1, g.ms(), detail::cat("rank 0 asking rank ", r, " for NCCL"));
      v.all = char(v.all && has);
    }
    if (v.all) api->check(api->ncclGetUniqueId(&v.id), "ncclGetUniqueId");
    for (int r = 1; r < g.world; r++)
      detail::send_all(g.peers[size_t(r)].fd, &v, sizeof v, g.ms(), detail::cat("rank 0 sending NCCL's id to rank ", r));
  } else {
    detail::send_all(g.peers[0].fd, &v.all, 1, g.ms(), detail::cat("rank ", g.rank, " telling rank 0 whether it has NCCL"));
    detail::recv_all(g.peers[0].fd, &v, sizeof v, g.ms(), detail::cat("rank ", g.rank, " waiting for NCCL's id"));
  }
  if (v.all) c = std::make_unique<detail::DistNccl>(*api, g, device, v.id);
  else c = std::make_unique<detail::DistTcp>(g);
  return *c;
})
}  // namespace tinygrad::dist
#endif
