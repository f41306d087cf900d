"""Distributed ops in the Python language (pl.dist.*, pl.allreduce; docs/distributed.md): alone a
run is rank 0 of 1; under `mpirun -np 2` each process is a rank and both targets give the
interpreter's bits."""
import os
import shutil
import subprocess
import sys
import textwrap

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
def mesh(x: pl.In["N", 32, pl.f32], s: pl.Out["N", 32, pl.f32], m: pl.InOut["N", 32, pl.f32]):
    r = pl.dist.rank()
    w = pl.dist.world_size()
    scaled = x * pl.cast(r + 1, dtype=pl.f32)
    pl.store(pl.allreduce(scaled, op="sum") * pl.cast(w, dtype=pl.f32), s)
    pl.dist.allreduce(m, op="max")


@ptox.jit
def gather_scatter(x: pl.In["N", 8, pl.f32], big: pl.In["G", 8, pl.f32],
                   g: pl.Out["G", 8, pl.f32], h: pl.Out["N", 8, pl.f32],
                   b: pl.InOut["N", 8, pl.f32]):
    pl.dist.allgather(g, x)
    pl.dist.reduce_scatter(h, big, op="sum")
    pl.dist.broadcast(b, root=0)


def test_the_text_form_names_the_ops():
    text = mesh.ir()
    for piece in ("dist.rank", "dist.world_size", "tensor.allreduce",
                  'dist.allreduce %m {op = "max"}'):
        assert piece in text, text


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_alone_a_run_is_rank_0_of_1(target):
    x = np.arange(3 * 32, dtype=np.float32).reshape(3, 32) - 40.0
    s = np.zeros_like(x)
    m = x.copy()
    mesh(x, s, m, target=target)
    np.testing.assert_array_equal(s, x)
    np.testing.assert_array_equal(m, x)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_alone_allgather_and_reduce_scatter_copy(target):
    x = np.arange(2 * 8, dtype=np.float32).reshape(2, 8) * np.float32(0.5)
    big = -x
    g, h = np.zeros_like(x), np.zeros_like(x)
    b = x + 1
    gather_scatter(x, big, g, h, b, target=target)
    np.testing.assert_array_equal(g, x)
    np.testing.assert_array_equal(h, big)
    np.testing.assert_array_equal(b, x + 1)
    assert "dist.broadcast %b {root = 0}" in gather_scatter.ir()


@ptox.jit
def one_sided(x: pl.In[2, 8, pl.f32], win: pl.InOut[4, 8, pl.f32], g: pl.Out[2, 8, pl.f32]):
    r = pl.dist.rank()
    pl.dist.put(win, x, r, 2, 0)
    pl.dist.get(g, win, r, 0, 0)
    pl.dist.fence()


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_alone_puts_and_gets_reach_the_own_window_at_the_fence(target):
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    win = -np.arange(32, dtype=np.float32).reshape(4, 8)
    before = win.copy()
    g = np.zeros((2, 8), np.float32)
    one_sided(x, win, g, target=target)
    np.testing.assert_array_equal(g, before[:2])
    np.testing.assert_array_equal(win[2:], x)
    np.testing.assert_array_equal(win[:2], before[:2])


# Each rank writes its own file: mpirun interleaves the ranks' stdout mid-line.
SCRIPT = textwrap.dedent("""
    import numpy as np, os, sys
    sys.path.insert(0, {tests!r})
    from test_dist import mesh, gather_scatter
    x = np.full((5, 32), 1e8, dtype=np.float32) + np.arange(32, dtype=np.float32)
    rank = os.environ["OMPI_COMM_WORLD_RANK"]
    r = int(rank)
    lines = []
    for target in ("interp", "cpu"):
        s = np.zeros_like(x)
        m = np.zeros_like(x)
        mesh(x, s, m, target=target)
        lines.append(f"{{target}} {{s[0, :4].tolist()}}")
        # allgather of [r, r], reduce_scatter of rows [10 r, 10 r + 1] (sum: rank 0's + rank 1's),
        # broadcast of rank 0's [7, 7].
        xs = np.full((1, 8), r, dtype=np.float32)
        big = np.full((2, 8), 10 * r, dtype=np.float32) + np.arange(2, dtype=np.float32)[:, None]
        g, h = np.zeros((2, 8), np.float32), np.zeros((1, 8), np.float32)
        b = np.full((1, 8), 7 if r == 0 else -1, dtype=np.float32)
        gather_scatter(xs, big, g, h, b, target=target)
        lines.append(f"{{target}} {{g[:, 0].tolist()}} {{h[0, 0]}} {{b[0, 0]}}")
    with open(os.path.join({out!r}, "rank" + rank + ".txt"), "w") as f:
        f.write("\\n".join(lines))
""")


