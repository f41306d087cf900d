"""examples/matmul.pto in Python: C = A @ B, 32x64 output tiles, a K loop carrying the tile."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def matmul(a: pl.In["M", 256, pl.f32], b: pl.In[256, 64, pl.f32], c: pl.Out["M", 64, pl.f32],
           m: pl.index):
    for i in pl.range(0, m, 32, parallel=True):
        with pl.incore():
            acc = pl.full(0.0, shape=(32, 64))
            for k in pl.range(0, 256, 64):
                ta = pl.load(a, [i, k], shape=(32, 64))
                tb = pl.load(b, [k, 0], shape=(64, 64))
                acc = pl.tile.matmul_acc(acc, ta, tb)
            pl.store(acc, c, [i, 0])


rng = np.random.default_rng(5)
a = rng.standard_normal((100, 256), dtype=np.float32)
b = rng.standard_normal((256, 64), dtype=np.float32)
c = np.zeros((100, 64), np.float32)
matmul(a, b, c, 100, check=True)  # within the documented bound of the interpreter's result
np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
print("OK")
