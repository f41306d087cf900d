#!/usr/bin/env python3
"""Tensor-level examples compiled for the CPU against numpy: an independent reference.

Each example (examples/tensor/*.pto) runs through `ptox run --target=cpu` on seeded inputs saved
as .npy; its outputs are compared with the same math written in numpy in float64. Tolerances
are relative to the output's scale and sized for f32 (bf16 outputs: 2^-7, two bf16 roundings).
Exit 0 when every example agrees, 1 on a mismatch, 77 (ctest: skipped) without numpy.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is not installed (scripts/setup.sh installs python3-numpy): skipped")
    sys.exit(77)


def bf16_bits(x):
    """float32 array -> bf16 bit patterns ('<u2'), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2")


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rope(x, cos, sin, interleaved):
    if interleaved:
        rot = np.empty_like(x)
        rot[..., 0::2] = -x[..., 1::2]
        rot[..., 1::2] = x[..., 0::2]
    else:
        h = x.shape[-1] // 2
        rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    return x * cos + rot * sin


def layers(x, w, g):
    for wl in w:  # the layer loop: h @ W_l^T, then RMSNorm
        m = x @ wl.T
        x = m / np.sqrt((m ** 2).mean(-1, keepdims=True) + 1e-5) * g
    return x


# name -> (dims, inputs {name: (shape, dtype)}, reference(inputs) -> {output: array}, rel tol)
CASES = {
    "blend.pto": ({"N": 37}, {"x": ((37, 128), "f32"), "h": ((37, 128), "f32"),
                              "g": ((128,), "f32")},
                  lambda t: {"y": t["x"] + (t["h"] - t["x"]) / (1 + np.exp(-t["g"]))}, 1e-6),
    "softmax.pto": ({"N": 37}, {"x": ((37, 200), "f32")},
                    lambda t: {"y": softmax(t["x"])}, 1e-5),
    "rmsnorm.pto": ({"N": 37}, {"x": ((37, 96), "bf16"), "w": ((96,), "bf16")},
                    lambda t: {"y": t["x"] / np.sqrt((t["x"] ** 2).mean(-1, keepdims=True) + 1e-6)
                               * t["w"]}, 2 ** -6),
    "layernorm.pto": ({"B": 3, "T": 21},
                      {"x": ((3, 21, 160), "f32"), "w": ((160,), "f32"), "b": ((160,), "f32")},
                      lambda t: {"y": (t["x"] - t["x"].mean(-1, keepdims=True))
                                 / np.sqrt(t["x"].var(-1, keepdims=True) + 1e-5) * t["w"]
                                 + t["b"]}, 1e-5),
    "linear_gelu.pto": ({"M": 37}, {"x": ((37, 72), "f32"), "w": ((72, 40), "f32"),
                                    "bias": ((40,), "f32")},
                        lambda t: {"y": gelu(t["x"] @ t["w"] + t["bias"])}, 1e-5),
    "swiglu_mlp.pto": ({"M": 37}, {"x": ((37, 64), "f32"), "wg": ((64, 96), "f32"),
                                   "wu": ((64, 96), "f32"), "wd": ((96, 64), "f32")},
                       lambda t: {"y": (silu(t["x"] @ t["wg"]) * (t["x"] @ t["wu"])) @ t["wd"]},
                       1e-5),
    "attention.pto": ({"S": 37}, {"q": ((37, 64), "f32"), "k": ((37, 64), "f32"),
                                  "v": ((37, 64), "f32")},
                      lambda t: {"o": softmax(t["q"] @ t["k"].T * 0.125) @ t["v"]}, 1e-5),
    "rope.pto": ({"T": 19}, {"x": ((19, 4, 64), "f32"), "cos": ((19, 1, 64), "f32"),
                             "sin": ((19, 1, 64), "f32")},
                 lambda t: {"half": rope(t["x"], t["cos"], t["sin"], False),
                            "pairs": rope(t["x"], t["cos"], t["sin"], True)}, 1e-6),
    "layers.pto": ({"T": 5}, {"x": ((5, 64), "f32"), "w": ((3, 64, 64), "f32"),
                           "g": ((64,), "f32")},
                   lambda t: {"y": layers(t["x"], t["w"], t["g"])}, 1e-5),
}


def run_case(ptox, examples, name, work, rng):
    dims, inputs, reference, rel = CASES[name]
    values, files = {}, []
    for arg, (shape, dtype) in inputs.items():  # in parameter order
        x = rng.uniform(-2, 2, size=shape).astype(np.float32)
        path = os.path.join(work, arg + ".npy")
        if dtype == "bf16":
            bits = bf16_bits(x)
            np.save(path, bits)
            values[arg] = bf16_value(bits)
        else:
            np.save(path, x)
            values[arg] = x.astype(np.float64)
        files.append(path)
    out_dir = os.path.join(work, "out")
    dims_arg = ",".join(f"{k}={v}" for k, v in dims.items())
    cmd = [ptox, "run", os.path.join(examples, name), "--target=cpu", "--dims", dims_arg,
           "--outputs", out_dir, "--inputs", *files]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{name}: ptox failed ({proc.returncode}): {proc.stderr.strip()}")
        return False
    ok = True
    for out, want in reference(values).items():
        got = np.load(os.path.join(out_dir, out + ".npy"))
        got = bf16_value(got) if got.dtype == np.uint16 else got.astype(np.float64)
        scale = np.abs(want).max() + 1e-30
        err = np.abs(got - want).max() / scale
        status = "ok" if err <= rel else "MISMATCH"
        ok &= err <= rel
        print(f"{name} %{out}: max |ptox - numpy| / max |numpy| = {err:.3g} (tol {rel:.3g}) {status}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ptox", required=True)
    ap.add_argument("--examples", required=True, help="the examples/tensor directory")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    ok = True
    for name in sorted(CASES):
        with tempfile.TemporaryDirectory() as work:
            ok &= run_case(args.ptox, args.examples, name, work, rng)
    listed = {f for f in os.listdir(args.examples) if f.endswith(".pto")}
    if listed - set(CASES):
        print(f"examples without a numpy reference: {sorted(listed - set(CASES))}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
