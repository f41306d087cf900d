"""The shape of a decoder model: what the ptox programs are specialized on and what every weight
is checked against before use."""

import dataclasses


class ModelError(ValueError):
    """A model file that cannot be used: missing, truncated, corrupt, of an unsupported
    architecture or tensor type, or not matching its own configuration. The message names the
    file and, where one is at fault, the tensor."""


@dataclasses.dataclass(frozen=True)
class Config:
    arch: str            # "llama" or "qwen3"
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab: int
    rope_base: float
    eps: float
    context: int         # the longest context the model was trained for
    tied: bool           # the LM head is the token embedding
    qk_norm: bool        # per-head RMSNorm of q and k (Qwen3)

    def validate(self, where):
        for name in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab",
                     "context"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ModelError(f"{where}: {name} = {v!r}, expected a positive integer")
        if self.n_heads % self.n_kv_heads:
            raise ModelError(f"{where}: {self.n_heads} query heads are not a multiple of "
                             f"{self.n_kv_heads} key / value heads")
        if self.head_dim % 2:
            raise ModelError(f"{where}: head_dim {self.head_dim} is odd (RoPE rotates pairs)")
        if not (self.rope_base > 0 and 0 < self.eps < 1):
            raise ModelError(f"{where}: rope base {self.rope_base} / eps {self.eps} out of range")
        return self

    def weight_shapes(self):
        """Every weight the decoder reads, by its ptox name, with the shape it must have
        (HF layout: a linear layer's weight is [out, in])."""
        L, D, hd = self.n_layers, self.d_model, self.head_dim
        shapes = {
            "embed": (self.vocab, D),
            "attn_norm": (L, D), "ffn_norm": (L, D), "out_norm": (D,),
            "wq": (L, self.n_heads * hd, D), "wk": (L, self.n_kv_heads * hd, D),
            "wv": (L, self.n_kv_heads * hd, D), "wo": (L, D, self.n_heads * hd),
            "wg": (L, self.d_ff, D), "wu": (L, self.d_ff, D), "wd": (L, D, self.d_ff),
        }
        if self.qk_norm:
            shapes.update(q_norm=(L, hd), k_norm=(L, hd))
        if not self.tied:
            shapes["lm_head"] = (self.vocab, D)
        return shapes
