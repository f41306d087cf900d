"""Regenerates the transformers reference fixtures the model tests compare with (torch and
transformers are too large for the test environment: `scripts/setup.sh --bench` installs them).

    .venv/bin/python python/tests/models/make_fixtures.py [OUT.json]

For each prompt: the prompt's token ids (SmolLM2's tokenizer through transformers' own GGUF
loading, `gguf_file=`, dequantized to f32), the greedy continuation of 32 tokens (min_new_tokens:
the EOS token, id 2, is suppressed for all 32), and the top-8
logits (ids and values) of every prefill position, all from transformers' f32 eager model. And
for the tiny random-weight Qwen3 of tiny_hf.py: the logits of every position of its test token
ids, from f32 weights computed in f32 and from bf16 weights computed in f32 and in bf16 (the
band transformers' own bf16 run shows), and 16 greedy tokens. And for the Qwen3-0.6B-shaped
random-weight model (2.4 GB of f32 weights, written to a temporary folder): the top-8 logits
of every position of its test ids and 8 greedy tokens."""
import json
import os
import pathlib
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = ["The capital of France is", "def fibonacci(n):",
           "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"]


def logits_and_greedy(m, ids, n):
    """transformers' logits of every position of ids ([T, V], f32) and its n greedy tokens
    (min_new_tokens: no early EOS)."""
    with torch.no_grad():
        logits = m(torch.tensor([ids])).logits[0].float()
        greedy = m.generate(torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n,
                            do_sample=False)[0, len(ids):].tolist()
    return logits, greedy


def top8(logits, digits):
    """The 8 largest logits of every position: their ids and values (rounded)."""
    top = torch.topk(logits, 8, dim=-1)
    return {"top_ids": top.indices.tolist(),
            "top_logits": [[round(float(v), digits) for v in r] for r in top.values]}


def write_fixture(path, cases, indent=None):
    path.write_text(json.dumps({"transformers": __import__("transformers").__version__,
                                "torch": torch.__version__, "cases": cases}, indent=indent))


def qwen3_cases(tmp):
    import tiny_hf
    out = {}
    for dtype, compute in (("float32", torch.float32), ("bfloat16", torch.float32),
                           ("bfloat16", torch.bfloat16)):
        folder = tiny_hf.write(os.path.join(tmp, dtype), dtype)
        m = AutoModelForCausalLM.from_pretrained(folder, dtype=compute,
                                                 attn_implementation="eager").eval()
        rows = []
        for ids in tiny_hf.IDS:
            logits, greedy = logits_and_greedy(m, ids, 16)
            rows.append({"ids": ids, "logits": [[round(float(v), 6) for v in r] for r in logits],
                         "greedy": greedy})
        out[f"{dtype} weights, {str(compute).replace('torch.', '')} compute"] = rows
    return out


def qwen3_06b_case(tmp):
    import tiny_hf
    folder = tiny_hf.write(os.path.join(tmp, "0.6b"), config=tiny_hf.QWEN3_06B)
    m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    rows = []
    for ids in tiny_hf.IDS_06B:
        logits, greedy = logits_and_greedy(m, ids, 8)
        rows.append({"ids": ids, "greedy": greedy, **top8(logits, 5)})
    return rows


def write_qwen3_06b(here):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        rows = qwen3_06b_case(tmp)
    write_fixture(here / "fixtures" / "qwen3_06b_transformers.json", rows)


def main():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        qwen3 = qwen3_cases(tmp)
    here = pathlib.Path(__file__).parent
    write_qwen3_06b(here)
    write_fixture(here / "fixtures" / "tiny_qwen3_transformers.json", qwen3)
    from ptox.models import default_model_path
    folder, name = os.path.split(default_model_path())
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    torch.set_num_threads(os.cpu_count())
    cases = []
    for prompt in PROMPTS:
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        logits, greedy = logits_and_greedy(model, ids, 32)
        cases.append({"prompt": prompt, "ids": ids, "greedy": greedy, **top8(logits, 6)})
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       here / "fixtures" / "smollm2_transformers.json")
    write_fixture(out, cases, indent=0)
    print(f"wrote {out}")

if __name__ == "__main__":
    main()
