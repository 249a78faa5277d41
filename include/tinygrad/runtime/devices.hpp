#pragma once
// The built-in devices, added to the registry on its first use rather than by static objects: a program that
// includes the library and opens no device has none of their code compiled in (nothing runs before main, either).
#include "device.hpp"
#include "cpu.hpp"
#include "cuda.hpp"
#include "nccl.hpp"
#include "opencl.hpp"

namespace tinygrad::detail {
#if TINYGRAD_DEFINE_API
TINYGRAD_API RuntimeRegistry& RuntimeRegistry::get() {
  static auto* r = [] {
    auto* reg = new RuntimeRegistry();  // NOTE: leaked on purpose (static destruction order)
    for (auto make : {cpu_device, cuda_device, cl_device}) {
      DeviceSpec d = make();
      std::string name = d.name;
      reg->specs.emplace(std::move(name), std::move(d));
    }
    return reg;
  }();
  return *r;
}
#endif
}  // namespace tinygrad::detail
