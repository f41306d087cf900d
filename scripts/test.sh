#!/usr/bin/env bash
# Quick start, command 2: set up, build (Debug, -Werror) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset dev >/dev/null
cmake --build --preset dev
ctest --preset dev -j2
bash scripts/python_test.sh
bash scripts/test_arm.sh
