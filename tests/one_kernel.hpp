// The schedule of a tensor over its realized leaves, for tests that run one kernel by hand (test_search, test_opts) or
// read the kernels' ASTs (test_schedule, test_variable)
#pragma once
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

struct LeafSchedule {
  tinygrad::detail::ScheduleSpec spec;
  std::vector<std::shared_ptr<tinygrad::Buffer>> bufs;  // the leaves' buffers, by slot
};
// the kernels one realize of ts would run (their leaves numbered in graph order), scheduled for `device` (default: theirs)
inline std::vector<tinygrad::detail::KernelAST> kernels_of(const std::vector<tinygrad::Tensor>& ts, const std::string& device = "") {
  std::unordered_map<const tinygrad::UOp*, int> slots;
  std::vector<tinygrad::UOpRef> roots;
  int n = 0;
  for (auto& t : ts) {
    roots.push_back(t.uop());
    for (auto& u : tinygrad::detail::toposort(t.uop()))
      if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
  }
  return tinygrad::detail::create_schedule(roots, slots, n, device).kernels;
}
inline std::vector<tinygrad::detail::KernelAST> kernels_of(const tinygrad::Tensor& t, const std::string& device = "") {
  return kernels_of(std::vector<tinygrad::Tensor>{t}, device);
}
// t's schedule, which must be one kernel, over its realized leaves
inline LeafSchedule one_kernel_schedule(const tinygrad::Tensor& t) {
  std::unordered_map<const tinygrad::UOp*, int> slots;
  LeafSchedule s;
  for (auto& u : tinygrad::detail::toposort(t.uop()))
    if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) {
      slots[u.get()] = int(s.bufs.size());
      s.bufs.push_back(u->leaf_buffer());
    }
  s.spec = tinygrad::detail::create_schedule({t.uop()}, slots, int(s.bufs.size()));
  REQUIRE(s.spec.kernels.size() == 1);
  return s;
}
