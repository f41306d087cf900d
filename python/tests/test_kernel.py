"""Calling .pto programs from Python: outputs allocated or given, zero-copy, symbolic dims bound
from shapes without recompiling, dtypes (bf16 via ml_dtypes and torch), errors."""

import pathlib
import re

import ml_dtypes
import numpy as np
import pytest

import ptox

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

ADD = """func @add(%a: in tensor<{N}x8xf32>, %b: in tensor<{N}x8xf32>, %c: out tensor<{N}x8xf32>) {
  %s = tensor.add %a, %b
  tensor.store %s, %c
}
"""


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Each test compiles into its own cache folder (its entries are what it counts)."""
    monkeypatch.setenv("PTOX_CACHE_DIR", str(tmp_path / "cache"))
    # No precompiled tile library (the binaries are the same): a fresh cache per test would build
    # it again in every test, more compiler time than the tests' own kernels take.
    monkeypatch.setenv("PTOX_PCH", "0")
    return tmp_path / "cache"


def entries(cache):
    return sorted(p.name for p in cache.glob("*.sum")) if cache.exists() else []


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("rows", [1, 7, 513])
def test_outputs_are_allocated_and_match_numpy(target, rows):
    k = ptox.parse(ADD)
    a = np.random.default_rng(rows).standard_normal((rows, 8), dtype=np.float32)
    b = np.random.default_rng(rows + 1).standard_normal((rows, 8), dtype=np.float32)
    c = k(a, b, target=target)
    assert c.shape == (rows, 8) and c.dtype == np.float32
    np.testing.assert_array_equal(c, a + b)


def test_build_compiles_into_the_cache_and_the_first_call_only_loads(cache):
    k = ptox.parse(ADD.replace("@add", "@add_built"))
    k.build()
    built = entries(cache)
    assert len(built) == 1
    a = np.arange(24, dtype=np.float32).reshape(3, 8)
    np.testing.assert_array_equal(k(a, a), a + a)
    assert entries(cache) == built


def test_out_is_the_callers_buffer_and_inputs_stay_untouched():
    k = ptox.parse(ADD)
    a = np.arange(24, dtype=np.float32).reshape(3, 8)
    b = np.ones((3, 8), np.float32)
    a0, b0 = a.copy(), b.copy()
    c = np.full((3, 8), -1.0, np.float32)
    r = k(a, b, out=c)
    assert r is c
    np.testing.assert_array_equal(c, a + 1)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_a_strided_view_is_read_in_place():
    k = ptox.parse(ADD)
    big = np.arange(6 * 16, dtype=np.float32).reshape(6, 16)
    view = big[::2, ::2]  # strides (32, 2) elements: no copy made
    c = k(view, np.zeros((3, 8), np.float32))
    np.testing.assert_array_equal(c, view)


def test_changing_a_symbolic_dim_does_not_recompile(cache):
    k = ptox.parse(ADD.replace("@add", "@add_once"))  # a program no other test compiled
    for rows in (5, 9, 300):
        a = np.ones((rows, 8), np.float32)
        np.testing.assert_array_equal(k(a, a), 2 * a)
    assert len(entries(cache)) == 1, entries(cache)


def test_bf16_through_ml_dtypes():
    text = ADD.replace("f32", "bf16")
    k = ptox.parse(text)
    a = np.array([[1.5] * 8, [-2.25] * 8], dtype=ml_dtypes.bfloat16)
    c = k(a, a)
    assert c.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(c.astype(np.float32), 2 * a.astype(np.float32))


def test_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    k = ptox.parse(ADD)
    a = torch.arange(16, dtype=torch.float32).reshape(2, 8)
    out = torch.empty(2, 8)
    k(a, a, out=out)
    assert torch.equal(out, 2 * a)
    kb = ptox.parse(ADD.replace("f32", "bf16"))
    ab = a.to(torch.bfloat16)
    outb = torch.empty(2, 8, dtype=torch.bfloat16)
    kb(ab, ab, out=outb)
    assert torch.equal(outb, ab + ab)


def _run_sizes(path):
    """The symbolic dims an example's `// ptox-run: --dims N=20,H=300` line gives."""
    m = re.search(r"^// ptox-run:.*--dims[ =](\S+)", path.read_text(), re.M)
    return {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split(","))} if m else {}


