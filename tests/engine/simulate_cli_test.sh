#!/bin/sh
# `shardscope simulate` end to end: outputs written, exit codes of formats.md §4.
# Usage: simulate_cli_test.sh SHARDSCOPE_BINARY   (run from the repository root)
bin="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Built-in default, summary + trace written, says which scenario it ran.
"$bin" simulate --summary "$out/s.json" --trace "$out/t.json" > "$out/stdout" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/stdout"; fail "default scenario exit $rc"; }
grep -q "built-in default" "$out/stdout" || fail "stdout does not say the built-in default ran"
grep -q "MFU" "$out/stdout" || fail "stdout has no MFU line"
grep -q '"tokens_per_s_per_gpu"' "$out/s.json" || fail "summary lacks tokens_per_s_per_gpu"
grep -q '"shardscope-trace/1"' "$out/t.json" || fail "trace lacks its format tag"
"$bin" check-trace "$out/t.json" > /dev/null || fail "check-trace rejects the predicted trace"

# A job that fits: exit 0 even with --require-fit.
"$bin" simulate --set training.local_batch=1 --set training.seq_len=2048 --require-fit > /dev/null 2>&1
rc=$?
[ $rc -eq 0 ] || fail "small job with --require-fit exit $rc (expected 0)"

# A job that cannot fit: exit 1 with --require-fit, 0 without.
big="--set cluster.gpu=a100-40g --set training.local_batch=8 --set training.activation_checkpoint=none"
"$bin" simulate $big > "$out/big" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "big job without --require-fit exit $rc (expected 0)"
grep -q "DOES NOT FIT" "$out/big" || fail "big job output does not say it does not fit"
"$bin" simulate $big --require-fit > /dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "big job with --require-fit exit $rc (expected 1)"

# A scenario file after a --set stays the scenario (one value per --set).
printf '{"model": "llama3-8b", "training": {"seq_len": 2048}}\n' > "$out/job.json"
"$bin" simulate --set training.local_batch=1 "$out/job.json" > "$out/job" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/job"; fail "scenario after --set exit $rc"; }
grep -q "built-in default" "$out/job" && fail "scenario after --set was taken as a --set value"

# Bad input: exit 2 with a message naming the problem.
"$bin" simulate "$out/missing.json" > /dev/null 2> "$out/err"
rc=$?
[ $rc -eq 2 ] || fail "missing scenario exit $rc (expected 2)"
grep -q "missing.json" "$out/err" || fail "error does not name the missing file"
"$bin" simulate --set training.local_bach=4 > /dev/null 2> "$out/err"
rc=$?
[ $rc -eq 2 ] || fail "unknown --set key exit $rc (expected 2)"
grep -q "local_bach" "$out/err" || fail "error does not name the bad key"
echo "simulate CLI: all checks passed"
