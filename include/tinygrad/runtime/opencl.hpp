#pragma once
// OpenCL device: libOpenCL.so.1 loaded with dlopen (no headers needed); program binaries cached on disk.
// Device choice: CL_DEVICE (an index over all devices), else the first GPU, else the first device.
#include <optional>
#include <thread>
#include <utility>
#include "device.hpp"

namespace tinygrad::detail {
// the OpenCL 1.2 entry points we use; handles are void*
struct CLApi {
  using H = void*;
  int (*clGetPlatformIDs)(unsigned, H*, unsigned*);
  int (*clGetDeviceIDs)(H, uint64_t, unsigned, H*, unsigned*);
  int (*clGetDeviceInfo)(H, unsigned, size_t, void*, size_t*);
  H (*clCreateContext)(const intptr_t*, unsigned, const H*, void*, void*, int*);
  H (*clCreateCommandQueue)(H, H, uint64_t, int*);
  H (*clCreateBuffer)(H, uint64_t, size_t, void*, int*);
  int (*clReleaseMemObject)(H);
  int (*clEnqueueWriteBuffer)(H, H, unsigned, size_t, size_t, const void*, unsigned, const H*, H*);
  int (*clEnqueueReadBuffer)(H, H, unsigned, size_t, size_t, void*, unsigned, const H*, H*);
  int (*clEnqueueCopyBuffer)(H, H, H, size_t, size_t, size_t, unsigned, const H*, H*);
  H (*clCreateProgramWithSource)(H, unsigned, const char**, const size_t*, int*);
  H (*clCreateProgramWithBinary)(H, unsigned, const H*, const size_t*, const unsigned char**, int*, int*);
  int (*clBuildProgram)(H, unsigned, const H*, const char*, void*, void*);
  int (*clGetProgramBuildInfo)(H, H, unsigned, size_t, void*, size_t*);
  int (*clGetProgramInfo)(H, unsigned, size_t, void*, size_t*);
  H (*clCreateKernel)(H, const char*, int*);
  int (*clGetKernelInfo)(H, unsigned, size_t, void*, size_t*);
  int (*clSetKernelArg)(H, unsigned, size_t, const void*);
  int (*clEnqueueNDRangeKernel)(H, H, unsigned, const size_t*, const size_t*, const size_t*, unsigned, const H*, H*);
  int (*clFinish)(H);
  int (*clFlush)(H);
  int (*clWaitForEvents)(unsigned, const H*);
  int (*clGetEventProfilingInfo)(H, unsigned, size_t, void*, size_t*);
  int (*clReleaseEvent)(H);
  int (*clReleaseKernel)(H);
  int (*clReleaseProgram)(H);
  explicit CLApi(void* l) {
#define TG_CL(f) load_sym(l, f, #f, "libOpenCL.so.1")
    TG_CL(clGetPlatformIDs); TG_CL(clGetDeviceIDs); TG_CL(clGetDeviceInfo); TG_CL(clCreateContext); TG_CL(clCreateCommandQueue);
    TG_CL(clCreateBuffer); TG_CL(clReleaseMemObject); TG_CL(clEnqueueWriteBuffer); TG_CL(clEnqueueReadBuffer); TG_CL(clEnqueueCopyBuffer);
    TG_CL(clCreateProgramWithSource); TG_CL(clCreateProgramWithBinary); TG_CL(clBuildProgram); TG_CL(clGetProgramBuildInfo);
    TG_CL(clGetProgramInfo); TG_CL(clCreateKernel); TG_CL(clGetKernelInfo); TG_CL(clSetKernelArg); TG_CL(clEnqueueNDRangeKernel);
    TG_CL(clFinish); TG_CL(clFlush); TG_CL(clWaitForEvents); TG_CL(clGetEventProfilingInfo); TG_CL(clReleaseEvent);
    TG_CL(clReleaseKernel); TG_CL(clReleaseProgram);
#undef TG_CL
  }
};
inline void cl_check(int err, const char* what) {
  if (err != 0) throw DeviceError(cat("tinygrad: OpenCL ", what, " failed with error ", err));
}

// one opened device: context and in-order queue (with profiling, for DEBUG=2 kernel times)
struct CLDevice {
  std::unique_ptr<CLApi> api;
  void *dev = nullptr, *ctx = nullptr, *queue = nullptr;
  std::string name, key;
  size_t max_wg = 256;
  bool fp16 = false;  // cl_khr_fp16
  std::string info(unsigned param) const {
    size_t n = 0;
    api->clGetDeviceInfo(dev, param, 0, nullptr, &n);
    std::string s(n, '\0');
    api->clGetDeviceInfo(dev, param, n, s.data(), nullptr);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  explicit CLDevice(int ordinal) {
    void* lib = dlopen_first({"libOpenCL.so.1", "libOpenCL.so"});
    if (!lib) throw DeviceError("tinygrad: the CL device needs libOpenCL.so.1 (an OpenCL ICD loader), which was not found");
    api = std::make_unique<CLApi>(lib);
    unsigned np = 0;
    if (api->clGetPlatformIDs(0, nullptr, &np) != 0 || np == 0)
      throw DeviceError("tinygrad: OpenCL: no platform found (is an ICD such as pocl-opencl-icd installed?)");
    std::vector<void*> plats(np), gpus, all;
    api->clGetPlatformIDs(np, plats.data(), nullptr);
    for (auto p : plats)
      for (auto [type, out] : {std::pair{uint64_t(1) << 2, &gpus}, std::pair{uint64_t(0xFFFFFFFF), &all}}) {
        unsigned nd = 0;
        if (api->clGetDeviceIDs(p, type, 0, nullptr, &nd) != 0 || nd == 0) continue;
        std::vector<void*> d(nd);
        api->clGetDeviceIDs(p, type, nd, d.data(), nullptr);
        out->insert(out->end(), d.begin(), d.end());
      }
    if (all.empty()) throw DeviceError("tinygrad: OpenCL: no device found");
    int idx = ordinal >= 0 ? ordinal : int(getenv_int("CL_DEVICE", -1));
    if (idx >= int(all.size())) throw DeviceError(cat("tinygrad: OpenCL: no device ", idx, " (", all.size(), " found)"));
    dev = idx >= 0 ? all[size_t(idx)] : !gpus.empty() ? gpus[0] : all[0];
    int err = 0;
    ctx = api->clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    cl_check(err, "clCreateContext");
    queue = api->clCreateCommandQueue(ctx, dev, 1 << 1 /* CL_QUEUE_PROFILING_ENABLE */, &err);
    cl_check(err, "clCreateCommandQueue");
    name = info(0x102B /* CL_DEVICE_NAME */);
    key = name + "|" + info(0x102D /* CL_DRIVER_VERSION */);
    api->clGetDeviceInfo(dev, 0x1004 /* CL_DEVICE_MAX_WORK_GROUP_SIZE */, sizeof max_wg, &max_wg, nullptr);
    fp16 = (" " + info(0x1030 /* CL_DEVICE_EXTENSIONS */) + " ").find(" cl_khr_fp16 ") != std::string::npos;
  }
  // the program of a batch file (CLCompiler::compile_many), built once and shared by the kernels loaded from it
  void* acquire_batch(const std::string& file) {
    std::lock_guard lk(batch_mu);
    auto it = batch_progs.try_emplace(file, nullptr, 0).first;
    if (!it->second.first) {
      std::string bin = read_file(file);
      if (bin.empty() || !(it->second.first = build("", &bin))) {
        batch_progs.erase(it);
        throw DeviceError("tinygrad: OpenCL rejected the cached program binary " + file);
      }
    }
    it->second.second++;
    return it->second.first;
  }
  void release_batch(const std::string& file) {
    std::lock_guard lk(batch_mu);
    auto it = batch_progs.find(file);
    if (it != batch_progs.end() && --it->second.second == 0) { api->clReleaseProgram(it->second.first); batch_progs.erase(it); }
  }
  std::map<std::string, std::pair<void*, size_t>> batch_progs;  // file -> (program, kernels loaded from it)
  std::mutex batch_mu;
  // a program built for this device, from source or binary; a failed build is a CompileError with the log
  void* build(const std::string& src, const std::string* binary) const {
    int err = 0, st = 0;
    void* p;
    if (binary) {
      size_t n = binary->size();
      auto b = reinterpret_cast<const unsigned char*>(binary->data());
      p = api->clCreateProgramWithBinary(ctx, 1, &dev, &n, &b, &st, &err);
    } else {
      const char* s = src.c_str();
      p = api->clCreateProgramWithSource(ctx, 1, &s, nullptr, &err);
    }
    if (!p || err) return nullptr;
    if (api->clBuildProgram(p, 1, &dev, "", nullptr, nullptr) != 0) {
      size_t n = 0;
      api->clGetProgramBuildInfo(p, dev, 0x1183 /* CL_PROGRAM_BUILD_LOG */, 0, nullptr, &n);
      std::string log(n, '\0');
      api->clGetProgramBuildInfo(p, dev, 0x1183, n, log.data(), nullptr);
      api->clReleaseProgram(p);
      if (binary) return nullptr;
      throw CompileError("tinygrad: OpenCL failed to build a kernel for " + name, src, log);
    }
    return p;
  }
};

// a kernel built in a program of several: its name there and the program binary's file in the cache (with the file's hash)
struct CLBatchRef { std::string name, file, hash; };
inline constexpr std::string_view kCLBatchMagic = "tinygrad OpenCL batch\n";
inline std::string batch_ref(const CLBatchRef& r) { return cat(kCLBatchMagic, r.name, "\n", r.file, "\n", r.hash, "\n"); }
inline std::optional<CLBatchRef> parse_batch_ref(const std::string& bin) {
  if (bin.rfind(kCLBatchMagic, 0) != 0) return std::nullopt;
  std::vector<std::string> w;
  for (size_t b = kCLBatchMagic.size(), e; (e = bin.find('\n', b)) != std::string::npos; b = e + 1) w.push_back(bin.substr(b, e - b));
  if (w.size() != 3) return std::nullopt;
  return CLBatchRef{w[0], w[1], w[2]};
}

// compiles to the device's program binary, cached on disk under the device name and driver version
class CLCompiler : public Compiler {
 public:
  explicit CLCompiler(std::shared_ptr<CLDevice> d) : d_(std::move(d)) {
    dir_ = cache_subdir("cl");
  }
  std::string cache_key() const override { return d_->key; }
  std::string compile(const std::string& src) override {
    std::string bin = lookup(src);
    if (bin.empty()) write_file_atomic(path(src), bin = binary(src));
    return bin;
  }
  // the kernels not in the cache are built a few programs at a time (one per core), each of many kernels: a program's
  // build has a fixed cost (PoCL parses the OpenCL C headers, 0.27 s here, against 0.08 s a kernel), so 20 kernels in
  // one program build in 0.2 s, not 5.4. A program per core, of at least 4 kernels; a kernel built so is cached as a
  // reference to its program's file ("batch").
  std::vector<std::string> compile_many(const std::vector<std::string>& srcs) override {
    std::vector<std::string> out(srcs.size());
    std::map<std::string, std::vector<size_t>> todo;  // by source: dedupes
    for (size_t i = 0; i < srcs.size(); i++) if ((out[i] = lookup(srcs[i])).empty()) todo[srcs[i]].push_back(i);
    // a program's kernels share their prelude (pragmas, helpers): the sources are grouped by it, then split per core
    std::map<std::string, std::vector<const std::string*>> by_prelude;
    for (auto& [src, _] : todo) {
      auto [prelude, kernel] = split(src);
      by_prelude[kernel.empty() ? "\1" + src : prelude].push_back(&src);  // one that does not split: alone
    }
    size_t cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::vector<const std::string*>> batches;
    for (auto& [_, v] : by_prelude) {
      size_t k = std::min((v.size() + 3) / 4, cores), first = batches.size();
      batches.resize(first + k);
      for (size_t i = 0; i < v.size(); i++) batches[first + i % k].push_back(v[i]);
    }
    std::vector<std::vector<std::string>> bins(batches.size());
    std::vector<std::exception_ptr> err(batches.size());
    parallel_for(batches.size(), [&](size_t b) {
      try { bins[b] = build_batch(batches[b]); } catch (...) { err[b] = std::current_exception(); }
    });
    for (auto& e : err) if (e) std::rethrow_exception(e);
    for (size_t b = 0; b < batches.size(); b++)
      for (size_t j = 0; j < batches[b].size(); j++) for (auto i : todo[*batches[b][j]]) out[i] = bins[b][j];
    return out;
  }

