#pragma once
// CUDA device: the driver API (libcuda.so.1) and NVRTC loaded with dlopen, so a program built without the
// toolkit still runs on the CPU. NVRTC compiles for the GPU's compute capability, cached on disk; events
// time kernels for DEBUG=2.
#include "device.hpp"

namespace tinygrad::detail {

// the NVRTC entry points we use (programs are void*)
struct NvrtcApi {
  int (*nvrtcVersion)(int*, int*);
  int (*nvrtcCreateProgram)(void**, const char*, const char*, int, const char* const*, const char* const*);
  int (*nvrtcCompileProgram)(void*, int, const char* const*);
  int (*nvrtcGetProgramLogSize)(void*, size_t*);
  int (*nvrtcGetProgramLog)(void*, char*);
  int (*nvrtcGetPTXSize)(void*, size_t*);
  int (*nvrtcGetPTX)(void*, char*);
  int (*nvrtcGetCUBINSize)(void*, size_t*);
  int (*nvrtcGetCUBIN)(void*, char*);
  int (*nvrtcDestroyProgram)(void**);
  int major = 0, minor = 0;
  explicit NvrtcApi(void* l) {
#define TG_NV(f) load_sym(l, f, #f, "libnvrtc")
    TG_NV(nvrtcVersion); TG_NV(nvrtcCreateProgram); TG_NV(nvrtcCompileProgram); TG_NV(nvrtcGetProgramLogSize); TG_NV(nvrtcGetProgramLog);
    TG_NV(nvrtcGetPTXSize); TG_NV(nvrtcGetPTX); TG_NV(nvrtcGetCUBINSize); TG_NV(nvrtcGetCUBIN); TG_NV(nvrtcDestroyProgram);
#undef TG_NV
    nvrtcVersion(&major, &minor);
  }
};
// NVRTC, loaded once; nullptr when no libnvrtc can be found
inline NvrtcApi* nvrtc() {
  static NvrtcApi* api = [] () -> NvrtcApi* {
    std::string cp = getenv_str("CUDA_PATH", "/usr/local/cuda");
    // (CUDA_PATH/lib/libnvrtc.so.12: PyPI's nvidia-cuda-nvrtc-cu12 wheel, as tools/fetch_model nvrtc unpacks it)
    void* l = dlopen_first({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", cp + "/lib64/libnvrtc.so", cp + "/lib/libnvrtc.so",
                            cp + "/lib/libnvrtc.so.12"});
    return l ? new NvrtcApi(l) : nullptr;  // NOTE: leaked on purpose
  }();
  return api;
}

// NVRTC: "sm_90" gives a CUBIN for that GPU, "compute_90" PTX; the result is cached on disk
class NVRTCCompiler : public Compiler {
 public:
  explicit NVRTCCompiler(std::string arch) : arch_(std::move(arch)) {
    api_ = detail::nvrtc();
    if (!api_) throw DeviceError("tinygrad: the CUDA device needs NVRTC (libnvrtc.so from the CUDA toolkit), which was not found; set CUDA_PATH");
    dir_ = cache_subdir("cuda");
  }
  std::string cache_key() const override { return cat("nvrtc", api_->major, ".", api_->minor, "|", arch_); }
  std::string compile(const std::string& src) override {
    auto path = entry(src, cubin() ? ".cubin" : ".ptx");
    if (std::string bin = read_file(path); !bin.empty()) return detail::touch_cache_entry(path), bin;
    std::string bin = nvrtc(src);
    write_file_atomic(path, bin);
    return bin;
  }
  // the sources not checked before, many kernels an NVRTC program: a program costs 50 ms here however small, a small
  // kernel in one 3-7 ms. Sources that share their prelude (the text before the kernel) go in one program, each kernel
  // renamed k<i>_<name>; a checked source leaves a mark in the cache. A program that fails is compiled one source at a
  // time, so the error names the failing one
  void check_many(const std::vector<std::string>& srcs) override {
    std::map<std::string, std::vector<std::pair<const std::string*, std::string>>> by_prelude;  // (source, kernel)
    std::set<std::string> seen;
    for (auto& s : srcs) {
      if (!seen.insert(s).second || !read_file(entry(s, ".checked")).empty() || !read_file(entry(s, cubin() ? ".cubin" : ".ptx")).empty()) continue;
      auto [prelude, kernel] = split_kernel(s, "extern \"C\" __global__ ");
      if (kernel.empty()) compile(s);  // not one kernel: alone
      else by_prelude[prelude].emplace_back(&s, std::move(kernel));
    }
    for (auto& [prelude, ks] : by_prelude) {
      std::string all = prelude;
      for (size_t i = 0; i < ks.size(); i++) {
        const std::string& k = ks[i].second;
        size_t name = kernel_name_span(k).first;
        all += (name == std::string::npos ? k : k.substr(0, name) + cat("k", i, "_") + k.substr(name)) + "\n";
      }
      try {
        nvrtc(all);
      } catch (const CompileError&) {
        for (auto& [src, _] : ks) compile(*src);  // throws for the one that fails
      }
      for (auto& [src, _] : ks) write_file_atomic(entry(*src, ".checked"), "ok\n");
    }
  }

