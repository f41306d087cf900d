"""`ptox quantize`: W8A8 models (int8 weights per output channel, tensor.qmatmul {format =
"w8a8"}) written from a bf16 folder, loaded back, and checked against the source model."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ptox.models as models
from ptox.models import quantize as qz


def test_weights_round_to_nearest_even_per_output_channel():
    w = np.float32([[127, 0.5, 1.5, 2.5, -2.5, -127], [0, 0, 0, 0, 0, 0],
                    [1e-3, -2e-3, 0, 0, 0, 0]])
    q, s = qz.quantize_rows(w)
    assert s.dtype == np.float32 and q.dtype == np.int8
    np.testing.assert_array_equal(s[:2], [1, 0])
    np.testing.assert_array_equal(q[0], [127, 0, 2, 2, -2, -127])  # ties to even
    np.testing.assert_array_equal(q[1], 0)
    assert q[2, 1] == -127 and s[2] == np.float32(np.float32(2e-3) / np.float32(127))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 96)).astype(np.float32)
    q, s = qz.quantize_rows(w)
    assert (np.abs(q.astype(np.float64) * s[:, None] - w) <= s[:, None] * (0.5 + 1e-6)).all()
    assert (np.abs(q).max(1) == 127).all()


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    import tiny_hf
    root = tmp_path_factory.mktemp("w8a8")
    src = tiny_hf.write(str(root / "bf16"), "bfloat16")
    qz.quantize(src, str(root / "w8a8"))
    return src, str(root / "w8a8")


def test_a_quantized_folder_loads_and_follows_its_source(folders):
    src, dst = folders
    cfg = json.load(open(os.path.join(dst, "config.json")))
    assert cfg["quantization_config"]["quant_method"] == "ptox-w8a8"
    a = models.load(src, context=64, kv_dtype="f32")
    b = models.load(dst, context=64, kv_dtype="f32")
    assert b.formats == {"w": "w8a8", "embed": "bf16", "lm_head": "bf16"}
    assert b.kcache.dtype == np.float32
    ids = [3, 17, 99, 5, 42, 7]
    la, lb = a.prefill(ids, all_logits=True), b.prefill(ids, all_logits=True)
    cos = (la * lb).sum(-1) / (np.linalg.norm(la, axis=-1) * np.linalg.norm(lb, axis=-1))
    assert cos.min() > 0.999, cos
    # Top-1 may flip where the source's two best logits are within the quantization error.
    top2 = np.sort(la, -1)[:, -2:]
    flips = la.argmax(-1) != lb.argmax(-1)
    assert (top2[flips, 1] - top2[flips, 0] < 0.02 * np.abs(la).max()).all()
    # The interpreter runs the same program: the quantized products are bit-exact, the rest
    # within the float ops' bounds.
    c = models.load(dst, context=64, target="interp", kv_dtype="f32")
    np.testing.assert_allclose(c.prefill(ids, all_logits=True), lb, rtol=1e-4, atol=1e-4)


def test_the_cli_writes_a_report(folders, tmp_path):
    src, _ = folders
    dst = tmp_path / "q"
    r = subprocess.run([sys.executable, "-m", "ptox.models.quantize", src, str(dst), "--report",
                        "--tokens", "8", "--prompt", "w1 w2 w3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rep = json.loads((dst / "report.json").read_text())
    assert rep["greedy_tokens"] == 8 and rep["logits_cosine_min"] > 0.999
    assert rep["top1_agreement"] >= 0.75  # a random tiny model: near-ties flip (see above)
    bad = subprocess.run([sys.executable, "-m", "ptox.models.quantize", str(dst), str(tmp_path / "r")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "already quantized" in bad.stderr


def _rewrite(folder, out, change):
    """A copy of a W8A8 folder with its tensors changed by change(tensors)."""
    from ptox.models import safetensors_file
    import shutil
    shutil.copytree(folder, out)
    tensors = {k: np.array(v) for k, v in safetensors_file._open_file(
        os.path.join(folder, "model.safetensors")).items()}
    change(tensors)
    safetensors_file.save(os.path.join(out, "model.safetensors"), tensors)
    return str(out)


@pytest.mark.parametrize("change,message", [
    (lambda t: t.pop("model.layers.1.mlp.up_proj.weight_scale"), "up_proj.weight_scale is missing"),
    (lambda t: t.__setitem__("model.layers.0.self_attn.q_proj.weight_scale",
                             -t["model.layers.0.self_attn.q_proj.weight_scale"]), "negative"),
    (lambda t: t.__setitem__("model.layers.0.mlp.down_proj.weight",
                             t["model.layers.0.mlp.down_proj.weight"].astype(np.float32)),
     "a W8A8 projection is int8"),
])
def test_a_damaged_quantized_folder_is_a_clear_error(folders, tmp_path, change, message):
    bad = _rewrite(folders[1], tmp_path / "bad", change)
    with pytest.raises(models.ModelError, match=message):
        models.load(bad)


def test_an_unknown_quantization_method_is_a_clear_error(folders, tmp_path):
    bad = _rewrite(folders[1], tmp_path / "gptq", lambda t: None)
    cfg = json.load(open(os.path.join(bad, "config.json")))
    cfg["quantization_config"]["quant_method"] = "gptq"
    json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
    with pytest.raises(models.ModelError, match="'gptq' is not supported"):
        models.load(bad)
