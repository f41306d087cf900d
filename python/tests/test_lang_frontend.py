"""The @ptox.jit front end (python/ptox/lang.py): concat along a symbolic axis, module-level
constants as immediates, functions defined where inspect.getsource works (IPython / Jupyter
cells), and compile errors at the Python file:line:col of the offending expression."""

import inspect
import linecache
import math
import types

import numpy as np
import pytest

import ptox
import ptox.lang as pl

# Module-level constants a kernel reads by name (issue 60: as pad= already did).
NEG = -1e30
EPS = 1e-6
D = 8
SCALE = 0.5
USE_BIAS = True
CFG = types.SimpleNamespace(eps=1e-5, width=8)
ROWS = (2, 4)
WEIGHTS = [1.0, 2.0]  # not a constant: a kernel that reads it is refused, by name


def compile_error(fn, *args, **kwargs):
    """The CompileError of jitting `fn` and calling it once (the front end may translate at
    the decorator or at the first call)."""
    with pytest.raises(ptox.CompileError) as e:
        ptox.jit(fn, **kwargs)(*args)
    return str(e.value)


def position(fn, line_offset, text):
    """`file:line:col` of `text` on the line `line_offset` lines below the first line of fn's
    source (the def, or its first decorator)."""
    lines, first = inspect.getsourcelines(fn)
    col = lines[line_offset].index(text) + 1
    return f"{fn.__code__.co_filename}:{first + line_offset}:{col}"


# ---- pl.concat along a symbolic axis (issue 60, item 5) ----------------------------------------

@ptox.jit
def cat_rows(a: pl.In["N", 8, pl.f32], b: pl.In["M", 8, pl.f32], y: pl.Out["S", 8, pl.f32]):
    pl.store(pl.concat(a, b, axis=0, shape=("S", 8)), y)


@ptox.jit
def cat_cols(a: pl.In[3, "N", pl.f32], b: pl.In[3, "M", pl.f32], c: pl.In[3, 2, pl.f32],
             y: pl.Out[3, "S", pl.f32]):
    pl.store(pl.concat([a, b, c], axis=-1, shape=(3, "S")), y)


@ptox.jit
def cat_sums(a: pl.In["N", 8, pl.f32], b: pl.In["M", 8, pl.f32]) -> pl.Out[8, pl.f32]:
    # Without shape= the result's size is the symbol N_plus_M, the same for both concats: their
    # sum type-checks.
    c1 = pl.concat([a, b], axis=0)
    c2 = pl.concat([a * 2.0, b], axis=0)
    return pl.sum(c1 + c2, axis=0)


