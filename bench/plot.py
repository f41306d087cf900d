#!/usr/bin/env python3
"""Plots bench/matmul_bench's JSON: GFLOP/s per shape and implementation, one panel per thread
count, with the same-run FMA peak as a line. Usage: bench/plot.py matmul_bench.json [out.png]"""
import json
import sys


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "matmul_bench.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; skipping the plot "
              "(pip install matplotlib, or apt-get install python3-matplotlib)", file=sys.stderr)
        return 0
    rows = json.load(open(src))["rows"]
    groups = ["square", "llm", "swiglu"]
    impls = ["ptox", "ptox-const", "onednn", "onednn-plain", "openblas", "eigen"]
    fig, axes = plt.subplots(1, 2, figsize=(16, 6), sharey=True)
    for ax, threads in zip(axes, (1, 2)):
        sel = [r for r in rows if r["threads"] == threads and r["group"] in groups]
        shapes = []
        for r in sel:
            key = r["group"] + " " + r["shape"]
            if key not in shapes:
                shapes.append(key)
        width = 0.8 / len(impls)
        for i, impl in enumerate(impls):
            ys = []
            for key in shapes:
                v = [r["rate"] for r in sel if r["group"] + " " + r["shape"] == key
                     and r["impl"] == impl]
                ys.append(v[0] if v else 0)
            ax.bar([x + i * width for x in range(len(shapes))], ys, width, label=impl)
        peak = [r["rate"] for r in rows if r["group"] == "ceiling" and r["unit"] == "GFLOP/s"
                and r["impl"] != "bf16-dot-loop" and r["threads"] == threads]
        if peak:
            ax.axhline(peak[0], color="k", linestyle="--", label="f32 FMA peak (same run)")
        dot = [r["rate"] for r in rows if r["group"] == "ceiling" and r["impl"] == "bf16-dot-loop"
               and r["threads"] == threads]
        if dot:  # the ceiling of the bf16 SwiGLU bars
            ax.axhline(dot[0], color="grey", linestyle=":", label="bf16 dot peak (same run)")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(shapes))])
        ax.set_xticklabels(shapes, rotation=60, ha="right", fontsize=8)
        ax.set_title(f"{threads} thread(s)")
        ax.set_ylabel("GFLOP/s")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"plot.py: wrote {dst}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
