"""Tensor parallelism (docs/distributed.md): one rank's share of a decoder's weights. Each rank
holds its query heads with their KV heads, its part of the MLP and its part of the outputs of wo
and wd: output rows of every projection (column-parallel), whole rows, so that GGUF blocks split
on whole blocks and each output sums its whole K on one rank (the step gathers the attention
output and the MLP activation before wo and wd). Norms, the embedding and the LM head are
replicated."""

import dataclasses

import numpy as np

from .config import ModelError
from .gguf_file import Blocks


def shard(cfg, weights, rank, size):
    """(the Config of rank's share, its weights: a copy of each split matrix's part)."""
    hd = cfg.head_dim
    for what, n in (("query heads", cfg.n_heads), ("key / value heads", cfg.n_kv_heads),
                    ("MLP columns", cfg.d_ff), ("model width", cfg.d_model)):
        if n % size:
            raise ModelError(f"tensor parallel over {size} ranks: the model's {n} {what} do not "
                             "split evenly")
    part = dataclasses.replace(cfg, n_heads=cfg.n_heads // size,
                               n_kv_heads=cfg.n_kv_heads // size, d_ff=cfg.d_ff // size)
    q, kv, f, d = part.n_heads * hd, part.n_kv_heads * hd, part.d_ff, cfg.d_model // size
    out = dict(weights)
    for name, n in (("wq", q), ("wk", kv), ("wv", kv), ("wg", f), ("wu", f), ("wo", d),
                    ("wd", d)):
        out[name] = _rows(weights[name], rank * n, n)
    return part, out


def _rows(w, start, n):
    """Output rows [start, start + n) of a stacked [L, out, in] matrix (whole rows of blocks)."""
    if isinstance(w, Blocks):
        return Blocks(np.ascontiguousarray(w.data[:, start:start + n]), w.format,
                      (w.shape[0], n, w.shape[2]))
    return np.ascontiguousarray(w[:, start:start + n])
