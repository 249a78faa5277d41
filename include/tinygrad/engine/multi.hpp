#pragma once
// Many devices. A tensor of several devices is a logical graph: its leaves are MULTI nodes (src[0] the DEVICE of all,
// "CPU:0,CPU:1", then one part per device; arg the axis the parts split, -1 where each holds the whole value) and
// constants of a multi DEVICE; the ops above them are the ordinary ops at the logical shape, so autograd and the
// Tensor API see one tensor. realize() lowers that graph into one graph per device: each op runs on each device's
// part, a part is shrunk where an op meets a sharded operand with a replicated one, gathered (copies) where the
// sharding cannot follow an op, and a reduce over the sharded axis ends in an ALLREDUCE, the collective of the
// devices' communicator (runtime/collective.hpp: NCCL on CUDA, else through the host).
//   ALLREDUCE(part_0, ..., part_n-1; arg {reduce op, i}): device i's copy of the reduction of every device's part
#include "api.hpp"

namespace tinygrad::detail {

inline std::vector<std::string> split_devices(const std::string& d) {
  std::vector<std::string> r;
  for (size_t at = 0; at <= d.size();) {
    size_t c = std::min(d.find(',', at), d.size());
    r.push_back(d.substr(at, c - at));
    at = c + 1;
  }
  return r;
}

// a logical node, lowered: one node per device (axis -1: each the whole value, >= 0: the parts along that axis), or
// one node of one device or of none (axis -2: a single-device value, a variable)
struct Lowered {
  int64_t axis = -2;
  std::vector<UOpRef> per;
  bool single() const { return axis == -2; }
  Shape bounds() const {  // where each part starts along the axis, then the end
    Shape b{0};
    for (auto& p : per) b.push_back(b.back() + p->shape[size_t(axis)]);
    return b;
  }
};

class MultiLowering {
 public:
  std::vector<std::string> devs;  // the group, from the first MULTI or DEVICE of several met (a graph has one group)
  UOpRef device_node;             // DEVICE "a,b"

  Lowered lower(const UOpRef& root) {
    for (auto& u : toposort(root, [](const UOp* x) { return x->multi && x->op != Ops::MULTI && !x->multi_value; })) {
      if (memo_.count(u.get())) continue;
      memo_[u.get()] = u->multi ? lower_node(u) : Lowered{-2, {u}};
    }
    return memo_.at(root.get());
  }

  // each device's node of a value at the wanted split: shrunk from a replicated one, gathered where the split differs
  std::vector<UOpRef> to_split(const Lowered& x, int64_t axis, const Shape& b) {
    if (x.single()) return std::vector<UOpRef>(devs.size(), x.per[0]);
    if (x.axis == axis && (axis < 0 || x.bounds() == b)) return x.per;
    std::vector<UOpRef> full = x.axis < 0 ? x.per : gather(x);
    if (axis < 0) return full;
    for (size_t i = 0; i < full.size(); i++) {
      std::vector<int64_t> arg;
      for (size_t d = 0; d < full[i]->shape.size(); d++) {
        bool a = int64_t(d) == axis;
        arg.insert(arg.end(), {a ? b[i] : 0, a ? b[i + 1] : full[i]->shape[d]});
      }
      full[i] = make_uop(Ops::SHRINK, full[i]->dtype, {full[i]}, arg);
    }
    return full;
  }

 private:
  std::unordered_map<const UOp*, Lowered> memo_;

  UOpRef dev(size_t i) { return make_uop(Ops::DEVICE, DType::Bool, {}, devs[i]); }
  UOpRef copy_to(const UOpRef& x, size_t from, size_t to) { return from == to ? x : make_uop(Ops::COPY, x->dtype, {x, dev(to)}); }
  // the whole value on one device (index `to`, or `target`): the parts copied there, padded to place, added
  UOpRef gather_one(const Lowered& x, const UOpRef& target, size_t to) {
    if (to == devs.size()) to = size_t(std::find(devs.begin(), devs.end(), std::get<std::string>(target->arg)) - devs.begin());
    if (x.axis < 0) return to < devs.size() ? x.per[to] : make_uop(Ops::COPY, x.per[0]->dtype, {x.per[0], target});
    Shape b = x.bounds();
    UOpRef r;
    for (size_t i = 0; i < x.per.size(); i++) {
      UOpRef p = to < devs.size() ? copy_to(x.per[i], i, to) : make_uop(Ops::COPY, x.per[i]->dtype, {x.per[i], target});
      std::vector<int64_t> pad;
      for (size_t d = 0; d < p->shape.size(); d++) {
        bool a = int64_t(d) == x.axis;
        pad.insert(pad.end(), {a ? b[i] : 0, a ? b.back() - b[i + 1] : 0});
      }
      p = make_uop(Ops::PAD, p->dtype, {p}, pad);
      r = r ? alu(p->dtype == DType::Bool ? Ops::OR : Ops::ADD, {r, p}) : p;
    }
    return r;
  }
  std::vector<UOpRef> gather(const Lowered& x) {
    std::vector<UOpRef> r;
    for (size_t j = 0; j < devs.size(); j++) r.push_back(gather_one(x, nullptr, j));
    return r;
  }

