"""Kernels that call functions: @ptox.jit and @ptox.inline helpers, written once per kind of
arguments and inlined by the compiler (the IR keeps `call @f` until inline-calls)."""
import numpy as np
import pytest

import ptox
import ptox.lang as pl

HEAD_DIM = 16


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTOX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PTOX_PCH", "0")  # see test_jit.py


@ptox.inline
def scale_shift(t, s):
    """A tile helper: called inside the caller's incore scope."""
    return t * s + 1.0


@ptox.inline
def row_stats(t):
    """Two results."""
    return pl.tile.row_max(t), pl.tile.row_sum(t)


@ptox.jit
def tiles(x: pl.In["N", 16, pl.f32], y: pl.Out["N", 16, pl.f32], n: pl.index):
    for i in pl.range(0, n, 8):
        with pl.incore():
            t = pl.load(x, [i, 0], shape=(8, 16))
            u = scale_shift(t, 2.0)
            m, s = row_stats(u)
            pl.store(pl.tile.row_expand_sub(scale_shift(u, 0.5), m) + pl.tile.row_expand_div(u, s), y, [i, 0])


@ptox.jit
def gelu_plus(a: pl.In["M", 16, pl.f32], b: pl.In["M", 16, pl.f32]) -> pl.Out["M", 16, pl.f32]:
    return pl.gelu(a) + b


@ptox.inline
def head_scale(x, d):
    """Branches on a compile-time constant: one arm is written."""
    if d == 64:
        return x * 0.125
    return x * 0.25


@ptox.jit
def tensors(x: pl.In["N", 16, pl.f32], y: pl.In["N", 16, pl.f32]) -> pl.Out["N", 16, pl.f32]:
    g = gelu_plus(x, y)  # a @ptox.jit kernel called as a function: its return is a value
    return head_scale(g, HEAD_DIM)


def tiles_ref(x):
    u = x * np.float32(2) + np.float32(1)
    m = u.max(axis=1, keepdims=True)
    s = u.sum(axis=1, keepdims=True)
    return (u * np.float32(0.5) + np.float32(1) - m) + u / s


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_tile_helpers_match_numpy(target):
    x = np.random.default_rng(0).standard_normal((24, 16), dtype=np.float32)
    y = np.zeros_like(x)
    tiles(x, y, 24, target=target)
    np.testing.assert_allclose(y, tiles_ref(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_tensor_helpers_and_constants_match_numpy(target):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 16), dtype=np.float32)
    y = rng.standard_normal((5, 16), dtype=np.float32)
    out = tensors(x, y, target=target)
    ref = gelu_plus(x, y, target="interp") * np.float32(0.25)
    np.testing.assert_array_equal(out, ref)
    wide = ptox.jit(tensors.__wrapped__, constants={"HEAD_DIM": 64})  # the other arm returns
    np.testing.assert_array_equal(wide(x, y, target=target), ref * np.float32(0.5))


def test_the_ir_keeps_calls_and_each_kind_of_arguments_gets_one_function():
    text = tiles.ir()
    assert "call @scale_shift" in text and "call @row_stats" in text
    # scale_shift(t, 2.0) and scale_shift(u, 0.5): one function per constant
    assert text.count("func @scale_shift(") == 1 and text.count("func @scale_shift_1(") == 1
    assert "-> (tile<8x1xf32>, tile<8x1xf32>)" in text
    assert "0.25" in tensors.ir() and "0.125" not in tensors.ir()
    wide = ptox.jit(tensors.__wrapped__, constants={"HEAD_DIM": 64}).ir()
    assert "0.125" in wide and "0.25" not in wide


@ptox.inline
def recurse(t):
    return recurse(t)


@ptox.jit
def recursive(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32]):
    with pl.incore():
        pl.store(recurse(pl.load(x, [0, 0], shape=(8, 16))), y, [0, 0])


