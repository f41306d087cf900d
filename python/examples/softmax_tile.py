"""examples/softmax_dyn.pto in Python: a row softmax at tile level — 16-row tiles padded with
-inf past the 200 valid columns, so the row max and sum see only real elements."""
import math

import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def softmax_dyn(x: pl.In["N", 200, pl.f32], y: pl.Out["N", 200, pl.f32]):
    for i in pl.range(0, x.shape[0], 16, parallel=True):
        with pl.incore():
            t = pl.load(x, [i, 0], shape=(16, 256), pad=-math.inf)
            m = pl.tile.row_max(t)
            e = pl.tile.exp(pl.tile.row_expand_sub(t, m))
            z = pl.tile.row_sum(e)
            pl.store(pl.tile.row_expand_div(e, z), y, [i, 0])


x = np.random.default_rng(11).standard_normal((37, 200), dtype=np.float32)
y = softmax_dyn(x, check=True)
e = np.exp(x - x.max(axis=-1, keepdims=True))
np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
print("OK")
