#pragma once
// renderers by family name. A device's descriptor (runtime/device.hpp) names the family of source its compiler takes;
// this maps the name to a factory, which reads what it needs of the device (cores, vector registers, launch limits)
// from the opened runtime. A user's device names a family here or adds its own with register_renderer().
#include <map>
#include <mutex>
#include "cstyle.hpp"

namespace tinygrad {

using RendererFactory = std::function<std::unique_ptr<detail::Renderer>(const DeviceRuntime&)>;

namespace detail {
struct RendererRegistry {
  std::mutex mu;
  std::map<std::string, RendererFactory> families;
  // NOTE: the built-in families are added on first use, not by static objects
  static RendererRegistry& get() {
    static auto* r = [] {
      auto* reg = new RendererRegistry();  // NOTE: leaked on purpose (static destruction order)
      reg->families["C"] = [](const DeviceRuntime& rt) { return std::make_unique<CRenderer>(rt.threads, rt.vector_registers, rt.vector_bytes); };
      reg->families["CUDA"] = [](const DeviceRuntime& rt) { return std::make_unique<CUDARenderer>(rt.tensor_cores, rt.wgmma); };
      reg->families["OpenCL"] = [](const DeviceRuntime& rt) { return std::make_unique<OpenCLRenderer>(rt.fp16); };
      return reg;
    }();
    return *r;
  }
};
}  // namespace detail

// adds a renderer family, or replaces the one of that name
inline void register_renderer(const std::string& family, RendererFactory f) {
  auto& r = detail::RendererRegistry::get();
  std::lock_guard lk(r.mu);
  r.families[family] = std::move(f);
}

namespace detail {
// the renderer for an opened device of this descriptor, with the device's launch limits
inline std::unique_ptr<Renderer> make_renderer(const DeviceSpec& spec, const DeviceRuntime& rt) {
  const std::string& family = spec.renderer.empty() ? spec.name : spec.renderer;
  RendererFactory f;
  {
    auto& r = detail::RendererRegistry::get();
    std::lock_guard lk(r.mu);
    auto it = r.families.find(family);
    if (it == r.families.end()) throw DeviceError("tinygrad: device " + spec.name + " renders " + family + ", which no register_renderer() added");
    f = it->second;
  }
  auto ren = f(rt);
  std::copy(rt.limits.global_max.begin(), rt.limits.global_max.end(), ren->global_max);
  std::copy(rt.limits.local_max.begin(), rt.limits.local_max.end(), ren->local_max);
  ren->max_threads = rt.limits.max_threads;
  return ren;
}
}  // namespace detail

}  // namespace tinygrad
