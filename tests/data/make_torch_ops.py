#!/usr/bin/env python3
"""Reference values for tests/test_torch_ops.cpp ([parity]), computed by PyTorch (CPU, float32).

  python3 tests/data/make_torch_ops.py        (tested with torch 2.15.0)

writes tests/data/torch_ops.json: a list of cases, each
  {"name", "op", "args", "inputs": [{"shape", "data", "grad": bool, "dtype"}], "out": {"shape", "data"},
   "seed": {"shape", "data"}, "grads": [{"shape", "data"} or null per input]}
The test runs `op` on the inputs, compares the output, then backward(seed) and compares each input's gradient.
"""
import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(40)


def rnd(*shape, lo=-2.0, hi=2.0, step=None):
    x = torch.rand(*shape, generator=g) * (hi - lo) + lo
    return (x / step).round() * step if step else x


def enc(t):
    return {"shape": list(t.shape), "data": [float(f"{v:.9g}") for v in t.detach().double().flatten().tolist()]}


cases = []


def case(name, op, fn, inputs, args=None, grad=True, dtypes=None, nograd=()):
    ins = [t.clone().detach().requires_grad_(grad and i not in nograd and (dtypes is None or dtypes[i] == "float32"))
           for i, t in enumerate(inputs)]
    out = fn(*ins)
    c = {"name": name, "op": op, "args": args or {},
         "inputs": [dict(enc(t), grad=t.requires_grad, dtype=(dtypes[i] if dtypes else "float32")) for i, t in enumerate(ins)],
         "out": enc(out)}
    if grad and out.requires_grad:
        seed = torch.cos(torch.arange(out.numel(), dtype=torch.float32) * 0.7 + 0.3).reshape(out.shape)
        out.backward(seed)
        c["seed"] = enc(seed)
        c["grads"] = [enc(t.grad) if t.requires_grad and t.grad is not None else (enc(torch.zeros_like(t)) if t.requires_grad else None)
                      for t in ins]
    cases.append(c)


# ---- losses: broadcasts and size-1 dims, every reduction ----
pairs = [((3, 4), (3, 4)), ((2, 3, 1), (1, 3, 4)), ((5,), (1,)), ((1, 4), (2, 1))]
for r in ["mean", "sum", "none"]:
    for i, (sa, sb) in enumerate(pairs):
        x, y = rnd(*sa), rnd(*sb)
        case(f"mse_loss {sa} {sb} {r}", "mse_loss", lambda a, b: F.mse_loss(a, b, reduction=r), [x, y], {"reduction": r})
        case(f"l1_loss {sa} {sb} {r}", "l1_loss", lambda a, b: F.l1_loss(a, b, reduction=r), [x, y], {"reduction": r})
        for d in [1.0, 0.5]:
            case(f"huber_loss {sa} {sb} {r} {d}", "huber_loss", lambda a, b: F.huber_loss(a, b, reduction=r, delta=d), [x, y],
                 {"reduction": r, "delta": d})
        for bt in [0.5, 0.0]:
            case(f"smooth_l1_loss {sa} {sb} {r} {bt}", "smooth_l1_loss", lambda a, b: F.smooth_l1_loss(a, b, reduction=r, beta=bt),
                 [x, y], {"reduction": r, "beta": bt})
for r in ["mean", "sum", "none", "batchmean"]:
    for lt in [False, True]:
        for sa, sb in [((3, 5), (3, 5)), ((2, 3, 4), (1, 3, 4)), ((4,), (4,))]:
            x = torch.log_softmax(rnd(*sa), -1)
            y = torch.softmax(rnd(*sb) * 2, -1)
            if len(sb) == 2: y[0, 1] = 0.0  # xlogy(0, 0) = 0
            if lt: y = torch.log(y.clamp_min(1e-3))
            case(f"kl_div {sa} {sb} {r} log_target={lt}", "kl_div", lambda a, b: F.kl_div(a, b, reduction=r, log_target=lt), [x, y],
                 {"reduction": r, "log_target": lt}, nograd=() if lt else (1,))  # torch: d/dy xlogy(y, y) at y = 0 is -inf
for r in ["mean", "sum", "none"]:
    p, y, w = torch.rand(3, 4, generator=g) * 0.9 + 0.05, (torch.rand(3, 4, generator=g) > 0.5).float(), rnd(1, 4, lo=0.5, hi=2)
    case(f"binary_cross_entropy {r}", "binary_cross_entropy", lambda a, b: F.binary_cross_entropy(a, b, reduction=r), [p, y], {"reduction": r},
         nograd=(1,))
    case(f"binary_cross_entropy weight {r}", "binary_cross_entropy", lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=r),
         [p, y, w], {"reduction": r}, nograd=(1, 2))
    x, pw = rnd(3, 4, lo=-4, hi=4), rnd(4, lo=0.5, hi=3)
    case(f"bce_with_logits {r}", "bce_with_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=r), [x, y],
         {"reduction": r})
    case(f"bce_with_logits weight pos_weight {r}", "bce_with_logits",
         lambda a, b, c, d: F.binary_cross_entropy_with_logits(a, b, c, reduction=r, pos_weight=d), [x, y, w, pw], {"reduction": r}, nograd=(2, 3))