def two_ranks(tmp_path, script, timeout=600):
    """Runs `script` ({tests}: this folder, {out}: tmp_path) as 2 ranks under mpirun; returns the
    finished process."""
    path = tmp_path / "ranks.py"
    path.write_text(script.format(tests=os.path.dirname(__file__), out=str(tmp_path)))
    env = {**os.environ, "PTOX_CACHE_DIR": str(tmp_path / "c")}
    return subprocess.run(["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", "2",
                           sys.executable, str(path)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (openmpi-bin)")
def test_two_processes_under_mpirun(tmp_path):
    out = two_ranks(tmp_path, SCRIPT)
    assert out.returncode == 0, out.stderr
    x = np.full(4, 1e8, dtype=np.float32) + np.arange(4, dtype=np.float32)
    want = ((x + x * np.float32(2)) * np.float32(2)).tolist()  # ranks 0, 1 scaled, then * 2
    for rank in (0, 1):
        got = (tmp_path / f"rank{rank}.txt").read_text().split("\n")
        others = f"[0.0, 1.0] {10.0 + 2 * rank} 7.0"  # h: rank 0's row `rank` + rank 1's
        assert got == [f"interp {want}", f"interp {others}", f"cpu {want}", f"cpu {others}"], \
            f"rank {rank}: {got}"


# Rank 1 raises before the allreduce rank 0 waits in: every rank ends within seconds, not after
# the 60 s timeout, and the error names rank 1.
FAILING = textwrap.dedent("""
    import numpy as np, ptox, sys
    sys.path.insert(0, {tests!r})
    from test_dist import mesh
    if ptox.rank() == 1:
        raise ValueError("rank one gives up")
    x = np.ones((2, 32), np.float32)
    mesh(x, np.zeros_like(x), np.zeros_like(x), target="cpu")
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (openmpi-bin)")
def test_an_exception_on_one_rank_ends_every_rank(tmp_path):
    import time
    start = time.monotonic()
    out = two_ranks(tmp_path, FAILING)
    assert out.returncode != 0
    assert time.monotonic() - start < 40, "the other rank waited for its timeout"
    assert "ptox: rank 1: uncaught ValueError: rank one gives up" in out.stderr, out.stderr


# Rank 1 passes another shape: both ranks get the mismatch as a ptox.KernelError they can catch,
# and every later collective fails at once, naming it, instead of taking the failed collective's
# messages still in flight for its own. The run then ends normally.
CAUGHT = textwrap.dedent("""
    import numpy as np, os, ptox, sys
    sys.path.insert(0, {tests!r})
    from test_dist import mesh
    r = ptox.rank()
    x = np.ones((2 + r, 32), np.float32)
    lines = []
    for target in ("cpu", "interp", "cpu"):
        try:
            mesh(x, np.zeros_like(x), x.copy(), target=target)
            lines.append("ran")
        except ptox.Error as e:
            lines.append(type(e).__name__ + " " + str(e))
    with open(os.path.join({out!r}, "rank" + str(r) + ".txt"), "w") as f:
        f.write("\\n".join(lines))
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (openmpi-bin)")
def test_after_a_caught_mismatch_every_collective_fails_clearly(tmp_path):
    out = two_ranks(tmp_path, CAUGHT, timeout=120)
    assert out.returncode == 0, out.stderr
    for rank in (0, 1):
        first, *later = (tmp_path / f"rank{rank}.txt").read_text().split("\n")
        assert first.startswith("KernelError ") and "collective mismatch" in first, first
        assert "f32 2x32" in first and "f32 3x32" in first, first
        assert len(later) == 2, later
        for line in later:
            assert line.startswith("KernelError ") and f"on rank {rank}: an earlier collective " \
                "failed on this rank" in line and "collective mismatch" in line, line
