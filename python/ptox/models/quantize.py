"""`ptox quantize SRC DST` (and `python -m ptox.models.quantize`): a W8A8 model, PyPTO-X's scheme,
from a bf16 / f16 / f32 one (a HF folder, or a GGUF file dequantized to f32).

Every projection (q, k, v, o, gate, up, down) becomes int8 weights with one f32 scale per output
channel: s = absmax / 127 (in f32), q = round-to-nearest-even(w / s) clamped to [-127, 127] (a
zero row: s = 0, q = 0). At run time tensor.qmatmul {format = "w8a8"} quantizes each token's
activations to int8, sums in int32 exactly and scales once (kernels/quant.h, docs/ops.md). The
embedding, the LM head and the norms keep their dtype. DST is a HF folder: config.json with
quantization_config.quant_method = "ptox-w8a8", model.safetensors (`<name>.weight` int8 and
`<name>.weight_scale` f32 per projection) and the tokenizer, loaded by `ptox.models.load(DST)`.

With --report it measures the quantized model against the source on one prompt, both computed by
ptox with an f32 KV cache: the cosine of the logits at every prompt position, and over
--tokens greedy tokens of the source, the share of positions where the quantized model (fed the
same tokens) picks the same top-1 token."""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

from . import ModelError, load
from . import safetensors_file
from .config import Config
from .safetensors_file import HF_GLOBAL, HF_LAYER, MATRICES


def quantize_rows(w):
    """(q int8 [..., N, K], s f32 [..., N]) of weights w [..., N, K], per output channel."""
    w = np.asarray(w, dtype=np.float32)
    s = (np.abs(w).max(axis=-1) / np.float32(127)).astype(np.float32)
    safe = np.where(s > 0, s, np.float32(1))
    q = np.clip(np.rint(w / safe[..., None]), -127, 127).astype(np.int8)
    return q, s


def _source(src):
    """(config, weights by ptox name, config.json dict, tokenizer files writer) of SRC."""
    if os.path.isdir(src):
        cfg, weights, config_json = safetensors_file.load(src)
        if config_json.get("quantization_config"):
            raise ModelError(f"{src}: already quantized ({config_json['quantization_config']})")

        def tokenizer(dst):
            for name in os.listdir(src):
                if name.startswith("tokenizer") or name in ("special_tokens_map.json",
                                                            "generation_config.json"):
                    shutil.copy(os.path.join(src, name), dst)
        return cfg, weights, config_json, tokenizer
    from . import gguf_file
    from . import tokenizer as tok
    cfg, weights, reader = gguf_file.load(src, blocks=False)
    t = tok.from_gguf(reader, src)

    def tokenizer(dst):
        t.tk.save(os.path.join(dst, "tokenizer.json"))
        with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
            json.dump({"chat_template": t.chat_template}, f)
    return cfg, weights, _config_json(cfg, t), tokenizer


def _config_json(cfg: Config, t):
    """A HF config.json for a model read from GGUF."""
    eos = sorted(t.eos_ids)
    return {"architectures": [{"llama": "LlamaForCausalLM", "qwen3": "Qwen3ForCausalLM"}[cfg.arch]],
            "model_type": cfg.arch, "num_hidden_layers": cfg.n_layers,
            "hidden_size": cfg.d_model, "num_attention_heads": cfg.n_heads,
            "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
            "intermediate_size": cfg.d_ff, "vocab_size": cfg.vocab, "rope_theta": cfg.rope_base,
            "rms_norm_eps": cfg.eps, "max_position_embeddings": cfg.context,
            "tie_word_embeddings": cfg.tied, "bos_token_id": t.bos_id,
            "eos_token_id": eos[0] if len(eos) == 1 else eos}


