"""Weights and configuration of a Hugging Face model folder: config.json and *.safetensors
(one file, or shards listed by model.safetensors.index.json). The safetensors format is a JSON
header and raw little-endian tensors; this small reader memory-maps each file with numpy and
checks every tensor's dtype, shape and byte range against the header and the file size before
use (the `safetensors` package's numpy API has no bfloat16). The matrices (projections,
embedding, LM head) keep the file's dtype when it is bf16 or f16 — the step programs widen them
in registers, exactly, so a decode step reads half the bytes — and are stacked per layer (one
copy of the file's bytes); a model whose matrices mix dtypes, and every vector (the norms), is
widened to f32.

A folder written by `ptox quantize` (quantization_config.quant_method "ptox-w8a8") holds each
projection as int8 `<name>.weight` [out, in] and f32 `<name>.weight_scale` [out]; they are
stacked per layer into the rows tensor.qmatmul {format = "w8a8"} reads (K int8, then the
scale): the copy every stacked weight gets, no extra pass."""

import ctypes
import json
import mmap
import os
import struct

import numpy as np

from .config import Config, ModelError

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": "bfloat16", "I8": np.int8}
W8A8 = "ptox-w8a8"  # config.json's quantization_config.quant_method of `ptox quantize`'s models

# ptox weight name -> HF tensor name of layer {i}.
HF_LAYER = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
          "wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
          "wo": "self_attn.o_proj", "wg": "mlp.gate_proj", "wu": "mlp.up_proj",
          "wd": "mlp.down_proj", "q_norm": "self_attn.q_norm", "k_norm": "self_attn.k_norm"}
MATRICES = ("wq", "wk", "wv", "wo", "wg", "wu", "wd")
HF_GLOBAL = {"embed": "model.embed_tokens.weight", "out_norm": "model.norm.weight",
           "lm_head": "lm_head.weight"}


def config_of(folder):
    path = os.path.join(folder, "config.json")
    try:
        with open(path) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        raise ModelError(f"{path}: cannot be read ({e})") from None
    arch = {"LlamaForCausalLM": "llama", "Qwen3ForCausalLM": "qwen3"}.get(
        (c.get("architectures") or [None])[0])
    if arch is None:
        raise ModelError(f"{path}: architecture {c.get('architectures')} is not supported "
                         "(LlamaForCausalLM, Qwen3ForCausalLM)")
    try:
        heads = c["num_attention_heads"]
        cfg = Config(arch=arch, n_layers=c["num_hidden_layers"], d_model=c["hidden_size"],
                     n_heads=heads, n_kv_heads=c.get("num_key_value_heads", heads),
                     head_dim=c.get("head_dim") or c["hidden_size"] // heads,
                     d_ff=c["intermediate_size"], vocab=c["vocab_size"],
                     rope_base=float(c.get("rope_theta", 10000.0)),
                     eps=float(c.get("rms_norm_eps", 1e-6)),
                     context=c.get("max_position_embeddings", 2048),
                     tied=bool(c.get("tie_word_embeddings", False)), qk_norm=arch == "qwen3")
    except KeyError as e:
        raise ModelError(f"{path}: {e.args[0]} is missing") from None
    return cfg.validate(path), c


