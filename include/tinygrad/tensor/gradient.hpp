#pragma once
// autograd: one gradient rule per primitive op, applied in reverse over the UOp graph.
// Every composed op (sub, div, exp, softmax, matmul, conv2d, ...) is differentiable through them.
#include "tensor.hpp"

namespace tinygrad {

struct GradientError : Error { using Error::Error; };

// d(root)/d(target) for each target, seeded with `seed` (root's shape); nullopt where no gradient flows to it.
// reached (optional) tells which targets root uses at all (not only behind DETACH): there nullopt means zero.
// A parameter (requires_grad_()) is found by its id: every node of it in the graph counts, also one from
// before a realize() or assign() replaced its uop. Any other target is found by its node.
TINYGRAD_API std::vector<std::optional<Tensor>> compute_gradient(const Tensor& root, const Tensor& seed, const std::vector<Tensor>& targets,
                                                                 std::vector<bool>* reached = nullptr);

// gradients of a scalar loss with respect to targets; does not touch .grad. A target the loss uses only through
// ops without a gradient (comparisons, casts to int) gets zeros; one the loss does not use at all (or only behind
// detach()) throws GradientError, like torch.autograd.grad without allow_unused.
TINYGRAD_API std::vector<Tensor> gradient(const Tensor& loss, const std::vector<Tensor>& targets);

#if TINYGRAD_WITH_INTERNALS

namespace detail {
// the gradients of a convolution of x with w (Tensor::conv2d's GRAD_RULE marker), given the output's gradient g;
// arg: groups, stride[n], dilation[n], (pad before, after)[n]
TINYGRAD_API std::pair<Tensor, Tensor> conv_grads(const Tensor& x, const Tensor& w, const Tensor& g, const std::vector<int64_t>& a) TINYGRAD_DEF({
  size_t n = x.ndim() - 2;
  auto join = [](std::initializer_list<Shape> parts) { Shape r; for (auto& p : parts) r.insert(r.end(), p.begin(), p.end()); return r; };
  int64_t groups = a[0], bs = x.shape(0), cout = w.shape(0), cin = w.shape(1);
  std::vector<int64_t> stride(a.begin() + 1, a.begin() + 1 + int64_t(n)), dil(a.begin() + 1 + int64_t(n), a.begin() + 1 + 2 * int64_t(n)), flips;
  std::vector<std::pair<int64_t, int64_t>> xpads{{0, 0}, {0, 0}}, keep{{0, cout}, {0, cin}}, dil_pad{{0, 0}, {0, 0}}, conv_pad{{0, 0}, {0, 0}},
      dil_keep{{0, bs}, {0, cout}};
  Shape s1{bs, cout}, s2 = s1, ks, os;
  for (size_t i = 0; i < n; i++) {
    int64_t d = int64_t(2 + i), o = g.shape(d), k = w.shape(d), e = dil[i] * (k - 1), pb = a[1 + 2 * n + 2 * i], pa = a[2 + 2 * n + 2 * i];
    int64_t outpad = x.shape(d) - ((o - 1) * stride[i] - pb - pa + e + 1);  // input pixels no output window reached
    xpads.push_back({pb, pa});
    keep.push_back({0, k});
    s1.insert(s1.end(), {o, 1}); s2.push_back(o * stride[i]);
    dil_pad.insert(dil_pad.end(), {{0, 0}, {0, stride[i] - 1}});
    dil_keep.push_back({0, (o - 1) * stride[i] + 1});
    conv_pad.push_back({e - pb, e - pa + outpad});
    flips.push_back(int64_t(3 + i));
    ks.push_back(k); os.push_back(o);
  }
  // dx: the transposed convolution of g: zeros between its pixels for the stride, padded by the kernel's reach,
  // then a conv with the flipped kernel, in and out channels swapped per group.
  // NOTE: the padded g is materialized: the conv reads it k*k*cin times, gated loads would dominate
  Tensor gd = s2 == g.shape() ? g : g.reshape(s1).pad(dil_pad).reshape(s2).shrink(dil_keep);
  Shape wg = join({Shape{groups, cout / groups, cin}, ks}), wf = join({Shape{groups * cin, cout / groups}, ks});
  Tensor dx = gd.pad(conv_pad).contiguous().conv2d(w.reshape(wg).transpose(1, 2).flip(flips).reshape(wf), {.dilation = dil, .groups = groups});
  // dw: correlate x with g; groups > 1 as a conv of x (channels as batch, batch as channels) with g as the kernel
  Tensor xp = x.pad(xpads);
  if (groups != 1) {
    std::vector<int64_t> perm{2, 1, 0};
    for (size_t i = 0; i < n; i++) perm.push_back(int64_t(3 + i));
    Shape sp(xp.shape().begin() + 2, xp.shape().end());
    Tensor xt = xp.reshape(join({Shape{bs, groups, cin}, sp})).permute(perm).reshape(join({Shape{cin, groups * bs}, sp}));
    return {dx, xt.conv2d(g.transpose(0, 1), {.stride = dil, .dilation = stride, .groups = groups}).transpose(0, 1).shrink(keep)};
  }
  // NOTE: laid out (cin, *k', cout) with cout innermost, so the kernel vectorizes over cout like a matmul
  Tensor P = xp.pool(os, dil, stride);  // (bs, cin, *k', *o)
  std::vector<int64_t> red{0}, gperm{0}, to_oik{int64_t(n + 1), 0};
  for (size_t i = 0; i < n; i++) { red.push_back(int64_t(2 + n + i)); gperm.push_back(int64_t(2 + i)); to_oik.push_back(int64_t(1 + i)); }
  gperm.push_back(1);
  Tensor gT = g.permute(gperm).contiguous();  // (bs, *o, cout)
  Shape pw = join({P.shape(), Shape{1}}), gs = join({Shape{bs, 1}, Shape(n, 1), os, Shape{cout}});
  Tensor dw = (P.reshape(pw) * gT.reshape(gs)).sum(red).contiguous().permute(to_oik);  // (cout, cin, *k')
  return {dx, dw.shrink(keep)};
})

// the gradients of u's sources, given u's gradient g (nullopt: no gradient flows); empty: u's op has no rule
TINYGRAD_API std::vector<std::optional<Tensor>> grad_rule(const UOpRef& u, const Tensor& g, const std::string& dev) TINYGRAD_DEF({
  auto T = [&](const UOpRef& x) { return Tensor(x, dev); };
  auto S = [&](size_t i) { return T(u->src[i]); };
  Tensor ret = T(u);
  const double ln2 = std::log(2.0);
  // symbolic dims (tensor/variable.hpp): a gradient has its node's dims, so the rules that name a shape name the
  // extents too (src[1..] of the movement nodes built here), and elementwise rules broadcast by them
  auto ext = [](const UOp& x, size_t i) { return x.dyn.empty() || !x.dyn[i] ? size_const(x.shape[i]) : x.dyn[i]; };
  auto exts = [&](const UOp& x) { std::vector<UOpRef> r; for (size_t i = 0; i < x.shape.size(); i++) r.push_back(ext(x, i)); return r; };
  auto to_shape = [&](Ops op, const Tensor& t, const UOp& like) {  // a reshape or expand of t to like's shape and extents
    if (like.dyn.empty()) return op == Ops::RESHAPE ? t.reshape(like.shape) : t.expand(like.shape);
    return T(sym_movement(op, t.uop(), like.shape, like.dyn));
  };
  // a symbolic shrink or pad: the begins (pads before) and the result's extents
  auto ends = [&](Ops op, const Tensor& t, std::vector<UOpRef> begins, const std::vector<UOpRef>& ext_of) {
    std::vector<UOpRef> src{t.uop()};
    src.insert(src.end(), begins.begin(), begins.end());
    src.insert(src.end(), ext_of.begin(), ext_of.end());
    return T(make_uop(op, t.dtype(), std::move(src), std::vector<int64_t>{}));
  };
  switch (u->op) {
    case Ops::ADD: return {g, g};
    case Ops::MUL: return {g * S(1), g * S(0)};
    case Ops::NEG: return {-g};
    case Ops::RECIPROCAL: return {-g * ret * ret};
    case Ops::SQRT: return {g / (ret * 2.0)};
    case Ops::EXP2: return {g * ret * ln2};
    case Ops::LOG2: return {g / (S(0) * ln2)};
    case Ops::SIN: return {g * S(0).cos()};
    case Ops::TRUNC: return {std::nullopt};  // piecewise constant: no gradient flows (floor, ceil and round neither)
    case Ops::FDIV: return {g / S(1), -g * ret / S(1)};
    case Ops::MULACC: return {g * S(1), g * S(0), g};
    case Ops::MAX: {
      Tensor a = S(0), b = S(1), tie = (a == b).cast(g.dtype()) * 0.5;
      return {g * ((a > b).cast(g.dtype()) + tie), g * ((b > a).cast(g.dtype()) + tie)};
    }
    case Ops::WHERE: return {std::nullopt, S(0).where(g, 0.0), S(0).where(0.0, g)};
    case Ops::CAST: return {is_float(u->src[0]->dtype) ? std::optional<Tensor>(g.cast(u->src[0]->dtype)) : std::nullopt};
    case Ops::CONTIGUOUS: return {g};
    case Ops::RESHAPE: return {to_shape(Ops::RESHAPE, g, *u->src[0])};
    case Ops::PERMUTE: {
      std::vector<int64_t> inv(u->varg().size());
      for (size_t i = 0; i < inv.size(); i++) inv[size_t(u->varg()[i])] = int64_t(i);
      return {g.permute(inv)};
    }
    case Ops::EXPAND: {
      std::vector<int64_t> axes;
      for (size_t i = 0; i < u->shape.size(); i++) if (ext(*u->src[0], i) != ext(*u, i)) axes.push_back(int64_t(i));
      return {g.sum(axes, true)};
    }
    case Ops::PAD: {
      if (u->src.size() > 1) {  // a symbolic pad: the shrink of the source's extents at the pads before
        size_t n = u->shape.size();
        return {ends(Ops::SHRINK, g, {u->src.begin() + 1, u->src.begin() + 1 + int64_t(n)}, exts(*u->src[0]))};
      }
      std::vector<std::pair<int64_t, int64_t>> s;
      for (size_t i = 0; i < u->shape.size(); i++) s.push_back({u->varg()[2 * i], u->varg()[2 * i] + u->src[0]->shape[i]});
      return {g.shrink(s)};
    }
    case Ops::SHRINK: {
      if (u->src.size() > 1) {  // a symbolic shrink: the pad back to the source's extents, zeros beyond the shrunk extent
        size_t n = u->shape.size();
        return {ends(Ops::PAD, g, {u->src.begin() + 1, u->src.begin() + 1 + int64_t(n)}, exts(*u->src[0]))};
      }
      std::vector<std::pair<int64_t, int64_t>> p;
      for (size_t i = 0; i < u->shape.size(); i++) p.push_back({u->varg()[2 * i], u->src[0]->shape[i] - u->varg()[2 * i + 1]});
      return {g.pad(p)};
    }
    case Ops::FLIP: {
      std::vector<int64_t> axes;
      for (size_t i = 0; i < u->varg().size(); i++) if (u->varg()[i]) axes.push_back(int64_t(i));
      return {g.flip(axes)};
    }
    case Ops::REDUCE_AXIS: {
      Tensor x = S(0);
      Ops op = u->reduce_op();
      const UOp& xs = *u->src[0];
      if (op == Ops::ADD) return {to_shape(Ops::EXPAND, g, xs)};
      if (op == Ops::MUL) return {to_shape(Ops::EXPAND, g * ret, xs) / x};
      // MAX: split the gradient evenly between the maxima
      Tensor mask = (x == to_shape(Ops::EXPAND, ret, xs)).cast(g.dtype());
      Tensor count = mask.sum(u->reduce_axes(), true);
      return {to_shape(Ops::EXPAND, g / count, xs) * mask};
    }
    case Ops::GRAD_RULE: {
      const auto& a = u->varg();
      if (GradRule(a[0]) == GradRule::Conv) {
        auto [dx, dw] = conv_grads(S(1), S(2), g, std::vector<int64_t>(a.begin() + 1, a.end()));
        return {std::nullopt, dx, dw};
      }
      return {std::nullopt, g * S(2), std::nullopt};  // Elementwise
    }
    default: return {};  // none: not float valued (comparisons, bit ops, int division), or no gradient (detach, ...)
  }
})
}  // namespace detail

#endif

#if TINYGRAD_DEFINE_API
TINYGRAD_API std::vector<std::optional<Tensor>> compute_gradient(const Tensor& root, const Tensor& seed, const std::vector<Tensor>& targets,
                                                                 std::vector<bool>* reached) {
  auto topo = detail::toposort(root.uop());
  // the targets each node stands for
  std::unordered_map<const UOp*, std::vector<size_t>> by_node;
  std::unordered_map<int64_t, std::vector<size_t>> by_id;
  for (size_t i = 0; i < targets.size(); i++) {
    by_node[targets[i].uop().get()].push_back(i);
    if (targets[i].impl_->requires_grad) by_id[targets[i].impl_->param].push_back(i);
  }
  auto targets_of = [&](const UOp* u) {
    std::vector<size_t> r;
    if (auto it = by_node.find(u); it != by_node.end()) r = it->second;
    if (auto it = u->is_param() ? by_id.find(u->iarg()) : by_id.end(); it != by_id.end())
      for (size_t i : it->second) if (std::find(r.begin(), r.end(), i) == r.end()) r.push_back(i);
    return r;
  };
  // only nodes on a path to a target get gradients
  std::unordered_map<const UOp*, bool> on_path;
  for (auto& u : topo) {
    if (by_node.count(u.get()) || (u->is_param() && by_id.count(u->iarg()))) { on_path[u.get()] = true; continue; }
    if (u->op == Ops::DETACH) continue;
    for (auto& s : u->src) if (on_path[s.get()]) { on_path[u.get()] = true; break; }
  }
  std::unordered_map<const UOp*, Tensor> grads;
  grads.emplace(root.uop().get(), seed);
  std::vector<std::optional<Tensor>> out(targets.size());
  std::unordered_map<const UOp*, bool> reach{{root.uop().get(), true}};  // on a path from root, with or without gradient
  if (reached) reached->assign(targets.size(), false);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOpRef& u = *it;
    if (!on_path[u.get()] || !reach[u.get()]) continue;
    if (u->op != Ops::DETACH) for (auto& s : u->src) reach[s.get()] = true;
    auto g = grads.find(u.get());
    for (size_t i : targets_of(u.get())) {
      if (reached) (*reached)[i] = true;
      if (g != grads.end()) out[i] = out[i] ? *out[i] + g->second : g->second;
    }
    if (g == grads.end() || u->src.empty()) continue;
    auto sg = detail::grad_rule(u, g->second, root.device());
    for (size_t i = 0; i < u->src.size() && i < sg.size(); i++) {
      if (!sg[i] || !on_path[u->src[i].get()]) continue;
      auto [at, fresh] = grads.try_emplace(u->src[i].get(), *sg[i]);
      if (!fresh) at->second = at->second + *sg[i];
    }
  }
  return out;
}

