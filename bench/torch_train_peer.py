#!/usr/bin/env python3
"""Peer of bench_train: seconds per training step of the same Fashion-MNIST model (tinygrad's beautiful_mnist, the
model of examples/fashion_mnist.cpp: 4 convs, 2 batchnorms, 2 max-pools, a linear; Adam) in PyTorch eager on DEV (CPU,
or CUDA: cuDNN), at batch BS with THREADS intra-op threads (bench_train passes its own count and device). Usage: pip install torch; prints one
JSON line."""
import json, os, time
import torch
import torch.nn as nn
import torch.nn.functional as F

BS, WARM, STEPS = int(os.getenv("BS", "512")), int(os.getenv("WARM", "3")), int(os.getenv("STEPS", "5"))
torch.set_num_threads(int(os.getenv("THREADS", str(os.cpu_count() or 1))))
dev = "cuda" if os.getenv("DEV", "CPU").upper().startswith("CUDA") else "cpu"
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
model = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                      nn.Flatten(1), nn.Linear(576, 10)).to(dev)
opt = torch.optim.Adam(model.parameters())
X, Y = torch.rand(BS, 1, 28, 28, device=dev), torch.randint(0, 10, (BS,), device=dev)

def step():
  opt.zero_grad()
  loss = F.cross_entropy(model(X), Y)
  loss.backward()
  opt.step()
  return loss.item()

model.train()
for _ in range(WARM): step()
times = []
for _ in range(STEPS):
  sync(); t0 = time.perf_counter(); step(); sync(); times.append(time.perf_counter() - t0)
print(json.dumps({"device": dev, "s_per_step": sorted(times)[len(times) // 2], "batch": BS, "threads": torch.get_num_threads(),
                  "torch": torch.__version__}))
