"""Language-model benchmark: decode and prefill tokens/s of ptox.models next to transformers eager
(torch) on the same f32 weights, and of ptox's GGUF-blocks path next to llama.cpp on the same
GGUF file, with the bandwidth and compute bounds, in one run.

    .venv/bin/python bench/llm_bench.py [--model PATH] [--threads 1,2] [--json llm_bench.json]

Implementations: "ptox" (the file's weights dequantized to f32 at load, transformers'
numerics), "transformers" (AutoModelForCausalLM with gguf_file=, f32, eager attention,
torch.set_num_threads) when torch is installed, "ptox-blocks" (Q8_0 / Q4_0 / Q4_1 blocks read in
place, int8 activations) and "llama.cpp" (llama-cpp-python, in a subprocess with
OMP_WAIT_POLICY=PASSIVE: its 2-thread runs spin otherwise; again as "llama.cpp-omp-default"
with OpenMP's default; both from scripts/setup.sh --bench) when it is installed.

Rows: decode tokens/s at contexts 16, 512 and 2048 (the step's time with that many positions in
the KV cache, median of --reps steps), prefill tokens/s at T = 16, 128 and 512, for each thread
count and implementation; the read bandwidth measured in the same run (ptox._core.bandwidth)
and the decode bounds it gives (bytes read per token / bandwidth, for f32 weights and for the
file's blocks); the f32 FMA peak (ptox._core.fma_peak) and the prefill bound it gives (the
least floating-point work per token / peak); and the runtime overhead of a decode step: the same
program with every shape shrunk to 1 (30 layers of width 2), as a share of the real step. Writes JSON, a markdown table
(stdout) and a PNG plot when matplotlib is importable."""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
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


