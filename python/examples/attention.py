"""examples/tensor/attention.pto in Python: softmax(q k^T / sqrt(d)) v over S tokens."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def attention(q: pl.In["S", 64, pl.f32], k: pl.In["S", 64, pl.f32],
              v: pl.In["S", 64, pl.f32]) -> pl.Out["S", 64, pl.f32]:
    s = pl.matmul(q, k, transpose_b=True)
    p = pl.softmax(s * 0.125)
    return p @ v


rng = np.random.default_rng(2)
q, k, v = (rng.standard_normal((37, 64), dtype=np.float32) for _ in range(3))
o = attention(q, k, v, check=True)
s = q @ k.T * 0.125
p = np.exp(s - s.max(axis=-1, keepdims=True))
np.testing.assert_allclose(o, (p / p.sum(axis=-1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5)
print("OK")
