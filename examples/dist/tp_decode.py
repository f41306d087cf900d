"""Tensor-parallel decode (docs/distributed.md): every rank holds its share of each layer of the
decoder (its query / KV heads and MLP columns; ptox/models/parallel.py) and the step sums the
row-parallel projections with an allreduce. Rank 0 also runs the whole model in one process, and
the greedy tokens must be the same. Ends with OK.

    mpirun -np 3 .venv/bin/python examples/dist/tp_decode.py            # SmolLM2-135M, Q4_1
    mpirun -np 2 .venv/bin/python examples/dist/tp_decode.py --model DIR --tokens 16

The ranks must divide the model's query heads, KV heads and MLP width (SmolLM2: 9 / 3 / 1536,
so 3 ranks)."""

import argparse
import sys
import time

import numpy as np

import ptox
import ptox.models


def greedy(model, ids, n):
    """n greedy tokens after the prompt `ids` (every rank of a TP model calls this in step)."""
    model.reset()
    logits, out = model.prefill(ids), []
    for _ in range(n):
        out.append(int(np.argmax(logits[-1])))
        if len(out) < n:
            logits = model.decode(out[-1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="GGUF file or HF folder (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--blocks", action="store_true",
                    help="compute on a GGUF file's blocks in place (int8 activations) instead of "
                         "dequantizing its weights to f32 at load")
    args = ap.parse_args()
    rank, ranks = ptox.rank(), ptox.world_size()
    load = dict(context=256, dequantize=not args.blocks)
    tp = ptox.models.load(args.model, tp=(rank, ranks), **load)
    ids = tp.tokenizer.encode(args.prompt)
    start = time.perf_counter()
    tokens = greedy(tp, ids, args.tokens)
    seconds = time.perf_counter() - start
    if rank != 0:
        return 0
    alone = greedy(ptox.models.load(args.model, **load), ids, args.tokens)
    print(f"{ranks} ranks: {tp.tokenizer.decode(tokens)!r} ({seconds:.2f} s with the compile)")
    print(f"1 process: {tp.tokenizer.decode(alone)!r}")
    if tokens != alone:
        first = next(i for i, (a, b) in enumerate(zip(tokens, alone)) if a != b)
        print(f"FAILED: the tokens differ from position {first}: {tokens} vs {alone}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
