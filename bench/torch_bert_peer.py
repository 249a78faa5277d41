#!/usr/bin/env python3
"""Peer of bench_bert: all-MiniLM-L6-v2 sentence embeddings (the BERT forward, mean pooling, L2 normalization) in
plain PyTorch, from the same model.safetensors (read here: no safetensors or transformers package needed), on DEV (CPU,
or CUDA: float16 weights, .half()) with THREADS intra-op threads. Prints one JSON line.

  MODE=bench  (default) sentences/s for batch BS (32) x SEQ (128) tokens, median of ITERS after WARM
  MODE=cold   seconds from the script's start to the first embedding: import torch, load, tokenize, run (the tokenizer
              is the `tokenizers` package when importable, else the ids are made up and "tokenizer" says so)
  MODE=check  the embeddings of two sentences, for comparing with ours

The model directory is MINILM_DIR (bench_bert passes its own)."""
import time
T0 = time.perf_counter()
import json, math, os, struct, sys
import torch
import torch.nn.functional as F

MODE = os.getenv("MODE", "bench")
DIR = os.getenv("MINILM_DIR") or os.path.join(os.getenv("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tinygrad", "all-minilm-l6-v2")
BS, SEQ, WARM, ITERS = (int(os.getenv(k, d)) for k, d in (("BS", "32"), ("SEQ", "128"), ("WARM", "3"), ("ITERS", "10")))
torch.set_num_threads(int(os.getenv("THREADS", str(os.cpu_count() or 1))))
dev = "cuda" if os.getenv("DEV", "CPU").upper().startswith("CUDA") else "cpu"
dtype = torch.float16 if dev == "cuda" and os.getenv("HALF", "1") == "1" else torch.float32
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}


def safe_load(path):
  with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header, data = json.loads(f.read(n)), bytearray(f.read())
  out = {}
  for k, v in header.items():
    if k == "__metadata__": continue
    a, b = v["data_offsets"]
    out[k] = torch.frombuffer(data, dtype=DTYPES[v["dtype"]], count=(b - a) // DTYPES[v["dtype"]].itemsize, offset=a).reshape(v["shape"])
  return out


class MiniLM:
  def __init__(self, path):
    cfg = json.load(open(os.path.join(path, "config.json")))
    self.heads, self.layers, self.eps = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
    self.w = {k: (v.to(dev, dtype) if v.is_floating_point() else v.to(dev)) for k, v in safe_load(os.path.join(path, "model.safetensors")).items()}

  def lin(self, x, name): return F.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])
  def ln(self, x, name): return F.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

  @torch.inference_mode()
  def embed(self, ids, mask):
    B, S = ids.shape
    w, H = self.w, self.w["embeddings.word_embeddings.weight"].shape[1]
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:S] + w["embeddings.token_type_embeddings.weight"][0]
    x = self.ln(x, "embeddings.LayerNorm")
    keep = (mask != 0)[:, None, None, :]
    heads = lambda y: y.view(B, S, self.heads, H // self.heads).transpose(1, 2)
    for i in range(self.layers):
      p = f"encoder.layer.{i}."
      a = F.scaled_dot_product_attention(heads(self.lin(x, p + "attention.self.query")), heads(self.lin(x, p + "attention.self.key")),
                                         heads(self.lin(x, p + "attention.self.value")), attn_mask=keep)
      x = self.ln(self.lin(a.transpose(1, 2).reshape(B, S, H), p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
      x = self.ln(self.lin(F.gelu(self.lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
    m = mask.to(x.dtype)[:, :, None]
    mean = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return F.normalize(mean.float(), dim=-1)


def tokenizer():
  try:
    from tokenizers import Tokenizer
  except ImportError:
    return None
  t = Tokenizer.from_file(os.path.join(DIR, "tokenizer.json"))
  t.no_truncation(); t.no_padding()
  return t


def encode(tok, texts, max_length=256):
  rows = [e.ids[:max_length - 1] + e.ids[-1:] if len(e.ids) > max_length else e.ids for e in tok.encode_batch(texts)]
  S = max(len(r) for r in rows)
  ids = torch.tensor([r + [0] * (S - len(r)) for r in rows], dtype=torch.int64)
  mask = torch.tensor([[1] * len(r) + [0] * (S - len(r)) for r in rows], dtype=torch.int64)
  return ids.to(dev), mask.to(dev)


SENTENCES = ["A man is eating food.", "A man is eating a piece of bread."]
if MODE == "cold":
  tok = tokenizer()
  model = MiniLM(DIR)
  ids, mask = encode(tok, SENTENCES) if tok else (torch.randint(1000, 2000, (2, 10), device=dev), torch.ones(2, 10, dtype=torch.int64, device=dev))
  e = model.embed(ids, mask).cpu()
  print(json.dumps({"cold_s": time.perf_counter() - T0, "device": dev, "tokenizer": "tokenizers" if tok else "none (made-up ids)",
                    "e0": e[0, 0].item()}))
elif MODE == "check":
  e = MiniLM(DIR).embed(*encode(tokenizer(), SENTENCES)).cpu()
  print(json.dumps({"embeddings": [[round(v, 6) for v in r[:4].tolist()] for r in e], "cos01": (e[0] @ e[1]).item()}))
else:
  model = MiniLM(DIR)
  g = torch.Generator().manual_seed(0)
  ids, mask = torch.randint(1000, 30000, (BS, SEQ), generator=g).to(dev), torch.ones(BS, SEQ, dtype=torch.int64, device=dev)
  ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
  for _ in range(WARM): model.embed(ids, mask)
  sync()
  times = []
  for _ in range(ITERS):
    t0 = time.perf_counter(); model.embed(ids, mask); sync(); times.append(time.perf_counter() - t0)
  med = sorted(times)[len(times) // 2]
  print(json.dumps({"device": dev, "dtype": str(dtype).replace("torch.", ""), "sentences_per_s": BS / med, "ms_per_batch": med * 1e3,
                    "batch": BS, "seq": SEQ, "threads": torch.get_num_threads(), "torch": torch.__version__}))
