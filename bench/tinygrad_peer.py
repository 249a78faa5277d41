#!/usr/bin/env python3
"""The peer of bench_core: the same four measurements in Python tinygrad on its CPU device.

  1. 10-op elementwise chain over 16M float32, GB/s (bytes read + written), realize only, kernel warm
  2. matmul 256/512/1024 float32, 1 CPU thread, GFLOP/s (numpy/BLAS 1 thread alongside for scale)
  3. overhead of realizing (a+b)*c over 16 floats with a compiled kernel, fresh Tensors each iteration (us)
  4. first-kernel latency: import + first kernel in a fresh process, empty cache (cold) and disk-cache hit (warm)

Usage: DEV=CPU python3 bench/tinygrad_peer.py     (pip install tinygrad numpy)
Each part runs in its own child process (thread count and cache are fixed per process); each stays under ~60 s.
"""
import json, os, statistics, subprocess, sys, tempfile, time

T_START = time.perf_counter()
HERE = os.path.abspath(__file__)


def child(mode, env=None, timeout=120):
  e = dict(os.environ)
  e.setdefault("DEV", "CPU")
  e.update(env or {})
  t0 = time.perf_counter()
  p = subprocess.run([sys.executable, HERE, mode], env=e, capture_output=True, text=True, timeout=timeout)
  wall = time.perf_counter() - t0
  if p.returncode != 0:
    print(f"child {mode} failed:\n{p.stderr[-3000:]}", file=sys.stderr)
    return {"wall_s": wall}
  r = json.loads(p.stdout.strip().splitlines()[-1])
  r["wall_s"] = wall
  return r


def sync():
  from tinygrad import Device
  Device[Device.DEFAULT].synchronize()


# ---- 1. elementwise ----
def run_ew():
  import numpy as np
  from tinygrad import Tensor, Device
  from tinygrad.helpers import NUM_CPU_THREADS
  n = 1 << 24
  rng = np.random.default_rng(0)
  ha, hb, hc = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
  a, b, c = Tensor(ha).realize(), Tensor(hb).realize(), Tensor(hc).realize()
  def graph():
    t = ((a * 1.5 + b) * c - a).relu()
    return (t * 2.0 + b) * 0.5 + c
  graph().realize(); sync()  # compile
  ts, out = [], None
  deadline = time.perf_counter() + 30
  for _ in range(15):
    out = graph()
    t0 = time.perf_counter(); out.realize(); sync(); ts.append(time.perf_counter() - t0)
    if time.perf_counter() > deadline: break
  # numpy on the same data, as a scale (temporaries: it is not one pass)
  tn = []
  for _ in range(3):
    t0 = time.perf_counter()
    t = np.maximum((ha * np.float32(1.5) + hb) * hc - ha, 0); r = (t * np.float32(2) + hb) * np.float32(0.5) + hc
    tn.append(time.perf_counter() - t0)
  err = float(np.abs(out.numpy() - r).max())
  nbytes = 16.0 * n
  return {"threads": NUM_CPU_THREADS.value, "gbs": nbytes / min(ts) / 1e9, "gbs_med": nbytes / statistics.median(ts) / 1e9,
          "numpy_gbs": nbytes / min(tn) / 1e9, "reps": len(ts), "max_abs_err": err, "device": Device.DEFAULT}


# ---- 2. matmul, 1 thread ----
def run_matmul():
  import numpy as np
  from tinygrad import Tensor
  from tinygrad.helpers import NUM_CPU_THREADS
  res = {"threads": NUM_CPU_THREADS.value}
  for n in (256, 512, 1024):
    rng = np.random.default_rng(n)
    ha, hb = rng.uniform(-1, 1, (n, n)).astype(np.float32), rng.uniform(-1, 1, (n, n)).astype(np.float32)
    a, b = Tensor(ha).realize(), Tensor(hb).realize()
    t0 = time.perf_counter(); out = (a @ b).realize(); sync(); first = time.perf_counter() - t0
    ts, tn, spent = [], [], 0.0
    for r in range(25):
      out = a @ b
      t0 = time.perf_counter(); out.realize(); sync(); dt = time.perf_counter() - t0
      ts.append(dt); spent += dt
      t0 = time.perf_counter(); c = ha @ hb; tn.append(time.perf_counter() - t0)
      if r >= 2 and spent > 15: break
    flop = 2.0 * n ** 3
    res[str(n)] = {"gflops": flop / min(ts) / 1e9, "gflops_med": flop / statistics.median(ts) / 1e9, "numpy_gflops": flop / min(tn) / 1e9,
                   "first_s": first, "reps": len(ts), "max_abs_err": float(np.abs(out.numpy() - c).max())}
  return res