  Lowered lower_node(const UOpRef& u) {
    if (!u->dyn.empty()) throw ShapeError("tinygrad: symbolic shapes on several devices are not supported (" + to_string(u->shape) + ")");
    if (u->multi_value) return lower_multi(u->multi_value.get());
    switch (u->op) {
      case Ops::MULTI: return lower_multi(u);
      case Ops::DEVICE: {
        group(u);
        Lowered r{-1, {}};
        for (size_t i = 0; i < devs.size(); i++) r.per.push_back(dev(i));
        return r;
      }
      case Ops::COPY: {  // to one device: the parts gathered there; to several: each gets the whole
        const Lowered& x = memo_.at(u->src[0].get());
        if (!u->src[1]->multi) return {-2, {gather_one(x, u->src[1], devs.size())}};
        if (x.single()) {
          Lowered r{-1, {}};
          for (size_t i = 0; i < devs.size(); i++) r.per.push_back(make_uop(Ops::COPY, u->dtype, {x.per[0], dev(i)}));
          return r;
        }
        return {-1, to_split(x, -1, {})};
      }
      case Ops::DETACH: return memo_.at(u->src[0].get());
      case Ops::CONTIGUOUS:  // a parameter's node, a contiguous of a realized value: each part is a buffer of its own already
        if (u->is_param() || u->src[0]->op == Ops::MULTI || u->src[0]->multi_value) return memo_.at(u->src[0].get());
        break;
      case Ops::GRAD_RULE: return memo_.at(u->src[0].get());  // src[1:] serve autograd only
      case Ops::REDUCE_AXIS: return lower_reduce(u);
      default: if (is_movement(u->op)) return lower_movement(u);
    }
    return lower_elementwise(u);
  }

  Lowered lower_multi(const UOpRef& m) {
    group(m->src[0]);
    return {m->iarg(), std::vector<UOpRef>(m->src.begin() + 1, m->src.end())};
  }
  // the group of a DEVICE of several devices: the graph's first, or the same as it
  void group(const UOpRef& d) {
    if (!device_node) { device_node = d; devs = split_devices(std::get<std::string>(d->arg)); }
    else if (d != device_node)
      throw DeviceError("tinygrad: one graph mixes the device groups " + std::get<std::string>(device_node->arg) + " and " +
                        std::get<std::string>(d->arg));
  }

  // an op on each device's part; the operands follow the first sharded one's split (an ASSIGN's target's)
  Lowered lower_elementwise(const UOpRef& u) {
    const Lowered* lead = nullptr;
    for (auto& s : u->src) {
      const Lowered& x = memo_.at(s.get());
      if (!x.single() && (!lead || (lead->axis < 0 && x.axis >= 0))) lead = &x;
      if (u->op == Ops::ASSIGN) break;
    }
    if (!lead) { std::vector<UOpRef> src; for (auto& s : u->src) src.push_back(memo_.at(s.get()).per[0]); return {-2, {rebuild(u, src)}}; }
    Lowered r{lead->axis, {}};
    Shape b = lead->axis >= 0 ? lead->bounds() : Shape{};
    std::vector<std::vector<UOpRef>> parts;
    for (auto& s : u->src) parts.push_back(to_split(memo_.at(s.get()), r.axis, b));
    for (size_t i = 0; i < devs.size(); i++) {
      std::vector<UOpRef> src;
      for (auto& p : parts) src.push_back(p[i]);
      r.per.push_back(rebuild(u, src));
    }
    return r;
  }
  static UOpRef rebuild(const UOpRef& u, const std::vector<UOpRef>& src) {
    return src == u->src ? u : make_uop(u->op, u->dtype, src, u->arg, u->vcount);
  }

  Lowered lower_reduce(const UOpRef& u) {
    const Lowered& x = memo_.at(u->src[0].get());
    if (x.single()) return {-2, {rebuild(u, {x.per[0]})}};
    Lowered r{x.axis, {}};
    for (auto& p : x.per) r.per.push_back(rebuild(u, {p}));
    auto ax = u->reduce_axes();
    if (x.axis < 0 || std::find(ax.begin(), ax.end(), x.axis) == ax.end()) return r;
    // the sharded axis is reduced: each device reduces its part, the collective combines them
    std::vector<UOpRef> parts = r.per;
    r.axis = -1;
    for (size_t i = 0; i < devs.size(); i++)
      r.per[i] = make_uop(Ops::ALLREDUCE, u->dtype, parts, std::vector<int64_t>{int64_t(u->reduce_op()), int64_t(i)});
    return r;
  }

