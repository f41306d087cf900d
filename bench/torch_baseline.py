#!/usr/bin/python3
# PyTorch CPU eager baseline for bench/tensor_bench.cc: times softmax, rmsnorm, layernorm and
# 8-op elementwise chains at given thread counts and writes the medians as JSON.
"""Usage: torch_baseline.py [--json=FILE] [--shape=RxC] [--threads=2,1] [--reps=15] [--evict-bytes=N]
                            [--cases=softmax:f32,rmsnorm:bf16,layernorm:f32,chain:f32,...]
       torch_baseline.py --serve [--shape=RxC] [--evict-bytes=N]

Prints a table to stdout; --json=FILE writes {"available": true, "torch": VERSION, "rows": [...]}
with one row per (case, threads): median / min / max seconds and minor page faults per run.
Without torch it writes {"available": false, "reason": ...} and exits 0, so callers can report it
as unavailable.

--serve: times one case per request, so that tensor_bench measures torch right after ptox on the
same case (this VM's memory bandwidth drifts over seconds). It prints {"available": ..., "torch":
VERSION} as its first line, then reads lines "op:dtype threads reps" from stdin and answers each
with one JSON row on stdout, until stdin ends.
"""

import argparse
import json
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default="", help="write results here")
    p.add_argument("--shape", default="4096x4096", help="rows x cols (reductions over cols)")
    p.add_argument("--threads", default="1", help="comma-separated torch.set_num_threads values")
    p.add_argument("--reps", type=int, default=15, help="timed repetitions after one warm-up")
    p.add_argument("--evict-bytes", type=int, default=0,
                   help="bytes read before each timed run (cold caches; 0: warm runs)")
    p.add_argument("--cases", default="softmax:f32,rmsnorm:f32,layernorm:f32,chain:f32,"
                   "chain_dag:f32,softmax:bf16,rmsnorm:bf16,layernorm:bf16",
                   help="comma-separated op:dtype (op: softmax rmsnorm layernorm chain chain_dag)")
    p.add_argument("--serve", action="store_true", help="time the cases stdin asks for")
    return p.parse_args()


def write_json(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")


def make_case(torch, op, dtype, rows, cols):
    """Inputs in [-2, 2) (as tensor_bench fills its buffers) and a closure running the op."""
    gen = torch.Generator().manual_seed(12345)

    def rand(*shape):
        return (torch.rand(*shape, generator=gen) * 4 - 2).to(dtype)

    if op == "softmax":
        x = rand(rows, cols)
        return lambda: torch.softmax(x, -1)
    if op == "rmsnorm":
        x, w = rand(rows, cols), rand(cols)
        eps = 1e-6
        if hasattr(torch.nn.functional, "rms_norm"):  # torch >= 2.4: what a user calls today
            return lambda: torch.nn.functional.rms_norm(x, (cols,), w, eps)
        return lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    if op == "layernorm":
        x, w, b = rand(rows, cols), rand(cols), rand(cols)
        return lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5)
    if op in ("chain", "chain_dag"):
        # The same 8 ops as the ptox programs in tensor_bench.cc, one eager kernel each.
        a, b, c = rand(rows, cols), rand(rows, cols), rand(rows, cols)

        def chain():
            t1 = a * b
            t2 = t1 + c
            t3 = t2.clamp_min(0.0)
            t4 = t3 * 0.5
            t5 = t4 - a
            t6 = t5 * c
            t7 = t6 + b
            return t7.clamp_max(4.0)

        def chain_dag():
            t1 = a * b
            t2 = t1 + c
            t3 = t2.clamp_min(0.0)
            t4 = a * 0.5
            t5 = t3 - t4
            t6 = t5 * c
            t7 = t6 + b
            return t7.clamp_max(4.0)

        return chain if op == "chain" else chain_dag
    raise ValueError("unknown op " + op)


def time_it(fn, reps, evict):
    """Median, min, max seconds and minor page faults per run (fresh output buffers); `evict`
    runs before each timed run, untimed."""
    fn()  # warm-up
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(reps):
        evict()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[0], times[-1], faults / reps


class Timer:
    """Times cases on one shape, keeping the inputs of the last case (its thread counts follow
    one another)."""

    def __init__(self, torch, rows, cols, evict_bytes):
        self.torch, self.rows, self.cols = torch, rows, cols
        self.dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
        self.junk = torch.ones(evict_bytes // 8, dtype=torch.int64)
        self.case, self.fn = None, None

    def evict(self):  # as tensor_bench's EvictCaches: a read of the whole buffer
        if self.junk.numel():
            self.junk.sum()

    def row(self, case, threads, reps):
        op, dt = case.split(":")
        if case != self.case:
            self.case, self.fn = None, None  # frees the last case's inputs first
            self.fn = make_case(self.torch, op, self.dtypes[dt], self.rows, self.cols)
            self.case = case
        self.torch.set_num_threads(threads)
        med, lo, hi, faults = time_it(self.fn, reps, self.evict)
        return {"op": op, "dtype": dt, "threads": self.torch.get_num_threads(), "median_s": med,
                "min_s": lo, "max_s": hi, "minflt_per_run": faults}


def serve(timer):
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            case, threads, reps = line.split()
            print(json.dumps(timer.row(case, int(threads), int(reps))))
        except Exception as e:  # noqa: BLE001 - reported to the caller, which stops asking
            print(json.dumps({"error": "%s: %s" % (line.strip(), e)}))
        sys.stdout.flush()


def main():
    args = parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no baseline"
        reason = {"available": False, "reason": "import torch: %s" % e}
        if args.serve:
            print(json.dumps(reason))
            return 0
        write_json(args.json, reason)
        print("torch unavailable: %s" % e)
        return 0
    rows, cols = (int(v) for v in args.shape.lower().split("x"))
    timer = Timer(torch, rows, cols, args.evict_bytes)
    if args.serve:
        print(json.dumps({"available": True, "torch": torch.__version__}))
        sys.stdout.flush()
        serve(timer)
        return 0
    threads = [int(t) for t in args.threads.split(",") if t]
    out = {"available": True, "torch": torch.__version__, "shape": [rows, cols],
           "reps": args.reps, "evict_bytes": args.evict_bytes, "rows": []}
    for case in args.cases.split(","):
        for n in threads:
            r = timer.row(case, n, args.reps)
            out["rows"].append(r)
            print("%-10s %-5s %2d threads: %8.3f ms (min %.3f, max %.3f)"
                  % (r["op"], r["dtype"], n, r["median_s"] * 1e3, r["min_s"] * 1e3,
                     r["max_s"] * 1e3))
            sys.stdout.flush()
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
