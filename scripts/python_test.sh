#!/usr/bin/env bash
# The Python half of the test command: installs the package into the project's virtual
# environment (.venv, made by setup.sh) and runs its pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q --no-build-isolation .  # build tools come from .venv
# Two workers (pytest-xdist): most of a test's time is one g++ compile of a generated kernel.
.venv/bin/python -m pytest -q -n 2 --durations=25 python/tests
