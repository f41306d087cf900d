#!/usr/bin/env bash
# `mpirun -np N ptox run` when a rank goes wrong (ctest label dist): every case must end every rank
# with a non-zero exit and a message naming the rank, within seconds (never a hang).
# Usage: cli_failures.sh MPIRUN PTOX
set -uo pipefail
mpirun=$1 ptox=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
launch=("$mpirun" --oversubscribe --allow-run-as-root)
fails=0
declare -A sums

# expect NAME PATTERN CMD...: CMD exits non-zero within 30 s and its output matches PATTERN.
expect() {
  local name=$1 pattern=$2
  shift 2
  local out rc
  out=$(timeout 30 "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL $name (exit $rc): wanted /$pattern/ in:"
    echo "$out" | head -20
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

cat >"$dir/fail.pto" <<'PTO'
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>) {
  %r = dist.rank
  %ok = arith.ne %r, 1
  arith.assert %ok {msg = "rank one gives up"}
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
}
PTO
cat >"$dir/four.pto" <<'PTO'
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
}
PTO
sed 's/tensor<4xf32>/tensor<5xf32>/g' "$dir/four.pto" >"$dir/five.pto"
cat >"$dir/skip.pto" <<'PTO'
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>) {
  %r = dist.rank
  %skip = arith.eq %r, 0
  if %skip {
  } else {
    %a = tensor.allreduce %x {op = "max"}
    tensor.store %a, %y
  }
}
PTO

expect "a failing rank ends the others (4 ranks)" "rank 1: runtime error: arith.assert .*rank one gives up" \
  "${launch[@]}" -np 4 "$ptox" run "$dir/fail.pto"
expect "mismatched shapes name both ranks" "collective mismatch: rank . passed f32 . to tensor.allreduce" \
  "${launch[@]}" -np 1 "$ptox" run "$dir/four.pto" : -np 1 "$ptox" run "$dir/five.pto"
expect "a rank that skips a collective times the others out" "not every rank reached a collective within 2000 ms" \
  env PTOX_DIST_TIMEOUT_MS=2000 "${launch[@]}" -x PTOX_DIST_TIMEOUT_MS -np 2 "$ptox" run "$dir/skip.pto"
expect "mismatched shapes on the CPU target too" "collective mismatch: rank . passed allreduce sum f32 . to dist.allreduce" \
  "${launch[@]}" -np 1 "$ptox" run "$dir/four.pto" --target=cpu : -np 1 "$ptox" run "$dir/five.pto" --target=cpu
# 320 KB: on one machine the CPU target's allreduce goes through shared memory, which the first
# one maps only after the descriptions matched; with PTOX_DIST_SHM=0 on 4 ranks it halves
# recursively, and its first round carries the descriptions to every rank and the payload to
# the partner (rank 3, the odd one, is rank 2's).
sed 's/tensor<4xf32>/tensor<80000xf32>/g' "$dir/four.pto" >"$dir/big.pto"
sed 's/tensor<4xf32>/tensor<80001xf32>/g' "$dir/four.pto" >"$dir/big1.pto"
for shm in 1 0; do
  expect "mismatched large shapes on 4 ranks (PTOX_DIST_SHM=$shm)" \
    "collective mismatch: rank . passed allreduce sum f32 .* to dist.allreduce" \
    env PTOX_DIST_SHM=$shm "${launch[@]}" -x PTOX_DIST_SHM -np 3 "$ptox" run "$dir/big.pto" \
    --target=cpu : -np 1 "$ptox" run "$dir/big1.pto" --target=cpu
done
# Once the shared memory is mapped, a rank copies its values in before the descriptions are
# checked: the second allreduce, 320 KB on rank 0 and 16 bytes on rank 1 (where every rank
# folds all the values, after one barrier), is still an error on both.
cat >"$dir/twice.pto" <<'PTO'
func @f(%x: in tensor<80000xf32>, %z: in tensor<80000xf32>, %y: out tensor<80000xf32>,
        %w: out tensor<80000xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
  %b = tensor.allreduce %z {op = "sum"}
  tensor.store %b, %w
}
PTO
sed '1s/%z: in tensor<80000xf32>/%z: in tensor<4xf32>/; 2s/tensor<80000xf32>/tensor<4xf32>/' \
  "$dir/twice.pto" >"$dir/twice1.pto"
expect "a mismatch after the shared memory is mapped" \
  "collective mismatch: rank . passed allreduce sum f32 .* to dist.allreduce" \
  "${launch[@]}" -np 1 "$ptox" run "$dir/twice.pto" --target=cpu : -np 1 "$ptox" run "$dir/twice1.pto" --target=cpu

# Once it is mapped, every collective on one machine meets the others in the shared memory, and
# checks the descriptions there: a broadcast on rank 0 against an allreduce on rank 1, and an
# allgather of 16 bytes against one of 320 KB, are errors on both.
cat >"$dir/then.pto" <<'PTO'
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>, %b: inout tensor<4xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
  dist.broadcast %b {root = 0}
}
PTO
sed 's/  dist.broadcast %b {root = 0}/  %c = tensor.allreduce %x {op = "max"}\n  tensor.store %c, %b/' \
  "$dir/then.pto" >"$dir/then1.pto"
expect "a broadcast against an allreduce after the shared memory is mapped" \
  "collective mismatch: rank . passed .*broadcast from 0 f32 4" \
  "${launch[@]}" -np 1 "$ptox" run "$dir/then.pto" --target=cpu : -np 1 "$ptox" run "$dir/then1.pto" --target=cpu
cat >"$dir/gather.pto" <<'PTO'
func @f(%x: in tensor<4xf32>, %y: out tensor<4xf32>, %z: in tensor<4xf32>, %g: out tensor<8xf32>) {
  %a = tensor.allreduce %x {op = "sum"}
  tensor.store %a, %y
  dist.allgather %g, %z
}
PTO
sed 's/%z: in tensor<4xf32>, %g: out tensor<8xf32>/%z: in tensor<80000xf32>, %g: out tensor<160000xf32>/' \
  "$dir/gather.pto" >"$dir/gather1.pto"
expect "allgathers of two sizes after the shared memory is mapped" \
  "collective mismatch: rank . passed allgather f32 .* to dist.allgather" \
  "${launch[@]}" -np 1 "$ptox" run "$dir/gather.pto" --target=cpu : -np 1 "$ptox" run "$dir/gather1.pto" --target=cpu

# And runs that work: 2 ranks, rank 0 reports, ends with OK, the same on both targets.
for target in interp cpu; do
  out=$(timeout 30 "${launch[@]}" -np 2 "$ptox" run "$dir/four.pto" --target=$target 2>&1)
  if [ $? -eq 0 ] && [ "$(grep -c '^OK$' <<<"$out")" -eq 1 ]; then echo "ok   2 ranks on $target"; else
    echo "FAIL 2 ranks on $target: $out"; fails=$((fails + 1)); fi
  sums[$target]=$(grep -o 'checksum=.*' <<<"$out")
done
if [ "${sums[interp]}" != "${sums[cpu]}" ]; then
  echo "FAIL cpu and interp differ: ${sums[interp]} vs ${sums[cpu]}"; fails=$((fails + 1)); fi
exit $((fails > 0))
