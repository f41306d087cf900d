"""Language-model benchmark (issue 18's targets): decode and prefill tokens/s of ptox.models next
to transformers eager (torch) on the same weights, and the bandwidth bound, in one run.

    .venv/bin/python bench/llm_bench.py [--model PATH] [--threads 1,2] [--json llm_bench.json]

Rows: decode tokens/s at contexts 16, 512 and 2048 (the step's time with that many positions in
the KV cache, median of --reps steps), prefill tokens/s at T = 16, 128 and 512, for each thread
count; the same for transformers (AutoModelForCausalLM with gguf_file=, f32, eager attention,
torch.set_num_threads) when it is installed (scripts/setup.sh --bench); the read bandwidth
measured in the same run (ptox._core.bandwidth) and the decode bound it gives (bytes read per
token / bandwidth); the f32 FMA peak (ptox._core.fma_peak) and the prefill bound it gives (the
least floating-point work per token / peak); and the runtime overhead of a decode step: the same
program with every shape shrunk to 1 (30 layers of width 2), as a share of the real step. Writes JSON, a markdown table
(stdout) and a PNG plot when matplotlib is importable."""

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time

# numpy's OpenBLAS threads (neither side calls BLAS through numpy) otherwise spin on the cores
# both libraries run on: transformers measured 12.4 decode tok/s with them, 15.4 without.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import ptox
import ptox.models as models

CONTEXTS = (16, 512, 2048)
PREFILLS = (16, 128, 512)


def median_s(fn, reps, warm=1):
    for _ in range(warm):  # warm-up (and compile on a cold cache)
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), max(times)


