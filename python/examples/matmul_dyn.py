"""examples/matmul_dyn.pto in Python: C[M, N] = A[M, K] B[K, N] of bf16 inputs with f32
accumulation and output, 32x64 output tiles over a 2-D parallel grid and a K loop of 32-wide
slices; partial tiles in M, N and K (only the valid K is summed)."""
import ml_dtypes
import numpy as np

import ptox
import ptox.lang as pl


@ptox.jit
def matmul_dyn(a: pl.In["M", "K", pl.bf16], b: pl.In["K", "N", pl.bf16],
               c: pl.Out["M", "N", pl.f32]):
    for i in pl.range(0, a.shape[0], 32, parallel=True):
        for j in pl.range(0, b.shape[1], 64, parallel=True):
            with pl.incore():
                acc = pl.full(0.0, shape=(32, 64))
                for k in pl.range(0, a.shape[1], 32):
                    ta = pl.load(a, [i, k], shape=(32, 32))
                    tb = pl.load(b, [k, j], shape=(32, 64))
                    acc = pl.tile.matmul_acc(acc, ta, tb)
                pl.store(acc, c, [i, j])


rng = np.random.default_rng(16)
a = rng.standard_normal((70, 100)).astype(ml_dtypes.bfloat16)
b = rng.standard_normal((100, 90)).astype(ml_dtypes.bfloat16)
c = matmul_dyn(a, b, check=True)  # within the documented bound of the interpreter's result
ref = a.astype(np.float64) @ b.astype(np.float64)  # the bf16 values are exact in f64
np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)
print("OK")