def quantize(src, dst, progress=None):
    """Writes the W8A8 model of `src` (HF folder or GGUF file) into the folder `dst`."""
    cfg, weights, config_json, tokenizer = _source(src)
    tensors = {}
    for name, hf in HF_GLOBAL.items():
        if name in weights and not (name == "lm_head" and cfg.tied):
            tensors[hf] = weights[name]
    for name, hf in HF_LAYER.items():
        if name not in weights:
            continue
        for i in range(cfg.n_layers):
            key = f"model.layers.{i}.{hf}.weight"
            if name in MATRICES:
                tensors[key], tensors[key + "_scale"] = quantize_rows(weights[name][i])
            else:
                tensors[key] = np.asarray(weights[name][i], dtype=np.float32)
        if progress:
            progress(name)
    os.makedirs(dst, exist_ok=True)
    safetensors_file.save(os.path.join(dst, "model.safetensors"), tensors,
                          {"format": "pt", "quantized_by": "ptox quantize"})
    config_json = dict(config_json, quantization_config={
        "quant_method": safetensors_file.W8A8,
        "weights": "int8, symmetric per output channel (scale = absmax / 127, round to "
                   "nearest even)",
        "activations": "int8, dynamic per token", "modules": [HF_LAYER[p] for p in MATRICES]})
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config_json, f, indent=1)
    tokenizer(dst)


def report(src, dst, prompt, tokens, threads=0):
    """The accuracy of the quantized model `dst` against `src` (see the module docstring)."""
    a = load(src, context=tokens + 512, threads=threads, kv_dtype="f32")
    b = load(dst, context=tokens + 512, threads=threads, kv_dtype="f32")
    ids = a.tokenizer.encode(prompt)
    la, lb = a.prefill(ids, all_logits=True), b.prefill(ids, all_logits=True)
    cos = (la * lb).sum(-1) / (np.linalg.norm(la, axis=-1) * np.linalg.norm(lb, axis=-1))
    greedy, agree = [], 0
    ta, tb = la[-1], lb[-1]
    for _ in range(tokens):
        t = int(np.argmax(ta))
        agree += int(np.argmax(tb)) == t
        greedy.append(t)
        ta, tb = a.decode(t)[0], b.decode(t)[0]
    return {"prompt_tokens": len(ids), "logits_cosine_mean": float(cos.mean()),
            "logits_cosine_min": float(cos.min()), "greedy_tokens": tokens,
            "top1_agreement": agree / tokens,
            "source_text": a.tokenizer.decode(greedy),
            "quantized_text": b.generate(ids, max_tokens=tokens)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ptox quantize", description="Write a W8A8 model (int8 "
                                 "weights per output channel, int8 activations per token).")
    ap.add_argument("src", help="a HF folder (bf16 / f16 / f32 safetensors) or a GGUF file")
    ap.add_argument("dst", help="the folder to write (created; files in it are replaced)")
    ap.add_argument("--report", action="store_true",
                    help="measure the quantized model against the source (logits cosine, top-1 "
                         "agreement over greedy tokens) and write report.json into DST")
    ap.add_argument("--prompt", default="The history of the printing press begins",
                    help="the report's prompt")
    ap.add_argument("--tokens", type=int, default=128, help="the report's greedy tokens")
    ap.add_argument("--threads", type=int, default=0, help="worker threads (0: every core)")
    args = ap.parse_args(argv)
    if args.tokens <= 0:
        ap.error("--tokens must be positive")
    if os.path.abspath(args.src) == os.path.abspath(args.dst):
        ap.error("DST must differ from SRC")
    try:
        t0 = time.perf_counter()
        quantize(args.src, args.dst, progress=lambda n: print(f"\rquantizing {n} ", end="",
                                                               file=sys.stderr, flush=True))
        size = os.path.getsize(os.path.join(args.dst, "model.safetensors"))
        print(f"\rwrote {args.dst} ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
        if args.report:
            r = report(args.src, args.dst, args.prompt, args.tokens, args.threads)
            with open(os.path.join(args.dst, "report.json"), "w") as f:
                json.dump(r, f, indent=1)
            print(json.dumps(r, indent=1))
    except (ModelError, OSError) as e:
        print(f"ptox quantize: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