def ptox_rows(model, threads, reps):
    model.threads = threads
    rows = []
    rng = np.random.default_rng(0)
    for ctx in CONTEXTS:
        def step():
            model.position = ctx - 1  # the step attends over ctx positions
            model.decode(int(rng.integers(model.cfg.vocab)))
        med, lo, hi = median_s(step, reps)
        rows.append(dict(impl="ptox", kind="decode", size=ctx, threads=threads,
                         tok_s=1 / med, tok_s_min=1 / hi, tok_s_max=1 / lo))
    for t in PREFILLS:
        ids = rng.integers(model.cfg.vocab, size=t)

        def run():
            model.reset()
            model.prefill(ids)
        # Three warm-ups: the first packs the weights (kept for later runs), and the allocator
        # reaches its steady state (glibc raises its mmap threshold as big buffers are freed,
        # and page faults stop) only after a few runs of the same sizes.
        med, lo, hi = median_s(run, max(5, reps // 2), warm=3)
        rows.append(dict(impl="ptox", kind="prefill", size=t, threads=threads,
                         tok_s=t / med, tok_s_min=t / hi, tok_s_max=t / lo))
    return rows


def transformers_rows(path, threads, reps):
    try:
        import torch
        from transformers import AutoModelForCausalLM, DynamicCache
    except ImportError:
        return []
    torch.set_num_threads(threads)
    folder, name = os.path.split(path)
    kw = dict(gguf_file=name) if name.endswith(".gguf") else {}
    m = AutoModelForCausalLM.from_pretrained(folder if kw else path, dtype=torch.float32,
                                             attn_implementation="eager", **kw).eval()
    rows = []
    vocab = m.config.vocab_size
    with torch.no_grad():
        for ctx in CONTEXTS:
            cache = DynamicCache()
            m(torch.randint(vocab, (1, ctx - 1)), past_key_values=cache, use_cache=True)

            def step():
                m(torch.randint(vocab, (1, 1)), past_key_values=cache, use_cache=True)
                cache.crop(-1)  # drop it: the next step attends over ctx positions again
            med, lo, hi = median_s(step, reps)
            rows.append(dict(impl="transformers", kind="decode", size=ctx, threads=threads,
                             tok_s=1 / med, tok_s_min=1 / hi, tok_s_max=1 / lo))
        for t in PREFILLS:
            ids = torch.randint(vocab, (1, t))
            # The last position's logits only, as generate() asks for them (logits_to_keep=1)
            # and as ptox's prefill computes them.
            med, lo, hi = median_s(lambda: m(ids, logits_to_keep=1), max(5, reps // 2), warm=3)
            rows.append(dict(impl="transformers", kind="prefill", size=t, threads=threads,
                             tok_s=t / med, tok_s_min=t / hi, tok_s_max=t / lo))
    return rows


def decode_bytes(cfg, ctx):
    """Bytes a decode step must read: every f32 weight except the embedding table (one row of
    it, unless it is also the LM head), and the KV cache of ctx positions."""
    shapes = cfg.weight_shapes()
    n = sum(int(np.prod(s)) for k, s in shapes.items() if k != "embed")
    n += cfg.vocab * cfg.d_model if cfg.tied else cfg.d_model
    n += 2 * cfg.n_layers * cfg.n_kv_heads * ctx * cfg.head_dim
    return 4 * n


def prefill_flops(cfg, t):
    """Floating-point operations per token of a prefill of t tokens into an empty cache, at the
    least: the projections (2 per weight), causal attention (each token's query against the
    positions up to it: 2 products of head_dim per position and head) and the LM head of the last
    token."""
    # The projections are the matrices stacked per layer ([L, out, in]).
    proj = sum(int(np.prod(s)) for s in cfg.weight_shapes().values() if len(s) == 3)
    attn = 2 * 2 * cfg.n_layers * cfg.n_heads * cfg.head_dim * (t + 1) / 2
    return 2 * proj + attn + 2 * cfg.vocab * cfg.d_model / t


def overhead_row(model, threads, reps, real_decode_s):
    tiny = dataclasses.replace(model.cfg, d_model=2, n_heads=1, n_kv_heads=1, head_dim=2, d_ff=1,
                               vocab=2)
    w = {k: np.ones(s, np.float32) for k, s in tiny.weight_shapes().items()}
    m = models.Model(tiny, w, model.tokenizer, "tiny", context=16, threads=threads)

    def step():
        m.position = 0
        m.decode(0)
    med, _, _ = median_s(step, 5 * reps, warm=5)
    return dict(impl="ptox", kind="overhead", size=1, threads=threads, step_us=med * 1e6,
                share=med / real_decode_s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default="llm_bench.json")
    args = ap.parse_args()
    path = args.model or models.default_model_path()
    model = models.load(path, context=max(CONTEXTS) + max(PREFILLS))
    rows = []
    for threads in (int(t) for t in args.threads.split(",")):
        read = ptox._core.bandwidth("read", threads, 768 << 20, 5)
        rows.append(dict(impl="ceiling", kind="read GB/s", size=0, threads=threads,
                         gbs=read[0]))
        peak = ptox._core.fma_peak(threads)
        rows.append(dict(impl="ceiling", kind="FMA GFLOP/s", size=0, threads=threads,
                         gflops=peak))
        for t in PREFILLS:  # the compute bound: every FMA pipe busy on the least work
            rows.append(dict(impl="bound", kind="prefill", size=t, threads=threads,
                             tok_s=peak * 1e9 / prefill_flops(model.cfg, t)))
        for ctx in CONTEXTS:
            rows.append(dict(impl="bound", kind="decode", size=ctx, threads=threads,
                             tok_s=read[0] * 1e9 / decode_bytes(model.cfg, ctx)))
        ours = ptox_rows(model, threads, args.reps)
        # Before transformers: torch's OpenMP threads spin for a while after its last call and
        # took a core from the 2-thread overhead measurement (2.8 ms measured there, 1.1 alone).
        rows += ours + [overhead_row(model, threads, args.reps, 1 / ours[0]["tok_s"])]
        rows += transformers_rows(path, threads, args.reps)
    report(rows, args.json)


def report(rows, json_path):
    with open(json_path, "w") as f:
        json.dump({"ptox": ptox.__version__, "rows": rows}, f, indent=1)
    print("| kind | size | threads | ptox tok/s | transformers tok/s | ptox / transformers | "
          "bound tok/s |\n|---|---|---|---|---|---|---|")
    get = {(r["impl"], r["kind"], r["size"], r["threads"]): r for r in rows}
    for r in rows:
        if r["impl"] != "ptox" or r["kind"] == "overhead":
            continue
        key = (r["kind"], r["size"], r["threads"])
        hf = get.get(("transformers",) + key)
        bound = get.get(("bound",) + key)
        print(f"| {r['kind']} | {r['size']} | {r['threads']} | {r['tok_s']:.1f} "
              f"[{r['tok_s_min']:.1f}, {r['tok_s_max']:.1f}] | "
              f"{hf['tok_s']:.1f} | {r['tok_s'] / hf['tok_s']:.2f}x | " if hf else
              f"| {r['kind']} | {r['size']} | {r['threads']} | {r['tok_s']:.1f} | - | - | ", end="")
        print(f"{bound['tok_s']:.1f} |" if bound else "- |")
    for r in rows:
        if r["kind"] == "overhead":
            print(f"\nruntime overhead of a decode step, {r['threads']} thread(s): "
                  f"{r['step_us']:.0f} us = {100 * r['share']:.1f} % of the step")
        if r["kind"] == "read GB/s":
            print(f"read bandwidth, {r['threads']} thread(s): {r['gbs']:.1f} GB/s")
        if r["kind"] == "FMA GFLOP/s":
            print(f"f32 FMA peak, {r['threads']} thread(s): {r['gflops']:.1f} GFLOP/s")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kind in zip(axes, ("decode", "prefill")):
        for impl in ("ptox", "transformers", "bound"):
            for threads in sorted({r["threads"] for r in rows}):
                pts = [(r["size"], r["tok_s"]) for r in rows if r["impl"] == impl and
                       r["kind"] == kind and r["threads"] == threads]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=f"{impl}, {threads} thr")
        ax.set_xscale("log")
        ax.set_title(f"{kind} tokens/s")
        ax.set_xlabel("context" if kind == "decode" else "prompt tokens")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.splitext(json_path)[0] + ".png", dpi=100)


if __name__ == "__main__":
    sys.exit(main())
