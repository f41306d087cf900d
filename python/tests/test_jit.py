"""@ptox.jit: Python functions compiled from their AST into the IR the text form makes."""
from __future__ import annotations  # scaled_rows names compile-time constants

import inspect

import numpy as np
import pytest

import ptox
import ptox.lang as pl


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTOX_CACHE_DIR", str(tmp_path / "cache"))
    # No precompiled tile library (the binaries are the same): a fresh cache per test would build
    # it again in every test, more compiler time than the tests' own kernels take.
    monkeypatch.setenv("PTOX_PCH", "0")


@ptox.jit
def scale_add(x: pl.In["N", 16, pl.f32], y: pl.In["N", 16, pl.f32]) -> pl.Out["N", 16, pl.f32]:
    return x * 2.0 + y


@ptox.jit
def rmsnorm(x: pl.In["N", 64, pl.f32], w: pl.In[64, pl.f32]) -> pl.Out["N", 64, pl.f32]:
    return pl.rmsnorm(x, w, eps=1e-6)


@ptox.jit
def attention(q: pl.In["S", 32, pl.f32], k: pl.In["S", 32, pl.f32],
              v: pl.In["S", 32, pl.f32]) -> pl.Out["S", 32, pl.f32]:
    s = pl.matmul(q, k, transpose_b=True)
    p = pl.softmax(s * 0.125)
    return p @ v


@ptox.jit
def tile_add(a: pl.In["N", 128, pl.f32], b: pl.In["N", 128, pl.f32], c: pl.Out["N", 128, pl.f32],
             n: pl.index):
    for i in pl.range(0, n, 16, parallel=True):
        with pl.incore():
            ta = pl.load(a, [i, 0], shape=(16, 128))
            tb = pl.load(b, [i, 0], shape=(16, 128))
            pl.store(pl.tile.exp(ta) + tb, c, [i, 0])


def softmax_ref(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("rows", [1, 7, 513])
def test_operators_match_numpy(target, rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 16), dtype=np.float32)
    y = rng.standard_normal((rows, 16), dtype=np.float32)
    np.testing.assert_array_equal(scale_add(x, y, target=target), x * np.float32(2) + y)


@pytest.mark.parametrize("rows", [1, 7, 513])
def test_composites_and_matmul_match_numpy(rows):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 64), dtype=np.float32)
    w = rng.standard_normal(64, dtype=np.float32)
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(rmsnorm(x, w, check=True), ref, rtol=2e-5, atol=2e-6)
    q, k, v = (rng.standard_normal((rows, 32), dtype=np.float32) for _ in range(3))
    ref = softmax_ref((q @ k.T) * 0.125) @ v
    np.testing.assert_allclose(attention(q, k, v, check=True), ref, rtol=1e-4, atol=1e-5)


def test_tile_level_loops_loads_and_stores():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 128), dtype=np.float32)
    b = rng.standard_normal((40, 128), dtype=np.float32)
    c = np.zeros_like(a)
    tile_add(a, b, c, 40, check=True)  # 40 rows: the last tile is partial
    np.testing.assert_allclose(c, np.exp(a) + b, rtol=1e-6, atol=1e-6)  # exp: <= 2 ulp


def test_ir_parses_back_to_the_same_program():
    for f in (scale_add, rmsnorm, attention, tile_add):
        text = f.ir()
        assert ptox.parse(text).ir() == ptox.parse(ptox.parse(text).ir()).ir()
        assert "for %i = 0 to %n step 16 parallel" in tile_add.ir()


def test_an_ill_typed_expression_is_reported_at_its_python_line():
    def bad(x: pl.In["N", 16, pl.f32], w: pl.In[8, pl.f32]) -> pl.Out["N", 16, pl.f32]:
        y = pl.exp(x)
        return y + w  # 16 vs 8: no broadcast

    line = inspect.getsourcelines(bad)[1] + 2
    with pytest.raises(ptox.CompileError) as e:
        ptox.jit(bad).ir()  # translated on first use
    assert f"test_jit.py:{line}:" in str(e.value), str(e.value)


