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
# A GPU the file does not price, and a price per node: both named on stderr, the sweep runs.
echo '{"format": "shardscope-prices/1", "per_gpu_hour": {"b200": 68.4}}' > "$out/p2.json"
"$bin" sweep "$job" --vary cluster.gpu=h100-sxm,b200 --prices "$out/p2.json" > /dev/null 2> "$out/err" ||
  fail "sweep with a partial price file: $(cat "$out/err")"
grep -q "sweep: note: h100-sxm has no price in $out/p2.json: 1 fitting variant on it has no cost" "$out/err" ||
  fail "unpriced GPU note: $(cat "$out/err")"
grep -q "per_gpu_hour.b200 = 68.4 is 8 times" "$out/err" && fail "a price 8 times the built-in is named"
# b200 has no measured run in bench/validate (the catalog's validated_by): a note names it.
grep -q "sweep: note: no measured run checks the predictions for b200 (.*): weigh their rank against h100-sxm with care" "$out/err" ||
  fail "unvalidated GPU note: $(cat "$out/err")"
echo '{"format": "shardscope-prices/1", "per_gpu_hour": {"b200": 85.5}}' > "$out/p3.json"
"$bin" sweep "$job" --vary cluster.gpu=h100-sxm,b200 --prices "$out/p3.json" > /dev/null 2> "$out/err"
grep -q "per_gpu_hour.b200 = 85.5 is 10 times the built-in 8.55: a price per node" "$out/err" ||
  fail "price per node note: $(cat "$out/err")"
expect2 recommend --model llama3.2-1b --global-batch-tokens 1000

# Hostile input (a probe found each of these accepted, or crashing, before 2026-12-05).
expect2 sweep "$job" --vary parallelism.tp=1,2 --threads 20000000
grep -q -- "--threads: expected an integer from 0 to 1024, got '20000000'" "$out/err" ||
  fail "threads message: $(cat "$out/err")"
expect2 sweep "$job" --vary parallelism.tp=1,2 --vary parallelism.tp=4,8
grep -q "parallelism.tp is already an axis" "$out/err" || fail "repeated axis: $(cat "$out/err")"
expect2 sweep "$job" --vary parallelism.tp=1,1,2
grep -q "the value '1' is given twice" "$out/err" || fail "repeated value: $(cat "$out/err")"
expect2 sweep "$job" --vary parallelism.tp=abc,def
grep -q "every combination is invalid; the first (parallelism.tp=abc): .*expected an integer" \
  "$out/err" || fail "all invalid: $(cat "$out/err")"
# A value no combination accepts is refused before the run (a typo); one that parses but that
# the plan refuses everywhere runs and is named after the table.
expect2 sweep "$job" --vary parallelism.tp=1,abc
grep -q -- "--vary parallelism.tp=1,abc: value 'abc': .*expected an integer" "$out/err" ||
  fail "bad value: $(cat "$out/err")"
# A GPU the catalog lacks, or a node size the GPU's node does not have, is refused before the
# run as the simulator would refuse it (it ran and only left a note).
expect2 sweep "$job" --vary cluster.gpu=h100,b200
grep -q -- "--vary cluster.gpu=h100,b200: value 'h100': .*unknown GPU 'h100' (did you mean" "$out/err" ||
  fail "unknown GPU value: $(cat "$out/err")"
expect2 sweep "$job" --vary cluster.gpu=h100-sxm,gb200-nvl72
grep -q "gpus_per_node 8 for gb200-nvl72: expected 1..4" "$out/err" ||
  fail "GPU node size: $(cat "$out/err")"
"$bin" sweep "$job" --vary cluster.gpu=h100-sxm,gb200-nvl72 --vary cluster.gpus_per_node=4,8 \
  > /dev/null 2> "$out/err" || fail "GPUs of two node sizes with a node-size axis: $(cat "$out/err")"
"$bin" sweep "$job" --vary parallelism.tp=1,2 --vary parallelism.ep=1,2 --json "$out/ep.json" \
  > "$out/table" 2> "$out/err" || fail "ep=1,2 sweep: $(cat "$out/err")"
grep -q "sweep: note: parallelism.ep=2 was invalid in every combination; the first (parallelism.tp=1 parallelism.ep=2): .*no routed experts" \
  "$out/err" || fail "never-valid note: $(cat "$out/err")"
