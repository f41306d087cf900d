"""Tensor-parallel decode (docs/distributed.md): every rank holds its share of each layer of the
decoder (its query / KV heads, MLP columns and rows of the output projections;
ptox/models/parallel.py) and the step allgathers what the ranks compute. Rank 0 also runs the
whole model in one process: the greedy tokens must be the same (and the logits are the same
bits). Ends with OK.

    mpirun -np 3 .venv/bin/python examples/dist/tp_decode.py            # SmolLM2-135M, Q4_1
    mpirun -np 2 .venv/bin/python examples/dist/tp_decode.py --model DIR --tokens 16

The ranks must divide the model's query heads, KV heads, MLP width and width (SmolLM2: 9 / 3 /
1536 / 576, so 3 ranks)."""

import argparse
import json
import sys
import time

import numpy as np

import ptox
import ptox.models


def greedy(model, ids, n):
    """(n greedy tokens after the prompt `ids`, the logits they came from); every rank of a TP
    model calls this in step."""
    model.reset()
    logits, out, seen = model.prefill(ids), [], []
    for _ in range(n):
        seen.append(logits[-1])
        out.append(int(np.argmax(logits[-1])))
        if len(out) < n:
            logits = model.decode(out[-1])
    return out, np.stack(seen)


def measure(model, ids, tokens, steps):
    """(ms in communication tasks, ms in all) per decode step over `steps` steps after the prompt,
    from the tasks' trace (ptox.profile)."""
    model.reset()
    model.prefill(ids)
    start = time.perf_counter()
    with ptox.profile() as p:
        for t in (tokens * steps)[:steps]:
            model.decode(t)
    step_ms = (time.perf_counter() - start) * 1e3 / steps
    events = json.loads(p.trace_json)["traceEvents"]
    comm_us = sum(e.get("dur", 0) for e in events if e.get("name", "").startswith("dist."))
    return comm_us / 1e3 / steps, step_ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="GGUF file or HF folder (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--measure", type=int, default=16, metavar="N",
                    help="time N decode steps and the communication tasks in them (0: skip)")
    ap.add_argument("--dequantize", action="store_true",
                    help="dequantize a GGUF file's weights to f32 at load instead of computing on "
                         "its blocks in place (int8 activations)")
    args = ap.parse_args()
    rank, ranks = ptox.rank(), ptox.world_size()
    load = dict(context=256, dequantize=args.dequantize)
    tp = ptox.models.load(args.model, tp=(rank, ranks), **load)
    ids = tp.tokenizer.encode(args.prompt)
    start = time.perf_counter()
    tokens, logits = greedy(tp, ids, args.tokens)
    seconds = time.perf_counter() - start
    comm_ms, step_ms = measure(tp, ids, tokens, args.measure) if args.measure else (0, 0)
    if rank != 0:
        return 0
    alone, alone_logits = greedy(ptox.models.load(args.model, **load), ids, args.tokens)
    print(f"{ranks} ranks: {tp.tokenizer.decode(tokens)!r} ({seconds:.2f} s with the compile)")
    print(f"1 process: {tp.tokenizer.decode(alone)!r}")
    if args.measure:
        print(f"decode on rank 0: {step_ms:.2f} ms a token, {comm_ms:.2f} ms of it in allgather "
              f"tasks ({100 * comm_ms / step_ms:.0f} %, waiting for the other ranks included)")
    same = np.sum(logits.view(np.uint32) == alone_logits.view(np.uint32))
    print(f"logits: {same} of {logits.size} the same bits as one process's, largest difference "
          f"{np.max(np.abs(logits - alone_logits)):.3g}")
    if tokens != alone:
        first = next(i for i, (a, b) in enumerate(zip(tokens, alone)) if a != b)
        print(f"FAILED: the tokens differ from position {first}: {tokens} vs {alone}")
        return 1
    if same != logits.size:
        print("FAILED: the ranks' logits are not one process's bits")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