  Lowered lower_movement(const UOpRef& u) {
    const Lowered& x = memo_.at(u->src[0].get());
    if (x.single() || x.axis < 0) {
      Lowered r{x.axis, {}};
      for (auto& p : x.per) r.per.push_back(rebuild(u, {p}));
      return r;
    }
    const Shape& in = u->src[0]->shape;
    size_t a = size_t(x.axis);
    Shape b = x.bounds();
    int64_t axis = x.axis;
    auto part_arg = [&](size_t i) -> std::vector<int64_t> {
      std::vector<int64_t> arg = u->op == Ops::PERMUTE || u->op == Ops::FLIP || u->op == Ops::PAD || u->op == Ops::SHRINK ? u->varg() : u->shape;
      if (u->op == Ops::EXPAND) arg[a] = b[i + 1] - b[i];
      if (u->op == Ops::SHRINK) arg[2 * a + 1] = b[i + 1] - b[i];  // the whole part
      return arg;
    };
    switch (u->op) {
      case Ops::PERMUTE: axis = std::find(u->varg().begin(), u->varg().end(), x.axis) - u->varg().begin(); break;
      case Ops::EXPAND: break;  // the sharded axis is never one of size 1 that grows
      case Ops::PAD: case Ops::SHRINK:
        if (u->varg()[2 * a] != 0 || u->varg()[2 * a + 1] != (u->op == Ops::PAD ? 0 : in[a]))
          return regather(u, x, "pad and shrink along the sharded axis gather it on every device first");
        break;
      case Ops::FLIP: if (u->varg()[a]) return regather(u, x, "a flip along the sharded axis gathers it on every device first"); break;
      case Ops::RESHAPE: {
        // the dim of the result that starts where the sharded axis starts, and splits at the parts' bounds
        int64_t before = prod(Shape(in.begin(), in.begin() + int64_t(a))), inner = prod(Shape(in.begin() + int64_t(a) + 1, in.end()));
        const Shape& out = u->shape;
        axis = -1;
        int64_t acc = 1;
        for (size_t k = 0; k < out.size() && acc <= before; acc *= out[k], k++) {
          if (acc != before || out[k] == 1) continue;
          int64_t rest = prod(Shape(out.begin() + int64_t(k) + 1, out.end()));
          bool ok = true;
          for (size_t i = 0; i + 1 < b.size(); i++) ok &= ((b[i + 1] - b[i]) * inner) % rest == 0;
          if (ok) { axis = int64_t(k); break; }
        }
        if (axis < 0) return regather(u, x, "the reshape to " + to_string(out) + " splits its parts");
        Lowered r{axis, {}};
        for (size_t i = 0; i < x.per.size(); i++) {
          Shape s = out;
          s[size_t(axis)] = (b[i + 1] - b[i]) * inner / prod(Shape(out.begin() + axis + 1, out.end()));
          r.per.push_back(make_uop(Ops::RESHAPE, u->dtype, {x.per[i]}, std::vector<int64_t>(s)));
        }
        return r;
      }
      default: break;
    }
    Lowered r{axis, {}};
    for (size_t i = 0; i < x.per.size(); i++) r.per.push_back(make_uop(u->op, u->dtype, {x.per[i]}, part_arg(i)));
    return r;
  }
  // the op on the whole value, gathered on every device (DEBUG>=2 says so: it moves the tensor)
  Lowered regather(const UOpRef& u, const Lowered& x, const std::string& why) {
    if (flags().debug >= 2) std::fprintf(stderr, "multi: %s %s: %s\n", op_name(u->op), to_string(u->src[0]->shape).c_str(), why.c_str());
    Lowered r{-1, {}};
    for (auto& p : gather(x)) r.per.push_back(rebuild(u, {p}));
    return r;
  }
};

// a multi value whose devices' parts are computed
inline bool multi_done(const UOp* u) {
  if (u->multi_value) return true;
  if (u->is_param()) return multi_done(u->src[0].get());
  if (u->op != Ops::MULTI) return false;
  for (size_t i = 1; i < u->src.size(); i++) {
    const UOp* p = u->src[i].get();
    if (!is_leaf(p) && !(p->op == Ops::RESHAPE && is_leaf(p->src[0].get()))) return false;
  }
  return true;
}

}  // namespace tinygrad::detail
