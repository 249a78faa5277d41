#!/usr/bin/env python3
"""Peer of bench_multi's data-parallel part: seconds per training step of a BERT-base-sized encoder (12 post-LN
nn.TransformerEncoderLayer, 768 wide, 12 heads, 3072 feed-forward, GELU, no dropout, float32) with Adam and the loss
mean(out ** 2), under PyTorch DistributedDataParallel over GPUS CUDA devices, one process per GPU (NCCL), BS sequences
of SEQ tokens per GPU. Prints one JSON line (rank 0)."""
import json, os, socket, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

BS, SEQ, WARM, STEPS, GPUS = (int(os.getenv(k, d)) for k, d in (("BS", "8"), ("SEQ", "128"), ("WARM", "3"), ("STEPS", "11"), ("GPUS", "2")))


def run(rank, port):
  os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
  dist.init_process_group("nccl", rank=rank, world_size=GPUS)
  torch.cuda.set_device(rank)
  dev = f"cuda:{rank}"
  layer = lambda: nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
  model = nn.Sequential(*[layer() for _ in range(12)]).to(dev)
  ddp = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
  opt = torch.optim.Adam(ddp.parameters(), lr=1e-4)
  X = torch.randn(BS, SEQ, 768, device=dev)

  def step():
    opt.zero_grad()
    loss = ddp(X).square().mean()
    loss.backward()
    opt.step()
    return loss.item()

  for _ in range(WARM): step()
  times = []
  for _ in range(STEPS):
    dist.barrier(); torch.cuda.synchronize(); t0 = time.perf_counter(); step(); torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
  if rank == 0:
    print(json.dumps({"s_per_step": sorted(times)[len(times) // 2], "gpus": GPUS, "batch_per_gpu": BS, "torch": torch.__version__}), flush=True)
  dist.destroy_process_group()


if __name__ == "__main__":
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  mp.spawn(run, args=(port,), nprocs=GPUS)