 private:
  bool cubin() const { return arch_.rfind("sm_", 0) == 0; }
  std::filesystem::path entry(const std::string& src, const char* ext) const { return dir_ / (hex64(hash_bytes(cache_key() + "\n" + src)) + ext); }
  // src compiled: a CUBIN or PTX
  std::string nvrtc(const std::string& src) {
    bool cubin = this->cubin();
    std::string a = "--gpu-architecture=" + arch_;
    // NOTE: --minimal (CUDA 12.4+) skips headers our kernels never use; older NVRTCs reject it as an invalid option (5)
    for (bool minimal : {true, false}) {
      if (minimal && minimal_rejected_) continue;
      std::vector<const char*> opts{a.c_str()};
      if (minimal) opts.push_back("--minimal");
      void* p = nullptr;
      if (api_->nvrtcCreateProgram(&p, src.c_str(), "kernel.cu", 0, nullptr, nullptr) != 0) throw DeviceError("tinygrad: nvrtcCreateProgram failed");
      int r = api_->nvrtcCompileProgram(p, int(opts.size()), opts.data());
      if (r == 5 && minimal) { api_->nvrtcDestroyProgram(&p); minimal_rejected_ = true; continue; }
      size_t n = 0;
      api_->nvrtcGetProgramLogSize(p, &n);
      std::string log(n, '\0');
      api_->nvrtcGetProgramLog(p, log.data());
      if (r != 0) { api_->nvrtcDestroyProgram(&p); throw CompileError("tinygrad: NVRTC failed to compile a kernel for " + arch_, src, log); }
      (cubin ? api_->nvrtcGetCUBINSize : api_->nvrtcGetPTXSize)(p, &n);
      std::string bin(n, '\0');
      (cubin ? api_->nvrtcGetCUBIN : api_->nvrtcGetPTX)(p, bin.data());
      api_->nvrtcDestroyProgram(&p);
      return bin;
    }
    throw DeviceError("unreachable");
  }
  detail::NvrtcApi* api_;
  std::string arch_;
  std::filesystem::path dir_;
  bool minimal_rejected_ = false;
};

// the CUDA driver entry points we use (handles are void*, device pointers unsigned long long)
struct CudaApi {
  using H = void*;
  using Ptr = unsigned long long;
  int (*cuInit)(unsigned);
  int (*cuDeviceGetCount)(int*);
  int (*cuDeviceGet)(int*, int);
  int (*cuDeviceGetAttribute)(int*, int, int);
  int (*cuDeviceGetName)(char*, int, int);
  int (*cuDevicePrimaryCtxRetain)(H*, int);
  int (*cuCtxSetCurrent)(H);
  int (*cuCtxSynchronize)();
  int (*cuMemAlloc)(Ptr*, size_t);
  int (*cuMemFree)(Ptr);
  int (*cuMemcpyHtoD)(Ptr, const void*, size_t);
  int (*cuMemcpyDtoH)(void*, Ptr, size_t);
  int (*cuMemcpyDtoD)(Ptr, Ptr, size_t);
  int (*cuModuleLoadData)(H*, const void*);
  int (*cuModuleUnload)(H);
  int (*cuModuleGetFunction)(H*, H, const char*);
  int (*cuLaunchKernel)(H, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, H, void**, void**);
  int (*cuFuncSetAttribute)(H, int, int);
  int (*cuEventCreate)(H*, unsigned);
  int (*cuEventRecord)(H, H);
  int (*cuEventSynchronize)(H);
  int (*cuEventElapsedTime)(float*, H, H);
  int (*cuEventDestroy)(H);
  int (*cuGetErrorString)(int, const char**);
  int (*cuStreamCreate)(H*, unsigned);  // NCCL's streams (nccl.hpp)
  int (*cuStreamSynchronize)(H);
  int (*cuStreamDestroy)(H);
  // CUDA graphs (optional: nullptr on a driver without them). NOTE: the _v1 parameter struct, which the unsuffixed
  // symbols take in every driver since 10.0
  struct KernelNode { H func; unsigned grid[3], block[3], shared; void** params; void** extra; };
  int (*cuGraphCreate)(H*, unsigned) = nullptr;
  int (*cuGraphAddKernelNode)(H*, H, const H*, size_t, const KernelNode*) = nullptr;
  int (*cuGraphInstantiateWithFlags)(H*, H, unsigned long long) = nullptr;
  int (*cuGraphExecKernelNodeSetParams)(H, H, const KernelNode*) = nullptr;
  int (*cuGraphLaunch)(H, H) = nullptr;
  int (*cuGraphExecDestroy)(H) = nullptr;
  int (*cuGraphDestroy)(H) = nullptr;
  bool graphs() const {
    return cuGraphCreate && cuGraphAddKernelNode && cuGraphInstantiateWithFlags && cuGraphExecKernelNodeSetParams && cuGraphLaunch &&
        cuGraphExecDestroy && cuGraphDestroy;
  }
  explicit CudaApi(void* l) {
    const char* lib = "libcuda.so.1";
    load_sym(l, cuInit, "cuInit", lib); load_sym(l, cuDeviceGetCount, "cuDeviceGetCount", lib); load_sym(l, cuDeviceGet, "cuDeviceGet", lib);
    load_sym(l, cuDeviceGetAttribute, "cuDeviceGetAttribute", lib); load_sym(l, cuDeviceGetName, "cuDeviceGetName", lib);
    load_sym(l, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", lib); load_sym(l, cuCtxSetCurrent, "cuCtxSetCurrent", lib);
    load_sym(l, cuCtxSynchronize, "cuCtxSynchronize", lib); load_sym(l, cuMemAlloc, "cuMemAlloc_v2", lib);
    load_sym(l, cuMemFree, "cuMemFree_v2", lib);
    load_sym(l, cuMemcpyHtoD, "cuMemcpyHtoD_v2", lib); load_sym(l, cuMemcpyDtoH, "cuMemcpyDtoH_v2", lib);
    load_sym(l, cuMemcpyDtoD, "cuMemcpyDtoD_v2", lib);
    load_sym(l, cuModuleLoadData, "cuModuleLoadData", lib); load_sym(l, cuModuleUnload, "cuModuleUnload", lib);
    load_sym(l, cuModuleGetFunction, "cuModuleGetFunction", lib); load_sym(l, cuLaunchKernel, "cuLaunchKernel", lib);
    load_sym(l, cuFuncSetAttribute, "cuFuncSetAttribute", lib);
    load_sym(l, cuEventCreate, "cuEventCreate", lib); load_sym(l, cuEventRecord, "cuEventRecord", lib);
    load_sym(l, cuEventSynchronize, "cuEventSynchronize", lib);
    cuEventElapsedTime = reinterpret_cast<decltype(cuEventElapsedTime)>(::dlsym(l, "cuEventElapsedTime_v2"));
    if (!cuEventElapsedTime) load_sym(l, cuEventElapsedTime, "cuEventElapsedTime", lib);
    load_sym(l, cuEventDestroy, "cuEventDestroy_v2", lib); load_sym(l, cuGetErrorString, "cuGetErrorString", lib);
    load_sym(l, cuStreamCreate, "cuStreamCreate", lib); load_sym(l, cuStreamSynchronize, "cuStreamSynchronize", lib);
    load_sym(l, cuStreamDestroy, "cuStreamDestroy_v2", lib);
    auto opt = [&](auto& f, const char* name) { f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(::dlsym(l, name)); };
    opt(cuGraphCreate, "cuGraphCreate"); opt(cuGraphAddKernelNode, "cuGraphAddKernelNode");
    opt(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    opt(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams"); opt(cuGraphLaunch, "cuGraphLaunch");
    opt(cuGraphExecDestroy, "cuGraphExecDestroy"); opt(cuGraphDestroy, "cuGraphDestroy");
  }
  void check(int r, const char* what) const {
    if (r == 0) return;
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    throw DeviceError(cat("tinygrad: CUDA ", what, " failed: ", s ? s : "error", " (", r, ")"));
  }
};

// one opened GPU: the driver, its primary context and compute capability
struct CudaDevice {
  std::unique_ptr<CudaApi> api;
  void* ctx = nullptr;
  int dev = 0, major = 0, minor = 0;
  std::string name;
  explicit CudaDevice(int ordinal) {
    void* l = dlopen_first({"libcuda.so.1", "libcuda.so"});
    if (!l) throw DeviceError("tinygrad: the CUDA device needs libcuda.so.1 (the NVIDIA driver), which was not found");
    api = std::make_unique<CudaApi>(l);
    int n = 0;
    if (int r = api->cuInit(0); r != 0 || api->cuDeviceGetCount(&n) != 0 || n == 0)
      throw DeviceError(cat("tinygrad: CUDA: no usable NVIDIA GPU (cuInit returned ", r, ")"));
    if (ordinal >= n) throw DeviceError(cat("tinygrad: CUDA: no device ", ordinal, " (", n, " found)"));
    api->check(api->cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    api->cuDeviceGetAttribute(&major, 75, dev);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    api->cuDeviceGetAttribute(&minor, 76, dev);
    char nm[256] = {0};
    api->cuDeviceGetName(nm, sizeof nm, dev);
    name = nm;
    api->check(api->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    current();
  }
  // the context is per thread: every entry point makes it current first (cheap)
  void current() const { api->cuCtxSetCurrent(ctx); }
};

class CUDAProgram : public Program {
 public:
  CUDAProgram(std::shared_ptr<CudaDevice> d, const std::string& fn, const std::string& bin, const LaunchDims& launch) : d_(std::move(d)) {
    d_->current();
    d_->api->check(d_->api->cuModuleLoadData(&mod_, bin.c_str()), "cuModuleLoadData");
    d_->api->check(d_->api->cuModuleGetFunction(&fn_, mod_, fn.c_str()), "cuModuleGetFunction");
    for (size_t i = 0; i < 3; i++) dims_[i] = unsigned(launch.global[i]), dims_[i + 3] = unsigned(launch.local[i]);
    smem_ = unsigned(launch.smem);
    if (launch.varies()) launch_ = launch;
    // past 48 KB a kernel's dynamic workgroup memory needs the opt-in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    if (smem_ > 48 * 1024) d_->api->check(d_->api->cuFuncSetAttribute(fn_, 8, int(smem_)), "cuFuncSetAttribute (workgroup memory)");
    d_->api->cuEventCreate(&ev_[0], 0);
    d_->api->cuEventCreate(&ev_[1], 0);
  }
  ~CUDAProgram() override {
    d_->current();
    d_->api->cuCtxSynchronize();  // NOTE: a launch may still run: the module must outlive it (the program cache evicts)
    for (auto e : ev_) d_->api->cuEventDestroy(e);
    d_->api->cuModuleUnload(mod_);
  }
  // a launch's parameters: pointers to the variables' values (as the kernel's ints, held in v32), then to the buffers
  static std::vector<void*> kernel_args(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, std::vector<int>& v32) {
    v32.assign(vals.begin(), vals.end());
    std::vector<void*> r;
    for (auto& v : v32) r.push_back(&v);
    for (auto& b : bufs) r.push_back(const_cast<void**>(&b));
    return r;
  }
  // the workgroups of a launch with these variable values
  std::array<unsigned, 3> grid(const std::vector<int64_t>& vals) const {
    if (!launch_) return {dims_[0], dims_[1], dims_[2]};
    auto g = launch_->global_at(vals);
    return {unsigned(g[0]), unsigned(g[1]), unsigned(g[2])};
  }
  // the launch as a graph node's parameters (params: pointers to the arguments)
  CudaApi::KernelNode node(void** params, const std::vector<int64_t>& vals) const {
    auto g = grid(vals);
    return {fn_, {g[0], g[1], g[2]}, {dims_[3], dims_[4], dims_[5]}, smem_, params, nullptr};
  }
  double call(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, bool wait) override {
    auto& a = *d_->api;
    d_->current();
    std::vector<int> v32;
    auto args = kernel_args(bufs, vals, v32);
    if (wait) a.cuEventRecord(ev_[0], nullptr);
    auto g = grid(vals);
    a.check(a.cuLaunchKernel(fn_, g[0], g[1], g[2], dims_[3], dims_[4], dims_[5], smem_, nullptr, args.data(), nullptr),
            "cuLaunchKernel");
    if (!wait) return 0;
    a.cuEventRecord(ev_[1], nullptr);
    a.check(a.cuEventSynchronize(ev_[1]), "kernel execution");
    float ms = 0;
    a.cuEventElapsedTime(&ms, ev_[0], ev_[1]);
    return ms * 1e-3;
  }

 private:
  std::shared_ptr<CudaDevice> d_;
  void *mod_ = nullptr, *fn_ = nullptr, *ev_[2] = {nullptr, nullptr};
  unsigned dims_[6], smem_ = 0;
  std::optional<LaunchDims> launch_;  // a launch whose workgroups vary with the variables
};

// TinyJit's replay on CUDA: the kernels as one graph, each depending on the one before
class CUDAGraph : public GraphExec {
 public:
  CUDAGraph(std::shared_ptr<CudaDevice> d, const std::vector<GraphLaunch>& launches) : d_(std::move(d)) {
    auto& a = *d_->api;
    d_->current();
    a.check(a.cuGraphCreate(&graph_, 0), "cuGraphCreate");
    for (auto& l : launches) {
      auto* prg = static_cast<CUDAProgram*>(l.prg);  // NOTE: the engine gives a device's graph only that device's programs
      std::vector<int> v32;
      auto params = CUDAProgram::kernel_args(l.bufs, l.vals, v32);
      auto kn = prg->node(params.data(), l.vals);
      void* node = nullptr;
      a.check(a.cuGraphAddKernelNode(&node, graph_, nodes_.empty() ? nullptr : &nodes_.back(), nodes_.empty() ? 0 : 1, &kn), "cuGraphAddKernelNode");
      nodes_.push_back(node);
      progs_.push_back(prg);
    }
    a.check(a.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiate");
  }
  ~CUDAGraph() override {
    d_->current();
    d_->api->cuCtxSynchronize();
    if (exec_) d_->api->cuGraphExecDestroy(exec_);
    if (graph_) d_->api->cuGraphDestroy(graph_);
  }
  void set_args(size_t i, const std::vector<void*>& bufs, const std::vector<int64_t>& vals) override {
    d_->current();
    std::vector<int> v32;
    auto params = CUDAProgram::kernel_args(bufs, vals, v32);
    auto kn = progs_[i]->node(params.data(), vals);
    d_->api->check(d_->api->cuGraphExecKernelNodeSetParams(exec_, nodes_[i], &kn), "cuGraphExecKernelNodeSetParams");
  }
  void launch() override { d_->current(); d_->api->check(d_->api->cuGraphLaunch(exec_, nullptr), "cuGraphLaunch"); }

 private:
  std::shared_ptr<CudaDevice> d_;
  void *graph_ = nullptr, *exec_ = nullptr;
  std::vector<void*> nodes_;
  std::vector<CUDAProgram*> progs_;
};

struct CUDAAllocator : Allocator {
  std::shared_ptr<CudaDevice> d;
  explicit CUDAAllocator(std::shared_ptr<CudaDevice> dv) : d(std::move(dv)) {}
  static CudaApi::Ptr P(const void* p) { return CudaApi::Ptr(reinterpret_cast<uintptr_t>(p)); }
  void* alloc_raw(size_t bytes) override {
    d->current();
    CudaApi::Ptr p = 0;
    int r = d->api->cuMemAlloc(&p, bytes);
    if (r == 2) return nullptr;  // CUDA_ERROR_OUT_OF_MEMORY: the Allocator frees its cache and retries
    d->api->check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(uintptr_t(p));
  }
  void free_raw(void* p, size_t) override { d->current(); d->api->cuMemFree(P(p)); }
  void copyin(void* dst, const void* src, size_t n) override { d->current(); d->api->check(d->api->cuMemcpyHtoD(P(dst), src, n), "cuMemcpyHtoD"); }
  void copyout(void* dst, const void* src, size_t n) override { d->current(); d->api->check(d->api->cuMemcpyDtoH(dst, P(src), n), "cuMemcpyDtoH"); }
  void copy(void* dst, const void* src, size_t n) override { d->current(); d->api->check(d->api->cuMemcpyDtoD(P(dst), P(src), n), "cuMemcpyDtoD"); }
};

// a group of CUDA instances through NCCL, or nullptr without libnccl (nccl.hpp)
inline std::unique_ptr<Communicator> nccl_communicator(const std::vector<std::string>& instances);

// the descriptor (nothing opens before first use); RuntimeRegistry adds it on first use (runtime/devices.hpp)
inline DeviceSpec cuda_device() {
  DeviceSpec d;
  d.name = "CUDA";
  d.priority = 2;  // the default device where a GPU opens
  d.renderer = "CUDA";
  d.open = [](const std::string& name) {
    auto p = name.find(':');
    auto dv = std::make_shared<CudaDevice>(p == std::string::npos ? 0 : std::stoi(name.substr(p + 1)));
    auto rt = std::make_unique<DeviceRuntime>();
    rt->allocator = std::make_unique<CUDAAllocator>(dv);
    bool hopper = dv->major == 9 && dv->minor == 0;  // sm_90a: the architecture-specific wgmma
    rt->compiler = std::make_unique<NVRTCCompiler>(cat("sm_", dv->major, dv->minor, hopper ? "a" : ""));
    rt->tensor_cores = dv->major >= 8;
    rt->wgmma = hopper;
    rt->workgroups = true;
    rt->load = [dv](const std::string& fn, const std::string& bin, const LaunchDims& launch) -> std::unique_ptr<Program> {
      return std::make_unique<CUDAProgram>(dv, fn, bin, launch);
    };
    rt->synchronize = [dv] { dv->current(); dv->api->check(dv->api->cuCtxSynchronize(), "cuCtxSynchronize"); };
    if (dv->api->graphs())
      rt->graph = [dv](const std::vector<GraphLaunch>& l) -> std::unique_ptr<GraphExec> {
        return std::make_unique<CUDAGraph>(dv, l);
      };
    if (flags().debug >= 1) std::fprintf(stderr, "CUDA: %s, sm_%d%d\n", dv->name.c_str(), dv->major, dv->minor);
    return rt;
  };
  // CUDA_COMPILE_CHECK=1 (CI without a GPU): every new kernel is also rendered as CUDA and compiled to PTX with NVRTC
  // (CUDA_COMPILE_ARCH, default compute_90), so a CUDA rendering bug fails on any machine. No NVRTC: one message, no check.
  d.check_compiler = []() -> std::unique_ptr<Compiler> {
    if (!getenv_int("CUDA_COMPILE_CHECK", 0)) return nullptr;
    try { return std::make_unique<NVRTCCompiler>(getenv_str("CUDA_COMPILE_ARCH", "compute_90")); }
    catch (const DeviceError& e) { std::fprintf(stderr, "CUDA_COMPILE_CHECK skipped: %s\n", e.what()); return nullptr; }
  };
  d.communicator = nccl_communicator;
  return d;
}
}  // namespace tinygrad::detail