# The JSON carries the same notes, one string each.
grep -q '"parallelism.ep=2 was invalid in every combination; the first (parallelism.tp=1 parallelism.ep=2): .*no routed experts' \
  "$out/ep.json" || fail "never-valid note not in the JSON: $(grep -A3 notes "$out/ep.json")"
"$bin" sweep "$job" --vary parallelism.tp=1,2 --json "$out/tp.json" > /dev/null 2>&1 || fail "tp sweep"
grep -q '"notes": \[\]' "$out/tp.json" || fail "a sweep without notes: $(grep notes "$out/tp.json")"
# Counts in the right number: one combination of one axis, one variant on the Pareto front.
"$bin" sweep "$job" --vary parallelism.tp=1 > "$out/one" 2>&1 || fail "one-combination sweep: $(cat "$out/one")"
grep -q "^sweep: 1 combination of 1 axis$" "$out/one" || fail "singular on stderr: $(cat "$out/one")"
grep -q ": 1 combination; 1 fit" "$out/one" || fail "singular count: $(cat "$out/one")"
grep -q "^Pareto front (1 variant, fastest first)" "$out/one" || fail "singular front: $(cat "$out/one")"

# A variant fitting with less headroom than --margin is marked, counted and flagged in the JSON;
# a margin past the HBM makes every fitting variant thin, --margin 0 none.
"$bin" sweep "$job" --vary parallelism.tp=1,2 --margin 1000 --json "$out/thin.json" \
  --csv "$out/thin.csv" > "$out/table" 2>&1 || fail "margin sweep: $(cat "$out/table")"
grep -q "2 fit (2 with less than 1000 GiB of headroom, marked !)" "$out/table" || fail "thin count: $(cat "$out/table")"
[ "$(grep -c '[0-9]! ' "$out/table")" -eq 2 ] || fail "thin marks: $(cat "$out/table")"
grep -q '"thin": true' "$out/thin.json" || fail "thin not in the JSON"
grep -q '"margin_gib": 1000' "$out/thin.json" || fail "margin not in the JSON"
head -1 "$out/thin.csv" | grep -q ',pareto,thin$' || fail "no thin column: $(head -1 "$out/thin.csv")"
[ "$(grep -c ',true$' "$out/thin.csv")" -eq 2 ] || fail "thin in the CSV: $(cat "$out/thin.csv")"
"$bin" sweep "$job" --vary parallelism.tp=1,2 --margin 0 --csv "$out/thick.csv" > "$out/table" 2>&1 ||
  fail "margin 0 sweep"
grep -q "marked !" "$out/table" && fail "thin variants with --margin 0: $(cat "$out/table")"
[ "$(grep -c ',false$' "$out/thick.csv")" -eq 2 ] || fail "thin with --margin 0: $(cat "$out/thick.csv")"
expect2 sweep "$job" --vary parallelism.tp=1,2 --margin -1
expect2 sweep "$job" --vary parallelism.tp=1,2 --csv ''
expect2 sweep "$job" --vary parallelism.tp=1,2 --top ''
echo ORIGINAL > "$out/keep.csv"
expect2 sweep "$job" --vary parallelism.tp=1,2 --csv "$out/keep.csv" --json "$out/nodir/x.json"
grep -q -- "--json $out/nodir/x.json: the folder '$out/nodir' does not exist" "$out/err" ||
  fail "missing folder: $(cat "$out/err")"
[ "$(cat "$out/keep.csv")" = ORIGINAL ] || fail "a failed sweep replaced --csv"
expect2 sweep "$job" --vary parallelism.tp=1,2 --csv "$out/same" --json "$out/same"
grep -q "the same file as --csv" "$out/err" || fail "colliding outputs: $(cat "$out/err")"
cp "$job" "$out/job.json"
expect2 sweep "$out/job.json" --vary parallelism.tp=1,2 --csv "$out/job.json"
grep -q "is the scenario" "$out/err" || fail "output over input: $(cat "$out/err")"
cmp -s "$job" "$out/job.json" || fail "the scenario was overwritten"
SHARDSCOPE_MAX_SCHEDULE_OPS=abc "$bin" sweep "$job" --vary parallelism.tp=1,2 > "$out/err" 2>&1
[ $? -eq 2 ] && grep -q "SHARDSCOPE_MAX_SCHEDULE_OPS=abc: expected a positive integer" "$out/err" ||
  fail "bad limit variable: $(cat "$out/err")"