# ---- 3. small-graph overhead ----
def run_overhead():
  import numpy as np
  from tinygrad import Tensor, TinyJit
  a, b, c = (Tensor(np.random.default_rng(i).uniform(-1, 1, 16).astype(np.float32)).realize() for i in range(3))
  for _ in range(50): ((a + b) * c).realize()
  sync()
  def timed(fn, budget_s=20.0, max_iters=10000):
    ts, end = [], time.perf_counter() + budget_s
    while len(ts) < max_iters and time.perf_counter() < end:
      t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return ts
  def realize_once(): ((a + b) * c).realize(); sync()
  t_real = timed(realize_once)
  t_list = timed(lambda: ((a + b) * c).tolist())
  @TinyJit
  def jf(x, y, z): return ((x + y) * z).realize()
  for _ in range(5): jf(a, b, c)
  def jit_once(): jf(a, b, c); sync()
  t_jit = timed(jit_once)
  return {"realize_us": statistics.median(t_real) * 1e6, "realize_iters": len(t_real), "tolist_us": statistics.median(t_list) * 1e6,
          "tolist_iters": len(t_list), "jit_us": statistics.median(t_jit) * 1e6, "jit_iters": len(t_jit)}


# ---- 4. first kernel (the child's clock starts before `import tinygrad`) ----
def run_first_kernel():
  t0 = time.perf_counter()
  from tinygrad import Tensor
  t1 = time.perf_counter()
  v = ((Tensor([float(i) for i in range(16)]) + Tensor([1.0] * 16)) * Tensor([2.0] * 16)).tolist()
  t2 = time.perf_counter()
  assert v[3] == 8.0, v
  return {"import_s": t1 - t0, "work_s": t2 - t1, "total_s": t2 - t0, "since_interp_s": t2 - T_START}


def main():
  import tinygrad
  ver = getattr(tinygrad, "__version__", None)
  if ver is None:
    try:
      from importlib.metadata import version
      ver = version("tinygrad")
    except Exception:
      ver = "?"
  print(f"tinygrad_peer: Python tinygrad {ver}, DEV={os.environ.get('DEV', 'CPU')}, {os.cpu_count()} CPUs")
  R = {}
  print("[1/4] elementwise...", file=sys.stderr)
  R["ew_default"] = child("--ew")
  R["ew_1"] = child("--ew", {"NUM_CPU_THREADS": "1"})
  print("[2/4] matmul...", file=sys.stderr)
  R["mm"] = child("--matmul", {"NUM_CPU_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, timeout=300)
  print("[3/4] overhead...", file=sys.stderr)
  R["oh"] = child("--overhead", timeout=200)
  print("[4/4] first kernel...", file=sys.stderr)
  cold, warm = [], []
  with tempfile.TemporaryDirectory() as d:
    for i in range(3):
      db = os.path.join(d, f"cache{i}.db")
      cold.append(child("--first-kernel", {"CACHEDB": db}))
      warm.append(child("--first-kernel", {"CACHEDB": db}))
  med = lambda rs, k: statistics.median(r.get(k, float("nan")) for r in rs)

  print("\n| metric | Python tinygrad | note |")
  print("| --- | --- | --- |")
  for k, label in (("ew_default", "default threads"), ("ew_1", "NUM_CPU_THREADS=1")):
    r = R[k]
    print(f"| ew 10-op chain 16M f32, {label} ({r.get('threads')} thr), GB/s | {r.get('gbs', float('nan')):.1f} | "
          f"median {r.get('gbs_med', float('nan')):.1f}; "
          f"numpy {r.get('numpy_gbs', float('nan')):.1f}; max|err| {r.get('max_abs_err', float('nan')):.2g} |")
  for n in ("256", "512", "1024"):
    r = R["mm"].get(n, {})
    print(f"| matmul {n} f32 1 thr, GFLOP/s | {r.get('gflops', float('nan')):.1f} | "
          f"median {r.get('gflops_med', float('nan')):.1f}; numpy(BLAS 1 thr) "
          f"{r.get('numpy_gflops', float('nan')):.1f}; first call {r.get('first_s', float('nan')) * 1e3:.0f} ms; {r.get('reps')} reps |")
  oh = R["oh"]
  print(f"| small graph build+realize, us (median) | {oh.get('realize_us', float('nan')):.0f} | {oh.get('realize_iters')} iters |")
  print(f"| small graph build+realize+tolist, us | {oh.get('tolist_us', float('nan')):.0f} | {oh.get('tolist_iters')} iters |")
  print(f"| small graph TinyJit replay, us | {oh.get('jit_us', float('nan')):.0f} | {oh.get('jit_iters')} iters |")
  print(f"| first kernel cold (empty CACHEDB), ms | {med(cold, 'total_s') * 1e3:.0f} | import {med(cold, 'import_s') * 1e3:.0f} + kernel "
        f"{med(cold, 'work_s') * 1e3:.0f}; whole process {med(cold, 'wall_s') * 1e3:.0f} |")
  print(f"| first kernel warm (cache hit), ms | {med(warm, 'total_s') * 1e3:.0f} | import {med(warm, 'import_s') * 1e3:.0f} + kernel "
        f"{med(warm, 'work_s') * 1e3:.0f}; whole process {med(warm, 'wall_s') * 1e3:.0f} |")
  return 0


if __name__ == "__main__":
  modes = {"--ew": run_ew, "--matmul": run_matmul, "--overhead": run_overhead, "--first-kernel": run_first_kernel}
  if len(sys.argv) > 1 and sys.argv[1] in modes:
    print(json.dumps(modes[sys.argv[1]]()))
  else:
    sys.exit(main())
