"""tensor.qmatmul {format = "w8a8"} (PyPTO-X's W8A8: int8 weights with one f32 scale per output
channel, activations quantized to int8 per row, an exact int32 sum, kernels/quant.h). Every
target gives the interpreter's bits, which are those of the definition written in numpy."""

import numpy as np
import pytest

import ptox

TARGETS = [t for t in ptox.available_targets() if t != "interp"]


def program(n, k, m="{M}"):
    return ptox.parse(f"""func @f(%x: in tensor<{m}x{k}xf32>, %w: in tensor<{n}x{k + 4}xi8>,
                                  %y: out tensor<{m}x{n}xf32>) {{
  %r = tensor.qmatmul %x, %w {{format = "w8a8"}}
  tensor.store %r, %y
}}""")


def rows(q, scale):
    """Weight rows as the op reads them: K int8 values, then the f32 scale's 4 bytes."""
    return np.concatenate([q.astype(np.int8), scale.astype(np.float32)[:, None].view(np.int8)], 1)


def quantize(w):
    """PyPTO-X's per-output-channel weights (numpy): s = absmax / 127, q = rint(w / s)."""
    s = (np.abs(w).max(axis=1) / np.float32(127)).astype(np.float32)
    safe = np.where(s > 0, s, np.float32(1))
    return np.clip(np.rint(w / safe[:, None]), -127, 127).astype(np.int8), s


def definition(x, w):
    """kernels/quant.h in numpy: q_a = rint(x * (127 / amax)) per row, the exact integer sum,
    then f32(sum) * (s_a * s_w) in f32."""
    f32 = np.float32
    k = x.shape[1]
    q_w, s_w = w[:, :k].astype(np.int64), w[:, k:].copy().view(np.float32)[:, 0]
    out = np.zeros((x.shape[0], w.shape[0]), np.float32)
    for r in range(x.shape[0]):
        amax = np.abs(x[r]).max()
        if not np.isfinite(x[r]).all():
            out[r] = np.nan
            continue
        inv = f32(127) / amax if amax > 0 else f32(0)
        q_a = np.clip(np.rint(x[r] * inv), -127, 127).astype(np.int64)
        s_a = f32(amax / f32(127))
        sums = q_w @ q_a
        out[r] = f32(0) + sums.astype(np.float32) * (s_a * s_w)
    return out


@pytest.mark.parametrize("m,n,k", [(1, 7, 32), (1, 64, 576), (5, 33, 96), (16, 100, 1536),
                                   (130, 40, 64), (3, 17, 32 * 17), (2, 9, 3072)])
def test_every_target_gives_the_definitions_bits(m, n, k):
    rng = np.random.default_rng(m * 1000 + n + k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    x[0, :5] = [0.0, -0.0, 1e-30, -3.5, 2.0]
    wf = (rng.standard_normal((n, k)) * 0.05).astype(np.float32)
    w = rows(*quantize(wf))
    w0 = w.copy()
    want = program(n, k)(x, w, target="interp")
    np.testing.assert_array_equal(want.view(np.uint32), definition(x, w).view(np.uint32))
    for target in TARGETS:
        got = program(n, k)(x, w, target=target)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=target)
    np.testing.assert_array_equal(w, w0)
    # Within the two quantizations' error of the float64 product (each value within half a step).
    ref = x.astype(np.float64) @ wf.astype(np.float64).T
    sa = np.abs(x).max(1, keepdims=True) / 127
    sw = np.abs(wf).max(1)[None, :] / 127
    bound = (sa / 2 * np.abs(wf).sum(1)[None, :] + sw / 2 * np.abs(x).sum(1, keepdims=True)
             + k * sa * sw / 4 + 1e-5 * np.abs(ref).max())
    assert (np.abs(want - ref) <= bound).all()


def test_any_weight_byte_and_special_rows():
    """Weight bytes of -128 (which `ptox quantize` never writes, but a file may hold) take the
    exact sum too; a row with a NaN or an infinity is NaN; a zero row is zero; a zero or NaN
    weight scale gives zero or NaN columns."""
    n, k = 12, 160
    rng = np.random.default_rng(3)
    q = rng.integers(-128, 128, size=(n, k)).astype(np.int8)
    q[0] = -128
    s = np.abs(rng.standard_normal(n)).astype(np.float32) * 0.01
    s[1], s[2] = 0.0, np.nan
    w = rows(q, s)
    x = rng.standard_normal((5, k)).astype(np.float32)
    x[0] = -127.0  # every product -128 * -127: the largest sums
    x[1, 3] = np.nan
    x[2, 7] = -np.inf
    x[3] = 0.0
    want = program(n, k)(x, w, target="interp")
    np.testing.assert_array_equal(want.view(np.uint32), definition(x, w).view(np.uint32))
    assert np.isnan(want[1:3]).all() and (want[3][np.arange(n) != 2] == 0).all()
    assert (want[[0, 4], 1] == 0).all() and np.isnan(want[:, 2]).all()
    for target in TARGETS:
        got = program(n, k)(x, w, target=target)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=target)


def test_k_beyond_the_exact_int32_sum_is_an_error():
    program(1, 132096, m=1)  # the largest K: 132096 * 127 * 128 < 2^31
    with pytest.raises(ptox.CompileError, match="int32 sum is exact"):
        program(1, 132128, m=1)
    with pytest.raises(ptox.CompileError, match="4-byte scale|bytes"):
        ptox.parse("""func @f(%x: in tensor<2x64xf32>, %w: in tensor<3x64xi8>, %y: out tensor<2x3xf32>) {
  %r = tensor.qmatmul %x, %w {format = "w8a8"}
  tensor.store %r, %y
}""")