# ---- norms ----
x = rnd(3, 4, 5)
x[1, 2, :] = 0.0  # a zero vector along dim 2, zeros elsewhere: the gradient at 0 is 0
x[0, 0, 0] = 0.0
for p in [2.0, 1.0, math.inf, -math.inf, 0.0, 3.0, 0.5, 1.5]:
    for dim, kd in [([], False), ([2], False), ([2], True), ([0, 2], False), ([-1, 1], True)]:
        # NOTE: p = 0 counts nonzeros: its gradient is all zeros (ours too, not "no gradient")
        case(f"norm p={p} dim={dim} keepdim={kd}", "norm", lambda a: torch.linalg.vector_norm(a, p, dim or None, kd), [x],
             {"p": str(p), "dim": dim, "keepdim": kd})
for sa, sb, dim in [((3, 4), (3, 4), 1), ((2, 1, 4), (1, 3, 4), -1), ((4, 3), (4, 1), 0), ((2, 5), (2, 5), 1)]:
    a, b = rnd(*sa), rnd(*sb)
    if sa == (2, 5): a[1] = 0.0  # a zero vector: the clamp to eps
    case(f"cosine_similarity {sa} {sb} dim={dim}", "cosine_similarity", lambda u, v: F.cosine_similarity(u, v, dim), [a, b], {"dim": dim})
for p, dim in [(2.0, 1), (1.0, 0), (3.0, -1), (math.inf, 1)]:
    a = rnd(3, 4)
    a[2] = 0.0
    case(f"normalize p={p} dim={dim}", "normalize", lambda u: F.normalize(u, p, dim), [a], {"p": str(p), "dim": dim})

# ---- selection ----
x = rnd(3, 4, 5, lo=-1, hi=1, step=0.5)  # many ties
for dim, kd in [([], False), ([1], False), ([1], True), ([0, 2], False), ([-1], True)]:
    case(f"amax dim={dim} keepdim={kd}", "amax", lambda a: torch.amax(a, dim, kd), [x], {"dim": dim, "keepdim": kd})
    case(f"amin dim={dim} keepdim={kd}", "amin", lambda a: torch.amin(a, dim, kd), [x], {"dim": dim, "keepdim": kd})
for shape in [(7,), (2, 4), (3, 1, 2)]:
    a = rnd(*shape, lo=-1, hi=1, step=0.5)
    case(f"median {shape}", "median", lambda u: torch.median(u), [a])
for shape, dim, kd in [((3, 5), 1, False), ((4, 6), 0, True), ((2, 4, 3), -1, False), ((5, 1), 1, False)]:
    a = torch.randperm(math.prod(shape), generator=g).float().reshape(shape) * 0.25 - 1  # no ties: the index is defined
    case(f"median values {shape} dim={dim}", "median_values", lambda u: torch.median(u, dim, kd).values, [a], {"dim": dim, "keepdim": kd})
    case(f"median indices {shape} dim={dim}", "median_indices", lambda u: torch.median(u, dim, kd).indices.float(), [a],
         {"dim": dim, "keepdim": kd}, grad=False)
for shape, dim, idx in [((4, 3), 0, [3, 0, 3]), ((2, 5, 3), 1, [4, 1]), ((2, 3), -1, [2, 2, 0, 1]), ((3, 2), 0, [1]), ((1, 4), 1, [])]:
    a = rnd(*shape)
    case(f"index_select {shape} dim={dim} {idx}", "index_select", lambda u, i: torch.index_select(u, dim, i.long()),
         [a, torch.tensor(idx, dtype=torch.float32)], {"dim": dim}, dtypes=["float32", "int64"])
case("mm", "mm", torch.mm, [rnd(3, 4), rnd(4, 2)])
case("mm 1x1", "mm", torch.mm, [rnd(1, 1), rnd(1, 5)])
case("bmm", "bmm", torch.bmm, [rnd(2, 3, 4), rnd(2, 4, 5)])
for shape, beta, alpha in [((2, 3, 5), 1.0, 1.0), ((3, 5), 0.5, 2.0), ((1, 1, 5), -1.0, 0.25), ((2, 3, 5), 0.0, 1.5)]:
    case(f"baddbmm {shape} beta={beta} alpha={alpha}", "baddbmm", lambda s, a, b: torch.baddbmm(s, a, b, beta=beta, alpha=alpha),
         [rnd(*shape), rnd(2, 3, 4), rnd(2, 4, 5)], {"beta": beta, "alpha": alpha})

# ---- interpolate(scale_factor=) ----
for shape, sf, mode, ac in [((1, 2, 3, 4), [2.0], "nearest", None), ((1, 1, 5, 3), [1.5], "nearest", None),
                            ((2, 1, 6, 7), [0.5], "nearest", None), ((1, 1, 3, 4), [1.7, 2.3], "nearest", None),
                            ((1, 1, 5, 3), [1.5], "nearest-exact", None), ((1, 1, 3, 4), [1.7], "bilinear", False),
                            ((1, 2, 3, 4), [1.7, 0.6], "bilinear", True), ((2, 2, 5), [2.5], "linear", False),
                            ((1, 1, 7), [0.4], "linear", False), ((1, 1, 2, 3, 2), [1.5, 2.0, 1.0], "trilinear", False)]:
    case(f"interpolate {shape} scale={sf} {mode} ac={ac}", "interpolate_scale",
         lambda u: F.interpolate(u, scale_factor=sf if len(sf) > 1 else sf[0], mode=mode, align_corners=ac), [rnd(*shape)],
         {"scale_factor": sf, "mode": mode, "align_corners": bool(ac)})

out = Path(__file__).with_name("torch_ops.json")
out.write_text(json.dumps({"torch": torch.__version__, "cases": cases}, separators=(",", ":")) + "\n")
print(f"{out}: {len(cases)} cases, {out.stat().st_size} bytes")
