#!/usr/bin/env python3
"""Peer of bench_train: seconds per jitted training step of tinygrad's beautiful_mnist model
(the model of examples/fashion_mnist.cpp) at batch BS on tinygrad's CPU backend.
Usage: DEV=CPU python3 bench/tinygrad_train_peer.py   (pip install tinygrad numpy). Prints one JSON line."""
import json, os, time
os.environ.setdefault("DEV", "CPU")
from tinygrad import Tensor, nn, TinyJit
from tinygrad.helpers import Context
from tinygrad.nn.state import get_parameters

class Model:
  def __init__(self):
    self.layers = [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
                   nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
                   lambda x: x.flatten(1), nn.Linear(576, 10)]
  def __call__(self, x): return x.sequential(self.layers)

BS, WARM, STEPS = int(os.getenv("BS", "512")), int(os.getenv("WARM", "3")), int(os.getenv("STEPS", "5"))
model = Model()
opt = nn.optim.Adam(get_parameters(model))
X, Y = Tensor.rand(BS, 1, 28, 28).realize(), Tensor.randint(BS, high=10).realize()

@TinyJit
def step(x, y):
  with Context(TRAINING=1):
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    return loss.realize(*opt.schedule_step())

for _ in range(WARM): step(X, Y).item()
times = []
for _ in range(STEPS):
  t0 = time.perf_counter(); step(X, Y).item(); times.append(time.perf_counter() - t0)
print(json.dumps({"s_per_step": sorted(times)[len(times) // 2], "batch": BS}))
