"""examples/tensor/rmsnorm.pto in Python: RMSNorm of bf16 rows (ml_dtypes.bfloat16 arrays)."""
import ml_dtypes
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def rmsnorm(x: pl.In["N", 96, pl.bf16], w: pl.In[96, pl.bf16]) -> pl.Out["N", 96, pl.bf16]:
    return pl.rmsnorm(x, w, eps=1e-6)


rng = np.random.default_rng(10)
x = rng.standard_normal((11, 96)).astype(ml_dtypes.bfloat16)
w = rng.standard_normal(96).astype(ml_dtypes.bfloat16)
y = rmsnorm(x, w, check=True)
xf, wf = x.astype(np.float32), w.astype(np.float32)
ref = xf / np.sqrt((xf ** 2).mean(axis=-1, keepdims=True) + 1e-6) * wf
np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-2, atol=2e-2)  # bf16 output
print("OK")
