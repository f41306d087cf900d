#!/usr/bin/env bash
# The Arm targets under QEMU (docs/targets.md): builds ptox for AArch64 (preset arm64, in
# build/arm64) and runs it through qemu-aarch64 against the interpreter, which runs under QEMU
# beside it. scripts/test.sh runs the CI subset; `--full` is the whole run, on demand.
#  - CI subset: the conformance catalogue (every op x dtype, the disassembly checks) and the
#    examples on cpu-sve, cpu-neon and cpu-scalar at SVE's 128-bit length, then on cpu-sve alone
#    at 256 and 512 bits.
#  - --full: every e2e test too, on every Arm target at every length.
# Needs what scripts/setup.sh installs (the cross compiler, qemu-user, arm64 libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
[ "${1:-}" = "--full" ] && full=1
cmake --preset arm64 >/dev/null
cmake --build --preset arm64 --target ptox_cli ptox_conformance_tests ptox_e2e_tests
# RuntimeCli spawns the ptox CLI, an AArch64 program the host cannot exec without QEMU;
# numpy_reference runs it from the host's Python.
e2e=(-L e2e -E 'numpy_reference|RuntimeCli')
[ "$full" = 1 ] || e2e=(-R '^Examples')
for bits in 128 256 512; do
  only=()  # other lengths in the subset: cpu-sve alone (the others do not depend on the length)
  [ "$bits" = 128 ] || [ "$full" = 1 ] || only=(-E 'cpu_neon|cpu_scalar')
  disable=""
  [ ${#only[@]} = 0 ] || disable="neon,scalar"
  echo "test_arm: SVE ${bits}-bit vectors${disable:+, cpu-sve only}" >&2
  export QEMU_CPU="max,sve${bits}=on" PTOX_CPU_DISABLE="$disable"
  ctest --preset arm64 -L conformance "${only[@]}" -j2
  ctest --preset arm64 "${e2e[@]}" "${only[@]}" -j2
done