def test_recursion_is_an_error():
    with pytest.raises(ptox.CompileError, match=r"recurse calls itself .*cannot recurse"):
        recursive.ir()


@ptox.inline
def bad_helper(t):
    return t @ pl.tile.row_max(t)  # 8x16 @ 8x1: a type error inside the helper


@ptox.jit
def calls_bad(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32]):
    with pl.incore():
        pl.store(bad_helper(pl.load(x, [0, 0], shape=(8, 16))), y, [0, 0])


def test_an_error_in_a_helper_names_its_line_and_the_call():
    with pytest.raises(ptox.CompileError) as e:
        calls_bad.ir()
    message = str(e.value)
    helper_line = bad_helper.__code__.co_firstlineno + 2
    call_line = calls_bad.__wrapped__.__code__.co_firstlineno + 3
    assert f"test_functions.py:{helper_line}:" in message
    assert f"(in @bad_helper, called at " in message and f":{call_line}:" in message


@ptox.inline
def store_into(dst, t):
    pl.store(t, dst, [0, 0])


@ptox.jit
def writes_input(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32]):
    with pl.incore():
        store_into(x, pl.load(x, [0, 0], shape=(8, 16)))


def test_a_helper_writing_an_in_tensor_is_an_error_at_the_helper_and_the_call():
    with pytest.raises(ptox.CompileError, match=r"in @store_into, called at .*an 'in' parameter"):
        writes_input.ir()


@ptox.inline
def returns_in_loop(t, n):
    for i in pl.range(0, n, 1):
        return t


@ptox.jit
def calls_returns_in_loop(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32], n: pl.index):
    with pl.incore():
        pl.store(returns_in_loop(pl.load(x, [0, 0], shape=(8, 16)), n), y, [0, 0])


def test_a_return_inside_a_loop_is_an_error():
    with pytest.raises(ptox.CompileError, match=r"\(in @returns_in_loop, called at .* returns "
                                                r"at the level of its body"):
        calls_returns_in_loop.ir()


def test_wrong_argument_count_is_an_error_at_the_call():
    @ptox.jit
    def wrong(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32]):
        with pl.incore():
            pl.store(scale_shift(pl.load(x, [0, 0], shape=(8, 16))), y, [0, 0])

    with pytest.raises(ptox.CompileError, match=r"scale_shift takes 2 arguments, got 1"):
        wrong.ir()


def test_break_is_a_clear_error():
    @ptox.jit
    def breaks(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32], n: pl.index):
        for i in pl.range(0, n, 1):
            break

    with pytest.raises(ptox.CompileError, match=r":\d+:\d+: error: `break` is not supported"):
        breaks.ir()


@ptox.inline
def online_step(t, m, den):
    """One tile of an online softmax denominator: the running max and sum, rescaled."""
    mn = pl.tile.max(m, pl.tile.row_max(t))
    den = pl.tile.add(pl.tile.mul(den, pl.tile.exp(pl.tile.sub(m, mn))),
                      pl.tile.row_sum(pl.tile.exp(pl.tile.row_expand_sub(t, mn))))
    return mn, den


@ptox.jit
def logsumexp(x: pl.In[8, "N", pl.f32], y: pl.Out[8, 1, pl.f32], n: pl.index):
    with pl.incore():
        m = pl.full(-1e30, shape=(8, 1))
        den = pl.full(0.0, shape=(8, 1))
        for j in pl.range(0, n, 16):
            m, den = online_step(pl.load(x, [0, j], shape=(8, 16), pad=-1e30), m, den)
        pl.store(pl.tile.add(m, pl.tile.log(den)), y, [0, 0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_loop_carries_the_values_a_call_returns(target):
    x = np.random.default_rng(2).standard_normal((8, 40), dtype=np.float32)
    y = np.zeros((8, 1), np.float32)
    logsumexp(x, y, 40, target=target)
    ref = np.log(np.exp(x.astype(np.float64)).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(y, ref, rtol=1e-5)
