"""examples/tensor/softmax.pto in Python: a row softmax at tensor level, fused into one kernel."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def softmax(x: pl.In["N", 256, pl.f32]) -> pl.Out["N", 256, pl.f32]:
    return pl.softmax(x)


x = np.random.default_rng(1).standard_normal((513, 256), dtype=np.float32)
y = softmax(x, check=True)
e = np.exp(x - x.max(axis=-1, keepdims=True))
np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
print("OK")
