"""examples/tensor/linear_gelu.pto in Python: gelu(x @ w + bias)."""
import math

import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def linear_gelu(x: pl.In["M", 72, pl.f32], w: pl.In[72, 40, pl.f32],
                bias: pl.In[40, pl.f32]) -> pl.Out["M", 40, pl.f32]:
    return pl.gelu(x @ w + bias)


rng = np.random.default_rng(8)
x = rng.standard_normal((9, 72), dtype=np.float32)
w = rng.standard_normal((72, 40), dtype=np.float32)
bias = rng.standard_normal(40, dtype=np.float32)
y = linear_gelu(x, w, bias, check=True)
z = (x @ w + bias).astype(np.float64)
ref = 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
np.testing.assert_allclose(y, ref, rtol=1e-3, atol=1e-4)
print("OK")
