"""examples/tensor/blend.pto in Python: y = x + (h - x) * sigmoid(g), g broadcast over rows."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def blend(x: pl.In["N", 128, pl.f32], h: pl.In["N", 128, pl.f32],
          g: pl.In[128, pl.f32]) -> pl.Out["N", 128, pl.f32]:
    return x + (h - x) * pl.sigmoid(g)


rng = np.random.default_rng(6)
x, h = (rng.standard_normal((7, 128), dtype=np.float32) for _ in range(2))
g = rng.standard_normal(128, dtype=np.float32)
y = blend(x, h, g, check=True)
np.testing.assert_allclose(y, x + (h - x) / (1 + np.exp(-g)), rtol=1e-5, atol=1e-6)
print("OK")
