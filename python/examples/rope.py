"""examples/tensor/rope.pto in Python: rotary position embedding of {T}x4x64 activations, both
pairings — rotate-half (Llama / Qwen) and interleaved (GPT-J) — with cos / sin broadcast over the
heads."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def rope(x: pl.In["T", 4, 64, pl.f32], cos: pl.In["T", 1, 64, pl.f32],
         sin: pl.In["T", 1, 64, pl.f32]) -> (pl.Out["T", 4, 64, pl.f32],
                                             pl.Out["T", 4, 64, pl.f32]):
    return pl.rope(x, cos, sin), pl.rope(x, cos, sin, interleaved=True)


T = 19
rng = np.random.default_rng(15)
x = rng.standard_normal((T, 4, 64), dtype=np.float32)
inv = 10000.0 ** (-np.arange(0, 64, 2) / 64)
angles = np.arange(T)[:, None] * inv[None, :]  # T x 32
# Rotate-half pairs element i with i + 32; interleaved pairs 2i with 2i + 1: the same 32 angles
# laid out as each pairing reads them.
half_cos = np.cos(np.concatenate([angles, angles], -1)).astype(np.float32)[:, None, :]
half_sin = np.sin(np.concatenate([angles, angles], -1)).astype(np.float32)[:, None, :]
half, _ = rope(x, half_cos, half_sin, check=True)
x1, x2 = x[..., :32].astype(np.float64), x[..., 32:].astype(np.float64)
ref = np.concatenate([x1 * half_cos[..., :32] - x2 * half_sin[..., :32],
                      x2 * half_cos[..., 32:] + x1 * half_sin[..., 32:]], -1)
np.testing.assert_allclose(half, ref, rtol=1e-5, atol=1e-5)

pair_cos = np.repeat(np.cos(angles), 2, -1).astype(np.float32)[:, None, :]
pair_sin = np.repeat(np.sin(angles), 2, -1).astype(np.float32)[:, None, :]
_, pairs = rope(x, pair_cos, pair_sin, check=True)
xe, xo = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
ref = np.empty_like(pairs, dtype=np.float64)
ref[..., 0::2] = xe * pair_cos[..., 0::2] - xo * pair_sin[..., 0::2]
ref[..., 1::2] = xo * pair_cos[..., 1::2] + xe * pair_sin[..., 1::2]
np.testing.assert_allclose(pairs, ref, rtol=1e-5, atol=1e-5)
print("OK")
