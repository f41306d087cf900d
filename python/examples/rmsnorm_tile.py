"""examples/rmsnorm_dyn.pto in Python: RMSNorm at tile level over {N}x{H}, 1/H computed from the
run-time width; and its static twin examples/rmsnorm.pto: 32 rows of 512 in one tile, 1/512 a
constant."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def rmsnorm_dyn(x: pl.In["N", "H", pl.f32], w: pl.In["H", pl.f32], y: pl.Out["N", "H", pl.f32]):
    inv = 1.0 / pl.cast(x.shape[1], dtype=pl.f32)
    for i in pl.range(0, x.shape[0], 8, parallel=True):
        with pl.incore():
            t = pl.load(x, [i, 0], shape=(8, 512))
            tw = pl.load(w, [0], shape=(1, 512))
            ms = pl.tile.row_sum(t * t) * inv
            r = pl.tile.rsqrt(ms + 1e-6)
            pl.store(pl.tile.col_expand_mul(pl.tile.row_expand_mul(t, r), tw), y, [i, 0])


rng = np.random.default_rng(12)
x = rng.standard_normal((21, 300), dtype=np.float32)
w = rng.standard_normal(300, dtype=np.float32)
y = rmsnorm_dyn(x, w, check=True)
ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-6) * w
np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
@ptox.jit
def rmsnorm_static(x: pl.In[32, 512, pl.f32], w: pl.In[512, pl.f32], y: pl.Out[32, 512, pl.f32]):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(32, 512))
        tw = pl.load(w, [0], shape=(1, 512))
        r = pl.tile.rsqrt(pl.tile.row_sum(t * t) * 0.001953125 + 1e-6)
        pl.store(pl.tile.col_expand_mul(pl.tile.row_expand_mul(t, r), tw), y, [0, 0])


x = rng.standard_normal((32, 512), dtype=np.float32)
w = rng.standard_normal(512, dtype=np.float32)
ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-6) * w
np.testing.assert_allclose(rmsnorm_static(x, w, check=True), ref, rtol=1e-5, atol=1e-6)
print("OK")
