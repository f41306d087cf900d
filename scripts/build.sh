#!/usr/bin/env bash
# The one build command that update.sh, the other scripts and the container recipe share, so they
# cannot drift apart: install what is missing (setup.sh), configure and build the Release preset
# (build/release, the ptox CLI included), then reinstall the Python package into .venv so it
# matches the C++ just built.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/build.sh [--jobs N]"
  echo "  --jobs N  compile with N parallel jobs (default: the generator's choice)"
}

jobs=()
while (($#)); do
  case $1 in
    --jobs | --jobs=*)
      if [ "$1" = --jobs ]; then
        (($# >= 2)) || { echo "build: --jobs needs a number" >&2; usage >&2; exit 2; }
        n=$2
        shift
      else
        n=${1#--jobs=}
      fi
      if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
        echo "build: --jobs wants a positive integer, not '$n'" >&2
        usage >&2
        exit 2
      fi
      jobs=(-j "$n")
      ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release "${jobs[@]}"
.venv/bin/pip install -q --no-build-isolation .  # build tools come from .venv
