#!/usr/bin/env python3
"""Peer of bench_jit: PyTorch on DEV (CPU or CUDA) with THREADS intra-op threads.
  chain: 1,000 dependent `x = x + 1` on 1024 floats, per kernel: eager, and (CUDA) replayed as one CUDA graph;
  mlp:   a training step of an MLP 784-512-512-10, batch 256, Adam, float32: eager, and (CUDA) as a CUDA graph
         (torch.cuda.graph with a capturable Adam); and eager with the model and input cast to bfloat16 (weights,
         activations, gradients and Adam's state in bfloat16). Prints one JSON line of microseconds."""
import json, os, time
import torch
import torch.nn as nn
import torch.nn.functional as F

dev = "cuda" if os.getenv("DEV", "CPU").upper().startswith("CUDA") else "cpu"
torch.set_num_threads(int(os.getenv("THREADS", str(os.cpu_count() or 1))))
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

def timed(f, warm, reps, inner):
  for _ in range(warm): f()
  sync()
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    for _ in range(inner): f()
    sync()
    ts.append((time.perf_counter() - t0) / inner)
  return sorted(ts)[len(ts) // 2]

out = {"device": dev, "torch": torch.__version__}
N = 1000
x = torch.zeros(1024, device=dev)
def chain(x):
  for _ in range(N): x = x + 1
  return x
out["chain_eager_us"] = timed(lambda: chain(x), 2, 5, 1) / N * 1e6

def mlp(dtype):
  model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev, dtype)
  X, Y = torch.rand(256, 784, device=dev).to(dtype), torch.randint(0, 10, (256,), device=dev)
  opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=(dev == "cuda"))
  def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
    return loss
  return model, X, Y, opt, step
model, X, Y, opt, step = mlp(torch.float32)
out["mlp_eager_us"] = timed(step, 5, 5, 10) * 1e6
step16 = mlp(torch.bfloat16)[4]
out["mlp_bf16_eager_us"] = timed(step16, 5, 5, 10) * 1e6

if dev == "cuda":
  xs = torch.zeros(1024, device=dev)
  s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
  with torch.cuda.stream(s): chain(xs)
  torch.cuda.current_stream().wait_stream(s)
  g = torch.cuda.CUDAGraph()
  with torch.cuda.graph(g): ys = chain(xs)
  out["chain_graph_us"] = timed(g.replay, 3, 5, 3) / N * 1e6
  s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
  with torch.cuda.stream(s):
    for _ in range(3): step()
  torch.cuda.current_stream().wait_stream(s)
  g2 = torch.cuda.CUDAGraph()
  opt.zero_grad(set_to_none=True)
  with torch.cuda.graph(g2):
    loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
  out["mlp_graph_us"] = timed(g2.replay, 5, 5, 10) * 1e6
print(json.dumps(out))
