"""Every python/examples/*.py computes a result, compares it with numpy and prints OK last."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_prints_ok(path, tmp_path):
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                       env={"PTOX_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "OK", r.stdout
