"""examples/tensor/swiglu_mlp.pto in Python: (silu(x wg) * (x wu)) wd."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def swiglu_mlp(x: pl.In["M", 64, pl.f32], wg: pl.In[64, 96, pl.f32], wu: pl.In[64, 96, pl.f32],
               wd: pl.In[96, 64, pl.f32]) -> pl.Out["M", 64, pl.f32]:
    h = pl.swiglu(x @ wg, x @ wu)
    return h @ wd


rng = np.random.default_rng(9)
x = rng.standard_normal((5, 64), dtype=np.float32)
wg, wu = (rng.standard_normal((64, 96), dtype=np.float32) * 0.1 for _ in range(2))
wd = rng.standard_normal((96, 64), dtype=np.float32) * 0.1
y = swiglu_mlp(x, wg, wu, wd, check=True)
g, u = x @ wg, x @ wu
np.testing.assert_allclose(y, (g / (1 + np.exp(-g)) * u) @ wd, rtol=1e-4, atol=1e-5)
print("OK")