@pytest.mark.parametrize("body,message", [
    ("    while True:\n        pass\n", "ptox has no break, so the loop would never end"),
    ("    return zz\n", "'zz' is not defined"),
    ("    return print(x)\n", "only pl.* ops"),
    ("    return pl.nonexistent(x)\n", "pl.nonexistent is no ptox op"),
])
def test_unsupported_python_is_a_clear_compile_error(body, message, tmp_path):
    src = ("import ptox.lang as pl\n\n"
           "def f(x: pl.In[\"N\", 4, pl.f32]) -> pl.Out[\"N\", 4, pl.f32]:\n" + body)
    path = tmp_path / "user_kernel.py"
    path.write_text(src)
    scope = {}
    exec(compile(src, str(path), "exec"), scope)
    with pytest.raises(ptox.CompileError, match=message) as e:
        ptox.jit(scope["f"]).ir()
    assert "user_kernel.py:4:" in str(e.value), str(e.value)


def test_closures_are_refused():
    scale = 2.0

    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        return x * scale

    with pytest.raises(ptox.CompileError, match="close over"):
        ptox.jit(f).ir()


def test_a_run_time_error_points_at_the_python_line():
    @ptox.jit
    def window(x: pl.In[8, pl.f32], o: pl.index, y: pl.Out[4, pl.f32]):
        pl.store(pl.slice(x, [o], shape=(4,)), y)

    code = window.__wrapped__.__code__
    where = f"{code.co_filename}:{code.co_firstlineno + 2}:"  # the pl.store line
    for target in ("interp", "cpu"):  # the compiled code named its own text's line:col
        with pytest.raises(ptox.KernelError, match="tensor.slice") as e:
            window(np.ones(8, np.float32), 6, np.zeros(4, np.float32), target=target)
        assert where in str(e.value), (target, str(e.value))
        assert "<jit window>" not in str(e.value), (target, str(e.value))


def test_profile_names_a_jit_kernel_by_its_python_line():
    a = np.ones((32, 128), np.float32)
    tile_add(a, a, np.empty_like(a), 32)  # compiled before the profile
    with ptox.profile() as p:
        tile_add(a, a, np.empty_like(a), 32)
    code = tile_add.__wrapped__.__code__
    # The `for` line, column 5: coarsen-tasks runs the parallel loop's tiny trips in chunks, one
    # task each, and a chunk's scope takes the loop's position.
    loop = code.co_firstlineno + 3
    rows = [line for line in p.table.splitlines()[1:] if line.strip()]
    name = f"tile_add.incore0 ({code.co_filename}:{loop}:5)"
    assert len(rows) == 1 and rows[0].startswith(name), p.table


def test_the_op_surface_is_generated_from_the_cpp_op_list():
    assert "softmax" in pl.TENSOR_OPS and "row_expand_mul" in pl.TILE_OPS
    assert callable(pl.softmax) and callable(pl.tile.row_expand_mul)
    with pytest.raises(ptox.CompileError, match="inside an @ptox.jit function"):
        pl.softmax(1)


@ptox.jit
def matmul_k_loop(a: pl.In[32, 256, pl.f32], b: pl.In[256, 64, pl.f32], c: pl.Out[32, 64, pl.f32]):
    with pl.incore():
        acc = pl.full(0.0, shape=(32, 64))
        for k in pl.range(0, 256, 64):
            ta = pl.load(a, [0, k], shape=(32, 64))
            tb = pl.load(b, [k, 0], shape=(64, 64))
            acc = pl.tile.matmul_acc(acc, ta, tb)
        pl.store(acc, c, [0, 0])


def test_loops_carry_values_assigned_in_their_body():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 256), dtype=np.float32)
    b = rng.standard_normal((256, 64), dtype=np.float32)
    c = np.zeros((32, 64), np.float32)
    matmul_k_loop(a, b, c, check=True)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "iter(%acc_1 = %acc)" in matmul_k_loop.ir() and "yield %acc_3" in matmul_k_loop.ir()


@ptox.jit
def if_scalar(x: pl.In["N", 16, pl.f32], n: pl.index) -> pl.Out["N", 16, pl.f32]:
    s = pl.cast(n, dtype=pl.f32)
    if n > 3:
        s = s * 2.0
    else:
        s = s + 0.5
    return x * s