def _open_file(path):
    """name -> (memmap'd array) of one .safetensors file, every entry checked."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            if n > size - 8:
                raise ModelError(f"{path}: header of {n} bytes in a file of {size}")
            header = json.loads(f.read(n))
    except (OSError, struct.error, ValueError) as e:
        raise ModelError(f"{path}: not a readable safetensors file ({e})") from None
    data_size = size - 8 - n
    raw = np.memmap(path, np.uint8, "r", offset=8 + n, shape=(data_size,)) if data_size else None
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dt = _DTYPES.get(e.get("dtype"))
        if dt is None:
            raise ModelError(f"{path}: tensor {name} has dtype {e.get('dtype')}; supported: "
                             "F32, F16, BF16, I8")
        if dt == "bfloat16":
            import ml_dtypes
            dt = ml_dtypes.bfloat16
        shape, (lo, hi) = tuple(e["shape"]), e["data_offsets"]
        need = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
        if not (0 <= lo <= hi <= data_size and hi - lo == need):
            raise ModelError(f"{path}: tensor {name} spans bytes [{lo}, {hi}) of {data_size}; "
                             f"its shape {list(shape)} needs {need} (truncated or corrupt file)")
        out[name] = raw[lo:hi].view(dt).reshape(shape) if need else np.zeros(shape, dt)
    return out


def _drop_pages(a):
    """Lets the kernel drop the resident file pages under a memory-mapped array once it has been
    copied (they are read again if touched): the source of a stacked copy no longer counts in the
    process's memory (a 0.6B-shaped bf16 model's load peaked at the file's 1.2 GB plus the copy's)."""
    if not isinstance(a, np.memmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = -(-a.ctypes.data // mmap.PAGESIZE) * mmap.PAGESIZE
    end = (a.ctypes.data + a.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
    if end > start:
        ctypes.CDLL(None, use_errno=True).madvise(ctypes.c_void_p(start),
                                                 ctypes.c_size_t(end - start),
                                                 mmap.MADV_DONTNEED)


def _w8a8(folder, tensors, names, shape):
    """One projection's layers as w8a8 rows [L, out, in + 4] int8 (see the module docstring)."""
    from .gguf_file import Blocks
    L, n, k = shape
    rows = np.empty((L, n, k + 4), np.int8)
    for i, name in enumerate(names):
        q, s = tensors.get(name), tensors.get(name + "_scale")
        if q is None or s is None:
            raise ModelError(f"{folder}: tensor {name if q is None else name + '_scale'} is "
                             "missing")
        if q.dtype != np.int8 or tuple(q.shape) != (n, k):
            raise ModelError(f"{folder}: tensor {name} is {q.dtype} {list(q.shape)}, a W8A8 "
                             f"projection is int8 {[n, k]}")
        if s.dtype != np.float32 or tuple(s.shape) != (n,):
            raise ModelError(f"{folder}: tensor {name}_scale is {s.dtype} {list(s.shape)}, a "
                             f"W8A8 scale is float32 {[n]}")
        if not (np.isfinite(s).all() and (s >= 0).all()):
            raise ModelError(f"{folder}: tensor {name}_scale holds negative, NaN or Inf scales")
        rows[i, :, :k] = q
        rows[i, :, k:] = np.ascontiguousarray(s).view(np.int8).reshape(n, 4)
        _drop_pages(q)
    return Blocks(rows, "w8a8", shape)


def save(path, tensors, metadata=None):
    """A .safetensors file of numpy arrays (f32, f16, bf16, int8), written one tensor at a time."""
    import ml_dtypes
    kinds = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(ml_dtypes.bfloat16): "BF16", np.dtype(np.int8): "I8"}
    header, offset = ({"__metadata__": metadata} if metadata else {}), 0
    for name, a in tensors.items():
        header[name] = {"dtype": kinds[np.dtype(a.dtype)], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)  # the data starts 8-byte aligned, as the format recommends
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a).view(np.uint8).data)


def load(folder, progress=None):
    """(config, weights by ptox name as f32 arrays, config.json dict) of a HF model folder."""
    cfg, config_json = config_of(folder)
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for name in files:
        tensors.update(_open_file(os.path.join(folder, name)))
    shapes = cfg.weight_shapes()

    def get(name, expect):
        t = tensors.get(name)
        if t is None:
            raise ModelError(f"{folder}: tensor {name} is missing")
        if tuple(t.shape) != tuple(expect):
            raise ModelError(f"{folder}: tensor {name} has shape {list(t.shape)}, the "
                             f"configuration needs {list(expect)}")
        if not np.isfinite(t).all():
            raise ModelError(f"{folder}: tensor {name} holds NaN or Inf values")
        return t

    def layer_names(name):
        return [f"model.layers.{i}.{HF_LAYER[name]}.weight" for i in range(cfg.n_layers)]

    quant = (config_json.get("quantization_config") or {}).get("quant_method")
    if quant not in (None, W8A8):
        raise ModelError(f"{folder}/config.json: quantization method {quant!r} is not supported "
                         f"({W8A8!r}, written by ptox quantize)")
    # The matrices' dtype: the file's when every matrix has the same 16-bit one, else f32.
    names = [HF_GLOBAL[n] for n in HF_GLOBAL if n in shapes and n != "out_norm"]
    if not quant:
        names += [t for n in MATRICES if n in shapes for t in layer_names(n)]
    kinds = {np.dtype(tensors[t].dtype) for t in names if t in tensors}
    wide = kinds.pop() if len(kinds) == 1 else np.dtype(np.float32)
    if wide.itemsize != 2:
        wide = np.dtype(np.float32)

    weights = {}
    for name, hf in HF_GLOBAL.items():
        if name in shapes:
            dt = np.float32 if name == "out_norm" else wide
            weights[name] = np.asarray(get(hf, shapes[name]), dtype=dt)
    for name in HF_LAYER:
        if quant and name in MATRICES:
            weights[name] = _w8a8(folder, tensors, layer_names(name), shapes[name])
            if progress:
                progress(name)
        elif name in shapes:
            stacked = np.empty(shapes[name], wide if name in MATRICES else np.float32)
            for i, t in enumerate(layer_names(name)):
                stacked[i] = get(t, shapes[name][1:])
                _drop_pages(tensors[t])
            weights[name] = stacked
            if progress:
                progress(name)
    return cfg, weights, config_json
