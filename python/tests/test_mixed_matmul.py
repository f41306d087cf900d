"""tile.matmul / tile.matmul_acc with operands of different float dtypes (f32 queries times an
f16 or bf16 cache): both widen exactly to f32, so every target stays within the matmul bound of
the interpreter and of numpy on the widened values."""
import ml_dtypes
import numpy as np
import pytest

import ptox
import ptox.lang as pl

TARGETS = [t for t in ptox.available_targets() if t != "interp"]
DTYPES = {"f16": (pl.f16, np.float16), "bf16": (pl.bf16, ml_dtypes.bfloat16)}


def program(name, m, n, k, transpose_b):
    dt, _ = DTYPES[name]
    b_shape = (n, k) if transpose_b else (k, n)

    # Two K tiles: the first product starts the accumulator, matmul_acc adds the second.
    def mixed(a: pl.In[m, k, pl.f32], b: pl.In[b_shape[0], b_shape[1], dt],
              c: pl.Out[m, n, pl.f32]):
        with pl.incore():
            x0 = pl.load(a, [0, 0], shape=(16, 32))
            x1 = pl.load(a, [0, 32], shape=(16, 32))
            if TB:
                y0 = pl.load(b, [0, 0], shape=(64, 32))
                y1 = pl.load(b, [0, 32], shape=(64, 32))
            else:
                y0 = pl.load(b, [0, 0], shape=(32, 64))
                y1 = pl.load(b, [32, 0], shape=(32, 64))
            acc = pl.tile.matmul(x0, y0, transpose_b=TB)
            acc = pl.tile.matmul_acc(acc, x1, y1, transpose_b=TB)
            pl.store(acc, c, [0, 0])
    return ptox.jit(mixed, constants={"TB": transpose_b, "dt": dt, "m": m, "n": n, "k": k,
                                      "b_shape": b_shape})


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("m,n,k", [(3, 64, 64), (16, 50, 61), (1, 7, 33)])
def test_mixed_operands_match_the_interpreter_and_numpy(name, transpose_b, m, n, k):
    rng = np.random.default_rng(m * 100 + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(DTYPES[name][1])
    prog = program(name, m, n, k, transpose_b)
    want = prog(a, b, target="interp")
    b64 = b.astype(np.float64)
    ref = a.astype(np.float64) @ (b64.T if transpose_b else b64)
    bound = k * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b64.T if transpose_b else b64))
    assert (np.abs(want - ref) <= bound + 1e-30).all()
    for target in TARGETS:
        got = prog(a, b, target=target)
        assert (np.abs(got - ref) <= bound + 1e-30).all(), target


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("m", [1, 5, 70])
def test_tensor_matmul_of_f32_activations_and_16_bit_weights(name, m):
    """tensor.matmul takes mixed float operands too (a model's bf16 weights read in place):
    GEMV rows, the in-place few-row kernel and the packed one (a constant weight), each within
    the matmul bound of numpy on the widened values."""
    dt, np_dt = DTYPES[name]

    def linear(a: pl.In["M", 96, pl.f32], w: pl.In[200, 96, dt], c: pl.Out["M", 200, pl.f32]):
        pl.store(pl.matmul(a, w, transpose_b=True), c)
    prog = ptox.jit(linear, constants={"dt": dt})
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, 96)).astype(np.float32)
    w = rng.standard_normal((200, 96)).astype(np_dt)
    w64 = w.astype(np.float64)
    ref = a.astype(np.float64) @ w64.T
    bound = 96 * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(w64.T))
    for target in ["interp"] + TARGETS:
        got = prog(a, w, target=target)
        assert (np.abs(got - ref) <= bound + 1e-30).all(), target
    prog.constant_inputs = ("w",)
    for target in TARGETS:
        assert (np.abs(prog(a, w, target=target) - ref) <= bound + 1e-30).all(), target


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("m,n", [(1, 64), (2, 64), (3, 64), (1, 128), (2, 128), (3, 128)])
def test_few_rows_times_a_tile_of_value_rows(name, m, n):
    # Decode attention's probabilities times a tile of 128 cached value rows, accumulated onto a
    # running output: C stays in registers over the whole k where it fits (kernels/cpu/matmul.h
    # StreamRegs), else it goes through memory every 4 rows.
    dt, np_dt = DTYPES[name]

    def pv(c0: pl.In[m, n, pl.f32], e: pl.In[m, 128, pl.f32], v: pl.In[128, n, dt],
           c: pl.Out[m, n, pl.f32]):
        with pl.incore():
            acc = pl.tile.matmul_acc(pl.load(c0, [0, 0], shape=(M, N)),  # noqa: F821
                                     pl.load(e, [0, 0], shape=(M, 128)),  # noqa: F821
                                     pl.load(v, [0, 0], shape=(128, N)))  # noqa: F821
            pl.store(acc, c, [0, 0])

    # The annotations read m, n, dt (evaluated where pv is defined, then by ptox.jit from the
    # constants); the body reads M and N: a body that read m would close over it.
    prog = ptox.jit(pv, constants={"m": m, "n": n, "dt": dt, "M": m, "N": n})
    rng = np.random.default_rng(m * 1000 + n)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    e = rng.random((m, 128)).astype(np.float32)
    v = rng.standard_normal((128, n)).astype(np_dt)
    v64 = v.astype(np.float64)
    ref = c0.astype(np.float64) + e.astype(np.float64) @ v64
    bound = 129 * 2.0 ** -24 * (np.abs(c0) + e.astype(np.float64) @ np.abs(v64))
    for target in ["interp"] + TARGETS:
        got = prog(c0, e, v, target=target)
        assert (np.abs(got - ref) <= bound + 1e-30).all(), target
