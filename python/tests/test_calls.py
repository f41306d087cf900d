"""Calling kernels (issue 60): empty tensors (a dim of size 0) give empty results on every target,
@ptox.jit translates on first use, kernel.stats() counts compiles and cache hits, and an argument
that does not fit names its parameter."""
import re

import numpy as np
import pytest

import ptox
import ptox.lang as pl

TARGETS = ["interp", "cpu"]


@ptox.jit
def softmax_rows(x: pl.In["N", 64, pl.f32]) -> pl.Out["N", 64, pl.f32]:
    return pl.softmax(x)


@ptox.jit
def matmul(a: pl.In["M", 32, pl.f32], b: pl.In[32, 16, pl.f32]) -> pl.Out["M", 16, pl.f32]:
    return a @ b


@ptox.jit
def matmul_k(a: pl.In["M", "K", pl.f32], b: pl.In["K", 16, pl.f32]) -> pl.Out["M", 16, pl.f32]:
    return a @ b


@ptox.jit
def gather_rows(table: pl.In["V", 8, pl.f32], ids: pl.In["T", pl.i32]) -> pl.Out["T", 8, pl.f32]:
    return pl.gather(table, ids)


@ptox.jit
def tile_exp_add(a: pl.In["N", 128, pl.f32], b: pl.In["N", 128, pl.f32],
                 c: pl.Out["N", 128, pl.f32], n: pl.index):
    for i in pl.range(0, n, 16, parallel=True):
        with pl.incore():
            ta = pl.load(a, [i, 0], shape=(16, 128))
            tb = pl.load(b, [i, 0], shape=(16, 128))
            pl.store(pl.tile.exp(ta) + tb, c, [i, 0])


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- empty tensors: numpy gives an empty array's dims zero strides; ptox used to refuse such an
# output ("output %out must have positive strides"), even one it allocated itself.

