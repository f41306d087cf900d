"""examples/activations_dyn.pto in Python: SiLU and GELU of f16 tiles, two outputs."""
import math

import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def activations(x: pl.In["N", 256, pl.f16], silu: pl.Out["N", 256, pl.f16],
                gelu: pl.Out["N", 256, pl.f16]):
    for i in pl.range(0, x.shape[0], 16, parallel=True):
        with pl.incore():
            t = pl.load(x, [i, 0], shape=(16, 256))
            pl.store(pl.tile.silu(t), silu, [i, 0])
            pl.store(pl.tile.gelu(t), gelu, [i, 0])


x = np.random.default_rng(13).standard_normal((19, 256)).astype(np.float16)
silu, gelu = activations(x, check=True)
xf = x.astype(np.float64)
np.testing.assert_allclose(silu.astype(np.float64), xf / (1 + np.exp(-xf)), rtol=2e-3, atol=2e-3)
g = 0.5 * xf * (1 + np.tanh(math.sqrt(2 / math.pi) * (xf + 0.044715 * xf ** 3)))
np.testing.assert_allclose(gelu.astype(np.float64), g, rtol=2e-3, atol=2e-3)
print("OK")
