#!/usr/bin/env python3
"""Reference outputs for tests/test_llama.cpp: SmolLM2-135M-Instruct.Q4_1.gguf dequantized to float64 by python's
`gguf` package (gguf.quants.dequantize, ggml's own layouts) and run by a plain numpy Llama forward written here from
the architecture (RMSNorm, RoPE on adjacent pairs as GGUF stores Q/K, grouped-query attention, SwiGLU, tied
embeddings). Token ids come from the Hugging Face `tokenizers` library built from the file's vocabulary with
SmolLM2's pre-tokenizer (each digit alone, then GPT-2's byte-level split; see make_bpe_reference.py).

  pip install numpy gguf tokenizers
  python3 tests/data/make_llama_reference.py path/to/SmolLM2-135M-Instruct.Q4_1.gguf

writes tests/data/smollm2_reference.json: per prompt its ids, the logits after it at LOGIT_IDS (the top 64 of the
reference and 448 ids spread over the vocabulary), the top-1, and the greedy continuation of 32 tokens.
"""
import json
import sys
from pathlib import Path

import gguf
import numpy as np
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

HERE = Path(__file__).resolve().parent
PROMPTS = [
    ("plain", "The capital of France is"),
    ("plain", "1, 2, 3, 4, 5,"),
    ("plain", "Hi"),
    ("plain", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("chat", "What is the tallest mountain in the world?"),
    ("chat", "Write a haiku about the sea."),
    ("chat", "Translate to French: The weather is nice today, and I would like to go for a walk in the park."),
    ("plain", " ".join(["Once upon a time, in a small village by the mountains, there lived an old clockmaker who repaired"
                        " every clock in the valley. Children would gather at his window to watch the gears turn,"
                        " and he told them stories about the stars, the rivers and the long winters."] * 5)),
]
CONTINUE = 32


def chatml(user):
    return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n"


def tokenizer(r):
    f = r.fields
    strs = lambda k: [bytes(f[k].parts[i]).decode("utf-8") for i in f[k].data]
    ints = lambda k: [int(f[k].parts[i][0]) for i in f[k].data]
    tokens, merges, types = strs("tokenizer.ggml.tokens"), strs("tokenizer.ggml.merges"), ints("tokenizer.ggml.token_type")
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3])
    return tok


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        self.tok = tokenizer(r)
        f = r.fields
        val = lambda k: f[k].parts[f[k].data[0]][0].item()
        self.L, self.dim = val("llama.block_count"), val("llama.embedding_length")
        self.H, self.KV = val("llama.attention.head_count"), val("llama.attention.head_count_kv")
        self.eps, self.base = val("llama.attention.layer_norm_rms_epsilon"), val("llama.rope.freq_base")
        self.D = self.dim // self.H
        self.w = {}
        for t in r.tensors:
            shape = tuple(int(x) for x in reversed(t.shape.tolist()))
            self.w[t.name] = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape(shape)
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])

    def rms(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos):  # x (n, heads, D): pairs (2i, 2i+1) rotated by pos * base^(-2i/D)
        freq = self.base ** (-np.arange(0, self.D, 2, dtype=np.float64) / self.D)
        ang = pos[:, None, None] * freq[None, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
        return out

    def forward(self, ids, cache, start):
        n, H, KV, D, G = len(ids), self.H, self.KV, self.D, self.H // self.KV
        x = self.w["token_embd.weight"][ids]
        pos = np.arange(start, start + n, dtype=np.float64)
        for l in range(self.L):
            w = lambda k: self.w[f"blk.{l}.{k}.weight"]
            h = self.rms(x, w("attn_norm"))
            q = self.rope((h @ w("attn_q").T).reshape(n, H, D), pos)
            k = self.rope((h @ w("attn_k").T).reshape(n, KV, D), pos)
            v = (h @ w("attn_v").T).reshape(n, KV, D)
            ck, cv = cache[l]
            ck[start:start + n], cv[start:start + n] = k, v
            T = start + n
            o = np.empty((n, H, D))
            causal = np.arange(T)[None, :] <= (start + np.arange(n))[:, None]
            for hd in range(H):
                s = q[:, hd] @ ck[:T, hd // G].T / np.sqrt(D)
                s = np.where(causal, s, -np.inf)
                p = np.exp(s - s.max(-1, keepdims=True))
                o[:, hd] = (p / p.sum(-1, keepdims=True)) @ cv[:T, hd // G]
            x = x + o.reshape(n, self.dim) @ w("attn_output").T
            h = self.rms(x, w("ffn_norm"))
            g = h @ w("ffn_gate").T
            x = x + ((g / (1 + np.exp(-g))) * (h @ w("ffn_up").T)) @ w("ffn_down").T
        return self.rms(x[-1], self.w["output_norm.weight"]) @ self.out.T

    def new_cache(self, n):
        return [(np.zeros((n, self.KV, self.D)), np.zeros((n, self.KV, self.D))) for _ in range(self.L)]


def main():
    m = Model(sys.argv[1])
    vocab = m.out.shape[0]
    spread = list(range(0, vocab, vocab // 448))[:448]
    out = []
    for kind, text in PROMPTS:
        full = chatml(text) if kind == "chat" else text
        m.tok.encode_special_tokens = False
        ids = m.tok.encode(full, add_special_tokens=False).ids
        cache = m.new_cache(len(ids) + CONTINUE + 1)
        logits = m.forward(ids, cache, 0)
        top = [int(i) for i in np.argsort(-logits)[:64]]
        at = sorted(set(top) | set(spread))
        cont, nxt, pos = [], int(np.argmax(logits)), len(ids)
        for _ in range(CONTINUE):
            cont.append(nxt)
            nxt = int(np.argmax(m.forward([nxt], cache, pos)))
            pos += 1
        out.append({"kind": kind, "text": text, "ids": ids, "top1": top[0], "logit_ids": at,
                    "logits": [round(float(logits[i]), 5) for i in at], "greedy": cont})
        print(f"{len(ids):4d} tokens, top1 {top[0]} ({m.tok.decode([top[0]])!r}), continues {m.tok.decode(cont)!r}", flush=True)
    (HERE / "smollm2_reference.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