@pytest.mark.parametrize("target", TARGETS)
def test_a_softmax_of_zero_rows_is_empty(target):
    x = np.zeros((0, 64), np.float32)
    y = softmax_rows(x, target=target)
    assert y.shape == (0, 64) and y.dtype == np.float32
    np.testing.assert_array_equal(y, _softmax(x))
    # A caller's empty output, and the run checked against the interpreter.
    out = np.empty((0, 64), np.float32)
    assert softmax_rows(x, out=out, target=target, check=True) is out
    # The same kernel still computes non-empty rows after an empty call.
    x3 = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    np.testing.assert_allclose(softmax_rows(x3, target=target), _softmax(x3), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_matmul_with_m_zero_is_empty(target):
    a, b = np.zeros((0, 32), np.float32), np.ones((32, 16), np.float32)
    c = matmul(a, b, target=target)
    assert c.shape == (0, 16)
    np.testing.assert_array_equal(c, a @ b)
    # K = 0: an empty sum is 0 (docs/ops.md), so the product is zeros of shape M x N.
    for m, k in ((3, 0), (0, 0)):
        a, b = np.ones((m, k), np.float32), np.ones((k, 16), np.float32)
        np.testing.assert_array_equal(matmul_k(a, b, target=target), a @ b)


@pytest.mark.parametrize("target", TARGETS)
def test_a_gather_of_zero_ids_is_empty(target):
    table = np.arange(40, dtype=np.float32).reshape(5, 8)
    ids = np.zeros((0,), np.int32)
    rows = gather_rows(table, ids, target=target)
    assert rows.shape == (0, 8)
    np.testing.assert_array_equal(rows, table[ids])


@pytest.mark.parametrize("target", TARGETS)
def test_a_tile_kernel_at_n_zero_runs_no_task(target):
    a = np.zeros((0, 128), np.float32)
    c = np.empty((0, 128), np.float32)
    assert tile_exp_add(a, a, c, 0, target=target) is c
    assert tile_exp_add(a, a, c, 0, target=target, check=True) is c  # the slower, checked path


def test_an_empty_output_aliases_nothing():
    # An empty view inside another argument's memory shares no byte with it.
    a = np.ones((4, 64), np.float32)
    assert softmax_rows(a[:0], out=a[2:2]).shape == (0, 64)


def test_a_non_empty_output_with_a_zero_stride_is_still_refused():
    x = np.ones((2, 64), np.float32)
    row = np.zeros(64, np.float32)
    out = np.lib.stride_tricks.as_strided(row, shape=(2, 64), strides=(0, 4))  # both rows alias
    with pytest.raises(ptox.ShapeError, match="positive strides"):
        softmax_rows(x, out=out, target="cpu")


# --- @ptox.jit translates on first use, not when decorating.

def test_jit_translates_on_first_use_not_when_decorating(monkeypatch):
    calls = []
    translate = ptox.lang.translate
    monkeypatch.setattr(ptox.lang, "translate",
                        lambda fn, constants=None: calls.append(fn) or translate(fn, constants))

    def double(x: pl.In["N", 8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
        return x * 2.0
    k = ptox.jit(double)
    assert calls == [] and k.__name__ == "double"
    np.testing.assert_array_equal(k(np.ones((3, 8), np.float32)), np.full((3, 8), 2, np.float32))
    assert k.ir().startswith("func @double(")
    assert calls == [double]  # once, whatever asks after


def test_a_language_error_is_raised_at_the_first_call_with_the_python_position():
    def bad(x: pl.In["N", 8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
        return x * not_defined_anywhere  # noqa: F821
    k = ptox.jit(bad)  # decorating a kernel with an error is not an error (as Triton's @jit)
    line = bad.__code__.co_firstlineno + 1
    for _ in range(2):  # not remembered as translated: every use reports it
        with pytest.raises(ptox.CompileError) as e:
            k(np.ones((2, 8), np.float32))
        assert re.search(rf"test_calls\.py:{line}:\d+", str(e.value)), str(e.value)
    with pytest.raises(ptox.CompileError):
        k.ir()


# --- kernel.stats()

def test_stats_count_one_compile_for_every_size_of_a_symbolic_dim(tmp_path, monkeypatch):
    monkeypatch.setenv("PTOX_CACHE_DIR", str(tmp_path))  # a cold compile cache

    def add_one_stats(x: pl.In["N", 16, pl.f32]) -> pl.Out["N", 16, pl.f32]:
        return x + 1.0
    k = ptox.jit(add_one_stats)
    assert k.stats() == {"calls": 0, "compiles": 0, "builds": 0, "cache_hits": 0, "targets": {}}
    for n in (1, 7, 300):
        x = np.zeros((n, 16), np.float32)
        np.testing.assert_array_equal(k(x, target="cpu"), x + 1)
    s = k.stats()
    assert (s["calls"], s["compiles"], s["builds"], s["cache_hits"]) == (3, 1, 1, 0), s
    (name, per), = s["targets"].items()
    assert name.startswith("cpu") and per == {"calls": 3, "compiles": 1, "builds": 1,
                                              "cache_hits": 0}
    # Another kernel of the same function compiles once too, from the cache: no build.
    again = ptox.jit(add_one_stats)
    again(np.zeros((5, 16), np.float32), target="cpu")
    assert {k: again.stats()[k] for k in ("compiles", "builds", "cache_hits")} == {
        "compiles": 1, "builds": 0, "cache_hits": 1}
    # The interpreter is its own entry: it compiles nothing and has no cache.
    k(np.zeros((2, 16), np.float32), target="interp")
    assert k.stats()["targets"]["interp"] == {"calls": 1, "compiles": 1, "builds": 0,
                                              "cache_hits": 0}
    assert k.stats()["calls"] == 4


def test_stats_do_not_count_calls_with_refused_arguments():
    k = ptox.jit(softmax_rows.__wrapped__)
    with pytest.raises(ptox.ShapeError):
        k(np.ones((2, 32), np.float32), target="interp")
    assert k.stats()["calls"] == 0


# --- argument errors name the parameter

def _arg_error(k, *args, **kwargs):
    with pytest.raises(ptox.ShapeError) as e:
        k(*args, **kwargs)
    return str(e.value)


def test_a_wrong_dtype_names_the_parameter_the_expected_and_the_given_dtype():
    table, ids = np.ones((5, 8), np.float32), np.zeros(3, np.int32)
    # float64 has no ptox dtype; int64 does, and the core refuses it (the fast path): both named.
    assert _arg_error(gather_rows, table.astype(np.float64), ids) == (
        "argument 'table' (parameter 1 of kernel gather_rows): expected f32, got float64")
    assert _arg_error(gather_rows, table, ids.astype(np.int64)) == (
        "argument 'ids' (parameter 2 of kernel gather_rows): expected i32, got int64")
    assert _arg_error(gather_rows, table, ids, out=np.zeros((3, 8), np.float16)) == (
        "argument 'out' (parameter 3 of kernel gather_rows): expected f32, got float16")


def test_a_wrong_rank_or_shape_names_the_parameter():
    assert _arg_error(matmul, np.ones(32, np.float32), np.ones((32, 16), np.float32)) == (
        "argument 'a' (parameter 1 of kernel matmul): expected 2 dims (M x 32 f32), got an "
        "array of shape (32,)")
    assert _arg_error(matmul, np.ones((4, 32), np.float32), np.ones((32, 8), np.float32)) == (
        "argument 'b' (parameter 2 of kernel matmul): expected shape (32, 16), got (32, 8)")
    a = np.ones((4, 128), np.float32)
    assert _arg_error(tile_exp_add, a, np.ones((5, 128), np.float32), a, 4) == (
        "argument 'b' (parameter 2 of kernel tile_exp_add): dim 0 is N = 4 from an earlier "
        "argument, got shape (5, 128)")


def test_a_wrong_scalar_or_a_scalar_for_a_tensor_names_the_parameter():
    a = np.ones((4, 128), np.float32)
    assert _arg_error(tile_exp_add, a, a, np.ones_like(a), 1.5) == (
        "argument 'n' (parameter 4 of kernel tile_exp_add): expected an integer scalar "
        "(index), got float")
    assert _arg_error(tile_exp_add, a, a, a, a) == (
        "argument 'n' (parameter 4 of kernel tile_exp_add): expected a scalar (index), got an "
        "array of shape (4, 128)")
    assert _arg_error(matmul, 3, np.ones((32, 16), np.float32)) == (
        "argument 'a' (parameter 1 of kernel matmul): expected a tensor (M x 32 f32), got int")
