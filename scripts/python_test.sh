#!/usr/bin/env bash
# The Python half of the test command: installs the package into the project's virtual
# environment (.venv, made by setup.sh) and runs its pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q --no-build-isolation .  # build tools come from .venv
.venv/bin/python -m pytest -q python/tests
