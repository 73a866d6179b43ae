#!/bin/sh
# `shardscope simulate` prints fit advice and writes it into the summary; --margin.
# Usage: advice_cli_test.sh SHARDSCOPE_BINARY   (run from the repository root)
bin="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A job that does not fit: advice printed and in the summary; --require-fit still exits 1.
job=examples/does_not_fit_qwen2.5_7b_a100_40g.json
"$bin" simulate "$job" --summary "$out/s.json" > "$out/stdout" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/stdout"; fail "does-not-fit example exit $rc (expected 0)"; }
grep -q "Fit advice: DOES NOT FIT by" "$out/stdout" || fail "no advice printed"
grep -q -- "--set training.activation_checkpoint=full" "$out/stdout" || fail "no --set flags printed"
grep -q '"advice"' "$out/s.json" || fail "summary lacks advice"
# The README's quick start says this job's cause is the backward's activations, and the 70B
# example's persistent state alone: the verdict lines name those, not the last allocation.
grep -q "DOES NOT FIT (peak in the backward: activations" "$out/stdout" ||
  fail "verdict line does not name the backward's activations"
"$bin" simulate examples/does_not_fit_hsdp_llama3_70b.json > "$out/big" 2>&1
grep -q "DOES NOT FIT (persistent state alone" "$out/big" ||
  fail "verdict line of the 70B example does not name the persistent state"
grep -q '"verdict": "does_not_fit"' "$out/s.json" || fail "summary advice lacks the verdict"
"$bin" simulate "$job" --require-fit > /dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "--require-fit on a job that does not fit exit $rc (expected 1)"

# A job that fits with room: no advice, no advice key.
"$bin" simulate examples/dense_llama3_8b.json --summary "$out/d.json" > "$out/dense" 2>&1
grep -q "Fit advice" "$out/dense" && fail "advice printed for a job with 27 GiB headroom"
grep -q '"advice"' "$out/d.json" && fail "advice key in the summary of a job with headroom"

# The same job under a margin larger than its headroom: thin-margin advice.
"$bin" simulate examples/dense_llama3_8b.json --margin 40 > "$out/thin" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "--margin 40 exit $rc"
grep -q "THIN MARGIN" "$out/thin" || fail "no thin-margin advice under --margin 40"

# Bad margin: usage error.
"$bin" simulate --margin -1 > /dev/null 2> "$out/err"
rc=$?
[ $rc -eq 2 ] || fail "--margin -1 exit $rc (expected 2)"
echo "advice CLI: all checks passed"
