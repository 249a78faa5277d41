#!/usr/bin/env python3
"""PyTorch DistributedDataParallel peer: seconds per data-parallel training step over GPUS CUDA devices, one process per
GPU (NCCL), BS samples per GPU. Prints one JSON line (rank 0). MODEL picks the step:
  fashion (bench_train GPUS=n): the Fashion-MNIST model (as torch_train_peer.py), Adam, cross-entropy; BatchNorm is each
    GPU's own (DDP's default; tinygrad.hpp's is the global batch's, as SyncBatchNorm)
  encoder (bench_multi): a BERT-base-sized encoder, 12 post-LN nn.TransformerEncoderLayer (768 wide, 12 heads, 3072
    feed-forward, GELU, no dropout, float32) on BS sequences of SEQ tokens, Adam (lr 1e-4), loss mean(out ** 2)"""
import json, os, socket, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

MODEL = os.getenv("MODEL", "fashion")
BS, SEQ, WARM, STEPS, GPUS = (int(os.getenv(k, d)) for k, d in (("BS", "512"), ("SEQ", "128"), ("WARM", "3"), ("STEPS", "5"), ("GPUS", "2")))


def setup(dev):
  """the model, its optimizer's learning rate, and the step's loss of the model's output"""
  if MODEL == "encoder":
    layer = lambda: nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
    X = torch.randn(BS, SEQ, 768, device=dev)
    return nn.Sequential(*[layer() for _ in range(12)]).to(dev), 1e-4, X, lambda out: out.square().mean()
  model = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                        nn.Flatten(1), nn.Linear(576, 10)).to(dev)
  X, Y = torch.rand(BS, 1, 28, 28, device=dev), torch.randint(0, 10, (BS,), device=dev)
  return model, 1e-3, X, lambda out: F.cross_entropy(out, Y)


def run(rank, port):
  os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
  dist.init_process_group("nccl", rank=rank, world_size=GPUS)
  torch.cuda.set_device(rank)
  dev = f"cuda:{rank}"
  model, lr, X, loss_of = setup(dev)
  ddp = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
  opt = torch.optim.Adam(ddp.parameters(), lr=lr)

  def step():
    opt.zero_grad()
    loss = loss_of(ddp(X))
    loss.backward()
    opt.step()
    return loss.item()

  for _ in range(WARM): step()
  times = []
  for _ in range(STEPS):
    dist.barrier(); torch.cuda.synchronize(); t0 = time.perf_counter(); step(); torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
  if rank == 0:
    print(json.dumps({"s_per_step": sorted(times)[len(times) // 2], "gpus": GPUS, "batch_per_gpu": BS, "model": MODEL, "torch": torch.__version__}),
          flush=True)
  dist.destroy_process_group()


if __name__ == "__main__":
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  mp.spawn(run, args=(port,), nprocs=GPUS)
