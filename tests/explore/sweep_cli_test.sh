#!/bin/sh
# `shardscope sweep` / `recommend` from the command line: exit 2 naming the flag on bad input,
# the same bytes on 1 and 4 threads, files written, a recommended scenario that simulates.
# Usage: sweep_cli_test.sh SHARDSCOPE_BINARY   (run from the repository root)
bin="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
job=examples/dense_llama3_8b.json

# Bad ranges and paths: exit 2, the message names --vary and the token.
expect2() {
  "$bin" "$@" > "$out/err" 2>&1
  rc=$?
  [ $rc -eq 2 ] || { cat "$out/err"; fail "$* exit $rc (expected 2)"; }
}
expect2 sweep "$job" --vary cluster.nodes=1..64:x1
grep -q -- "--vary cluster.nodes=1..64:x1: range '1..64:x1'" "$out/err" || fail "x1 message: $(cat "$out/err")"
expect2 sweep "$job" --vary cluster.nodes=8..2
grep -q -- "--vary cluster.nodes=8..2" "$out/err" || fail "8..2 message: $(cat "$out/err")"
expect2 sweep "$job" --vary cluster.nodez=1,2
grep -q "did you mean cluster.nodes" "$out/err" || fail "nodez message: $(cat "$out/err")"
expect2 sweep "$job" --vary parallelism.tp=1,2 --objective speed
grep -q -- "--objective speed" "$out/err" || fail "objective message: $(cat "$out/err")"
expect2 sweep "$job"
echo '{"format": "shardscope-prices/1", "per_gpu_hour": {"h100": 2}}' > "$out/p.json"
expect2 sweep "$job" --vary parallelism.tp=1,2 --prices "$out/p.json"
grep -q "per_gpu_hour.h100: not a catalog GPU" "$out/err" || fail "prices message: $(cat "$out/err")"
expect2 recommend --model llama3.2-1b --global-batch-tokens 1000

# Same bytes whatever the thread count: table, CSV and JSON.
for t in 1 4; do
  "$bin" sweep "$job" --vary parallelism.tp=1,2 --vary training.activation_checkpoint=none,full \
    --vary cluster.nodes=1..2:x2 --threads $t --csv "$out/t$t.csv" --json "$out/t$t.json" \
    > "$out/t$t.txt" 2> /dev/null || fail "sweep --threads $t exit $?"
done
sed -i 's/t[14]\.\(csv\|json\)/tX.\1/' "$out/t1.txt" "$out/t4.txt"
cmp -s "$out/t1.txt" "$out/t4.txt" || fail "table differs between 1 and 4 threads"
cmp -s "$out/t1.csv" "$out/t4.csv" || fail "CSV differs between 1 and 4 threads"
cmp -s "$out/t1.json" "$out/t4.json" || fail "JSON differs between 1 and 4 threads"
grep -q '"format": "shardscope-sweep/1"' "$out/t1.json" || fail "JSON format key"
grep -q '^rank,parallelism.tp,training.activation_checkpoint,cluster.nodes,gpu' "$out/t1.csv" ||
  fail "CSV header: $(head -1 "$out/t1.csv")"
grep -q "8 combinations; 8 fit" "$out/t1.txt" || fail "counts: $(head -1 "$out/t1.txt")"

# recommend writes scenarios that simulate as reported.
"$bin" recommend --model llama3.2-1b --seq-len 2048 --global-batch-tokens 8192 --max-gpus 8 \
  --top 1 --scenarios "$out/plans" > "$out/rec.txt" 2> /dev/null || fail "recommend exit $?"
[ -f "$out/plans/plan_1.json" ] || fail "no plan_1.json"
grep -q "bound by" "$out/rec.txt" || fail "no bound printed"
"$bin" simulate "$out/plans/plan_1.json" --require-fit > /dev/null 2>&1 || fail "plan_1 does not simulate"
echo "sweep_cli_test: ok"
