"""examples/elementwise_chain_dyn.pto in Python: relu(a * b + c) - a / 2 over bf16 tiles of a
2-D grid (both loops parallel)."""
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
print("OK")
