"""Weights, configuration and tokenizer of a GGUF file (llama.cpp's format), read with the `gguf`
package: it memory-maps the file and dequantizes with numpy, the reference definition of each
block format. Every tensor is checked against the file and the architecture before use.

With `blocks=True` (what `ptox.models.load` does) the projections and the token embedding /
LM head stay in their block format when it is one ptox computes on (Q8_0, Q4_0, Q4_1: `Blocks`,
read by `tensor.qmatmul` / a quantized `tensor.gather`): the projections' bytes are stacked per
layer (one copy of the quantized bytes, ~0.6 B per weight for Q4_1), the embedding is read where
the file maps it. The projections share one format or are all dequantized. Everything else,
and every tensor with blocks=False, is dequantized to f32 at load (exact per the format's
definition: one f32 product and sum per element, as ggml computes it) and stacked per layer."""

import dataclasses

import numpy as np

from .config import Config, ModelError

SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1")
BLOCK_FORMATS = {"Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_1": "q4_1"}  # GGUF type -> ptox format
_PROJECTIONS = ("wq", "wk", "wv", "wo", "wg", "wu", "wd")


@dataclasses.dataclass(frozen=True)
class Blocks:
    """A weight kept as GGUF blocks: `data` int8 [..., rows, bytes per row] (a row's K values
    as K/32 blocks), `format` the ptox name ("q4_1"), `shape` the values' shape [..., rows, K]."""
    data: np.ndarray
    format: str
    shape: tuple

# ptox weight name -> the GGUF tensor name of layer {i} (or of the whole model).
_LAYER = {"attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "wq": "attn_q", "wk": "attn_k",
          "wv": "attn_v", "wo": "attn_output", "wg": "ffn_gate", "wu": "ffn_up",
          "wd": "ffn_down", "q_norm": "attn_q_norm", "k_norm": "attn_k_norm"}
_GLOBAL = {"embed": "token_embd", "out_norm": "output_norm", "lm_head": "output"}


def _open(path):
    try:
        import gguf
    except ImportError:  # pragma: no cover - a dependency of ptox.models
        raise ModelError("reading GGUF files needs the gguf package (pip install gguf)") from None
    try:
        return gguf.GGUFReader(path, "r")
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except Exception as e:  # noqa: BLE001 - any parse failure means a corrupt or foreign file
        # The reader's own text for a short file ("cannot reshape array of size ...") names
        # neither the tensor nor the cause: find them by walking the file's layout. Only here,
        # after a failure, so a good file's metadata is not parsed twice.
        cut = _truncation(path)
        if cut is not None:
            raise ModelError(f"{path}: {cut}") from None
        raise ModelError(f"{path}: not a readable GGUF file ({type(e).__name__}: {e})") from None


class _Short(Exception):
    """The file ended before a structure the GGUF layout says is there."""


# GGUF metadata value types (the spec's gguf_metadata_value_type) -> struct format of one value;
# 8 (string) and 9 (array) have their own layouts.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}


