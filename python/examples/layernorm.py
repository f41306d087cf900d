"""examples/tensor/layernorm.pto in Python: LayerNorm over the last dim of {B}x{T}x160."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def layernorm(x: pl.In["B", "T", 160, pl.f32], w: pl.In[160, pl.f32],
              b: pl.In[160, pl.f32]) -> pl.Out["B", "T", 160, pl.f32]:
    return pl.layernorm(x, w, b, eps=1e-5)


rng = np.random.default_rng(7)
x = rng.standard_normal((2, 13, 160), dtype=np.float32)
w, b = (rng.standard_normal(160, dtype=np.float32) for _ in range(2))
y = layernorm(x, w, b, check=True)
mu = x.mean(axis=-1, keepdims=True)
ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * w + b
np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
print("OK")
