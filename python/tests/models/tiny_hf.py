"""Random-weight Qwen3 model folders in Hugging Face's layout (config.json, model.safetensors,
tokenizer.json), made the same way by the tests and by make_fixtures.py (which runs transformers
on them): seeded numpy weights, so no file needs to be committed. CONFIG is a tiny one for the
test suite, QWEN3_06B Qwen3-0.6B's shape (a slow test)."""
import json
import os
import struct

import numpy as np

CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 128, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "max_position_embeddings": 256, "tie_word_embeddings": False,
    "hidden_act": "silu", "attention_bias": False, "bos_token_id": 1, "eos_token_id": 2,
}
IDS = [[5, 77, 3, 120, 9, 9, 64, 31, 2, 100, 17], [1, 2, 3, 4, 5, 6, 7, 8]]
# Qwen3-0.6B: 28 blocks, width 1024, 16 / 8 heads of 128, MLP 3072, vocab 151936, tied embeddings
# (drawn with its initializer's std, 0.02, so that the layers, not the token's own embedding, pick
# the next token).
QWEN3_06B = dict(CONFIG, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                 max_position_embeddings=40960, tie_word_embeddings=True, eos_token_id=151645,
                 initializer_range=0.02)
IDS_06B = [[9707, 11, 1879, 0, 151643, 42, 2048, 77, 3, 150000]]


def weights(seed=0, config=CONFIG):
    """HF tensor name -> f32 array (scaled so activations stay O(1) through the layers)."""
    c, rng = config, np.random.default_rng(seed)
    D, F, hd = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    H, KV, V = c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]

    def lin(o, i):
        return (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)

    def norm(n):
        return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    embed = rng.standard_normal((V, D))
    embed *= c.get("initializer_range", 1.0)
    w = {"model.embed_tokens.weight": embed.astype(np.float32),
         "model.norm.weight": norm(D)}
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = lin(V, D)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w.update({p + "input_layernorm.weight": norm(D),
                  p + "post_attention_layernorm.weight": norm(D),
                  p + "self_attn.q_proj.weight": lin(H * hd, D),
                  p + "self_attn.k_proj.weight": lin(KV * hd, D),
                  p + "self_attn.v_proj.weight": lin(KV * hd, D),
                  p + "self_attn.o_proj.weight": lin(D, H * hd),
                  p + "self_attn.q_norm.weight": norm(hd), p + "self_attn.k_norm.weight": norm(hd),
                  p + "mlp.gate_proj.weight": lin(F, D), p + "mlp.up_proj.weight": lin(F, D),
                  p + "mlp.down_proj.weight": lin(D, F)})
    return w


_KINDS = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}


def write_safetensors(path, tensors, corrupt=None):
    """A .safetensors file of numpy arrays; corrupt(header) may damage the header first."""
    header, offset = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": _KINDS[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    if corrupt:
        corrupt(header)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for a in tensors.values():  # one tensor's bytes at a time (the 0.6B model has 2.4 GB)
            f.write(np.ascontiguousarray(a).view(np.uint8).tobytes())


def write(folder, dtype="float32", seed=0, config=CONFIG):
    """The model folder, with weights stored as float32 or bfloat16."""
    import ml_dtypes
    os.makedirs(folder, exist_ok=True)
    cfg = dict(config, torch_dtype=dtype)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    tensors = {n: a.astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else a
               for n, a in weights(seed, config).items()}
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    del tensors
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {f"w{i}": i for i in range(config["vocab_size"])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.save(os.path.join(folder, "tokenizer.json"))
    return folder
