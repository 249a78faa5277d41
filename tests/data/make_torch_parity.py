#!/usr/bin/env python3
"""Reference values for tests/test_torch_parity.cpp (conv/pool argument order, gelu, attention with fully masked rows).

  python3 tests/data/make_torch_parity.py      (tested with torch 2.15.0, CPU)

prints one line per case: name, the output shape, fp(out) and fp(grad) of each input, where fp(t) = sum_i t.flatten()[i] * cos(i)
and the loss behind the gradients is fp(out). Inputs: data(shape, phase)[i] = float32(2 sin(0.7 i + phase)).
Paste the lines into the test's table.
"""
import math

import torch
import torch.nn.functional as F


def data(shape, phase):
    n = math.prod(shape)
    v = [2 * math.sin(0.7 * i + phase) for i in range(n)]
    return torch.tensor(v, dtype=torch.float32).double().reshape(shape).requires_grad_()


def fp(t):
    t = t.flatten()
    return (t * torch.cos(torch.arange(t.numel(), dtype=torch.float64))).sum()


def case(name, f, *inputs):
    out = f(*inputs)
    loss = fp(out)
    grads = torch.autograd.grad(loss, inputs)
    vals = ", ".join(f"{float(v.detach()):.9g}" for v in [loss] + [fp(g) for g in grads])
    print(f'    {{"{name}", {{{", ".join(map(str, out.shape))}}}, {{{vals}}}}},')


x = data((1, 4, 10, 10), 0.3)
case("max_pool2d(x, 3, 2, 1)", lambda x: F.max_pool2d(x, 3, 2, 1), x)
case("max_pool2d(x, 3, 2, 1, 2, True)", lambda x: F.max_pool2d(x, 3, 2, 1, 2, True), x)
case("max_pool2d(x, (3, 2), (2, 1), (1, 0))", lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 0)), x)
case("max_pool2d_with_indices(x, 3, 2, 1) indices", lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[1].double() + 0 * x.sum(), x)
case("avg_pool2d(x, 3, 2, 1)", lambda x: F.avg_pool2d(x, 3, 2, 1), x)
case("avg_pool2d(x, 3, 2, 1, True, False)", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), x)
case("avg_pool2d(x, 3, 2, 1, False, True, 5)", lambda x: F.avg_pool2d(x, 3, 2, 1, False, True, 5), x)
w, b = data((6, 2, 3, 3), 1.1), data((6,), 2.3)
w4 = data((6, 4, 3, 3), 1.1)
case("conv2d(x, w4)", lambda x, w: F.conv2d(x, w), x, w4)
case("conv2d(x, w, b, 2, 1, 2, 2)", lambda x, w, b: F.conv2d(x, w, b, 2, 1, 2, 2), x, w, b)
case("conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2)", lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2), x, w, b)
x1, w1 = data((2, 4, 12), 0.5), data((6, 2, 3), 0.9)
case("conv1d(x1, w1, None, 2, 2, 3, 2)", lambda x, w: F.conv1d(x, w, None, 2, 2, 3, 2), x1, w1)
x3, w3 = data((1, 2, 5, 6, 4), 0.2), data((3, 2, 2, 3, 2), 1.7)
case("conv3d(x3, w3, None, 1, 1, 2)", lambda x, w: F.conv3d(x, w, None, 1, 1, 2), x3, w3)
xt, wt, bt = data((1, 4, 5, 5), 0.4), data((4, 3, 3, 3), 1.3), data((6,), 0.1)
case("conv_transpose2d(xt, wt, bt, 2, 1, 1, 2, 2)", lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1, 2, 2), xt, wt, bt)
g = torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0], dtype=torch.float64, requires_grad=True)
case("gelu(g)", lambda g: F.gelu(g), g)
case("gelu(g, tanh)", lambda g: F.gelu(g, approximate="tanh"), g)
q, k, v = data((1, 2, 3, 4), 0.6), data((1, 2, 5, 4), 1.4), data((1, 2, 5, 4), 2.2)
keep = torch.tensor([[True, False, True, True, False], [False] * 5, [True] * 5])
case("sdpa(q, k, v, bool mask, row 1 all false)", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep), q, k, v)
fmask = torch.zeros(3, 5, dtype=torch.float64).masked_fill(~keep, float("-inf"))
case("sdpa(q, k, v, float mask, row 1 all -inf)", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=fmask), q, k, v)
kc, vc = data((1, 2, 3, 4), 1.4), data((1, 2, 3, 4), 2.2)
case("sdpa(q, kc, vc, is_causal)", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, kc, vc)
for approximate in ("none", "tanh"):  # the values
    h = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    y = F.gelu(h, approximate=approximate)
    print(f"    // gelu(1.5, {approximate}) = {float(y.detach()):.9g}, gradient {float(torch.autograd.grad(y, h)[0]):.9g}")