 private:
  std::filesystem::path path(const std::string& src) const { return dir_ / (hex64(hash_bytes(d_->key + "\n" + src)) + ".bin"); }
  // a cached binary; a batch reference whose program file is gone or changed counts as none (a file is hashed once a
  // process, not once for each of its kernels; after that its size is checked)
  // a file that is no regular file (a link, a directory, a FIFO) is removed, so the new entry takes its place; a batch
  // reference is followed only to a program file in this folder
  std::string lookup(const std::string& src) {
    std::string why, bin = read_file(path(src), &why);
    if (!why.empty()) detail::remove_cache_entry(path(src));
    auto ref = parse_batch_ref(bin);
    if (!ref) {
      if (!bin.empty()) detail::touch_cache_entry(path(src));
      return bin;
    }
    if (!detail::cache_entry_name(ref->file) || ref->file.find('/') != std::string::npos) return {};
    std::string file = (dir_ / ref->file).string();
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
    std::lock_guard lk(checked_mu_);
    if (checked_[file] != std::pair{ref->hash, uintmax_t(st.st_size)}) {
      std::string prog = read_file(file, &why);
      if (!why.empty()) detail::remove_cache_entry(file);
      if (prog.empty() || hex64(hash_bytes(prog)) != ref->hash) return {};
      checked_[file] = {ref->hash, prog.size()};
    }
    detail::touch_cache_entry(path(src));
    detail::touch_cache_entry(file);
    return batch_ref({ref->name, file, ref->hash});  // the loader reads the file by its full path
  }
  std::string binary(const std::string& src) const {
    void* p = d_->build(src, nullptr);
    size_t n = 0;
    d_->api->clGetProgramInfo(p, 0x1165 /* CL_PROGRAM_BINARY_SIZES */, sizeof n, &n, nullptr);
    std::string bin(n, '\0');
    unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
    d_->api->clGetProgramInfo(p, 0x1166 /* CL_PROGRAM_BINARIES */, sizeof ptr, &ptr, nullptr);
    d_->api->clReleaseProgram(p);
    return bin;
  }
  static std::pair<std::string, std::string> split(const std::string& src) { return split_kernel(src, "__kernel "); }
  // the sources in one program, each kernel renamed k<i>_<name> (names may repeat): their binaries (references); a
  // single one, or one that does not split, is built alone; a batch that fails to build is built one by one, so an
  // error names its kernel
  std::vector<std::string> build_batch(const std::vector<const std::string*>& srcs) {
    auto alone = [&] {
      std::vector<std::string> r;
      for (auto* s : srcs) r.push_back(compile(*s));
      return r;
    };
    std::string all = srcs.empty() ? "" : split(*srcs[0]).first;
    std::vector<std::string> names;
    for (size_t i = 0; i < srcs.size() && srcs.size() > 1; i++) {
      auto [prelude, kernel] = split(*srcs[i]);
      auto [b, e] = kernel_name_span(kernel);
      if (kernel.empty() || b == std::string::npos) return alone();
      names.push_back(cat("k", i, "_", kernel.substr(b, e - b)));
      all += kernel.substr(0, b) + names.back() + kernel.substr(e) + "\n";
    }
    if (names.empty()) return alone();
    std::string prog;
    try { prog = binary(all); } catch (const CompileError&) { return alone(); }
    std::string file = hex64(hash_bytes(d_->key + "\n" + all)) + ".prog", hash = hex64(hash_bytes(prog)), full = (dir_ / file).string();
    write_file_atomic(full, prog);
    {
      std::lock_guard lk(checked_mu_);
      checked_[full] = {hash, prog.size()};
    }
    std::vector<std::string> r;
    for (size_t i = 0; i < srcs.size(); i++) {
      write_file_atomic(path(*srcs[i]), batch_ref({names[i], file, hash}));
      r.push_back(batch_ref({names[i], full, hash}));  // in memory: the full path, as lookup gives it
    }
    return r;
  }
  std::shared_ptr<CLDevice> d_;
  std::filesystem::path dir_;
  std::map<std::string, std::pair<std::string, uintmax_t>> checked_;  // program file -> (hash, size) when it was read
  std::mutex checked_mu_;
};

class CLProgram : public Program {
 public:
  CLProgram(std::shared_ptr<CLDevice> d, const std::string& fn, const std::string& bin, const LaunchDims& launch) : d_(std::move(d)) {
    auto ref = parse_batch_ref(bin);
    if (ref) prg_ = d_->acquire_batch(batch_ = ref->file);
    else if (!(prg_ = d_->build("", &bin))) throw DeviceError("tinygrad: OpenCL rejected a cached program binary for " + fn);
    int err = 0;
    k_ = d_->api->clCreateKernel(prg_, (ref ? ref->name : fn).c_str(), &err);
    if (err) release_program();
    cl_check(err, "clCreateKernel");
    d_->api->clGetKernelInfo(k_, 0x1191 /* CL_KERNEL_NUM_ARGS */, sizeof nargs_, &nargs_, nullptr);
    for (size_t i = 0; i < 3; i++) { local_[i] = size_t(launch.local[i]); global_[i] = size_t(launch.global[i]) * local_[i]; }
    if (launch.varies()) launch_ = launch;
  }
  ~CLProgram() override { d_->api->clReleaseKernel(k_); release_program(); }
  double call(const std::vector<void*>& bufs, const std::vector<int64_t>& vals, bool wait) override {
    std::lock_guard lk(mu_);  // kernel arguments are state of the kernel object
    // NOTE: the first launch waits: PoCL compiles a kernel's work-group function at its first launch, on a worker
    // thread; done asynchronously it could still be compiling when the process exits, and abort in a torn-down LLVM
    wait = wait || std::exchange(first_, false);
    // the variables' values first (ints), then the buffers
    for (unsigned i = 0; i < nargs_ && i < vals.size(); i++) {
      int v = int(vals[i]);
      cl_check(d_->api->clSetKernelArg(k_, i, sizeof v, &v), "clSetKernelArg");
    }
    for (size_t i = 0; vals.size() + i < nargs_ && i < bufs.size(); i++)
      cl_check(d_->api->clSetKernelArg(k_, unsigned(vals.size() + i), sizeof(void*), &bufs[i]), "clSetKernelArg");
    void* ev = nullptr;
    size_t global[3] = {global_[0], global_[1], global_[2]};
    if (launch_) {  // the workgroups over a symbolic dim: its extent at these values
      auto g = launch_->global_at(vals);
      for (size_t i = 0; i < 3; i++) global[i] = size_t(g[i]) * local_[i];
    }
    int err = d_->api->clEnqueueNDRangeKernel(d_->queue, k_, 3, nullptr, global, local_, 0, nullptr, wait ? &ev : nullptr);
    // NOTE: some drivers allocate buffers lazily, at the first kernel that touches them
    if (err == -4 || err == -5) throw DeviceError(cat("tinygrad: out of memory on ", d_->name, " (OpenCL error ", err, " launching a kernel)"));
    cl_check(err, "clEnqueueNDRangeKernel");
    if (!wait) return d_->api->clFlush(d_->queue), 0;  // submit now: PoCL holds unflushed commands until a read
    d_->api->clWaitForEvents(1, &ev);
    uint64_t t0 = 0, t1 = 0;
    d_->api->clGetEventProfilingInfo(ev, 0x1282 /* START */, 8, &t0, nullptr);
    d_->api->clGetEventProfilingInfo(ev, 0x1283 /* END */, 8, &t1, nullptr);
    d_->api->clReleaseEvent(ev);
    return double(t1 - t0) * 1e-9;
  }

