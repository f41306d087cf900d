#!/usr/bin/env bash
# The Arm targets under QEMU (docs/targets.md): builds ptox for AArch64 (preset arm64, in
# build/arm64) and runs it through qemu-aarch64 against the interpreter, which runs under QEMU
# beside it. scripts/test.sh runs the CI subset; `--full` is the whole run, on demand (run it
# before any change to the Arm kernels or their code generation).
#  - CI subset: at SVE's 128-bit length, the conformance catalogue (every op x dtype, the
#    disassembly checks) on cpu-sve128, cpu-sve and cpu-neon, and the examples on every Arm
#    target. cpu-scalar's catalogue (the code x86's cpu-scalar runs, built by the cross
#    compiler) is left to --full.
#  - --full: the catalogue and every e2e test on every Arm target at 128, 256 and 512 bits (the
#    vector-length-agnostic code at other lengths, and cpu-sve256 / cpu-sve512).
# Needs what scripts/setup.sh installs (the cross compiler, qemu-user, arm64 libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
[ "${1:-}" = "--full" ] && full=1
cmake --preset arm64 >/dev/null
# The CI subset needs the conformance and examples binaries only; --full also the CLI and e2e.
# RuntimeCli spawns the ptox CLI, an AArch64 program the host cannot exec without QEMU;
# numpy_reference runs it from the host's Python.
binaries=(ptox_conformance_tests ptox_examples_tests)
lengths=(128)
catalogue=(-E 'cpu_scalar')
e2e=(-R '^Examples')
if [ "$full" = 1 ]; then
  binaries+=(ptox_cli ptox_e2e_tests)
  lengths=(128 256 512)
  catalogue=()
  e2e=(-L e2e -E 'numpy_reference|RuntimeCli')
fi
cmake --build --preset arm64 --target "${binaries[@]}"
for bits in "${lengths[@]}"; do
  echo "test_arm: SVE ${bits}-bit vectors" >&2
  export QEMU_CPU="max,sve${bits}=on"
  # The binaries list their tests per target, and cpu-sve<bits> exists only at that length: a
  # newer binary makes ctest list them again, under this QEMU_CPU (tests/CMakeLists.txt).
  touch -c build/arm64/tests/conformance/ptox_conformance_tests build/arm64/tests/ptox_examples_tests \
    build/arm64/tests/ptox_e2e_tests
  ctest --preset arm64 -L conformance "${catalogue[@]}" -j2
  ctest --preset arm64 "${e2e[@]}" -j2
done
