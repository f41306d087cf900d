"""Python front end costs (issue 17's targets), with the libraries a user would compare against.

    .venv/bin/python bench/python_bench.py [--json=python_bench.json]

Measures, on this machine in one run:
- per-call overhead of a cached 1x8 f32 add from Python (ptox, numpy's np.add(out=), and torch
  eager's torch.add(out=) when torch is importable), median over batches;
- cold compile of a small kernel from Python (fresh cache folder, in a new process: parse + first
  call), and a new process's `import ptox` + cache hit + result;
- a row softmax and RMSNorm written with @ptox.jit against the same program from .pto text
  (4096 x 4096 f32), median of 15 runs after a warm-up, in GB/s beside the same-run triad
  (ptox._core.bandwidth: 3 x 256 MiB, one thread, as the kernels run here).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ptox
import ptox.lang as pl

ROOT = pathlib.Path(__file__).resolve().parents[1]

ADD = """func @add(%a: in tensor<1x8xf32>, %b: in tensor<1x8xf32>, %c: out tensor<1x8xf32>) {
  %s = tensor.add %a, %b
  tensor.store %s, %c
}
"""


def per_call_us(fn, calls=2000, batches=15):
    fn()
    samples = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(samples), min(samples), max(samples)


def median_ms(fn, reps=15):
    fn()
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples), min(samples), max(samples)


def child(code, cache):
    env = dict(os.environ, PTOX_CACHE_DIR=cache)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1e3
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return wall, r.stdout.strip()


@ptox.jit
def softmax_py(x: pl.In["N", 4096, pl.f32]) -> pl.Out["N", 4096, pl.f32]:
    return pl.softmax(x)


@ptox.jit
def rmsnorm_py(x: pl.In["N", 4096, pl.f32], w: pl.In[4096, pl.f32]) -> pl.Out["N", 4096, pl.f32]:
    return pl.rmsnorm(x, w, eps=1e-6)


SOFTMAX_PTO = """func @softmax_pto(%x: in tensor<{N}x4096xf32>, %y: out tensor<{N}x4096xf32>) {
  %p = tensor.softmax %x
  tensor.store %p, %y
}
"""
RMSNORM_PTO = """func @rmsnorm_pto(%x: in tensor<{N}x4096xf32>, %w: in tensor<4096xf32>,
                  %y: out tensor<{N}x4096xf32>) {
  %r = tensor.rmsnorm %x, %w {eps = 1e-06}
  tensor.store %r, %y
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="python_bench.json")
    args = ap.parse_args()
    rows = []

    def row(name, value, unit, note=""):
        med, lo, hi = value if isinstance(value, tuple) else (value, value, value)
        rows.append({"benchmark": name, "median": med, "min": lo, "max": hi, "unit": unit,
                     "note": note})
        print(f"{name:58s} {med:10.3f} [{lo:.3f}, {hi:.3f}] {unit} {note}")

    a = np.ones((1, 8), np.float32)
    c = np.empty_like(a)
    k = ptox.parse(ADD)
    k(a, a, out=c)
    ptox_us = per_call_us(lambda: k(a, a, out=c))
    row("per call, cached 1x8 f32 add: ptox", ptox_us, "us", "target <= 5")
    row("per call, 1x8 f32 add: numpy np.add(out=)", per_call_us(lambda: np.add(a, a, out=c)), "us")
    try:
        import torch
        ta = torch.ones(1, 8)
        tc = torch.empty(1, 8)
        torch.set_num_threads(1)
        t_us = per_call_us(lambda: torch.add(ta, ta, out=tc))
        row("per call, 1x8 f32 add: torch eager torch.add(out=)", t_us, "us",
            f"ptox / torch = {ptox_us[0] / t_us[0]:.2f}x")
    except ImportError:
        row("per call, 1x8 f32 add: torch eager", float("nan"), "us", "torch not installed")

    with tempfile.TemporaryDirectory() as cache:
        code = ("import time, numpy as np; t = time.perf_counter(); import ptox; "
                "k = ptox.parse(open(%r).read()); a = np.ones((1, 8), np.float32); k(a, a); "
                "print((time.perf_counter() - t) * 1e3)") % (str(ROOT / "bench" / "_add.pto"),)
        (ROOT / "bench" / "_add.pto").write_text(ADD)
        try:
            colds = [float(child(code, tempfile.mkdtemp(dir=cache))[1]) for _ in range(5)]
            row("cold compile from Python: import + parse + compile + run", (
                statistics.median(colds), min(colds), max(colds)), "ms", "target <= 500")
            child(code, cache)  # warm the cache
            walls = [child(code, cache)[0] for _ in range(7)]
            row("new process: python + import ptox + cache hit + result", (
                statistics.median(walls), min(walls), max(walls)), "ms", "target <= 100")
        finally:
            (ROOT / "bench" / "_add.pto").unlink()

    triad = ptox._core.bandwidth("triad", 1, 256 << 20, 10)
    row("ceiling: triad a = b + s*c, 3 x 256 MiB, 1 thread", triad, "GB/s")
    x = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
    w = np.random.default_rng(1).standard_normal(4096, dtype=np.float32)
    y = np.empty_like(x)
    for name, py, pto, extra in (("softmax", softmax_py, ptox.parse(SOFTMAX_PTO), ()),
                                 ("rmsnorm", rmsnorm_py, ptox.parse(RMSNORM_PTO), (w,))):
        t_py = median_ms(lambda: py(x, *extra, out=y, threads=1))
        t_pto = median_ms(lambda: pto(x, *extra, out=y, threads=1))
        gbs = 2 * x.nbytes / (t_py[0] / 1e3) / 1e9  # read x, write y
        row(f"{name} 4096x4096 f32, @ptox.jit, 1 thread", t_py, "ms",
            f"{gbs:.1f} GB/s = {100 * gbs / triad[0]:.0f} % of the triad")
        row(f"{name} 4096x4096 f32, .pto text, 1 thread", t_pto, "ms",
            f"jit / text = {t_py[0] / t_pto[0]:.3f}x (target within 5 %)")
    pathlib.Path(args.json).write_text(
        json.dumps({"manifest": ptox.build_manifest(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
