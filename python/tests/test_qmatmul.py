"""tensor.qmatmul: GGUF weight blocks (q4_0, q4_1, q8_0) times f32 activations quantized to int8
per block (kernels/quant.h). Every target gives the interpreter's bits; the interpreter is within
the quantization error of a float64 product with the dequantized weights (numpy, independent)."""

import numpy as np
import pytest

import ptox
import ptox.lang as pl

BLOCK_BYTES = {"q4_0": 18, "q4_1": 20, "q8_0": 34}
TARGETS = [t for t in ptox.available_targets() if t != "interp"]


def program(fmt, n, k, m="{M}"):
    return ptox.parse(f"""func @f(%x: in tensor<{m}x{k}xf32>, %w: in tensor<{n}x{k // 32 * BLOCK_BYTES[fmt]}xi8>,
                                  %y: out tensor<{m}x{n}xf32>) {{
  %r = tensor.qmatmul %x, %w {{format = "{fmt}"}}
  tensor.store %r, %y
}}""")


def weights(fmt, n, k, rng, scale=0.02):
    """Random blocks with finite f16 scales (and offsets), as GGUF lays them out."""
    nb = k // 32
    w = rng.integers(0, 256, size=(n, nb, BLOCK_BYTES[fmt]), dtype=np.uint8)
    w[:, :, 0:2] = (rng.standard_normal((n, nb)) * scale).astype(np.float16).view(np.uint8).reshape(n, nb, 2)
    if fmt == "q4_1":
        w[:, :, 2:4] = (rng.standard_normal((n, nb)) * scale).astype(np.float16).view(np.uint8).reshape(n, nb, 2)
    return w.reshape(n, -1).view(np.int8)


def dequantize(fmt, w, k):
    """The values the blocks store, by GGUF's layout (numpy only)."""
    n, nb = w.shape[0], k // 32
    b = w.view(np.uint8).reshape(n, nb, BLOCK_BYTES[fmt])
    d = b[:, :, 0:2].copy().view(np.float16)[..., 0].astype(np.float64)
    if fmt == "q8_0":
        return (d[..., None] * b[:, :, 2:].view(np.int8)).reshape(n, k)
    qs = b[:, :, 2 if fmt == "q4_0" else 4:]
    q = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.float64)
    if fmt == "q4_0":
        return (d[..., None] * (q - 8)).reshape(n, k)
    m = b[:, :, 2:4].copy().view(np.float16)[..., 0].astype(np.float64)
    return (d[..., None] * q + m[..., None]).reshape(n, k)


@pytest.mark.parametrize("fmt", list(BLOCK_BYTES))
@pytest.mark.parametrize("m,n,k", [(1, 7, 32), (1, 64, 576), (5, 33, 96), (16, 100, 1536),
                                   (130, 40, 64), (3, 17, 32 * 17)])
def test_every_target_gives_the_interpreters_bits(fmt, m, n, k):
    rng = np.random.default_rng(m * 1000 + n + k)
    prog = program(fmt, n, k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    x[0, :5] = [0.0, -0.0, 1e-30, -3.5, 2.0]  # zeros, a denormal-scale value, exact halves
    w = weights(fmt, n, k, rng)
    w0 = w.copy()
    want = prog(x, w, target="interp")
    for target in TARGETS:
        got = prog(x, w, target=target)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=target)
    np.testing.assert_array_equal(w, w0)
    # int8 activations: each block's values are within dx / 2 = amax / 254 of x.
    ref = x.astype(np.float64) @ dequantize(fmt, w, k).T
    bound = np.abs(x).max() / 254 * np.abs(dequantize(fmt, w, k)).sum(axis=1) + 1e-5 * np.abs(ref).max()
    assert (np.abs(want - ref) <= bound[None, :]).all()


def test_special_blocks():
    """An all-zero block quantizes to zeros; a NaN or an infinity makes its row NaN everywhere;
    a block so small that 127 / amax overflows quantizes its zeros to 0, the rest to +-127."""
    fmt, n, k = "q8_0", 9, 96
    rng = np.random.default_rng(1)
    prog = program(fmt, n, k)
    w = weights(fmt, n, k, rng)
    x = rng.standard_normal((5, k)).astype(np.float32)
    x[0, :32] = 0.0
    x[1, 40] = np.nan
    x[2, 70] = np.inf
    x[3, 0] = -np.inf
    x[4, 32:64] = np.tile(np.float32([0.0, 1e-38, -3e-39, -0.0]), 8)
    want = prog(x, w, target="interp")
    assert np.isfinite(want[[0, 4]]).all()
    assert np.isnan(want[1:4]).all()
    for target in TARGETS:
        got = prog(x, w, target=target)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=target)
    x0 = x[0:1].copy()
    x0[0, 32:] = 0
    np.testing.assert_array_equal(prog(x0, w, target="interp"), np.zeros((1, n), np.float32))