def test_every_example_runs_on_cpu_like_the_interpreter():
    ran = 0
    for path in sorted(EXAMPLES.rglob("*.pto")):
        k = ptox.load(str(path))
        args = []
        sizes = _run_sizes(path)
        rng = np.random.default_rng(0)
        for p in k.params:
            if not p["is_tensor"]:
                args.append(3 if p["dtype"] in ("index", "i32", "i64") else 0.5)
                continue
            dims = [sizes.setdefault(d, 5) if isinstance(d, str) else d for d in p["dims"]]
            if p["dtype"] == "bf16":
                args.append(rng.standard_normal(dims).astype(ml_dtypes.bfloat16))
            elif p["dtype"] in ("i32", "i8", "i64"):
                args.append(np.zeros(dims, dtype=p["dtype"].replace("i", "int")))
            else:
                args.append(rng.standard_normal(dims).astype(np.float32 if p["dtype"] == "f32"
                                                            else np.float16))
        k(*args, check=True)  # cpu against the interpreter, as ptox run --check
        ran += 1
    assert ran >= 20


def test_shape_errors_name_the_parameter():
    k = ptox.parse(ADD)
    a = np.ones((3, 8), np.float32)
    with pytest.raises(ptox.ShapeError, match=r"argument 'b' \(parameter 2 of kernel add\): dim 0 "
                       "is N = 3 from an earlier argument"):
        k(a, np.ones((4, 8), np.float32))
    with pytest.raises(ptox.ShapeError, match=r"argument 'b' .*: expected 2 dims \(N x 8 f32\)"):
        k(a, np.ones(8, np.float32))
    with pytest.raises(ptox.ShapeError, match="missing arguments for b"):
        k(a)
    with pytest.raises(ptox.InvalidError, match="argument 'b' .*: expected f32, got float64"):
        k(a, np.ones((3, 8), np.float64))
    with pytest.raises(ptox.ShapeError, match="alias"):
        k(a, a, out=a)  # an output aliasing an input
    with pytest.raises(ptox.ShapeError, match="alias"):
        k(a, a, a)


def test_errors_are_the_documented_classes():
    with pytest.raises(ptox.CompileError, match="<input>:1"):
        ptox.parse("func @f( {")
    with pytest.raises(ptox.UnsupportedError):
        ptox.parse(ADD)(np.ones((1, 8), np.float32), np.ones((1, 8), np.float32), target="nope")
    slice_prog = ptox.parse("""func @f(%x: in tensor<8xf32>, %o: in index, %y: out tensor<4xf32>) {
  %s = tensor.slice %x[%o] : tensor<4xf32>
  tensor.store %s, %y
}
""")
    for target in ("interp", "cpu"):
        with pytest.raises(ptox.KernelError, match="tensor.slice"):
            slice_prog(np.ones(8, np.float32), 6, target=target)


def test_source_and_stages(tmp_path):
    k = ptox.parse(ADD)
    assert "ptox_entry" in k.source()
    stages = k.stages(dump_dir=tmp_path / "stages")
    assert [s for s, _ in stages][-1] == "plan-memory"
    assert all("func @add" in text for _, text in stages)
    files = sorted(p.name for p in (tmp_path / "stages").iterdir())
    assert files[0] == "01-inline-calls.pto" and files[-1].endswith("-plan-memory.pto")
    assert ptox.parse((tmp_path / "stages" / files[-1]).read_text()).ir() == stages[-1][1]