# A device is written in place, not replaced by a regular file.
"$bin" sweep "$job" --vary parallelism.tp=1,2 --json /dev/null > /dev/null 2>&1 ||
  fail "--json /dev/null exit $?"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
"$bin" sweep "$job" --vary parallelism.tp=1,2 --json /dev/stdout 2> /dev/null |
  grep -q '"format": "shardscope-sweep/1"' || fail "--json /dev/stdout did not reach stdout"
expect2 recommend --model llama3.2-1b --global-batch-tokens 32768 --seq-len 2048 --budget-per-hour -1
grep -q -- "--budget-per-hour: expected a number > 0, got -1" "$out/err" ||
  fail "budget message: $(cat "$out/err")"
expect2 recommend --model llama3.2-1b --global-batch-tokens 137216 --seq-len 2048 --max-gpus 8
grep -q "67 sequences of 2048 tokens cannot be split" "$out/err" || fail "prime batch: $(cat "$out/err")"
expect2 recommend --model llama3.2-1b --global-batch-tokens 32768 --seq-len 2048 --gpu h100-sxm,,b200
grep -q -- "--gpu: an empty name" "$out/err" || fail "empty --gpu item: $(cat "$out/err")"
expect2 recommend --model llama3.2-1b --global-batch-tokens 99999999999999999999
grep -q "got '99999999999999999999'" "$out/err" || fail "overflow message: $(cat "$out/err")"
# Every plan stopped by the state alone: the advice is more GPUs or more memory, not a margin
# (it said "lower --margin", which cannot help).
"$bin" recommend --model llama3-70b --global-batch-tokens 4194304 --max-gpus 8 > /dev/null 2> "$out/err"
[ $? -eq 1 ] || fail "70B on 8 GPUs: exit $? (expected 1)"
grep -q "AdamW's two moments alone .*raise --max-gpus" "$out/err" && ! grep -q -- "--margin," "$out/err" ||
  fail "state-bound message: $(cat "$out/err")"
# --cost-model: a calibration for the GPU it was fitted on; the plans name it and simulate as
# printed. One fitted on a GPU the search does not cover is exit 2.
echo '{"fitted_on": "h100-sxm", "compute": {"gemm_efficiency": 0.5}}' > "$out/cal.json"
"$bin" recommend --model llama3.2-1b --global-batch-tokens 32768 --seq-len 2048 --max-gpus 8 \
  --top 1 --cost-model "$out/cal.json" --scenarios "$out/calplans" > "$out/calrec" 2> "$out/err" ||
  fail "recommend --cost-model: $(cat "$out/err")"
grep -q '"cost_model": ".*/cal.json"' "$out/calplans/plan_1.json" ||
  fail "the plan does not name its calibration: $(cat "$out/calplans/plan_1.json")"
want=$(awk '$1 == "1" {print $3; exit}' "$out/calrec")
got=$("$bin" simulate "$out/calplans/plan_1.json" | awk '/tokens\/s\/GPU/ {print $2; exit}')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "calibrated plan: recommend $want, simulate $got tokens/s/GPU"
expect2 recommend --model llama3.2-1b --global-batch-tokens 32768 --seq-len 2048 --gpu b200 \
  --cost-model "$out/cal.json"
grep -q -- "--cost-model $out/cal.json: fitted on h100-sxm, which --gpu (b200) does not search" "$out/err" ||
  fail "calibration for another GPU: $(cat "$out/err")"
# Node counts beyond powers of two: one GB200 NVL72 rack is 18 trays (it searched 16 and 32).
# --json writes the plans (shardscope-recommend/1). The two-layer Llama: 1.3 s here, where
# Llama 3.2 1B took 10 s of the script's 25.
"$bin" recommend --model tests/backend_mpi/scenarios/tiny_llama.config.json \
  --global-batch-tokens 73728 --seq-len 256 \
  --gpu gb200-nvl72 --max-gpus 72 --top 1 --json "$out/rec.json" > "$out/rec" 2> "$out/err" ||
  fail "recommend on one GB200 rack: $(cat "$out/err")"
grep -q "gpu=gb200-nvl72 nodes=18 " "$out/rec" || fail "no plan on 18 trays: $(cat "$out/rec")"
grep -q '"format": "shardscope-recommend/1"' "$out/rec.json" || fail "recommend --json: $(head -3 "$out/rec.json")"
grep -q '"nodes": 18' "$out/rec.json" || fail "recommend --json lacks the plan's scenario"
# The table's first variant as a command that reproduces it.
"$bin" sweep "$job" --set training.seq_len=4096 --vary training.local_batch=1,2 \
  --vary training.activation_checkpoint=none,selective_op:2 > "$out/repro" 2> "$out/err" ||
  fail "sweep for the repro line: $(cat "$out/err")"