SIZES = [(1, 1), (3, 5), (16, 1), (17, 33)]


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_concat_along_a_symbolic_axis_matches_numpy(target):
    rng = np.random.default_rng(0)
    for n, m in SIZES:
        a = rng.standard_normal((n, 8)).astype(np.float32)
        b = rng.standard_normal((m, 8)).astype(np.float32)
        y = np.zeros((n + m, 8), np.float32)
        cat_rows(a, b, y, target=target)
        np.testing.assert_array_equal(y, np.concatenate([a, b], axis=0))

        a = rng.standard_normal((3, n)).astype(np.float32)
        b = rng.standard_normal((3, m)).astype(np.float32)
        c = rng.standard_normal((3, 2)).astype(np.float32)
        y = np.zeros((3, n + m + 2), np.float32)
        cat_cols(a, b, c, y, target=target)
        np.testing.assert_array_equal(y, np.concatenate([a, b, c], axis=-1))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_concat_without_shape_names_the_sum(target):
    assert "tensor<{N_plus_M}x8xf32>" in cat_sums.ir()
    rng = np.random.default_rng(1)
    for n, m in SIZES:
        a = rng.standard_normal((n, 8)).astype(np.float32)
        b = rng.standard_normal((m, 8)).astype(np.float32)
        want = (np.concatenate([a, b]) + np.concatenate([a * 2, b])).sum(axis=0)
        np.testing.assert_allclose(cat_sums(a, b, target=target), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_concat_result_of_the_wrong_size_is_an_error(target):
    a, b = np.ones((2, 8), np.float32), np.ones((3, 8), np.float32)
    with pytest.raises(ptox.KernelError, match="concat.*5.*4"):
        cat_rows(a, b, np.zeros((4, 8), np.float32), target=target)


# ---- module-level constants and infinities as immediates (issue 60, first hour) ----------------

@ptox.jit
def scale_shift(x: pl.In["N", D, pl.f32]) -> pl.Out["N", D, pl.f32]:
    y = x * SCALE + EPS
    if USE_BIAS:  # a module-level bool: only this arm is compiled
        y = y + CFG.eps
    return pl.max(y, NEG)


@ptox.jit
def fills(y: pl.Out[4, D, pl.f32], z: pl.Out[4, D, pl.f32], w: pl.Out[4, D, pl.f32],
          v: pl.Out[4, D, pl.f32]):
    with pl.incore():
        pl.store(pl.full(float("-inf"), shape=(ROWS[1], D)), y, [0, 0])
        pl.store(pl.full(-math.inf, shape=(4, CFG.width)), z, [0, 0])
        pl.store(pl.full(NEG, shape=(4, D)), w, [0, 0])
        pl.store(pl.full(1.0 / math.sqrt(D), shape=(4, D)), v, [0, 0])


@ptox.jit
def row_loop(x: pl.In[4, D, pl.f32], y: pl.Out[4, D, pl.f32]):
    for i in pl.range(0, ROWS[1], ROWS[0], parallel=True):
        with pl.incore():
            t = pl.load(x, [i, 0], shape=(2, D), pad=float("inf"))
            pl.store(pl.tile.max(t, pl.full(float("inf"), shape=(2, D))), y, [i, 0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_module_level_constants_are_immediates(target):
    x = np.linspace(-2, 2, 3 * D, dtype=np.float32).reshape(3, D)
    want = np.maximum(x * np.float32(SCALE) + np.float32(EPS) + np.float32(CFG.eps),
                      np.float32(NEG))
    np.testing.assert_allclose(scale_shift(x, target=target), want, rtol=1e-6)
    outs = [np.zeros((4, D), np.float32) for _ in range(4)]
    fills(*outs, target=target)
    for out, value in zip(outs, [-np.inf, -np.inf, NEG, 1 / math.sqrt(D)]):
        np.testing.assert_array_equal(out, np.full((4, D), np.float32(value)))
    y = np.zeros((4, D), np.float32)
    row_loop(x[:1].repeat(4, 0), y, target=target)
    np.testing.assert_array_equal(y, np.full((4, D), np.inf, np.float32))


def test_constants_are_read_when_the_function_compiles():
    ir = scale_shift.ir()
    assert "0.5" in ir and "1e-06" in ir and "1e-05" in ir and "-1e+30" in ir, ir
    assert "-inf" in fills.ir() and "0.35355339" in fills.ir(), fills.ir()


def test_a_global_that_is_no_constant_is_named():
    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        return x * WEIGHTS

    message = compile_error(f, np.ones(4, np.float32))
    assert message.startswith(position(f, 1, "WEIGHTS")), message
    assert "'WEIGHTS' is a global list" in message, message


def test_a_bad_constant_call_is_reported_at_it():
    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        return x + float("lots")

    message = compile_error(f, np.ones(4, np.float32))
    assert message.startswith(position(f, 1, "float")), message
    assert "could not convert" in message, message


# ---- compile-error positions (issue 60, item 6 and first hour) ---------------------------------

def test_a_closure_over_a_list_is_reported_at_its_use():
    sizes = [1, 2]

    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        y = pl.exp(x)
        return y * sizes[0]

    message = compile_error(f, np.ones(4, np.float32))
    assert message.startswith(position(f, 2, "sizes")), message
    assert "'sizes' (a list)" in message and "constants=" in message, message


def test_a_closure_given_by_constants_compiles():
    scale = 3.0

    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        return x * scale

    k = ptox.jit(f, constants={"scale": 3.0})
    np.testing.assert_array_equal(k(np.ones(4, np.float32), target="interp"),
                                  np.full(4, scale, np.float32))


def test_an_error_in_a_whole_dim_slice_is_reported_at_the_slice():
    def f(x: pl.In["N", 64, pl.f32], i: pl.index) -> pl.Out["N", 8, pl.f32]:
        s = pl.slice(x, [i, 0], shape=("N", 8))  # all of dim N from offset i: refused
        t = pl.cast(s, dtype=pl.f16)  # its type probe parses the slice
        return pl.cast(t, dtype=pl.f32)

    message = compile_error(f, np.ones((2, 64), np.float32), 0)
    assert message.startswith(position(f, 1, "pl.slice") + ": error:"), message
    assert "offset must be 0" in message, message
    assert "<ptox.jit text>" not in message, message


def test_an_error_in_a_nested_function_has_its_column():
    def f(x: pl.In["N", 16, pl.f32], w: pl.In[8, pl.f32]) -> pl.Out["N", 16, pl.f32]:
        """A docstring
whose second line is indented less than the body (textwrap.dedent cannot dedent it)."""
        y = pl.exp(x)
        return pl.exp(y) + w  # 16 vs 8: no broadcast

    message = compile_error(f, np.ones((2, 16), np.float32), np.ones(8, np.float32))
    assert message.startswith(position(f, 4, "pl.exp(y)")), message


def test_a_parameter_the_language_has_not_is_named():
    def f(x: pl.In[4, pl.f32], *, s: pl.f32) -> pl.Out[4, pl.f32]:
        return x * s

    message = compile_error(f, np.ones(4, np.float32))
    assert message.startswith(position(f, 0, "s: pl.f32")), message
    assert "parameter 's'" in message, message


def test_a_language_error_names_the_expression():
    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        y = x + 1.0
        return [y][0]

    message = compile_error(f, np.ones(4, np.float32))
    assert message.startswith(position(f, 2, "[y][0]")), message


# ---- functions defined where inspect.getsource works: IPython / Jupyter cells -------------------

CELL = '''\
import math
import ptox
import ptox.lang as pl

LIMIT = 4.0

@ptox.jit
def clipped(x: pl.In["N", 8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
    return pl.min(x * 2.0, LIMIT)

def broken(x: pl.In["N", 8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
    y = pl.exp(x)
    return y + pl.nonexistent(y)
'''


def run_cell(source, filename):
    """What IPython does with a cell: register its source in linecache under the cell's file
    name (a name no file has) and exec the code compiled with that name."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), scope)
    return scope


@pytest.mark.parametrize("filename", ["<ipython-input-3-5f2c1a>",
                                      "/tmp/ipykernel_4242/1234567890.py"])
def test_a_kernel_defined_in_a_notebook_cell(filename):
    try:
        scope = run_cell(CELL, filename)
        x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(3, 8)
        np.testing.assert_array_equal(scope["clipped"](x, target="interp"),
                                      np.minimum(x * 2, 4.0))
        message = compile_error(scope["broken"], x)
        col = CELL.splitlines()[12].index("pl.nonexistent") + 1
        assert message.startswith(f"{filename}:13:{col}: error: pl.nonexistent is no ptox op"), \
            message
    finally:
        linecache.cache.pop(filename, None)


def test_a_function_without_source_is_a_clear_error():
    scope = {}
    exec(compile("import ptox.lang as pl\n"
                 "def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:\n"
                 "    return x\n", "<no-source>", "exec"), scope)
    message = compile_error(scope["f"], np.ones(4, np.float32))
    assert message.startswith("<no-source>:2: error: cannot read the source of f"), message
    assert "linecache" in message, message


@pytest.mark.parametrize("body,line,col,message", [
    # Each was a Python exception, a message without a position, or silently accepted.
    ("with pl.incore():\n        t = pl.load(3.0, [0, 0], shape=(4, 4))", 6, 21,
     "pl.load reads a tensor"),
    ("for i in pl.range(0, 4, parallel=x):\n        pass", 5, 38,
     "parallel= takes a compile-time constant"),
    ("return pl.rmsnorm(x, x, eps='a\"b')", 5, 12, "attribute strings cannot hold quotes"),
    ("return x * math.nope", 5, 16, "'math' has no attribute 'nope'"),
    ("with pl.incore():\n        t = pl.load(x, [0, 0], shape=(4, 4), pad='zero')", 6, 50,
     "pad= takes a number, got 'zero'"),
    ("return pl.concat(axis=0)", 5, 12, "takes the tensors to join"),
    # An arm's value of another type: the if (was the return, naming a line of the IR).
    ("y = x\n    if x.shape[0] > 2:\n        y = pl.cast(x, dtype=pl.f16)\n"
     "    y = pl.exp(pl.cast(y, dtype=pl.f32))", 6, 5, "yield value 0"),
])
def test_language_errors_in_a_cell_name_the_expression(body, line, col, message):
    filename = "<ipython-input-7-0badc0de>"
    source = ("import math\nimport ptox.lang as pl\n\n"
              "def f(x: pl.In['N', 4, pl.f32]) -> pl.Out['N', 4, pl.f32]:\n    " + body +
              "\n    return x\n")
    try:
        scope = run_cell(source, filename)
        error = compile_error(scope["f"], np.ones((4, 4), np.float32))
    finally:
        linecache.cache.pop(filename, None)
    assert error.startswith(f"{filename}:{line}:{col}: error: "), error
    assert message in error, error
