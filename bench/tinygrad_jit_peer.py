#!/usr/bin/env python3
"""Peer of bench_static: microseconds per call of a TinyJit'd function computing bench_static's expression,
sqrt(sum(relu(a*b + 1), axis=1) / 16) with a of shape (4, 16) and b of shape (16,), on tinygrad's CPU backend.
The call includes the kernel (a few hundred ns at this size). Usage: python3 bench/tinygrad_jit_peer.py"""
import json, os, time
os.environ.setdefault("DEV", "CPU")
from tinygrad import Tensor, TinyJit

@TinyJit
def f(a, b): return (((a * b + 1).relu().sum(axis=1)) * (1 / 16)).sqrt().realize()

a, b = Tensor.rand(4, 16).realize(), Tensor.rand(16).realize()
for _ in range(10): f(a, b)
best = 1e30
for _ in range(5):
  t0 = time.perf_counter()
  for _ in range(2000): f(a, b)
  best = min(best, (time.perf_counter() - t0) / 2000)
print(json.dumps({"jit_call_us": best * 1e6}))