cmd=$(sed -n 's/^Rank 1 on its own: shardscope //p' "$out/repro")
[ -n "$cmd" ] || fail "no repro line: $(cat "$out/repro")"
want=$(awk '$1 == "1" {print $3; exit}' "$out/repro")
got=$(eval "\"\$bin\" $cmd" | awk '/tokens\/s\/GPU/ {print $2; exit}')
[ "$want" = "$got" ] || fail "repro line '$cmd': sweep $want, simulate $got tokens/s/GPU"
# Without a scenario, the built-in default as `simulate` runs it: said on stderr (the JSON may be
# stdout), named in the outputs, and its repro line names no file.
"$bin" sweep --set training.seq_len=4096 --vary training.activation_checkpoint=none,full \
  --json "$out/default.json" > "$out/default" 2> "$out/default_err" ||
  fail "sweep of the default: $(cat "$out/default_err")"
grep -q "^sweep: no scenario given: varying the built-in default (Llama 3 8B" "$out/default_err" ||
  fail "no note of the default on stderr: $(cat "$out/default_err")"
grep -q "^Sweep of <built-in default>: 2 combinations" "$out/default" ||
  fail "default sweep's table: $(head -2 "$out/default")"
grep -q '"scenario": "<built-in default>"' "$out/default.json" || fail "default sweep's JSON"
cmd=$(sed -n 's/^Rank 1 on its own: shardscope //p' "$out/default")
case "$cmd" in simulate\ --set*) ;; *) fail "default repro line names a file: '$cmd'" ;; esac
want=$(awk '$1 == "1" {print $3; exit}' "$out/default")
got=$(eval "\"\$bin\" $cmd" | awk '/tokens\/s\/GPU/ {print $2; exit}')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "default repro '$cmd': sweep $want, simulate $got"
# --progress into a file: a line per tenth of the work, ending at the total the first line of
# the output counts (it wrote one line of carriage-return redraws, ending at 12 short).
"$bin" recommend --model llama3.2-1b --global-batch-tokens 32768 --seq-len 2048 --max-gpus 8 \
  --top 1 --progress > "$out/prog_out" 2> "$out/prog" || fail "recommend --progress"
tr -d '\n' < "$out/prog" | grep -q "$(printf '\r')" && fail "carriage returns in a log: $(od -c "$out/prog" | head -3)"
lines=$(wc -l < "$out/prog")
[ "$lines" -ge 1 ] && [ "$lines" -le 11 ] || fail "recommend --progress wrote $lines lines"
searched=$(sed -n 's/^Searched \([0-9]*\) plans.*/\1/p' "$out/prog_out")
tail -1 "$out/prog" | grep -q " $searched/$searched 100.0%" ||
  fail "progress ends at $(tail -1 "$out/prog"), the output searched $searched"
# A config.json path is a model too (it used to be read as a built-in name).
"$bin" recommend --model tests/backend_mpi/scenarios/tiny_llama.config.json --seq-len 256 \
  --global-batch-tokens 2048 --max-gpus 8 --top 1 --scenarios "$out/cfg" > "$out/err" 2>&1 ||
  fail "recommend --model config.json: $(cat "$out/err")"
grep -q '"hf_config": ".*tiny_llama.config.json"' "$out/cfg/plan_1.json" ||
  fail "plan_1 does not name the config: $(head -5 "$out/cfg/plan_1.json")"

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
# The folder reused: files of an earlier run that this one did not write are named, not removed.
echo '{}' > "$out/plans/plan_12.json"
echo '{}' > "$out/plans/plan_b200.json"
"$bin" recommend --model llama3.2-1b --seq-len 2048 --global-batch-tokens 8192 --max-gpus 8 \
  --top 1 --scenarios "$out/plans" > "$out/rec2.txt" 2> /dev/null || fail "recommend again exit $?"
grep -q "also holds plan_12.json, plan_b200.json from an earlier run" "$out/rec2.txt" ||
  fail "stale files: $(grep note "$out/rec2.txt")"
[ -f "$out/plans/plan_b200.json" ] || fail "an earlier run's file was removed"
echo "sweep_cli_test: ok"
