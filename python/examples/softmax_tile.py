"""examples/softmax_dyn.pto in Python: a row softmax at tile level — 16-row tiles padded with
-inf past the 200 valid columns, so the row max and sum see only real elements; and its static
twin examples/softmax.pto: one 64x256 tile."""
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
@ptox.jit
def softmax_static(x: pl.In[64, 256, pl.f32], y: pl.Out[64, 256, pl.f32]):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(64, 256))
        e = pl.tile.exp(pl.tile.row_expand_sub(t, pl.tile.row_max(t)))
        pl.store(pl.tile.row_expand_div(e, pl.tile.row_sum(e)), y, [0, 0])


x = np.random.default_rng(12).standard_normal((64, 256), dtype=np.float32)
e = np.exp(x - x.max(axis=-1, keepdims=True))
np.testing.assert_allclose(softmax_static(x, check=True), e / e.sum(axis=-1, keepdims=True),
                           rtol=1e-5, atol=1e-7)
print("OK")
