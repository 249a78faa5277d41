#!/usr/bin/env python3
"""Writes tests/data/torch_nn_reference.json with PyTorch (CPU): the values tests/test_nn.cpp ([parity]) checks
tinygrad.hpp against, since CI has no torch.

    python3 tests/data/make_torch_nn_reference.py

- optim: parameters after each of 5 steps of SGD / Adam / AdamW on a fixed loss, per configuration (maximize, amsgrad)
- sched: the learning rate at epochs 0..n of StepLR, MultiStepLR, CosineAnnealingLR, OneCycleLR; for OneCycleLR also
  the momentum (SGD) or beta1 (Adam) it cycles, with the optimizer named by "opt"; "w": the parameter (from [1, 1],
  loss (w * w).sum()) after the last step
- loss: F.cross_entropy and F.nll_loss forward values and gradients (of sum(out * r)) for weight / ignore_index /
  label_smoothing / reduction / spatial / probability-target configurations
Inputs are float32 values, stored exactly; the arguments are in tinygrad.hpp's positional order.
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def vals(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


# ---- optimizers: loss = sum(c1 * w1^2) + sum(c2 * w2) + 0.1 * sum(w2^3) ----
W1 = torch.rand(2, 3) * 2 - 1
W2 = torch.rand(4) * 1.5 + 0.5
C1 = torch.rand(2, 3) + 0.5
C2 = torch.rand(4) - 0.5


def loss_of(w1, w2):
    return (C1 * w1 * w1).sum() + (C2 * w2).sum() + 0.1 * (w2 * w2 * w2).sum()


optim_cases = []
# (kind, our args, torch constructor)
configs = [
    ("SGD", [0.1, 0, 0, 0, False], lambda p: torch.optim.SGD(p, lr=0.1)),
    ("SGD", [0.1, 0.9, 0, 0, False], lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    ("SGD", [0.1, 0.9, 0.3, 0, False], lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", [0.1, 0.9, 0, 0, True], lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", [0.1, 0, 0, 0.05, False], lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.05)),
    ("SGD", [0.1, 0.5, 0.2, 0.1, False], lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, dampening=0.2, weight_decay=0.1)),
    ("SGD", [0.1, 0.5, 0, 0.1, True], lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, weight_decay=0.1, nesterov=True)),
    ("Adam", [0.1, 0.9, 0.999, 1e-8, 0], lambda p: torch.optim.Adam(p, lr=0.1)),
    ("Adam", [0.1, 0.9, 0.999, 1e-8, 0.5], lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.5)),
    ("Adam", [0.05, 0.5, 0.75, 1e-3, 0.1], lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.5, 0.75), eps=1e-3, weight_decay=0.1)),
    ("AdamW", [0.1, 0.9, 0.999, 1e-8, 0.01], lambda p: torch.optim.AdamW(p, lr=0.1)),
    ("AdamW", [0.1, 0.9, 0.999, 1e-8, 0.5], lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.5)),
    ("AdamW", [0.05, 0.5, 0.75, 1e-3, 0.1], lambda p: torch.optim.AdamW(p, lr=0.05, betas=(0.5, 0.75), eps=1e-3, weight_decay=0.1)),
    # args 5, 6 (Adam, AdamW: amsgrad, maximize) and 5 (SGD: maximize)
    ("SGD", [0.1, 0.9, 0.3, 0.1, False, True], lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.1,
                                                                      maximize=True)),
    ("SGD", [0.05, 0.5, 0, 0, True, True], lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5, nesterov=True, maximize=True)),
    ("Adam", [0.1, 0.9, 0.999, 1e-8, 0, True, False], lambda p: torch.optim.Adam(p, lr=0.1, amsgrad=True)),
    ("Adam", [0.05, 0.5, 0.75, 1e-3, 0.1, True, True], lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.5, 0.75), eps=1e-3, weight_decay=0.1,
                                                                                amsgrad=True, maximize=True)),
    ("Adam", [0.1, 0.9, 0.999, 1e-8, 0.5, False, True], lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.5, maximize=True)),
    ("AdamW", [0.1, 0.9, 0.999, 1e-8, 0.5, True, False], lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.5, amsgrad=True)),
    ("AdamW", [0.05, 0.5, 0.75, 1e-3, 0.1, True, True], lambda p: torch.optim.AdamW(p, lr=0.05, betas=(0.5, 0.75), eps=1e-3,
                                                                                 weight_decay=0.1, amsgrad=True, maximize=True)),
]
for kind, args, make in configs:
    w1, w2 = W1.clone().requires_grad_(), W2.clone().requires_grad_()
    opt = make([w1, w2])
    steps = []
    for _ in range(5):
        opt.zero_grad()
        loss_of(w1, w2).backward()
        opt.step()
        steps.append(vals(w1) + vals(w2))
    optim_cases.append({"kind": kind, "args": [float(a) for a in args], "steps": steps})

# ---- learning-rate schedules ----
sched_cases = []


def sched(kind, args, make, n, base_lr=0.1, opt_kind="SGD"):
    p = torch.ones(2, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr, momentum=0.9) if opt_kind == "SGD" else torch.optim.Adam([p], lr=base_lr)
    s = make(opt)
    mom = (lambda: opt.param_groups[0]["momentum"]) if opt_kind == "SGD" else (lambda: opt.param_groups[0]["betas"][0])
    lrs, moms = [s.get_last_lr()[0]], [mom()]
    for _ in range(n):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
        moms.append(mom())
    case = {"kind": kind, "base_lr": base_lr, "args": args, "lrs": lrs, "opt": opt_kind, "w": vals(p)}
    if kind == "OneCycleLR":
        case["momentum"] = moms
    sched_cases.append(case)


S = torch.optim.lr_scheduler
sched("StepLR", [3, 0.5], lambda o: S.StepLR(o, 3, 0.5), 35)
sched("StepLR", [7, 0.9], lambda o: S.StepLR(o, 7, 0.9), 35, 0.25)
sched("MultiStepLR", [[2, 5, 5, 11], 0.1], lambda o: S.MultiStepLR(o, [2, 5, 5, 11], 0.1), 35)
sched("MultiStepLR", [[10, 20], 0.5], lambda o: S.MultiStepLR(o, [10, 20], 0.5), 35)
sched("CosineAnnealingLR", [10, 0.001], lambda o: S.CosineAnnealingLR(o, 10, 0.001), 35)
sched("CosineAnnealingLR", [7, 0], lambda o: S.CosineAnnealingLR(o, 7), 35, 0.3)
# OneCycleLR args: max_lr, total_steps, pct_start, anneal_strategy, cycle_momentum, base_momentum, max_momentum, div_factor,
# final_div_factor, three_phase
for a in [[0.1, 20, 0.25, "cos", True, 0.85, 0.95, 25, 1e4, False], [0.1, 40, 0.3, "cos", True, 0.85, 0.95, 25, 1e4, False],
          [0.4, 36, 0.3, "linear", True, 0.8, 0.9, 10, 100, False], [0.1, 35, 0.3, "cos", True, 0.85, 0.95, 25, 1e4, True],
          [0.2, 33, 0.4, "linear", True, 0.7, 0.99, 25, 1e4, True], [0.05, 31, 0.1, "cos", False, 0.85, 0.95, 5, 50, False]]:
    for opt_kind in ["SGD", "Adam"]:
        sched("OneCycleLR", a, lambda o, a=a: S.OneCycleLR(o, a[0], total_steps=a[1], pct_start=a[2], anneal_strategy=a[3],
                                                           cycle_momentum=a[4], base_momentum=a[5], max_momentum=a[6],
                                                           div_factor=a[7], final_div_factor=a[8], three_phase=a[9]), a[1],
              opt_kind=opt_kind)

# ---- losses ----
loss_cases = []


def loss(fn, x, y, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    x = x.clone().requires_grad_()
    kw = dict(weight=weight, ignore_index=ignore_index, reduction=reduction)
    out = F.cross_entropy(x, y, label_smoothing=ls, **kw) if fn == "cross_entropy" else F.nll_loss(x, y, **kw)
    r = torch.rand(out.shape) + 0.5 if reduction == "none" else torch.ones(())
    (out * r).sum().backward()
    probs = y.is_floating_point()
    loss_cases.append({"fn": fn, "x": vals(x), "xshape": list(x.shape), "y": vals(y) if probs else [int(v) for v in y.reshape(-1).tolist()],
                       "yshape": list(y.shape), "probs": probs, "weight": None if weight is None else vals(weight),
                       "ignore_index": ignore_index, "reduction": reduction, "ls": ls, "r": vals(r), "out": vals(out),
                       "grad": vals(x.grad)})


X = torch.randn(6, 5)
Y = torch.tensor([0, 3, -100, 4, 3, 1])
Y2 = torch.tensor([0, 2, 2, 4, 3, 1])
Wt = torch.rand(5) + 0.2
for red in ["mean", "sum", "none"]:
    loss("cross_entropy", X, Y, reduction=red)
    loss("cross_entropy", X, Y, Wt, reduction=red)
    loss("cross_entropy", X, Y2, Wt, ignore_index=2, reduction=red)
    loss("cross_entropy", X, Y, reduction=red, ls=0.1)
    loss("cross_entropy", X, Y, Wt, reduction=red, ls=0.25)
    loss("cross_entropy", X, Y2, Wt, ignore_index=2, reduction=red, ls=0.3)
    P = torch.softmax(torch.randn(6, 5), 1)
    loss("cross_entropy", X, P, reduction=red, ls=0.2)
    loss("cross_entropy", X, P, Wt, reduction=red)
    loss("cross_entropy", X, P, Wt, reduction=red, ls=0.15)
    XS, YS = torch.randn(2, 4, 3, 2), torch.tensor([[[0, 3], [-100, 1], [2, 2]], [[3, -100], [1, 0], [0, 3]]])
    W4 = torch.rand(4) + 0.2
    loss("cross_entropy", XS, YS, W4, reduction=red, ls=0.2)
    loss("cross_entropy", XS, torch.softmax(torch.randn(2, 4, 3, 2), 1), W4, reduction=red, ls=0.1)
    loss("nll_loss", X, Y, reduction=red)
    loss("nll_loss", X, Y2, Wt, ignore_index=2, reduction=red)
    loss("nll_loss", XS, YS, W4, reduction=red)
loss("cross_entropy", X[0], torch.tensor(3), Wt, ls=0.1)  # 1-D logits, a scalar target

out = {"optim": {"w1": vals(W1), "w2": vals(W2), "c1": vals(C1), "c2": vals(C2), "cases": optim_cases},
       "sched": sched_cases, "loss": loss_cases, "torch": torch.__version__}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_nn_reference.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print("wrote", path, os.path.getsize(path), "bytes")
