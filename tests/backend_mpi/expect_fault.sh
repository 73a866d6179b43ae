#!/usr/bin/env bash
# Runs a command that must fail (an MPI fault scenario) and checks how:
#   expect_fault.sh [--any-exit] MAX_SECONDS REGEX [REGEX ...] -- COMMAND ...
# Passes when COMMAND exits non-zero within MAX_SECONDS (it is killed at twice that: a hang
# fails) and its output (stdout + stderr) matches every REGEX (grep -E). --any-exit accepts
# exit 0 too: mpirun told not to abort on a rank's failure returns 0 whatever its ranks did.
set -uo pipefail
any_exit=0
if [[ $1 == "--any-exit" ]]; then
  any_exit=1
  shift
fi
max_s=$1
shift
patterns=()
while [[ $# -gt 0 && $1 != "--" ]]; do
  patterns+=("$1")
  shift
done
shift
start_ms=$(($(date +%s%N) / 1000000))
out=$(timeout -k 5 $((max_s * 2)) "$@" 2>&1)
rc=$?
elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
echo "$out"
echo "expect_fault: exit $rc after ${elapsed_ms} ms (limit ${max_s} s)"
fail=0
if [[ $rc -eq 0 && $any_exit -eq 0 ]]; then
  echo "expect_fault: FAIL: the command succeeded"
  fail=1
fi
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "expect_fault: FAIL: the command hung and was killed"
  fail=1
fi
if ((elapsed_ms > max_s * 1000)); then
  echo "expect_fault: FAIL: took longer than ${max_s} s"
  fail=1
fi
for p in "${patterns[@]}"; do
  if ! grep -Eq -- "$p" <<<"$out"; then
    echo "expect_fault: FAIL: no line matches: $p"
    fail=1
  fi
done
exit $fail