def ptox_rows(model, threads, reps, impl="ptox"):
    model.threads = threads
    rows = []
    rng = np.random.default_rng(0)
    for ctx in CONTEXTS:
        def step():
            model.position = ctx - 1  # the step attends over ctx positions
            model.decode(int(rng.integers(model.cfg.vocab)))
        med, lo, hi = median_s(step, reps)
        rows.append(dict(impl=impl, kind="decode", size=ctx, threads=threads,
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
        rows.append(dict(impl=impl, kind="prefill", size=t, threads=threads,
                         tok_s=t / med, tok_s_min=t / hi, tok_s_max=t / lo))
    return rows


def llama_cpp_rows(path, threads, reps, wait_policy="PASSIVE"):
    """llama.cpp's rows, measured in a subprocess with OMP_WAIT_POLICY=`wait_policy` (set before
    llama.cpp loads; torch, in this process, keeps its default; None: OpenMP's default). Where
    llama.cpp crashes with its repacked weight layouts (its AMX kernels segfault on a Xeon VM
    here, llama-cpp-python 0.3.36), it runs again without them (`use_extra_bufts = False`),
    and its rows say so."""
    env = dict(os.environ)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    impl = "llama.cpp" if wait_policy == "PASSIVE" else "llama.cpp-omp-default"
    for extra in (True, False):
        r = subprocess.run([sys.executable, __file__, "--llama-cpp-worker", "--model", path,
                            "--threads", str(threads), "--reps", str(reps)]
                           + ([] if extra else ["--no-extra-bufts"]),
                           env=env, capture_output=True, text=True)
        if r.returncode == 0:
            rows = json.loads(r.stdout)
            for row in rows:
                row.update(impl=impl, extra_bufts=extra)
            return rows
        print(f"llama.cpp ({'with' if extra else 'without'} repacked weights): failed, exit "
              f"{r.returncode} {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    return []


def llama_cpp_worker(path, threads, reps, extra_bufts=True):
    """The same rows as ptox_rows, from llama-cpp-python on the same GGUF file."""
    try:
        import llama_cpp.llama_cpp as api
        from llama_cpp import Llama
    except ImportError:
        return []
    if not extra_bufts:  # Llama() takes no such argument: change the defaults it starts from
        defaults = api.llama_model_default_params

        def without_extra_bufts():
            p = defaults()
            p.use_extra_bufts = False
            return p
        api.llama_model_default_params = without_extra_bufts
    llm = Llama(model_path=path, n_ctx=max(CONTEXTS) + max(PREFILLS), n_batch=max(PREFILLS),
                n_threads=threads, n_threads_batch=threads, verbose=False)
    vocab = llm.n_vocab()
    rng = np.random.default_rng(0)
    rows = []
    for ctx in CONTEXTS:
        llm.reset()
        llm.eval([int(i) for i in rng.integers(vocab, size=ctx - 1)])

        def step():
            llm.n_tokens = ctx - 1  # eval drops the cache past n_tokens: ctx positions again
            llm.eval([int(rng.integers(vocab))])
        med, lo, hi = median_s(step, reps)
        rows.append(dict(impl="llama.cpp", kind="decode", size=ctx, threads=threads,
                         tok_s=1 / med, tok_s_min=1 / hi, tok_s_max=1 / lo))
    for t in PREFILLS:
        ids = [int(i) for i in rng.integers(vocab, size=t)]

        def run():
            llm.reset()
            llm.eval(ids)
        med, lo, hi = median_s(run, max(5, reps // 2), warm=3)
        rows.append(dict(impl="llama.cpp", kind="prefill", size=t, threads=threads,
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


def decode_bytes(model, ctx):
    """Bytes a decode step must read: every weight as the model holds it (f32 or blocks) except
    the embedding table (one row of it, unless it is also the LM head), and the KV cache of ctx
    positions (f32, or f16 with blocks)."""
    cfg = model.cfg
    names = [k for k in models.decoder.WEIGHTS if k != "embed"]
    held = {id(a): a.nbytes for k, a in zip(models.decoder.WEIGHTS, model._weights)
            if k in names and (k not in ("q_norm", "k_norm") or cfg.qk_norm)}
    embed_row = model._weights[models.decoder.WEIGHTS.index("embed")]
    n = sum(held.values()) + (0 if cfg.tied else embed_row.nbytes // cfg.vocab)
    kv = model.kcache.itemsize * 2 * cfg.n_layers * cfg.n_kv_heads * ctx * cfg.head_dim
    return n + kv


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
    ap.add_argument("--llama-cpp-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-extra-bufts", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = args.model or models.default_model_path()
    if args.llama_cpp_worker:
        print(json.dumps(llama_cpp_worker(path, int(args.threads), args.reps,
                                          not args.no_extra_bufts)))
        return 0
    context = max(CONTEXTS) + max(PREFILLS)
    model = models.load(path, context=context, dequantize=True)
    blocks = models.load(path, context=context) if path.endswith(".gguf") else None
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
                             tok_s=read[0] * 1e9 / decode_bytes(model, ctx)))
            if blocks is not None and blocks.formats:
                rows.append(dict(impl="bound-blocks", kind="decode", size=ctx, threads=threads,
                                 tok_s=read[0] * 1e9 / decode_bytes(blocks, ctx)))
        if blocks is not None:
            rows += ptox_rows(blocks, threads, args.reps, impl="ptox-blocks")
            rows += llama_cpp_rows(path, threads, args.reps)
            rows += llama_cpp_rows(path, threads, args.reps, wait_policy=None)
        ours = ptox_rows(model, threads, args.reps)
        # Before transformers: torch's OpenMP threads spin for a while after its last call and
        # took a core from the 2-thread overhead measurement (2.8 ms measured there, 1.1 alone).
        rows += ours + [overhead_row(model, threads, args.reps, 1 / ours[0]["tok_s"])]
        rows += transformers_rows(path, threads, args.reps)
    report(rows, args.json)


def table(rows, ours, theirs, bound):
    """Markdown rows of `ours` next to `theirs` and the bound, per kind, size and threads."""
    print(f"| kind | size | threads | {ours} tok/s | {theirs} tok/s | {ours} / {theirs} | "
          f"{bound} tok/s |\n|---|---|---|---|---|---|---|")
    get = {(r["impl"], r["kind"], r["size"], r["threads"]): r for r in rows}
    for r in rows:
        if r["impl"] != ours or r["kind"] == "overhead":
            continue
        key = (r["kind"], r["size"], r["threads"])
        other, b = get.get((theirs,) + key), get.get((bound,) + key)
        mine = f"{r['tok_s']:.1f} [{r['tok_s_min']:.1f}, {r['tok_s_max']:.1f}]"
        versus = (f"{other['tok_s']:.1f} | {r['tok_s'] / other['tok_s']:.2f}x" if other
                  else "- | -")
        print(f"| {r['kind']} | {r['size']} | {r['threads']} | {mine} | {versus} | "
              f"{b['tok_s']:.1f} |" if b else f"| {r['kind']} | {r['size']} | {r['threads']} | "
              f"{mine} | {versus} | - |")


def best_of_both(rows):
    """Per kind and size: ptox-blocks at its best thread count over llama.cpp at its best
    (thread count and wait policy), the issue's measure."""
    def best(impls, kind, size):
        got = [r["tok_s"] for r in rows if r["impl"] in impls and r["kind"] == kind and
               r["size"] == size]
        return max(got) if got else None
    print("\n| kind | size | ptox-blocks best tok/s | llama.cpp best tok/s | ratio |\n"
          "|---|---|---|---|---|")
    for kind, sizes in (("decode", CONTEXTS), ("prefill", PREFILLS)):
        for size in sizes:
            ours = best(("ptox-blocks",), kind, size)
            theirs = best(("llama.cpp", "llama.cpp-omp-default"), kind, size)
            if ours and theirs:
                print(f"| {kind} | {size} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x |")


def report(rows, json_path):
    with open(json_path, "w") as f:
        json.dump({"ptox": ptox.__version__, "rows": rows}, f, indent=1)
    print("f32 weights (transformers' numerics):\n")
    table(rows, "ptox", "transformers", "bound")
    if any(r["impl"] == "ptox-blocks" for r in rows):
        print("\nthe GGUF file's blocks in place (llama.cpp's numerics; bound: their bytes):\n")
        table(rows, "ptox-blocks", "llama.cpp", "bound-blocks")
        if any(r["impl"] == "llama.cpp-omp-default" for r in rows):
            print("\nllama.cpp with OpenMP's default wait policy (its threads spin):\n")
            table(rows, "ptox-blocks", "llama.cpp-omp-default", "bound-blocks")
        best_of_both(rows)
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
    panels = [("f32 weights", ("ptox", "transformers", "bound")),
              ("GGUF blocks", ("ptox-blocks", "llama.cpp", "bound-blocks",
                               "llama.cpp-omp-default"))]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for row, (title, impls) in zip(axes, panels):
        for ax, kind in zip(row, ("decode", "prefill")):
            for color, impl in zip(("C0", "C1", "C7", "C3"), impls):
                for threads in sorted({r["threads"] for r in rows}):
                    pts = [(r["size"], r["tok_s"]) for r in rows if r["impl"] == impl and
                           r["kind"] == kind and r["threads"] == threads]
                    if pts:  # solid: 1 thread, dashed: 2
                        ax.plot(*zip(*pts), marker="o", color=color,
                                linestyle="-" if threads == 1 else "--",
                                label=f"{impl}, {threads} thr")
            sizes = CONTEXTS if kind == "decode" else PREFILLS
            ax.set_xscale("log")
            ax.set_xticks(sizes, [str(x) for x in sizes])
            ax.minorticks_off()
            ax.set_title(f"{title}: {kind} tokens/s")
            ax.set_xlabel("context" if kind == "decode" else "prompt tokens")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.splitext(json_path)[0] + ".png", dpi=100)


if __name__ == "__main__":
    sys.exit(main())