class _Layout:
    """Reads GGUF's header fields one after another from a file, raising _Short at its end."""

    def __init__(self, f, order, size):
        self.f, self.order, self.pos, self.size = f, order, 0, size
        self.where = "its header"  # the part being read, for the error when the file ends

    def take(self, n):
        if n > self.size - self.pos:  # a length past the end: do not ask read() for it
            raise _Short
        data = self.f.read(n)
        self.pos += len(data)
        if len(data) < n:
            raise _Short
        return data

    def scalar(self, fmt):
        import struct
        return struct.unpack(self.order + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        return self.take(self.scalar("Q")).decode("utf-8", "replace")

    def skip_value(self, kind):
        import struct
        if kind == 8:
            self.string()
        elif kind == 9:
            item, count = self.scalar("I"), self.scalar("Q")
            if item in _SCALARS:  # one read, not one per element (a vocabulary's scores)
                self.take(struct.calcsize(_SCALARS[item]) * count)
            else:
                for _ in range(count):
                    self.skip_value(item)
        elif kind in _SCALARS:
            self.scalar(_SCALARS[kind])
        else:
            raise ValueError(f"metadata value type {kind}")


def _truncation(path):
    """What is cut off when the GGUF file at `path` ends early ("the file is truncated: ..."),
    or None when it is not a short GGUF file (a foreign or otherwise corrupt one). Walks the
    layout of the GGUF spec: header, metadata, tensor table, then checks each tensor's byte range
    [data start + offset, + its type's size) against the file's size."""
    import os
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if head[:4] != b"GGUF"[:len(head)]:
            return None
        if len(head) < 8:
            return f"the file is truncated: it has {size} bytes and ends inside its header"
        order = ">" if int.from_bytes(head[4:8], "little") & 0xFFFF == 0 else "<"
        if int.from_bytes(head[4:8], "little" if order == "<" else "big") not in (2, 3):
            return None  # a GGUF version the reader does not know: not a truncation
        f.seek(0)
        r = _Layout(f, order, size)
        try:
            start, table = _tensor_table(r)
        except _Short:
            return f"the file is truncated: it has {size} bytes and ends inside {r.where}"
        except (ValueError, UnicodeError, OverflowError, MemoryError):
            return None  # not a layout this walk understands: the reader's error stands
    return _first_tensor_past(start, table, size)


def _tensor_table(r):
    """(the data section's offset, [(name, dims, type, offset)]) of the GGUF file `r` reads,
    from its start; r.where says which part it is reading when the file ends."""
    import gguf
    r.where = "its header"
    r.take(8)  # magic and version
    n_tensors, n_kv = r.scalar("Q"), r.scalar("Q")
    alignment = gguf.GGUF_DEFAULT_ALIGNMENT
    for i in range(n_kv):
        r.where = f"its metadata (entry {i + 1} of {n_kv})"
        key, kind = r.string(), r.scalar("I")
        if key == "general.alignment" and kind == 4:
            alignment = r.scalar("I")
        else:
            r.skip_value(kind)
    table = []
    for i in range(n_tensors):
        r.where = f"its tensor table (entry {i + 1} of {n_tensors})"
        name = r.string()
        r.where = f"its tensor table (the entry of tensor {name}, {i + 1} of {n_tensors})"
        dims = [r.scalar("Q") for _ in range(r.scalar("I"))]
        table.append((name, dims, r.scalar("I"), r.scalar("Q")))
    return -(-r.pos // alignment) * alignment, table  # the data section begins aligned


def _first_tensor_past(start, table, size):
    """The error for the first tensor of `table` whose bytes end past `size`, or None."""
    import gguf
    for name, dims, kind, offset in table:
        try:
            block, bytes_per_block = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
        except (ValueError, KeyError):
            return None  # a type this gguf package does not know: the reader's error stands
        end = start + offset + int(np.prod(dims, dtype=np.int64)) // block * bytes_per_block
        if end > size:
            return (f"tensor {name} ends at byte {end}, but the file has {size} bytes "
                    "(the file is truncated)")
    return None


def _field(reader, path, key, kind, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is not None:
            return default
        raise ModelError(f"{path}: metadata {key} is missing")
    try:
        value = f.contents()
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{path}: metadata {key} is unreadable ({e})") from None
    if kind is not None and not isinstance(value, kind):
        raise ModelError(f"{path}: metadata {key} = {value!r} is not a {kind.__name__}")
    return value


def config_of(reader, path):
    arch = _field(reader, path, "general.architecture", str)
    if arch not in ("llama", "qwen3"):
        raise ModelError(f"{path}: architecture '{arch}' is not supported (llama, qwen3)")
    names = {t.name for t in reader.tensors}
    n_heads = _field(reader, path, f"{arch}.attention.head_count", int)
    d_model = _field(reader, path, f"{arch}.embedding_length", int)
    vocab = len(_field(reader, path, "tokenizer.ggml.tokens", list))
    cfg = Config(
        arch=arch, n_layers=_field(reader, path, f"{arch}.block_count", int), d_model=d_model,
        n_heads=n_heads, n_kv_heads=_field(reader, path, f"{arch}.attention.head_count_kv", int),
        head_dim=_field(reader, path, f"{arch}.attention.key_length", int,
                        d_model // n_heads if n_heads else 0),
        d_ff=_field(reader, path, f"{arch}.feed_forward_length", int),
        vocab=_field(reader, path, f"{arch}.vocab_size", int, vocab),
        rope_base=float(_field(reader, path, f"{arch}.rope.freq_base", float, 10000.0)),
        eps=float(_field(reader, path, f"{arch}.attention.layer_norm_rms_epsilon", float)),
        context=_field(reader, path, f"{arch}.context_length", int),
        tied="output.weight" not in names, qk_norm=arch == "qwen3")
    return cfg.validate(path)


def _unpermute(w, n_heads):
    """llama.cpp's converter permutes the rows of a llama q / k projection within each head so
    that its adjacent-pair RoPE equals HF's rotate-half; undo it (one RoPE form here)."""
    rows, cols = w.shape
    hd = rows // n_heads
    return w.reshape(n_heads, hd // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def _checked(tensor, path, expect):
    """The tensor's type name and shape after checking them and its bytes against the file."""
    import gguf
    kind = tensor.tensor_type.name
    if kind not in SUPPORTED_TYPES:
        raise ModelError(f"{path}: tensor {tensor.name} has type {kind}; supported: "
                         f"{', '.join(SUPPORTED_TYPES)}")
    shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists the fastest dim first
    if shape != tuple(expect):
        raise ModelError(f"{path}: tensor {tensor.name} has shape {list(shape)}, the "
                         f"configuration needs {list(expect)}")
    block, size = gguf.GGML_QUANT_SIZES[tensor.tensor_type]
    n = int(np.prod(shape))
    if n % block or tensor.data.nbytes != n // block * size:
        raise ModelError(f"{path}: tensor {tensor.name} holds {tensor.data.nbytes} bytes, its "
                         f"type and shape need {n // block * size} (truncated or corrupt file)")
    return kind, shape


def _blocks(tensor, path, expect):
    """The tensor's blocks as int8 [rows, bytes per row] (the file's memory, no copy), after the
    checks of _checked and of every block's f16 scale (and q4_1 offset): finite."""
    kind, shape = _checked(tensor, path, expect)
    rows = int(np.prod(shape[:-1]))
    data = np.asarray(tensor.data).view(np.int8).reshape(rows, -1)
    size = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}[kind]
    heads = data.reshape(rows, -1, size)[:, :, :4 if kind == "Q4_1" else 2]
    if not np.isfinite(np.ascontiguousarray(heads).view(np.float16)).all():
        raise ModelError(f"{path}: tensor {tensor.name} has NaN or Inf block scales")
    return data


def _dequantized(tensor, path, expect):
    """The tensor as f32 of shape `expect` (HF layout), after the checks of _checked."""
    import gguf
    _, shape = _checked(tensor, path, expect)
    try:
        w = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{path}: tensor {tensor.name} cannot be decoded ({e})") from None
    w = np.asarray(w, dtype=np.float32).reshape(shape)
    if not np.isfinite(w).all():
        raise ModelError(f"{path}: tensor {tensor.name} holds NaN or Inf values")
    return w


def _tensor(tensors, path, gguf_name):
    t = tensors.get(gguf_name)
    if t is None:
        raise ModelError(f"{path}: tensor {gguf_name} is missing")
    return t


def check(path):
    """The configuration of a GGUF file after the checks `load` makes of its metadata and of
    every weight it reads (present, a supported type, the configured shape, the bytes the file
    holds), without decoding any: what `ptox doctor` asks of the default model."""
    reader = _open(path)
    cfg = config_of(reader, path)
    tensors = {t.name: t for t in reader.tensors}
    shapes = cfg.weight_shapes()
    for name, gname in _GLOBAL.items():
        if name in shapes:
            _checked(_tensor(tensors, path, f"{gname}.weight"), path, shapes[name])
    for name, gname in _LAYER.items():
        if name in shapes:
            for i in range(cfg.n_layers):
                _checked(_tensor(tensors, path, f"blk.{i}.{gname}.weight"), path, shapes[name][1:])
    return cfg


def load(path, progress=None, blocks=False):
    """(config, weights by ptox name, reader) of a GGUF file: f32 arrays, and with blocks=True
    `Blocks` where the file's format is one ptox computes on (see the module's docstring)."""
    reader = _open(path)
    cfg = config_of(reader, path)
    tensors = {t.name: t for t in reader.tensors}
    shapes = cfg.weight_shapes()
    weights = {}

    def tensor(gguf_name):
        return _tensor(tensors, path, gguf_name)

    def kind(gguf_name):
        return tensor(gguf_name).tensor_type.name

    # The projections stay blocks when every one has the same block format.
    kinds = {kind(f"blk.{i}.{_LAYER[n]}.weight") for n in _PROJECTIONS for i in range(cfg.n_layers)}
    keep = blocks and len(kinds) == 1 and next(iter(kinds)) in BLOCK_FORMATS

    for name, gname in _GLOBAL.items():
        if name not in shapes:
            continue
        t = tensor(f"{gname}.weight")
        if blocks and name in ("embed", "lm_head") and t.tensor_type.name in BLOCK_FORMATS:
            weights[name] = Blocks(_blocks(t, path, shapes[name]),
                                   BLOCK_FORMATS[t.tensor_type.name], shapes[name])
        else:
            weights[name] = _dequantized(t, path, shapes[name])
    for name, gname in _LAYER.items():
        if name not in shapes:
            continue
        layers = []
        for i in range(cfg.n_layers):
            t = tensor(f"blk.{i}.{gname}.weight")
            w = (_blocks if keep and name in _PROJECTIONS else _dequantized)(t, path,
                                                                              shapes[name][1:])
            if cfg.arch == "llama" and name in ("wq", "wk"):  # rows: blocks permute like values
                w = _unpermute(w, cfg.n_heads if name == "wq" else cfg.n_kv_heads)
            layers.append(w)
        stacked = np.stack(layers)
        weights[name] = (Blocks(stacked, BLOCK_FORMATS[next(iter(kinds))], shapes[name])
                         if keep and name in _PROJECTIONS else stacked)
        if progress:
            progress(name)
    return cfg, weights, reader
