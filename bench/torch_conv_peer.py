#!/usr/bin/env python3
"""Peer of bench_gpu's conv2d rows: PyTorch (cuDNN on CUDA) on DEV (CPU or CUDA) with THREADS intra-op threads.
The four convs of examples/fashion_mnist.hpp at batch BS (default 512), float32, TF32 off, cudnn.benchmark on (cuDNN's
fastest algorithm): forward, then backward of a fixed random output gradient to the input, weight and bias. Best of
REPS (default 10) after warmup. Prints one JSON line: conv<i>_us per layer."""
import json, os, time
import torch
import torch.nn.functional as F

dev = "cuda" if os.getenv("DEV", "CPU").upper().startswith("CUDA") else "cpu"
torch.set_num_threads(int(os.getenv("THREADS", str(os.cpu_count() or 1))))
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
BS, REPS = int(os.getenv("BS", "512")), int(os.getenv("REPS", "10"))
# NOTE: keep in step with bench_gpu.cpp's CONV_LAYERS: (in channels, out channels, kernel, input side)
LAYERS = [(1, 32, 5, 28), (32, 32, 5, 24), (32, 64, 3, 10), (64, 64, 3, 8)]

out = {"device": dev, "torch": torch.__version__, "bs": BS}
for i, (cin, cout, k, side) in enumerate(LAYERS, 1):
  x = torch.rand(BS, cin, side, side, device=dev, requires_grad=True)
  w = (torch.rand(cout, cin, k, k, device=dev) - 0.5).requires_grad_()
  b = (torch.rand(cout, device=dev) - 0.5).requires_grad_()
  g = torch.rand(BS, cout, side - k + 1, side - k + 1, device=dev)
  def step():
    y = F.conv2d(x, w, b)
    return torch.autograd.grad(y, (x, w, b), g)
  for _ in range(3): step()
  best = float("inf")
  for _ in range(REPS):
    sync()
    t0 = time.perf_counter()
    step()
    sync()
    best = min(best, time.perf_counter() - t0)
  out[f"conv{i}_us"] = best * 1e6
print(json.dumps(out))