 private:
  void release_program() { if (batch_.empty()) d_->api->clReleaseProgram(prg_); else d_->release_batch(batch_); }
  std::shared_ptr<CLDevice> d_;
  std::string batch_;  // the batch file prg_ was built from, if any
  void *prg_ = nullptr, *k_ = nullptr;
  unsigned nargs_ = 0;
  size_t global_[3], local_[3];
  std::optional<LaunchDims> launch_;  // a launch whose workgroups vary with the variables
  bool first_ = true;
  std::mutex mu_;
};

struct CLAllocator : Allocator {
  std::shared_ptr<CLDevice> d;
  explicit CLAllocator(std::shared_ptr<CLDevice> dv) : d(std::move(dv)) {}
  void* alloc_raw(size_t bytes) override {
    int err = 0;
    void* m = d->api->clCreateBuffer(d->ctx, 1 /* CL_MEM_READ_WRITE */, bytes, nullptr, &err);
    if (err == -4 || err == -5 || err == -6 || err == -61) return nullptr;  // out of memory, or larger than the device allows
    cl_check(err, "clCreateBuffer");
    return m;
  }
  void free_raw(void* p, size_t) override { d->api->clReleaseMemObject(p); }
  void copyin(void* dst, const void* src, size_t n) override {
    cl_check(d->api->clEnqueueWriteBuffer(d->queue, dst, 1, 0, n, src, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  }
  void copyout(void* dst, const void* src, size_t n) override {
    cl_check(d->api->clEnqueueReadBuffer(d->queue, const_cast<void*>(src), 1, 0, n, dst, 0, nullptr, nullptr), "clEnqueueReadBuffer");
  }
  void copy(void* dst, const void* src, size_t n) override {
    cl_check(d->api->clEnqueueCopyBuffer(d->queue, const_cast<void*>(src), dst, 0, 0, n, 0, nullptr, nullptr), "clEnqueueCopyBuffer");
    d->api->clFlush(d->queue);
  }
};

// the descriptor (nothing opens before first use); RuntimeRegistry adds it on first use (runtime/devices.hpp)
inline DeviceSpec cl_device() {
  DeviceSpec d;
  d.name = "CL";
  d.priority = 0;  // never the default while the CPU opens: DEV=CL or .to("CL")
  d.renderer = "OpenCL";
  d.open = [](const std::string& name) {
    auto p = name.find(':');
    auto dv = std::make_shared<CLDevice>(p == std::string::npos ? -1 : std::stoi(name.substr(p + 1)));
    auto rt = std::make_unique<DeviceRuntime>();
    rt->allocator = std::make_unique<CLAllocator>(dv);
    rt->compiler = std::make_unique<CLCompiler>(dv);
    rt->load = [dv](const std::string& fn, const std::string& bin, const LaunchDims& launch) -> std::unique_ptr<Program> {
      return std::make_unique<CLProgram>(dv, fn, bin, launch);
    };
    rt->synchronize = [dv] { dv->api->clFinish(dv->queue); };
    rt->fp16 = dv->fp16;
    rt->workgroups = true;
    if (flags().debug >= 1) std::fprintf(stderr, "CL: %s%s\n", dv->name.c_str(), dv->fp16 ? " (cl_khr_fp16)" : "");
    return rt;
  };
  return d;
}
}  // namespace tinygrad::detail
