"""A loaded decoder model: its weights, tokenizer and compiled step programs, the KV cache, and
generation (greedy, temperature, top-p) with a step-level interface for research use."""

import threading
import time

import numpy as np

from . import decoder, parallel
from .config import ModelError
from .gguf_file import Blocks


def rope_tables(cfg, length):
    """cos / sin [length, head_dim] of rotate-half RoPE, computed in f32 as transformers does."""
    hd = cfg.head_dim
    inv = (1.0 / (np.float32(cfg.rope_base) **
                  (np.arange(0, hd, 2, dtype=np.int64).astype(np.float32) / np.float32(hd))))
    ang = np.arange(length, dtype=np.float32)[:, None] * inv.astype(np.float32)[None, :]
    ang = np.concatenate([ang, ang], -1)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _format(weight):
    """The step programs' name of a weight's storage: a GGUF block format, "bf16" / "f16" for
    16-bit floats (widened in registers), None for f32."""
    if isinstance(weight, Blocks):
        return weight.format
    return {2: "f16" if weight.dtype == np.float16 else "bf16"}.get(weight.dtype.itemsize)


class Model:
    """`generate(prompt)` streams text; `reset()`, `prefill(ids)`, `decode(token)` run single
    steps over the model's KV cache and return logits (float32 numpy arrays)."""

    def __init__(self, cfg, weights, tokenizer, path, context=None, target="cpu", threads=0,
                 kv_dtype=None, tp=None):
        self.cfg, self.tokenizer, self.path = cfg, tokenizer, path
        self.target, self.threads = target, threads
        self.context = min(context or cfg.context, cfg.context)
        # Tensor parallel (rank, ranks): this process holds and runs its share of every layer.
        self.tp = tp or (0, 1)
        self._part = cfg
        if self.tp[1] > 1:
            self._part, weights = parallel.shard(cfg, weights, *self.tp)
        w = dict(weights)
        w.setdefault("lm_head", w["embed"])
        for k in ("q_norm", "k_norm"):  # llama: no q / k norm (the step skips them)
            w.setdefault(k, np.ones((cfg.n_layers, cfg.head_dim), np.float32))
        # GGUF blocks and bf16 / f16 matrices computed on in place: the formats the step
        # programs are compiled for.
        formats = {f: _format(w[k]) for f, k in (("embed", "embed"), ("lm_head", "lm_head"),
                                                 ("w", "wq"))}
        self.formats = {f: v for f, v in formats.items() if v}
        # The step takes each stacked matrix as [L * out, in] and vector as [L * n]: the same
        # memory, a layer a slice.
        arrays = {k: w[k].data if isinstance(w[k], Blocks) else w[k] for k in decoder.WEIGHTS}
        self._weights = [arrays[k].reshape(-1, *arrays[k].shape[2:]) if k in decoder.PER_LAYER
                         else arrays[k] for k in decoder.WEIGHTS]
        self._cos, self._sin = rope_tables(cfg, self.context)
        shape = (cfg.n_layers * self._part.n_kv_heads, self.context, cfg.head_dim)
        # GGUF blocks (llama.cpp's numerics) keep the KV cache in f16 as llama.cpp does: half the
        # bytes a long-context decode step reads; float weights keep transformers' f32 cache
        # unless `kv_dtype` says otherwise.
        if kv_dtype is None:
            kv_dtype = "f16" if isinstance(w["wq"], Blocks) else "f32"
        if kv_dtype not in ("f16", "f32"):
            raise ModelError(f"kv_dtype must be 'f16' or 'f32', got {kv_dtype!r}")
        kv = np.float16 if kv_dtype == "f16" else np.float32
        self.kcache, self.vcache = np.zeros(shape, kv), np.zeros(shape, kv)
        self.position = 0
        self._steps = {}

    def _step(self, decode, all_logits=False):
        key = (decode, all_logits, self.threads)  # the decode attention's split depends on it
        if key not in self._steps:
            step = decoder.compile_step(self._part, decode, all_logits, self.target,
                                        self.threads, self.formats,
                                        self.kcache.dtype == np.float16, tp=self.tp[1])
            # The matmuls keep their packed blocks of f32 weights; 16-bit weights are packed
            # per prefill instead (kept, their f32 panels would take twice the model: 0.6B-shaped
            # bf16 prefill at T = 128 ran 7 % faster with a 4.1 GB peak, 2.3 GB without).
            step.constant_inputs = tuple(k for k, w in zip(decoder.WEIGHTS, self._weights)
                                         if w.dtype.itemsize != 2)
            self._steps[key] = step
        return self._steps[key]

    def _build_ahead(self, decode):
        """A thread compiling the step program into the compile cache, or None when this model
        ran it already. On a cold cache the prefill and decode programs then compile side by side
        (each compile is a compiler process: two cores, half the wait); the step's first call
        loads the binary. A failed build is reported by that call, which compiles again."""
        if (decode, False, self.threads) in self._steps:
            return None
        step = self._step(decode)

        def build():
            try:
                step.build()
            except Exception:  # noqa: BLE001 -- the step's own call reports it
                pass

        thread = threading.Thread(target=build, name="ptox-build-ahead", daemon=True)
        thread.start()
        return thread

    def warm(self):
        """Compiles the prefill and decode programs (or loads them from the compile cache) by
        running each once on token 0; the context is empty afterwards."""
        self.reset()
        self.prefill([0])
        self.decode(0)
        self.reset()

    def reset(self):
        """Forget the context (the cache rows past the position are never read)."""
        self.position = 0

    def _run(self, ids, decode, all_logits):
        ids = np.ascontiguousarray(ids, dtype=np.int32).reshape(-1)
        if ids.size == 0:
            raise ModelError("no tokens to run")
        if np.any(ids < 0) or np.any(ids >= self.cfg.vocab):
            raise ModelError(f"token ids must be in [0, {self.cfg.vocab})")
        end = self.position + ids.size
        if end > self.context:
            raise ModelError(f"the context holds {self.context} tokens; this step would reach "
                             f"{end}")
        step = self._step(decode, all_logits)
        past = self.position
        # Every argument given: the call binds them in C++ (no Python per argument).
        logits = np.empty((ids.size if all_logits else 1, self.cfg.vocab), np.float32)
        step(ids, self._cos[past:end], self._sin[past:end], *self._weights,
             self.kcache[:, :end], self.vcache[:, :end], out=logits, threads=self.threads)
        self.position = end
        return logits

    def prefill(self, ids, all_logits=False):
        """Runs the tokens after the current position; the logits of the last one ([1, V]) or
        of every one ([T, V])."""
        return self._run(ids, decode=False, all_logits=all_logits)

    def decode(self, token):
        """One token at the current position: its logits [1, V]."""
        return self._run([token], decode=True, all_logits=False)

    def generate(self, prompt, max_tokens=128, temperature=0.0, top_p=1.0, seed=0, chat=False,
                 on_text=None, stats=None):
        """The generated text of `prompt` (token ids, or text: with chat=True wrapped in the
        model's chat template); `on_text(piece)` is called as text is produced. `stats`, a
        dict, receives prompt_tokens, generated_tokens, prefill_s and decode_s."""
        if isinstance(prompt, str):
            if chat:
                prompt = self.tokenizer.chat([{"role": "user", "content": prompt}])
            ids = self.tokenizer.encode(prompt)
        else:
            ids = list(prompt)
        rng = np.random.default_rng(seed)
        self.reset()
        t0 = time.perf_counter()
        decode_build = self._build_ahead(decode=True) if max_tokens > 1 else None
        logits = self.prefill(ids)
        t1 = time.perf_counter()
        out, text = [], ""
        for _ in range(max_tokens):
            token = sample(logits[-1], temperature, top_p, rng)
            if token in self.tokenizer.eos_ids:
                break
            out.append(token)
            full = self.tokenizer.decode(out)
            if on_text and not full.endswith("\ufffd"):  # wait for a whole UTF-8 character
                on_text(full[len(text):])
                text = full
            if len(out) == max_tokens or self.position >= self.context:
                break
            if decode_build is not None:
                decode_build.join()
                decode_build = None
            logits = self.decode(token)
        t2 = time.perf_counter()
        if decode_build is not None:
            decode_build.join()
        full = self.tokenizer.decode(out)
        if on_text and len(full) > len(text):
            on_text(full[len(text):])
        if stats is not None:
            stats.update(prompt_tokens=len(ids), generated_tokens=len(out), prefill_s=t1 - t0,
                         decode_s=t2 - t1)
        return full


def sample(logits, temperature, top_p, rng):
    """Greedy at temperature 0; else softmax(logits / T) restricted to the smallest set of
    tokens whose probability reaches top_p."""
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p)
    keep = order[:int(np.searchsorted(np.cumsum(p[order]), top_p) + 1)]
    return int(rng.choice(keep, p=p[keep] / p[keep].sum()))
