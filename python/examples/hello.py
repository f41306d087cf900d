"""examples/hello_dyn.pto in Python: c = a + b over {N}x128 f32, one 16-row tile per task; and
its static twin examples/hello.pto: one 128x128 tile in one task."""
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def tile_add(a: pl.In["N", 128, pl.f32], b: pl.In["N", 128, pl.f32], c: pl.Out["N", 128, pl.f32],
             n: pl.index):
    for i in pl.range(0, n, 16, parallel=True):
        with pl.incore():
            ta = pl.load(a, [i, 0], shape=(16, 128))
            tb = pl.load(b, [i, 0], shape=(16, 128))
            pl.store(ta + tb, c, [i, 0])


rng = np.random.default_rng(0)
a = rng.standard_normal((100, 128), dtype=np.float32)
b = rng.standard_normal((100, 128), dtype=np.float32)
c = np.empty_like(a)
tile_add(a, b, c, 100, check=True)  # the cpu target, checked against the interpreter
np.testing.assert_array_equal(c, a + b)
@ptox.jit
def tile_add_static(a: pl.In[128, 128, pl.f32], b: pl.In[128, 128, pl.f32],
                    c: pl.Out[128, 128, pl.f32]):
    with pl.incore():
        ta = pl.load(a, [0, 0], shape=(128, 128))
        tb = pl.load(b, [0, 0], shape=(128, 128))
        pl.store(ta + tb, c, [0, 0])


a = rng.standard_normal((128, 128), dtype=np.float32)
b = rng.standard_normal((128, 128), dtype=np.float32)
np.testing.assert_array_equal(tile_add_static(a, b, check=True), a + b)
print("OK")
