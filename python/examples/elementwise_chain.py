"""examples/elementwise_chain_dyn.pto in Python: relu(a * b + c) - a / 2 over bf16 tiles of a
2-D grid (both loops parallel); and its static twin examples/elementwise_chain.pto: f32, one
64x256 tile."""
import ml_dtypes
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def chain(a: pl.In["N", "M", pl.bf16], b: pl.In["N", "M", pl.bf16], c: pl.In["N", "M", pl.bf16],
          y: pl.Out["N", "M", pl.bf16]):
    for i in pl.range(0, a.shape[0], 32, parallel=True):
        for j in pl.range(0, a.shape[1], 128, parallel=True):
            with pl.incore():
                ta = pl.load(a, [i, j], shape=(32, 128))
                tb = pl.load(b, [i, j], shape=(32, 128))
                tc = pl.load(c, [i, j], shape=(32, 128))
                r = pl.tile.max(ta * tb + tc, 0.0)
                pl.store(r - ta * 0.5, y, [i, j])


rng = np.random.default_rng(14)
a, b, c = (rng.standard_normal((45, 300)).astype(ml_dtypes.bfloat16) for _ in range(3))
y = chain(a, b, c, check=True)  # bit-exact against the interpreter
f = [v.astype(np.float32) for v in (a, b, c)]
ref = np.maximum(f[0] * f[1] + f[2], 0) - f[0] * 0.5
np.testing.assert_allclose(y.astype(np.float32), ref, rtol=3e-2, atol=3e-2)  # bf16 roundings
@ptox.jit
def chain_static(a: pl.In[64, 256, pl.f32], b: pl.In[64, 256, pl.f32], c: pl.In[64, 256, pl.f32],
                 y: pl.Out[64, 256, pl.f32]):
    with pl.incore():
        ta = pl.load(a, [0, 0], shape=(64, 256))
        tb = pl.load(b, [0, 0], shape=(64, 256))
        tc = pl.load(c, [0, 0], shape=(64, 256))
        pl.store(pl.tile.max(ta * tb + tc, 0.0) - ta * 0.5, y, [0, 0])


a, b, c = (rng.standard_normal((64, 256), dtype=np.float32) for _ in range(3))
y = chain_static(a, b, c, check=True)
np.testing.assert_array_equal(y, np.maximum(a * b + c, np.float32(0)) - a * np.float32(0.5))
print("OK")
