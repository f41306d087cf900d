#!/usr/bin/env bash
# Quick start, command 2: set up, build (Debug, -Werror) and run the whole test suite. Each
# stage's wall time is printed at the end, also when a stage fails, so a slow run says where its
# time went. `--full` runs the Arm suite at every SVE length and every e2e test there
# (scripts/test_arm.sh --full; run it before any change to the Arm kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
arm_args=()
[ "${1:-}" = "--full" ] && arm_args=(--full)

stages=()
start=$SECONDS
report() {
  echo "test: time per stage (s)" >&2
  for s in "${stages[@]}"; do echo "  $s" >&2; done
  echo "  total $((SECONDS - start))" >&2
}
trap report EXIT
stage() {
  local name=$1 t0=$SECONDS
  shift
  echo "test: $name" >&2
  local rc=0
  "$@" || rc=$?
  stages+=("$(printf '%-8s %5d' "$name" $((SECONDS - t0)))")
  if [ "$rc" != 0 ]; then
    stages[-1]+=" (failed: exit $rc)"
    exit "$rc"
  fi
}

stage setup bash scripts/setup.sh
stage build bash -c 'cmake --preset dev >/dev/null && cmake --build --preset dev'
stage ctest ctest --preset dev -j2 --timeout 600
stage pytest bash scripts/python_test.sh
stage arm bash scripts/test_arm.sh "${arm_args[@]}"
