#!/usr/bin/env bash
# The Arm targets under QEMU (docs/targets.md): builds ptox for AArch64 (preset arm64, in
# build/arm64) and runs it through qemu-aarch64 against the interpreter, which runs under QEMU
# beside it. scripts/test.sh runs the CI subset; `--full` is the whole run, on demand (run it
# before any change to the Arm kernels or their code generation).
#  - CI subset: at SVE's 128-bit length the conformance catalogue (every op x dtype, the
#    disassembly checks) and the examples on cpu-sve128, cpu-sve, cpu-neon and cpu-scalar; at
#    512 bits the catalogue on cpu-sve and cpu-sve512 (the vector-length-agnostic code at a
#    second length, the one furthest from the first, and the fixed-length code at it).
#  - --full: the catalogue and every e2e test on every Arm target at 128, 256 and 512 bits.
# Needs what scripts/setup.sh installs (the cross compiler, qemu-user, arm64 libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
[ "${1:-}" = "--full" ] && full=1
cmake --preset arm64 >/dev/null
cmake --build --preset arm64 --target ptox_cli ptox_conformance_tests ptox_e2e_tests
# RuntimeCli spawns the ptox CLI, an AArch64 program the host cannot exec without QEMU;
# numpy_reference runs it from the host's Python.
lengths=(128 512)
[ "$full" = 1 ] && lengths=(128 256 512)
for bits in "${lengths[@]}"; do
  e2e=(-L e2e -E 'numpy_reference|RuntimeCli')
  only=()
  if [ "$full" = 0 ]; then
    e2e=(-R '^Examples')
    # At 512 bits: the SVE targets' catalogue alone (NEON and scalar code do not depend on it).
    [ "$bits" = 128 ] || { e2e=(); only=(-R "_cpu_sve(${bits})?\$"); }
  fi
  echo "test_arm: SVE ${bits}-bit vectors${only:+, the SVE targets only}" >&2
  export QEMU_CPU="max,sve${bits}=on" PTOX_CPU_DISABLE=""
  [ ${#only[@]} = 0 ] || export PTOX_CPU_DISABLE="neon,scalar"
  # The binaries list their tests per target, and cpu-sve<bits> exists only at that length: a
  # newer binary makes ctest list them again, under this QEMU_CPU (tests/CMakeLists.txt).
  touch build/arm64/tests/conformance/ptox_conformance_tests build/arm64/tests/ptox_e2e_tests
  ctest --preset arm64 -L conformance "${only[@]}" -j2
  [ ${#e2e[@]} = 0 ] || ctest --preset arm64 "${e2e[@]}" -j2
done
