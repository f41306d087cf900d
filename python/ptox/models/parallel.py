"""Tensor parallelism (docs/distributed.md): one rank's share of a decoder's weights. Each rank
holds its query heads with their KV heads and its part of the MLP: the output rows of wq, wk, wv,
wg and wu (column-parallel) and the matching input columns of wo and wd (row-parallel, summed
over the ranks by the step's allreduce). Norms, the embedding and the LM head are replicated."""

import dataclasses

import numpy as np

from .config import ModelError
from .gguf_file import Blocks

_BLOCK = 32  # values per GGUF block


def shard(cfg, weights, rank, size):
    """(the Config of rank's share, its weights: a copy of each split matrix's part)."""
    hd = cfg.head_dim
    for what, n in (("query heads", cfg.n_heads), ("key / value heads", cfg.n_kv_heads),
                    ("MLP columns", cfg.d_ff)):
        if n % size:
            raise ModelError(f"tensor parallel over {size} ranks: the model's {n} {what} do not "
                             "split evenly")
    part = dataclasses.replace(cfg, n_heads=cfg.n_heads // size,
                               n_kv_heads=cfg.n_kv_heads // size, d_ff=cfg.d_ff // size)
    q, kv, f = part.n_heads * hd, part.n_kv_heads * hd, part.d_ff
    out = dict(weights)
    for name, axis, n in (("wq", 1, q), ("wk", 1, kv), ("wv", 1, kv), ("wg", 1, f), ("wu", 1, f),
                          ("wo", 2, q), ("wd", 2, f)):
        out[name] = _part(weights[name], name, axis, rank * n, n)
    return part, out


def _part(w, name, axis, start, n):
    """Rows (axis 1) or columns (axis 2) [start, start + n) of a stacked [L, out, in] matrix."""
    if isinstance(w, Blocks):
        if axis == 2 and w.format == "w8a8":
            raise ModelError(f"tensor parallel does not split the columns of w8a8 weights "
                             f"({name}: one scale per whole row)")
        if axis == 2:  # columns: whole blocks of each row
            if start % _BLOCK or n % _BLOCK:
                raise ModelError(f"tensor parallel: {name}'s columns [{start}, {start + n}) do not "
                                 f"fall on its {_BLOCK}-value blocks")
            per = w.data.shape[2] // (w.shape[2] // _BLOCK)  # bytes per block
            data = w.data[:, :, start // _BLOCK * per:(start + n) // _BLOCK * per]
        else:
            data = w.data[:, start:start + n]
        shape = list(w.shape)
        shape[axis] = n
        return Blocks(np.ascontiguousarray(data), w.format, tuple(shape))
    index = [slice(None)] * w.ndim
    index[axis] = slice(start, start + n)
    return np.ascontiguousarray(w[tuple(index)])
