"""First-call latency: the time a user waits for a kernel's first call (front end, passes, C++
compile, load, one small run) and for the default model's first `generate`, each in a fresh
process with an empty compile cache. Wall and CPU time (this process and its compiler children:
the machine may be shared, CPU time is the steadier number).

    .venv/bin/python bench/first_call_bench.py [--repeat 3] [--model] [--md out.md]

Modes, each case run in its own process with PTOX_CACHE_DIR a fresh folder:
  no-pch      as before precompiled preludes: PTOX_PCH=0 (generated code parses the tile-library
              headers), and the model's generate compiles its two steps one after the other
  pch-cold    the first program ever on this cache: its prelude (precompiled header) is built first
  pch-warm    the preludes exist (built by an earlier program), the program is new to the cache
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = {
    "elementwise": """
@ptox.jit
def f(a: pl.In["N", 256, pl.f32], b: pl.In["N", 256, pl.f32]) -> pl.Out["N", 256, pl.f32]:
    return pl.relu(a * b + 1.0) - a * 0.5
args = [np.ones((64, 256), np.float32)] * 2
""",
    "softmax": """
@ptox.jit
def f(x: pl.In["N", 256, pl.f32]) -> pl.Out["N", 256, pl.f32]:
    return pl.softmax(x)
args = [np.ones((64, 256), np.float32)]
""",
    "matmul+bias+gelu": """
@ptox.jit
def f(x: pl.In["M", 256, pl.f32], w: pl.In[256, 128, pl.f32],
      bias: pl.In[128, pl.f32]) -> pl.Out["M", 128, pl.f32]:
    return pl.gelu(x @ w + bias)
args = [np.ones((64, 256), np.float32), np.ones((256, 128), np.float32),
        np.ones(128, np.float32)]
""",
    "causal attention": """
@ptox.jit
def f(q: pl.In["S", 64, pl.f32], k: pl.In["S", 64, pl.f32],
      v: pl.In["S", 64, pl.f32]) -> pl.Out["S", 64, pl.f32]:
    s = pl.matmul(q, k, transpose_b=True) * 0.125
    p = pl.softmax(pl.causal_mask(s, 0))
    return p @ v
args = [np.ones((128, 64), np.float32)] * 3
""",
}

CHILD = """
import resource, sys, time
import numpy as np
import ptox
import ptox.lang as pl
{code}
t0 = time.perf_counter(); c0 = resource.getrusage(resource.RUSAGE_SELF)
f(*args)
t1 = time.perf_counter(); c1 = resource.getrusage(resource.RUSAGE_SELF)
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RESULT", t1 - t0, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime),
      ch.ru_utime + ch.ru_stime)
"""

MODEL = """
import os, resource, time
import ptox.models
if os.environ.get("PTOX_BENCH_BEFORE") == "1":  # generate as before: one step compiled at a time
    ptox.models.model.Model._build_ahead = lambda self, decode: None
m = ptox.models.load()
t0 = time.perf_counter(); c0 = resource.getrusage(resource.RUSAGE_SELF)
m.generate("What is the capital of France?", chat=True, max_tokens=4)
t1 = time.perf_counter(); c1 = resource.getrusage(resource.RUSAGE_SELF)
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RESULT", t1 - t0, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime),
      ch.ru_utime + ch.ru_stime)
"""


def run(code, cache, pch):
    env = dict(os.environ, PTOX_CACHE_DIR=cache, PTOX_PCH="1" if pch else "0",
               PTOX_BENCH_BEFORE="0" if pch else "1")
    script = os.path.join(cache, "first_call.py")  # @ptox.jit reads the function's source
    with open(script, "w") as f:
        f.write(code)
    r = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    line = [l for l in r.stdout.splitlines() if l.startswith("RESULT")][-1]
    wall, cpu_self, cpu_children = map(float, line.split()[1:])
    return wall, cpu_self + cpu_children, cpu_children


def measure(code, mode, warm_code):
    with tempfile.TemporaryDirectory() as cache:
        if mode == "pch-warm":
            run(warm_code, cache, True)  # builds the preludes (and that program's entry)
        return run(code, cache, mode != "no-pch")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--model", action="store_true", help="also the model's first generate")
    p.add_argument("--only", default="", help="comma-separated case names")
    p.add_argument("--md", default="")
    a = p.parse_args()
    cases = {k: CHILD.format(code=v) for k, v in CASES.items()}
    if a.model:
        cases["model first generate"] = MODEL
    if a.only:
        cases = {k: v for k, v in cases.items() if k in a.only.split(",")}
    rows = []
    for name, code in cases.items():
        # The warm-up program of pch-warm: the same library parts, another program (other shapes
        # change the generated source, so the entry is new while the prelude is the same).
        warm = code.replace("256", "512").replace("0.125", "0.25") \
            if name != "model first generate" else code
        for mode in ("no-pch", "pch-cold", "pch-warm"):
            if name == "model first generate" and mode == "pch-warm":
                warm = MODEL.replace("ptox.models.load()", "ptox.models.load(dequantize=True)")
            samples = [measure(code, mode, warm) for _ in range(a.repeat)]
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            cc = statistics.median(s[2] for s in samples)
            rows.append((name, mode, wall, cpu, min(s[0] for s in samples),
                         max(s[0] for s in samples), cc))
            print(f"{name:22s} {mode:9s} wall {wall:6.2f} s (min {rows[-1][4]:.2f} max "
                  f"{rows[-1][5]:.2f})  cpu {cpu:6.2f} s (compiler {cc:.2f} s)", flush=True)
    if a.md:
        with open(a.md, "w") as f:
            f.write("| case | mode | wall median (s) | wall min / max | CPU median (s) | "
                    "of which the compiler (s) |\n")
            f.write("|---|---|---:|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[4]:.2f} / {r[5]:.2f} | "
                        f"{r[3]:.2f} | {r[6]:.2f} |\n")


if __name__ == "__main__":
    main()
