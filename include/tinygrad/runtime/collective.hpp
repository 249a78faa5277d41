#pragma once
// Collectives: the members of a group (one buffer on each of several devices) reduce together. A device may bring
// its own library (NCCL on CUDA: DeviceSpec::communicator); any other group reduces through the host, which is
// how several CPU devices ("CPU:0", "CPU:1") run the same logic in CI. Groups are made once and kept.
#include "device.hpp"

namespace tinygrad {

enum class ReduceKind : uint8_t { Sum, Prod, Max, Min };

// one all-reduce: recv[i] = op over every member j of send[j], elementwise, for each member i (one buffer per member in
// the group's order, all of one dtype and size; recv[i] may be send[i])
struct AllReduce {
  std::vector<Buffer*> send, recv;
  ReduceKind op;
};

// a group of devices that reduce together
struct Communicator {
  virtual ~Communicator() = default;
  // one all-reduce, queued on the devices' streams like a kernel
  void all_reduce(const std::vector<Buffer*>& send, const std::vector<Buffer*>& recv, ReduceKind op) { reduce({AllReduce{send, recv, op}}); }
  // several at once, as one group: NCCL runs a group of small all-reduces (a model's gradients) as few kernels, at
  // nearly the cost of one
  void all_reduce(const std::vector<AllReduce>& batch) { if (!batch.empty()) reduce(batch); }

 protected:
  virtual void reduce(const std::vector<AllReduce>& batch) = 0;
};

namespace detail {
// one element-wise reduction on the host, in the dtype's own arithmetic (ints wrap as on a device; halves through float)
template <class T, DType D>
void host_reduce(std::vector<char>& acc, const std::vector<char>& x, ReduceKind op) {
  size_t n = acc.size() / sizeof(T);
  for (size_t i = 0; i < n; i++) {
    T a, b;
    std::memcpy(&a, acc.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&b, x.data() + i * sizeof(T), sizeof(T));
    if constexpr (D == DType::Float16 || D == DType::BFloat16) {
      float fa = float(elem_to_double<D>(a)), fb = float(elem_to_double<D>(b));
      float r = op == ReduceKind::Sum ? fa + fb : op == ReduceKind::Prod ? fa * fb : op == ReduceKind::Max ? std::max(fa, fb) : std::min(fa, fb);
      a = D == DType::Float16 ? f32_to_f16(r) : f32_to_bf16(r);
    } else if constexpr (std::is_same_v<T, bool>) {
      a = op == ReduceKind::Sum || op == ReduceKind::Max ? (a || b) : (a && b);
    } else if constexpr (std::is_integral_v<T>) {
      // NOTE: wraps, never signed overflow: W is at least unsigned int (uint16_t * uint16_t would promote to int)
      using W = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
      W wa = W(std::make_unsigned_t<T>(a)), wb = W(std::make_unsigned_t<T>(b));
      a = op == ReduceKind::Sum ? T(wa + wb) : op == ReduceKind::Prod ? T(wa * wb) : op == ReduceKind::Max ? std::max(a, b) : std::min(a, b);
    } else {
      a = op == ReduceKind::Sum ? a + b : op == ReduceKind::Prod ? a * b : op == ReduceKind::Max ? std::max(a, b) : std::min(a, b);
    }
    std::memcpy(acc.data() + i * sizeof(T), &a, sizeof(T));
  }
}

// the same for a dtype known at run time (the host fallback, dist.hpp's reduction through rank 0)
inline void host_reduce(DType dt, std::vector<char>& acc, const std::vector<char>& x, ReduceKind op) {
  switch (dt) {
#define TG_X(n, t, sz, k, c) case DType::n: host_reduce<t, DType::n>(acc, x, op); break;
    TG_DTYPES(TG_X)
#undef TG_X
  }
}

// the fallback: every member's buffer to the host, reduced there, the result back to every member
struct HostCommunicator : Communicator {
  void reduce(const std::vector<AllReduce>& batch) override {
    for (auto& [send, recv, op] : batch) {
      if (send.empty()) continue;
      std::vector<char> acc(send[0]->nbytes()), x(acc.size());
      send[0]->copyout(acc.data());
      for (size_t j = 1; j < send.size(); j++) send[j]->copyout(x.data()), host_reduce(send[0]->dtype, acc, x, op);
      for (Buffer* r : recv) r->copyin(acc.data());
    }
  }
};
}  // namespace detail

// the communicator of a group of device instances, made on first use and kept: the devices' own library when they
// are of one kind that has one (COLLECTIVE=host forces the host), else the host
inline Communicator& communicator(const std::vector<std::string>& devices) {
  static std::mutex mu;
  static auto* groups = new std::map<std::vector<std::string>, std::unique_ptr<Communicator>>();  // NOTE: leaked (static destruction order)
  std::lock_guard lk(mu);
  auto& c = (*groups)[devices];
  if (c) return *c;
  bool one_kind = !devices.empty() &&
      std::all_of(devices.begin(), devices.end(), [&](auto& d) { return detail::device_base(d) == detail::device_base(devices[0]); });
  if (one_kind && detail::getenv_str("COLLECTIVE") != "host")
    if (auto make = device_spec(devices[0]).communicator) c = make(devices);
  if (!c) c = std::make_unique<detail::HostCommunicator>();
  return *c;
}

}  // namespace tinygrad
