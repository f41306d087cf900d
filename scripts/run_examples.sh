#!/usr/bin/env bash
# Runs every examples/*.pto and examples/tensor/*.pto with the given ptox binary on each target; a `// ptox-run: ARGS` line
# in an example supplies its extra arguments (sizes of symbolic dims). Fails if any run fails.
set -uo pipefail
ptox=${1:?usage: run_examples.sh PTOX [TARGET...]}
shift
targets=("$@")
((${#targets[@]})) || targets=(interp cpu)
cd "$(dirname "$0")/.."
failed=0
for f in examples/*.pto examples/tensor/*.pto; do
  extra=$(sed -n 's|^// ptox-run: ||p' "$f")
  for t in "${targets[@]}"; do
    echo "== $f ($t)"
    # shellcheck disable=SC2086
    check=""
    [ "$t" = interp ] || check="--check"  # compiled targets are also compared with the interpreter
    if ! "$ptox" run "$f" --target="$t" $extra $check; then
      echo "FAILED: $f ($t)" >&2
      failed=1
    fi
  done
done
exit $failed