@ptox.jit
def if_tile(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32], n: pl.index):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(8, 16))
        if n > 0:
            t = pl.tile.neg(t)  # no else: the other arm yields t as it was
            u = t * 2.0
        else:
            u = t
        pl.store(t + u, y, [0, 0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_an_if_yields_the_names_its_arms_assign(target):
    x = np.random.default_rng(5).standard_normal((7, 16), dtype=np.float32)
    for n, scale in ((5, 10.0), (2, 2.5)):
        np.testing.assert_array_equal(if_scalar(x, n, target=target), x * np.float32(scale))
    assert "-> f32 {" in if_scalar.ir()
    x8 = x[:1].repeat(8, 0)
    y = np.empty_like(x8)
    if_tile(x8, y, 1, target=target)
    np.testing.assert_array_equal(y, -x8 + -x8 * np.float32(2))
    if_tile(x8, y, 0, target=target)
    np.testing.assert_array_equal(y, x8 + x8)


def test_a_name_assigned_in_one_arm_only_is_not_a_result():
    def f(x: pl.In[4, pl.f32], n: pl.index) -> pl.Out[4, pl.f32]:
        if n > 0:
            y = pl.neg(x)
        return y

    line = inspect.getsourcelines(f)[1] + 3  # return y
    with pytest.raises(ptox.CompileError, match="'y' is not defined here") as e:
        ptox.jit(f).ir()
    assert f"test_jit.py:{line}:" in str(e.value), str(e.value)


def test_a_tensor_valued_if_runs_on_every_target():
    @ptox.jit
    def f(x: pl.In[4, pl.f32], n: pl.index) -> pl.Out[4, pl.f32]:
        y = pl.exp(x)
        if n > 0:
            y = pl.neg(x)
        return y

    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(f(x, 0, target="interp"), np.exp(x), rtol=1e-6)
    for target in ("interp", "cpu"):
        np.testing.assert_array_equal(f(x, 1, target=target), -x)
        np.testing.assert_array_equal(f(x, 0, target=target), f(x, 0, target="interp"))


def test_a_loop_carrying_a_tensor_runs_on_cpu():
    @ptox.jit
    def f(x: pl.In["N", 8, pl.f32], n: pl.index) -> pl.Out["N", 8, pl.f32]:
        y = x
        for _ in pl.range(n):
            y = y * 0.5 + x
        return y

    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(3, 8)
    for n in (0, 1, 2, 7):
        want = x.copy()
        for _ in range(n):
            want = want * np.float32(0.5) + x
        np.testing.assert_array_equal(f(x, n, target="cpu"), want)


def scaled_rows(x: pl.In["N", W, pl.f32]) -> pl.Out["N", W, pl.f32]:  # noqa: F821 - constants
    y = x
    for _ in pl.range(0, REPS, unroll=True):  # noqa: F821
        y = y * SCALE  # noqa: F821
    if NEGATE:  # noqa: F821 - compile time: only the arm taken is in the program
        y = -y
    return pl.reshape(pl.reshape(y, shape=("N", 2, W // 2)), shape=("N", W))  # noqa: F821


@pytest.mark.parametrize("negate", [False, True])
def test_constants_specialize_shapes_loops_and_ifs(negate):
    f = ptox.jit(scaled_rows, constants={"W": 8, "REPS": 3, "SCALE": 2.0, "NEGATE": negate})
    text = f.ir()
    assert "tensor<{N}x8xf32>" in text and "tensor<{N}x2x4xf32>" in text
    assert ("tensor.neg" in text) == negate and "if " not in text
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    np.testing.assert_array_equal(f(x, check=True), x * 8 * (-1 if negate else 1))


def test_a_missing_constant_names_the_annotation():
    with pytest.raises(ptox.CompileError, match="cannot evaluate the annotation"):
        ptox.jit(scaled_rows, constants={"REPS": 1}).ir()


@ptox.jit
def first_of_row_broadcast(x: pl.In[4, 8, pl.f32], y: pl.Out[4, 8, pl.f32]):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(4, 8))
        col = pl.tile.slice(t, [0, 0], shape=(4, 1))
        e = pl.tile.extract(t, [1, 2])
        pl.store(pl.tile.broadcast(col, shape=(4, 8)) + e, y, [0, 0])


def test_tile_extract_and_broadcast_have_their_forms():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert "tile.extract %t[1, 2]" in first_of_row_broadcast.ir()
    np.testing.assert_array_equal(first_of_row_broadcast(x, check=True),
                                  np.repeat(x[:, :1], 8, 1) + x[1, 2])


@ptox.jit
def rotate_half(x: pl.In[4, 8, pl.f32], y: pl.Out[4, 8, pl.f32]):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(4, 8))
        lo = pl.load(x, [0, 0], shape=(4, 4))
        hi = pl.tile.neg(pl.load(x, [0, 4], shape=(4, 4)))
        pl.store(pl.tile.assemble(pl.tile.assemble(t, hi, [0, 0]), lo, [0, 4]), y, [0, 0])


def test_tile_assemble_writes_a_tile_into_a_copy_of_another():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert "tile.assemble %t, %hi[0, 0]" in rotate_half.ir()
    np.testing.assert_array_equal(rotate_half(x, check=True),
                                  np.concatenate([-x[:, 4:], x[:, :4]], axis=1))
    with pytest.raises(ptox.CompileError, match=r"pl.tile.assemble\(dst, src, \[row, col\]\)"):
        ptox.jit(assemble_without_offsets).ir()


def assemble_without_offsets(x: pl.In[4, 8, pl.f32], y: pl.Out[4, 8, pl.f32]):
    with pl.incore():
        t = pl.load(x, [0, 0], shape=(4, 8))
        pl.store(pl.tile.assemble(t, t), y, [0, 0])


@ptox.jit
def masked(x: pl.In["N", 8, pl.f32], w: pl.In[8, pl.f32]) -> pl.Out["N", 8, pl.f32]:
    return pl.select(x > w, x, 0.0)


def test_tensor_comparisons_feed_select():
    x = np.random.default_rng(2).standard_normal((5, 8), dtype=np.float32)
    w = np.linspace(-1, 1, 8, dtype=np.float32)
    assert "tensor.gt %x, %w" in masked.ir()
    np.testing.assert_array_equal(masked(x, w, check=True), np.where(x > w, x, np.float32(0)))


def clipped_sums(x: pl.In["N", 4, pl.f32], y: pl.Out[1, 4, pl.f32]):
    head = pl.min(x.shape[0], 3)  # scalars: arith.min / arith.max
    tail = pl.max(x.shape[0] - 5, 1)
    with pl.incore():
        acc = pl.full(0.0, shape=(1, 4))
        for i in pl.range(0, head):
            acc = pl.tile.add(acc, pl.load(x, [i, 0], shape=(1, 4)))
        for i in pl.range(0, tail):
            acc = pl.tile.add(acc, pl.load(x, [i, 0], shape=(1, 4)))
        pl.store(acc, y, [0, 0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_min_and_max_of_scalars_are_scalar_ops(target):
    k = ptox.jit(clipped_sums, target=target)
    assert "arith.min" in k.ir() and "arith.max" in k.ir()
    for n in (1, 2, 7):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        want = x[:min(n, 3)].sum(0) + x[:max(n - 5, 1)].sum(0)
        np.testing.assert_array_equal(k(x)[0], want)


def halves(x: pl.In["N", 4, pl.f32], y: pl.Out["N", 4, pl.f32]):
    for i in pl.range(0, x.shape[0]):  # row i gets row i // 2 (integer scalars: floor division)
        with pl.incore():
            pl.store(pl.load(x, [i // 2, 0], shape=(1, 4)), y, [i, 0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_floor_division_of_integer_scalars(target):
    k = ptox.jit(halves, target=target)
    assert "arith.div" in k.ir()
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    np.testing.assert_array_equal(k(x), x[np.arange(5) // 2])


@ptox.jit
def nested(a: pl.In["M", 8, pl.f32], b: pl.In[8, 8, pl.f32]) -> pl.Out["M", 8, pl.f32]:
    return a + pl.softmax(pl.matmul(a, b) * 0.5)


def test_each_expression_is_translated_once():
    text = nested.ir()
    assert text.count("tensor.matmul") == 1 and text.count("tensor.mul") == 1, text
    a = np.random.default_rng(1).standard_normal((3, 8), dtype=np.float32)
    b = np.random.default_rng(2).standard_normal((8, 8), dtype=np.float32)
    z = (a @ b) * 0.5
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(nested(a, b, check=True), a + e / e.sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


def carried_through_ifs(x: pl.In[4, 8, pl.f32], n: pl.index) -> pl.Out[4, 8, pl.f32]:
    y = x
    for i in pl.range(0, 3):
        h = y * 3.0
        if FIRST:  # noqa: F821 - a constant: the arm is inlined
            y = y + h
        else:
            y = y - h
        if i > n:  # at run time: an if with results
            y = y * 0.5
        for _ in pl.range(0, 2):  # a nested loop carrying the outer loop's value
            y = y + 1.0
    return y


@pytest.mark.parametrize("first", [False, True])
def test_loops_carry_names_assigned_in_nested_ifs_and_loops(first):
    """A name assigned only inside an if (constant or not) or a nested loop of a loop body is
    carried by the loop: before, it was not, and each trip started from the value before the
    loop (a silently wrong result: the decoder's layers did nothing)."""
    f = ptox.jit(carried_through_ifs, constants={"FIRST": first})
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    for n in (0, 1, 5):
        want = x.copy()
        for i in range(3):
            want = want + want * np.float32(3) if first else want - want * np.float32(3)
            if i > n:
                want = want * np.float32(0.5)
            want = want + np.float32(2)
        for target in ("interp", "cpu"):
            np.testing.assert_array_equal(f(x, n, target=target), want, err_msg=f"{target} {n}")


def test_an_incore_body_cannot_assign_an_outer_name_in_a_nested_if():
    def f(x: pl.In[8, 16, pl.f32], y: pl.Out[8, 16, pl.f32], n: pl.index):
        s = pl.cast(n, dtype=pl.f32)
        with pl.incore():
            if n > 0:
                s = s * 2.0
            pl.store(pl.load(x, [0, 0], shape=(8, 16)) * s, y, [0, 0])

    with pytest.raises(ptox.CompileError, match="'s' is defined before this block"):
        ptox.jit(f).ir()


def test_an_empty_tensor_takes_its_symbolic_sizes_from_the_parameters():
    @ptox.jit
    def f(x: pl.In["N", 8, pl.f32]) -> pl.Out[2, "N", 8, pl.f32]:
        e = pl.empty(shape=(2, "N", 8), dtype=pl.f32)  # N: tensor.dim of x
        pl.store(pl.reshape(x, shape=(1, "N", 8)), e, [0, 0, 0])
        pl.store(pl.reshape(-x, shape=(1, "N", 8)), e, [1, 0, 0])
        return e

    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    for target in ("interp", "cpu"):
        np.testing.assert_array_equal(f(x, target=target), np.stack([x, -x]))
    with pytest.raises(ptox.CompileError, match="no parameter has the dim 'M'"):
        ptox.jit(lambda_free_empty).ir()


def lambda_free_empty(x: pl.In["N", pl.f32]) -> pl.Out["N", pl.f32]:
    e = pl.empty(shape=("M",), dtype=pl.f32)
    return e + x


@pytest.mark.parametrize("on", [False, True])
def test_constant_terms_of_an_and_or_an_or_fold_before_the_run_time_test(on):
    def f(x: pl.In["N", pl.f32]) -> pl.Out["N", pl.f32]:
        y = x
        if ON and x.shape[0] > 2:  # noqa: F821 - a constant
            y = -x
        if not ON or x.shape[0] > 2:  # noqa: F821
            y = y + 1.0
        return y

    k = ptox.jit(f, constants={"ON": on})
    assert k.ir().count("if ") == (2 if on else 0)  # only the run-time comparison is left
    for n in (2, 3):
        x = np.arange(n, dtype=np.float32)
        want = (-x if on and n > 2 else x) + (1.0 if not on or n > 2 else 0.0)
        np.testing.assert_array_equal(k(x), want)


@pytest.mark.parametrize("tp", [1, 2])
def test_a_comparison_of_constants_compiles_only_the_arm_taken(tp):
    def f(x: pl.In[4, pl.f32]) -> pl.Out[4, pl.f32]:
        y = x
        if TP > 1:  # noqa: F821 - a constant
            y = pl.reshape(-x, shape=(2, 2))  # another type: a run-time if could not yield it
        return pl.reshape(y, shape=(4,))

    k = ptox.jit(f, constants={"TP": tp})
    assert "if " not in k.ir() and ("tensor.neg" in k.ir()) == (tp > 1)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(k(x), -x if tp > 1 else x)
