"""`while` over a scalar condition in the @ptox.jit front end: carried scalars, tiles and tensors
(a name defined before the loop and assigned in its body, as for pl.range loops), zero trips,
on the interpreter and the CPU target against numpy; and the errors around it."""

import inspect

import numpy as np
import pytest

import ptox
import ptox.lang as pl


@ptox.jit
def halve_tiles(x: pl.In["N", 16, pl.f32], y: pl.Out["N", 16, pl.f32], n: pl.index):
    """Each 8-row tile is halved and shifted until its counter reaches n or its first row's
    maximum drops to 1 (a condition that reads the data): carries a tile, an index and a bool."""
    for i in pl.range(0, x.shape[0], 8, parallel=True):
        with pl.incore():
            t = pl.load(x, [i, 0], shape=(8, 16))
            k = n * 0  # an index value (a bare constant is an operand, not a value)
            go = k < n
            if go:
                go = pl.tile.extract(pl.tile.row_max(t), [0, 0]) > 1.0
            while go:
                t = t * 0.5 - 0.375
                k = k + 1
                go = k < n
                if go:
                    go = pl.tile.extract(pl.tile.row_max(t), [0, 0]) > 1.0
            pl.store(t, y, [i, 0])


def halve_tiles_ref(x, n):
    y = x.copy()
    for r0 in range(0, x.shape[0], 8):
        t = y[r0:r0 + 8]
        k = 0
        while k < n and t[0].max() > 1.0:
            t[...] = t * np.float32(0.5) - np.float32(0.375)
            k += 1
    return y


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("n", [0, 1, 3, 50])
def test_tile_while_matches_numpy(target, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((19, 16)) * 40).astype(np.float32)
    y = np.zeros_like(x)
    halve_tiles(x, y, n, target=target)
    np.testing.assert_array_equal(y, halve_tiles_ref(x, n))
    ir = halve_tiles.ir()
    assert " = while iter(" in ir and "condition %" in ir and "} do {" in ir, ir


@ptox.jit
def repeat_scale(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
    """A tensor-level while carrying a tensor, an index and an f32 scalar: y = y * 0.5 + x and
    s = s * 0.5, n times, from s = n."""
    y = x
    i = n * 0
    s = pl.cast(n, dtype=pl.f32)
    while i < n:
        y = y * 0.5 + x
        s = s * 0.5
        i = i + 1
    return y * s


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_tensor_while_matches_numpy(target, n):
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(3, 8)
    want, s = x.copy(), np.float32(n)
    for _ in range(n):
        want = want * np.float32(0.5) + x
        s = s * np.float32(0.5)
    np.testing.assert_array_equal(repeat_scale(x, n, target=target), want * s)


def test_zero_trips_give_the_inits_and_check_passes():
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    np.testing.assert_array_equal(repeat_scale(x, 0, target="cpu", check=True), x * 0)
    y = np.zeros((8, 16), np.float32)
    halve_tiles(np.full((8, 16), 5.0, np.float32), y, 0, target="cpu", check=True)
    np.testing.assert_array_equal(y, np.full((8, 16), 5.0, np.float32))


def test_a_false_constant_condition_compiles_nothing():
    @ptox.jit
    def f(x: pl.In["N", 8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
        y = x
        while False:
            y = y * 2.0
        return y

    assert "while" not in f.ir()
    x = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(f(x, target="interp"), x)


DEBUG = False


def test_a_constant_term_that_decides_the_condition_decides_the_loop():
    @ptox.jit
    def never(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
        y = x
        i = n * 0
        while DEBUG and i < n:  # `False and ...` fails: no loop
            y = y * 2.0
            i = i + 1
        return y

    assert "while" not in never.ir()
    x = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(never(x, 3, target="interp"), x)

    def forever(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
        i = n * 0
        while not DEBUG or i < n:  # `True or ...` holds: the loop would never end
            i = i + 1
        return x

    with pytest.raises(ptox.CompileError, match="ptox has no break"):
        ptox.jit(forever).ir()


def position(fn, line_offset, text):
    lines, first = inspect.getsourcelines(fn)
    return f"{fn.__code__.co_filename}:{first + line_offset}:{lines[line_offset].index(text) + 1}"


def test_while_errors_are_compile_errors_at_their_line():
    def forever(x: pl.In["N", 8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
        while True:
            x = x * 2.0
        return x

    with pytest.raises(ptox.CompileError, match="ptox has no break") as e:
        ptox.jit(forever).ir()
    assert position(forever, 1, "True") in str(e.value), str(e.value)

    def with_else(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
        i = n * 0
        while i < n:
            i = i + 1
        else:
            i = 0
        return x

    with pytest.raises(ptox.CompileError, match="a while loop has no else") as e:
        ptox.jit(with_else).ir()
    assert position(with_else, 2, "while") in str(e.value), str(e.value)

    def not_bool(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
        i = n + 1
        while i:
            i = i - 1
        return x

    with pytest.raises(ptox.CompileError, match="bool scalar") as e:
        ptox.jit(not_bool).ir()
    assert position(not_bool, 2, "i:") in str(e.value), str(e.value)

    def breaks(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
        i = n * 0
        while i < n:
            break
        return x

    with pytest.raises(ptox.CompileError, match="`break` is not supported") as e:
        ptox.jit(breaks).ir()
    assert position(breaks, 3, "break") in str(e.value), str(e.value)