TINYGRAD_API std::vector<Tensor> gradient(const Tensor& loss, const std::vector<Tensor>& targets) {
  if (!is_float(loss.dtype())) throw GradientError("tinygrad::gradient: the loss must be a float tensor, got " + to_string(loss.dtype()));
  if (loss.numel() != 1)
    throw GradientError("tinygrad::gradient: the loss must have one element, got shape " + to_string(loss.shape()) + "; pass a seed gradient");
  std::vector<bool> reached;
  auto gs = compute_gradient(loss, Tensor::full(loss.shape(), 1.0, loss.dtype(), loss.device()), targets, &reached);
  std::vector<Tensor> out;
  for (size_t i = 0; i < targets.size(); i++) {
    if (!reached[i])
      throw GradientError("tinygrad::gradient: target " + std::to_string(i) + " (shape " + to_string(targets[i].shape()) + ", " +
                          to_string(targets[i].dtype()) + ") is not used by the loss" +
                          (targets[i].requires_grad() ? "" : " (a target that does not require grad is found by its graph node only)"));
    out.push_back(gs[i] ? gs[i]->cast(targets[i].dtype()) : Tensor::zeros(targets[i].shape(), targets[i].dtype(), targets[i].device()));
  }
  return out;
}

TINYGRAD_API Tensor& Tensor::backward(std::optional<Tensor> seed) {
  if (!is_float(dtype())) throw GradientError("tinygrad::backward: needs a float tensor, got " + to_string(dtype()));
  if (!seed && numel() != 1)
    throw GradientError("tinygrad::backward: a tensor of shape " + to_string(shape()) + " needs a seed gradient of the same shape");
  if (seed && seed->shape() != shape())
    throw GradientError("tinygrad::backward: seed shape " + to_string(seed->shape()) + " does not match " + to_string(shape()));
  // the registered tensors this one depends on (by their parameter ids)
  std::unordered_map<int64_t, bool> in_graph;
  for (auto& u : detail::toposort(uop())) if (u->is_param()) in_graph[u->iarg()] = true;
  std::vector<std::shared_ptr<Impl>> params;
  {
    std::lock_guard lk(grad_mutex());
    auto& reg = grad_registry();
    std::erase_if(reg, [](auto& w) { return w.expired(); });
    for (auto& w : reg) if (auto p = w.lock(); p && p->requires_grad && in_graph.count(p->param)) params.push_back(p);
  }
  if (params.empty())
    throw GradientError("tinygrad::backward: no tensor that requires grad contributes to this one (call requires_grad_() on the parameters first)");
  std::vector<Tensor> targets;
  for (auto& p : params) targets.push_back(Tensor(p));
  auto gs = compute_gradient(*this, seed.value_or(Tensor::full(shape(), 1.0, dtype(), device())), targets);
  for (size_t i = 0; i < params.size(); i++) {
    if (!gs[i]) continue;
    Tensor g = gs[i]->cast(targets[i].dtype()).detach();  // .grad is a value, not part of a graph (reading it keeps none)
    params[i]->grad = (params[i]->grad ? Tensor(params[i]->grad) + g : g).impl_;
  }
  return *this;
}
#endif

}  // namespace tinygrad