def test_version_is_the_cpp_projects():
    cmake = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert f"project(ptox VERSION {ptox.__version__}" in cmake


def test_constant_inputs_keep_packed_weights_and_can_be_forgotten():
    k = ptox.parse("""func @mm(%x: in tensor<{M}x64xf32>, %w: in tensor<48x64xf32>,
                           %y: out tensor<{M}x48xf32>) {
  %p = tensor.matmul %x, %w {transpose_b = true}
  tensor.store %p, %y
}
""")
    k.constant_inputs = ("w",)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 64), dtype=np.float32)
    w = rng.standard_normal((48, 64), dtype=np.float32)
    np.testing.assert_allclose(k(x, w), x @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k(x, w), x @ w.T, rtol=1e-5, atol=1e-5)  # the kept blocks
    w[:] = -w  # changed: forgotten, the next call packs again
    k.forget_constants()
    np.testing.assert_allclose(k(x, w), x @ w.T, rtol=1e-5, atol=1e-5)


def test_read_only_inputs_are_read_and_read_only_outputs_refused():
    k = ptox.parse("""func @add(%a: in tensor<4xf32>,
        %b: in tensor<4xf32>, %c: out tensor<4xf32>) {
  %s = tensor.add %a, %b
  tensor.store %s, %c
}
""")
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False  # as a memory-mapped weight
    np.testing.assert_array_equal(k(a, a), 2 * a)
    c = np.zeros(4, np.float32)
    c.flags.writeable = False
    with pytest.raises(ptox.ShapeError, match="%c is written by the kernel, but its array is "
                                              "read-only"):
        k(a, a, out=c)
    assert not c.any()


def test_profile_records_the_tasks_of_compiled_runs(tmp_path):
    import json
    k = ptox.parse(ADD)
    a = np.ones((64, 8), np.float32)
    k(a, a)  # compiled before the profile: it records runs, not compiles
    with ptox.profile() as p:
        k(a, a)
        k(a, a)
        k(a, a, target="interp")  # no tasks to record
    rows = [line.split() for line in p.table.splitlines()[1:]]
    assert len(rows) == 1 and rows[0][0].startswith("add.incore") and int(rows[0][2]) == 2
    p.save(tmp_path / "trace.json")
    events = [e for e in json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
              if e.get("ph") == "X"]
    assert len(events) == 2
    first, second = sorted(events, key=lambda e: e["ts"])
    assert second["ts"] >= first["ts"] + first["dur"]  # the second run after the first
    with pytest.raises(ValueError, match="already open"):
        with ptox.profile():
            with ptox.profile():
                pass
    with ptox.profile() as empty:
        pass
    assert empty.table.splitlines()[1:] == []


CHAIN = """func @chain(%a: in tensor<{N}x8xf32>, %b: in tensor<{N}x8xf32>,
             %c: out tensor<{N}x8xf32>) {
  %s = tensor.add %a, %b
  %e = tensor.exp %s
  %m = tensor.mul %e, %a
  tensor.store %m, %c
}
"""


def test_fuse_false_compiles_one_kernel_per_tensor_op(cache):
    k = ptox.parse(CHAIN)
    a = np.random.default_rng(3).standard_normal((5, 8), dtype=np.float32)
    b = np.random.default_rng(4).standard_normal((5, 8), dtype=np.float32)
    kernels = {}
    for fuse in (True, False):
        k.fuse = fuse
        with ptox.profile() as p:
            c = k(a, b, np.empty((5, 8), np.float32))  # the direct path
        np.testing.assert_array_equal(c, k(a, b, target="interp"))
        np.testing.assert_array_equal(k(a, b, check=True), c)  # the bound path
        kernels[fuse] = {line.split()[0] for line in p.table.splitlines()[1:] if line.strip()}
    assert len(kernels[True]) == 1 and len(kernels[False]) == 3, kernels
    assert len(entries(cache)) == 2  # one build each
