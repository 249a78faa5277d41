#pragma once
// NCCL, NVIDIA's collectives, loaded with dlopen like the rest of CUDA: no NCCL headers at build time, the few ABI types
// below are nccl.h's (checked against NCCL 2.32's). A group of one process's CUDA instances reduces through one
// ncclCommInitAll (the CUDA spec's communicator); dist.hpp joins one process per GPU through ncclCommInitRank.
// NOTE: NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 is set before NCCL loads (on some hosts it can take the
// GPUs out of service), and nothing here calls cuMulticastCreate.
#include "cuda.hpp"
#include "collective.hpp"

namespace tinygrad::detail {

// the NCCL entry points we use (ncclComm_t and cudaStream_t are void*, the enums int)
struct NcclApi {
  using Comm = void*;
  struct UniqueId { char internal[128]; };  // ncclUniqueId (NCCL_UNIQUE_ID_BYTES)
  // ncclConfig_t as NCCL 2.14 laid it out (version 21400): NCCL copies `size` bytes and defaults every later field
  struct Config {
    size_t size = sizeof(Config);
    unsigned magic = 0xcafebeef, version = 21400;  // NCCL_API_MAGIC, NCCL_VERSION(2, 14, 0)
    int blocking = INT32_MIN, cga_cluster_size = INT32_MIN, min_ctas = INT32_MIN, max_ctas = INT32_MIN;  // NCCL_CONFIG_UNDEF_INT
    const char* net_name = nullptr;
    int split_share = INT32_MIN;
  };
  static constexpr int kSuccess = 0, kInProgress = 7;  // ncclResult_t
  int (*ncclGetVersion)(int*);
  int (*ncclGetUniqueId)(UniqueId*);
  int (*ncclCommInitAll)(Comm*, int, const int*);
  int (*ncclCommInitRankConfig)(Comm*, int, UniqueId, int, Config*);
  int (*ncclCommGetAsyncError)(Comm, int*);
  int (*ncclCommAbort)(Comm);
  int (*ncclCommDestroy)(Comm);
  int (*ncclAllReduce)(const void*, void*, size_t, int, int, Comm, void*);
  int (*ncclGroupStart)();
  int (*ncclGroupEnd)();
  const char* (*ncclGetErrorString)(int);
  const char* (*ncclGetLastError)(Comm);
  int version = 0;
  explicit NcclApi(void* l) {
#define TG_NC(f) load_sym(l, f, #f, "libnccl")
    TG_NC(ncclGetVersion); TG_NC(ncclGetUniqueId); TG_NC(ncclCommInitAll); TG_NC(ncclCommInitRankConfig); TG_NC(ncclCommGetAsyncError);
    TG_NC(ncclCommAbort); TG_NC(ncclCommDestroy); TG_NC(ncclAllReduce); TG_NC(ncclGroupStart); TG_NC(ncclGroupEnd);
    TG_NC(ncclGetErrorString); TG_NC(ncclGetLastError);
#undef TG_NC
    ncclGetVersion(&version);
  }
  // a failed call's message: NCCL's name for the result and its last error's text
  std::string message(int r, const char* what, Comm c = nullptr) const {
    const char* s = ncclGetErrorString(r);
    const char* last = ncclGetLastError(c);
    return cat("tinygrad: NCCL ", what, " failed: ", s ? s : "error", " (", r, ")", last && *last ? cat(": ", last) : "");
  }
  void check(int r, const char* what, Comm c = nullptr) const { if (r != kSuccess) throw DeviceError(message(r, what, c)); }
};

// where libnccl may be: TINYGRAD_NCCL (a path) first, then the loader's search path, then the nvidia-nccl wheels
// (pip's nvidia/nccl/lib) of the usual Python prefixes, found by listing folders: PyTorch's machines often have NCCL
// only there
inline std::vector<std::string> nccl_candidates() {
  std::vector<std::string> r;
  if (std::string p = getenv_str("TINYGRAD_NCCL"); !p.empty()) r.push_back(p);
  r.insert(r.end(), {"libnccl.so.2", "libnccl.so"});
  std::vector<std::string> roots{"/usr/local/lib", "/usr/lib", "/opt/conda/lib"};
  for (const char* v : {"VIRTUAL_ENV", "CONDA_PREFIX"}) if (std::string p = getenv_str(v); !p.empty()) roots.push_back(p + "/lib");
  if (std::string h = getenv_str("HOME"); !h.empty()) roots.push_back(h + "/.local/lib");
  namespace fs = std::filesystem;
  for (auto& root : roots) {
    std::error_code ec;
    std::vector<fs::path> pys;
    for (fs::directory_iterator it(root, ec), e; !ec && it != e; it.increment(ec))
      if (it->path().filename().string().rfind("python3", 0) == 0) pys.push_back(it->path());
    std::sort(pys.begin(), pys.end());
    for (auto& py : pys)
      for (const char* sp : {"site-packages", "dist-packages"})
        if (auto p = py / sp / "nvidia/nccl/lib/libnccl.so.2"; fs::exists(p, ec)) r.push_back(p.string());
  }
  return r;
}
// NCCL, loaded once; nullptr when no libnccl loads (nccl_missing() says why)
inline std::string& nccl_missing() { static std::string why; return why; }
inline NcclApi* nccl() {
  static NcclApi* api = []() -> NcclApi* {
    // NOTE: overwrites a user's NCCL_NVLS_ENABLE=1 too (issue 41): NVLS stays off in every process the library runs in
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
    auto names = nccl_candidates();
    for (auto& n : names)
      if (void* l = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        try { return new NcclApi(l); }  // NOTE: leaked on purpose
        catch (const DeviceError& e) { nccl_missing() = e.what(); return nullptr; }
      }
    std::string tried;
    for (auto& n : names) tried += (tried.empty() ? "" : ", ") + n;
    nccl_missing() = cat("no libnccl loads (tried ", tried, "; TINYGRAD_NCCL=/path/libnccl.so.2 names one)");
    return nullptr;
  }();
  return api;
}

// ncclDataType_t of a dtype, or -1 where NCCL has none (bool, int16, uint16 reduce through the host)
inline int nccl_dtype(DType d) {
  switch (d) {
    case DType::Int8: return 0;
    case DType::UInt8: return 1;
    case DType::Int32: return 2;
    case DType::UInt32: return 3;
    case DType::Int64: return 4;
    case DType::UInt64: return 5;
    case DType::Float16: return 6;
    case DType::Float32: return 7;
    case DType::Float64: return 8;
    case DType::BFloat16: return 9;
    default: return -1;
  }
}
// ncclRedOp_t
inline int nccl_op(ReduceKind op) {
  return op == ReduceKind::Sum ? 0 : op == ReduceKind::Prod ? 1 : op == ReduceKind::Max ? 2 : 3;
}
// the ordinal of "CUDA" or "CUDA:n"
inline int cuda_ordinal(const std::string& instance) {
  auto p = instance.find(':');
  return p == std::string::npos ? 0 : std::stoi(instance.substr(p + 1));
}
// every member's buffer: one dtype and size
inline void check_members(const std::vector<Buffer*>& send, const std::vector<Buffer*>& recv, size_t n, const char* who) {
  if (send.size() != n || recv.size() != n)
    throw DeviceError(cat("tinygrad: ", who, ".all_reduce takes one send and one recv buffer per member (", n, "), got ", send.size(), " and ",
                          recv.size()));
  for (size_t i = 0; i < n; i++)
    if (send[i]->dtype != send[0]->dtype || recv[i]->dtype != send[0]->dtype || send[i]->size != send[0]->size || recv[i]->size != send[0]->size)
      throw DeviceError(cat("tinygrad: ", who, ".all_reduce needs buffers of one dtype and size"));
}

// a batch's all-reduces NCCL runs (checked: one buffer per member each; empty ones dropped); those of a dtype NCCL
// lacks go to `host`
inline std::vector<const AllReduce*> nccl_part(const std::vector<AllReduce>& batch, size_t n, const char* who, std::vector<AllReduce>& host) {
  std::vector<const AllReduce*> mine;
  for (auto& a : batch) {
    check_members(a.send, a.recv, n, who);
    if (nccl_dtype(a.send[0]->dtype) < 0) host.push_back(a);
    else if (a.send[0]->size > 0) mine.push_back(&a);
  }
  return mine;
}

// a blocking stream in a device's primary context: it orders with the legacy NULL stream our kernels run on
struct CudaStream {
  std::shared_ptr<CudaDevice> dev;
  void* s = nullptr;
  explicit CudaStream(int ordinal) : dev(std::make_shared<CudaDevice>(ordinal)) {
    dev->current();
    dev->api->check(dev->api->cuStreamCreate(&s, 0), "cuStreamCreate");
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() {
    dev->current();
    dev->api->cuStreamSynchronize(s);
    dev->api->cuStreamDestroy(s);
  }
};

// one process's CUDA instances as one NCCL group (ncclCommInitAll): a batch of all-reduces is one ncclAllReduce per
// member and all-reduce in one ncclGroupStart/End, queued on each member's stream
class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(NcclApi& api, const std::vector<std::string>& instances) : api_(api) {
    std::vector<int> ords;
    for (auto& i : instances) ords.push_back(cuda_ordinal(i)), streams_.push_back(std::make_unique<CudaStream>(ords.back()));
    comms_.resize(ords.size());
    api_.check(api_.ncclCommInitAll(comms_.data(), int(ords.size()), ords.data()), "ncclCommInitAll");
  }
  ~NcclCommunicator() override {
    for (size_t i = 0; i < comms_.size(); i++) streams_[i]->dev->current(), api_.ncclCommDestroy(comms_[i]);
  }
  void reduce(const std::vector<AllReduce>& batch) override {
    std::vector<AllReduce> host;
    auto mine = nccl_part(batch, comms_.size(), "the NCCL group", host);
    host_.all_reduce(host);
    if (mine.empty()) return;
    api_.check(api_.ncclGroupStart(), "ncclGroupStart");
    int r = NcclApi::kSuccess;
    size_t failed = 0;
    for (const AllReduce* a : mine)
      for (size_t i = 0; i < comms_.size() && r == NcclApi::kSuccess; i++) {
        streams_[i]->dev->current();
        r = api_.ncclAllReduce(a->send[i]->ptr(), a->recv[i]->ptr(), size_t(a->send[i]->size), nccl_dtype(a->send[i]->dtype), nccl_op(a->op),
                               comms_[i], streams_[i]->s);
        failed = i;
      }
    int end = api_.ncclGroupEnd();  // NOTE: also after a failed call: the group must be closed
    api_.check(r, "ncclAllReduce", comms_[failed]);
    api_.check(end, "ncclGroupEnd");
  }

 private:
  NcclApi& api_;
  std::vector<std::unique_ptr<CudaStream>> streams_;
  std::vector<NcclApi::Comm> comms_;
  HostCommunicator host_;
};

inline std::unique_ptr<Communicator> nccl_communicator(const std::vector<std::string>& instances) {
  NcclApi* api = nccl();
  if (!api) {
    if (flags().debug >= 1) std::fprintf(stderr, "CUDA: collectives through the host: %s\n", nccl_missing().c_str());
    return nullptr;
  }
  std::set<int> ords;
  for (auto& i : instances) ords.insert(cuda_ordinal(i));
  if (ords.size() != instances.size()) return nullptr;  // one GPU twice: NCCL refuses it, the host does not
  return std::make_unique<NcclCommunicator>(*api, instances);
}
}  // namespace tinygrad::detail
