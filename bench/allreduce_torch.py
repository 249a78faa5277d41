#!/usr/bin/env python3
"""Peer of bench_allreduce: PyTorch's dist.all_reduce (NCCL backend), one process per GPU (torch.multiprocessing.spawn).
  allreduce_torch.py <gpus> <port> <bytes>...
For each size: a float32 tensor of that many bytes on each GPU, summed in place; WARMUP calls, then the median of REPS
samples, each ITERS back-to-back calls between synchronizations (the same method as bench_allreduce). Prints one JSON
line: per size its seconds a call and bus bandwidth (2(n-1)/n * bytes / time, GB/s); {"error": ...} without torch."""
import json, os, statistics, sys, time

for k, v in {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}.items():
  os.environ[k] = v  # NVLink multicast stays off (issue 41)
try:
  import torch
  import torch.distributed as dist
  import torch.multiprocessing as mp
except ImportError as e:
  print(json.dumps({"error": f"no torch: {e}"}))
  sys.exit(0)

WARMUP, REPS = 3, 10


def iters(nbytes): return 20 if nbytes < (256 << 20) else 5


def worker(rank, n, port, sizes, q):
  torch.cuda.set_device(rank)
  dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
  res = {}
  for nbytes in sizes:
    x = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP): dist.all_reduce(x)
    samples = []
    for _ in range(REPS):
      torch.cuda.synchronize()
      dist.barrier()
      t0 = time.perf_counter()
      for _ in range(iters(nbytes)): dist.all_reduce(x)
      torch.cuda.synchronize()
      samples.append((time.perf_counter() - t0) / iters(nbytes))
    t = statistics.median(samples)
    res[str(nbytes)] = {"s": t, "busbw_GBps": 2 * (n - 1) / n * nbytes / t / 1e9}
    del x
  if rank == 0: q.put(res)
  dist.destroy_process_group()


if __name__ == "__main__":
  n, port, sizes = int(sys.argv[1]), int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
  if not torch.cuda.is_available() or torch.cuda.device_count() < n:
    print(json.dumps({"error": f"{torch.cuda.device_count()} CUDA devices, {n} asked for"}))
    sys.exit(0)
  ctx = mp.get_context("spawn")
  q = ctx.SimpleQueue()
  mp.spawn(worker, args=(n, port, sizes, q), nprocs=n, join=True)
  print(json.dumps({"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())), "gpus": n, "sizes": q.get()}))
