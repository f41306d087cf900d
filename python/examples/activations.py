"""examples/activations_dyn.pto in Python: SiLU and GELU of f16 tiles, two outputs; and its
static twin examples/activations.pto: six activations of one f32 tile, one output each."""
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
@ptox.jit
def activations_static(x: pl.In[32, 256, pl.f32], exp: pl.Out[32, 256, pl.f32],
                       tanh: pl.Out[32, 256, pl.f32], sigmoid: pl.Out[32, 256, pl.f32],
                       silu: pl.Out[32, 256, pl.f32], gelu: pl.Out[32, 256, pl.f32],
                       relu: pl.Out[32, 256, pl.f32]):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(32, 256))
        pl.store(pl.tile.exp(t), exp, [0, 0])
        pl.store(pl.tile.tanh(t), tanh, [0, 0])
        pl.store(pl.tile.sigmoid(t), sigmoid, [0, 0])
        pl.store(pl.tile.silu(t), silu, [0, 0])
        pl.store(pl.tile.gelu(t), gelu, [0, 0])
        pl.store(pl.tile.relu(t), relu, [0, 0])


x = np.random.default_rng(14).standard_normal((32, 256), dtype=np.float32)
xf = x.astype(np.float64)
sig = 1 / (1 + np.exp(-xf))
g = 0.5 * xf * (1 + np.tanh(math.sqrt(2 / math.pi) * (xf + 0.044715 * xf ** 3)))
for got, ref in zip(activations_static(x, check=True),
                    (np.exp(xf), np.tanh(xf), sig, xf * sig, g, np.maximum(xf, 0))):
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
print("OK")
