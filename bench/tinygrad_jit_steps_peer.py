#!/usr/bin/env python3
"""Peer of bench_jit: tinygrad's TinyJit on DEV (CPU or CUDA): 1,000 dependent `x = (x + 1).contiguous()` on 1024
floats (microseconds per kernel), and a training step of an MLP 784-512-512-10, batch 256, Adam (microseconds per
step). Prints one JSON line."""
import json, os, time
os.environ.setdefault("DEV", "CPU")
from tinygrad import Tensor, TinyJit, Device, nn
from tinygrad.helpers import Context

def timed(f, warm, reps, inner):
  for _ in range(warm): f()
  Device[Device.DEFAULT].synchronize()
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    for _ in range(inner): f()
    Device[Device.DEFAULT].synchronize()
    ts.append((time.perf_counter() - t0) / inner)
  return sorted(ts)[len(ts) // 2]

out = {"device": Device.DEFAULT}
N = 1000
@TinyJit
def chain(x):
  for _ in range(N): x = (x + 1).contiguous()
  return x.realize()
x = Tensor.zeros(1024).contiguous().realize()
out["chain_jit_us"] = timed(lambda: chain(x), 3, 5, 3) / N * 1e6

class MLP:
  def __init__(self): self.l1, self.l2, self.l3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)
  def __call__(self, x): return self.l3(self.l2(self.l1(x).relu()).relu())
model = MLP()
opt = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)
X, Y = Tensor.rand(256, 784).realize(), (Tensor.rand(256) * 10).cast("int32").realize()
@TinyJit
def step(x, y):
  with Context(TRAINING=1):
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    return loss.realize(*opt.schedule_step())
out["mlp_jit_us"] = timed(lambda: step(X, Y), 3, 5, 10) * 1e6
print(json.dumps(out))