def test_matches_the_definition_written_in_numpy():
    """kernels/quant.h's steps, in numpy (fma as one rounding of the exact float64 value: exact
    here, since every product of two f32 and the f32 sum fit a double's 53 bits)."""
    fmt, n, k = "q4_1", 5, 128
    rng = np.random.default_rng(2)
    w = weights(fmt, n, k, rng)
    x = rng.standard_normal((2, k)).astype(np.float32)
    got = program(fmt, n, k)(x, w, target="interp")
    b = w.view(np.uint8).reshape(n, k // 32, 20)
    f32 = np.float32
    for r in range(2):
        for j in range(n):
            lanes = np.zeros(16, np.float32)
            mm = f32(0)
            for blk in range(k // 32):
                xs = x[r, 32 * blk:32 * blk + 32]
                amax = np.abs(xs).max()
                q = np.clip(np.rint(xs * (f32(127) / amax)), -127, 127).astype(np.int64)
                dx = f32(amax / f32(127))
                qs = b[j, blk, 4:]
                qw = np.concatenate([qs & 15, qs >> 4]).astype(np.int64)
                d = b[j, blk, 0:2].copy().view(np.float16)[0].astype(np.float32)
                m = b[j, blk, 2:4].copy().view(np.float16)[0].astype(np.float32)
                s = f32(d * dx)
                h = 8 * (blk % 2)
                for lane in range(8):
                    p = int((qw[4 * lane:4 * lane + 4] * q[4 * lane:4 * lane + 4]).sum())
                    lanes[h + lane] = f32(float(s) * p + float(lanes[h + lane]))
                mm = f32(float(m) * float(f32(dx * f32(q.sum()))) + float(mm))
            v = lanes[:8] + lanes[8:]
            v = v[:4] + v[4:]
            v = v[:2] + v[2:]
            want = f32(0) + f32(f32(v[0] + v[1]) + mm)
            assert got[r, j] == want, (r, j, got[r, j], want)


@pytest.mark.parametrize("text,message", [
    ('%r = tensor.qmatmul %x, %w {format = "q5_0"}', "attribute 'format' must be one of"),
    ("%r = tensor.qmatmul %x, %w", "needs {format"),
    ('%r = tensor.qmatmul %x, %w {format = "q4_0", transpose_b = true}', "transpose_b"),
])
def test_bad_attributes_are_clear_errors(text, message):
    src = f"""func @f(%x: in tensor<2x64xf32>, %w: in tensor<3x36xi8>, %y: out tensor<2x3xf32>) {{
  {text}
  tensor.store %r, %y
}}"""
    with pytest.raises(ptox.CompileError, match=message):
        ptox.parse(src)


@pytest.mark.parametrize("x,w,message", [
    ("2x64xf32", "3x40xi8", "is 36 bytes per weight row"),
    ("2x48xf32", "3x27xi8", "multiple of 32"),
    ("2x64xbf16", "3x36xi8", "f32 activations"),
    ("2x64xf32", "3x36xf32", "2-D i8 tensor"),
])
def test_mismatched_shapes_are_clear_errors(x, w, message):
    y = f"2x3xf32"
    src = f"""func @f(%x: in tensor<{x}>, %w: in tensor<{w}>, %y: out tensor<{y}>) {{
  %r = tensor.qmatmul %x, %w {{format = "q4_0"}}
  tensor.store %r, %y
}}"""
    with pytest.raises(ptox.CompileError, match=message):
        ptox.parse(src)


def test_from_the_python_language():
    @ptox.jit
    def proj(x: pl.In["M", 64, pl.f32], w: pl.In[5, 40, pl.i8]) -> pl.Out["M", 5, pl.f32]:
        return pl.silu(pl.qmatmul(x, w, format="q4_1"))

    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    w = weights("q4_1", 5, 64, rng)
    y = program("q4_1", 5, 64)(x, w, target="interp")
    np.testing.assert_allclose(proj(x, w, target="interp"), y / (1 + np.exp(-y)), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(proj(x, w).view(np.uint32), proj(x, w, target="interp").view(np.uint32))


@pytest.mark.parametrize("fmt", list(BLOCK_BYTES))
def test_gather_dequantizes_rows_of_blocks(fmt):
    """tensor.gather {format}: an embedding table of GGUF blocks, rows dequantized as gathered."""
    rng = np.random.default_rng(4)
    v, k = 50, 96
    table = weights(fmt, v, k, rng)
    prog = ptox.parse(f"""func @f(%t: in tensor<{v}x{k // 32 * BLOCK_BYTES[fmt]}xi8>, %ids: in tensor<{{T}}xi32>,
                                  %y: out tensor<{{T}}x{k}xf32>) {{
  %r = tensor.gather %t, %ids {{format = "{fmt}"}}
  tensor.store %r, %y
}}""")
    ids = np.array([3, 0, 49, 3, 17], np.int32)
    want = prog(table, ids, target="interp")
    # d * q (+ m) each rounded to f32 once: the float64 values, rounded, are the same numbers.
    np.testing.assert_array_equal(want, dequantize(fmt, table, k)[ids].astype(np.float32))
    for target in TARGETS:
        np.testing.assert_array_equal(prog(table, ids, target=target).view(np.uint32),
                                      want.view(np.uint32), err_msg=target)
        with pytest.raises(ptox.KernelError, match="id 50 at ids\\[0\\] is out of range"):
            prog(table, np.array([50], np.int32), target=target)
