"""A GGUF file (llama.cpp's format, architecture `qwen3`) from a Hugging Face Qwen3 folder
(config.json, model.safetensors) with the `gguf` package, for llm_bench's Qwen3 rows: llama.cpp
and ptox then run the same weights.

    .venv/bin/python bench/gguf_convert.py HF_FOLDER OUT.gguf --type Q8_0   # or BF16

Types: BF16 (every matrix bf16, the norms F32, as llama.cpp's convert_hf_to_gguf.py --outtype
bf16 writes them) and Q8_0 (the projections and the token embedding Q8_0 by gguf.quants, the
numpy reference of ggml's quantizer; the norms F32, as llama-quantize leaves them). Qwen GGUF
files keep HF's q / k row order (llama.cpp's converter permutes rows for llama only).

The bench's folders come from python/tests/models/tiny_hf.py (random weights, a word-level
tokenizer.json llama.cpp cannot read), so the tokenizer written is a synthetic one both engines
accept and the bench never uses (it feeds token ids): a gpt2-style byte-level BPE vocabulary of
the config's size (GPT-2's 256 byte symbols, one merge, then placeholder tokens "w{i}"), the
qwen2 pre-tokenizer. llama.cpp rejects a gpt2 vocabulary without a merges array ("cannot find
tokenizer merges in model file") and the gguf writer drops empty arrays, hence the one merge;
`tokenizer.ggml.model = "none"` would load in llama.cpp but not in ptox (gpt2 BPE only)."""

import argparse
import json
import os
import struct
import sys

import numpy as np

TYPES = ("BF16", "Q8_0")

# HF names of one layer's modules -> GGUF's (llama.cpp's LLM_TENSOR_* names).
_LAYER = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
          "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
          "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
          "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
          "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
_GLOBAL = {"model.embed_tokens.weight": "token_embd.weight",
           "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}


def read_safetensors(path):
    """name -> numpy array (memory-mapped; bf16 as ml_dtypes.bfloat16) of one .safetensors file.
    A reader of its own: the safetensors package's numpy API has no bfloat16, and ptox's reader
    is internal (and changing)."""
    import ml_dtypes
    dtypes = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    raw = np.memmap(path, np.uint8, "r", offset=8 + n)
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            lo, hi = e["data_offsets"]
            out[name] = raw[lo:hi].view(dtypes[e["dtype"]]).reshape(e["shape"])
    return out


def gpt2_bytes():
    """GPT-2's byte -> printable character map (the byte-level BPE's 256 base symbols)."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def synthetic_tokenizer(writer, vocab, eos):
    import gguf
    if vocab < 257:
        raise ValueError(f"vocab {vocab}: the synthetic tokenizer needs 257 tokens at least")
    base = gpt2_bytes()
    space = base[ord(" ")]
    tokens = base + [space + space] + [f"w{i}" for i in range(257, vocab)]
    types = [gguf.TokenType.NORMAL] * vocab
    if eos is not None and 257 <= eos < vocab:  # Qwen's end of turn, a control token
        tokens[eos], types[eos] = "<|im_end|>", gguf.TokenType.CONTROL
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([f"{space} {space}"])
    if eos is not None:
        writer.add_eos_token_id(eos)
    writer.add_add_bos_token(False)


def convert(folder, out, qtype="Q8_0"):
    """Writes `out` (a GGUF file of type `qtype`, "BF16" or "Q8_0") from the HF folder; returns
    out. Writes out + ".tmp" first, so that an interrupted run leaves no file to be reused."""
    import gguf
    if qtype not in TYPES:
        raise ValueError(f"type {qtype!r}: expected one of {TYPES}")
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    if c.get("architectures") != ["Qwen3ForCausalLM"]:
        raise ValueError(f"{folder}: {c.get('architectures')} is not Qwen3ForCausalLM")
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    heads = c["num_attention_heads"]
    head_dim = c.get("head_dim") or c["hidden_size"] // heads
    tmp = out + ".tmp"
    w = gguf.GGUFWriter(tmp, arch="qwen3")
    w.add_name(os.path.basename(os.path.normpath(folder)))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if qtype == "BF16"
                    else gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_block_count(c["num_hidden_layers"])
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(c.get("num_key_value_heads", heads))
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(float(c.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(c.get("rms_norm_eps", 1e-6)))
    eos = c.get("eos_token_id")
    synthetic_tokenizer(w, c["vocab_size"], eos[0] if isinstance(eos, list) else eos)

    def name_of(hf):
        if hf in _GLOBAL:
            return _GLOBAL[hf]
        _, _, i, rest = hf.split(".", 3)  # model.layers.{i}.{module}.weight
        return f"blk.{i}.{_LAYER[rest[:-len('.weight')]]}.weight"

    for hf, a in tensors.items():
        if hf == "lm_head.weight" and c.get("tie_word_embeddings"):
            continue  # tied: llama.cpp reads token_embd as the LM head when output is absent
        name = name_of(hf)
        if a.ndim == 1:  # the norms: F32 in both types
            w.add_tensor(name, np.asarray(a, np.float32))
        elif qtype == "BF16":
            bf16 = gguf.GGMLQuantizationType.BF16
            data = (np.asarray(a).view(np.uint8) if a.dtype.name == "bfloat16"  # bits as they are
                    else gguf.quants.quantize(np.asarray(a, np.float32), bf16))
            w.add_tensor(name, data, raw_dtype=bf16)
        else:
            w.add_tensor(name, gguf.quants.quantize(np.asarray(a, np.float32),
                                                    gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("out")
    ap.add_argument("--type", default="Q8_0", choices=TYPES)
    a = ap.parse_args()
    print(convert(a.folder, a.out, a.type))
    return 0


if __name__ == "__main__":
    sys.exit(main())
