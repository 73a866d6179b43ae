#!/bin/sh
# Usage: cli_test.sh SHARDSCOPE_BINARY   (run from the repository root; needs only POSIX tools)
bin="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small="--set training.local_batch=1 --set training.seq_len=2048"

# --trace / --summary named .gz are gzip (magic 1f 8b), and stats reads them back.
"$bin" simulate $small --trace "$out/t.json.gz" --summary "$out/s.json.gz" > /dev/null 2>&1 ||
  fail "simulate with .gz outputs"
for f in t.json.gz s.json.gz; do
  magic=$(od -An -tx1 -N2 "$out/$f" | tr -d ' \n')
  [ "$magic" = "1f8b" ] || fail "$f is not gzip (starts with $magic)"
done
"$bin" stats "$out/t.json.gz" > /dev/null || fail "stats cannot read the gzip trace"

# GPU names are case-insensitive.
"$bin" simulate $small --set cluster.gpu=H100-SXM > "$out/gpu" 2>&1 || {
  cat "$out/gpu"; fail "cluster.gpu=H100-SXM rejected"; }

# plan without a scenario plans the built-in default, as simulate runs it, and says so.
"$bin" plan --set parallelism.tp=2 > "$out/default_plan" 2>&1 || {
  cat "$out/default_plan"; fail "plan of the default"; }
grep -q "^No scenario given: planning the built-in default (Llama 3 8B" "$out/default_plan" ||
  fail "plan of the default does not say so: $(head -2 "$out/default_plan")"
grep -q "^<built-in default>: 8 GPUs (1 node × 8 h100-sxm), tp=2 " "$out/default_plan" ||
  fail "plan of the default: $(sed -n 2p "$out/default_plan")"

# Unknown model: did-you-mean, and the scenario file named.
printf '{"model": "llama3-8"}\n' > "$out/job.json"
"$bin" plan "$out/job.json" > "$out/model" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "unknown model exit $rc (expected 2)"
grep -q "job.json: model: unknown built-in model 'llama3-8' (did you mean" "$out/model" ||
  { cat "$out/model"; fail "unknown model error lacks the file or the suggestion"; }

"$bin" model llama3-8 > "$out/model_cmd" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "shardscope model llama3-8 exit $rc (expected 2)"
grep -q "(did you mean llama3-8b" "$out/model_cmd" || { cat "$out/model_cmd"; fail "model NAME without a suggestion"; }

# A bad --set value names the --set flag.
"$bin" plan "$out/job.json" --set model=llama3-8b --set training.local_batch=many > "$out/set" 2>&1
grep -q "(from --set training.local_batch=many)" "$out/set" ||
  { cat "$out/set"; fail "--set error does not name the flag"; }

# The error trail: only with SHARDSCOPE_ERROR_TRACE=1 for bad input, as file:line frames.
"$bin" plan "$out/job.json" 2> "$out/plain" > /dev/null
grep -q "error trail" "$out/plain" && fail "bad input shows a trail without SHARDSCOPE_ERROR_TRACE"
SHARDSCOPE_ERROR_TRACE=1 "$bin" plan "$out/job.json" 2> "$out/traced" > /dev/null
grep -Eq "^shardscope: error trail: core/[a-z_/]+\.(cpp|h):[0-9]+ <- " "$out/traced" ||
  { cat "$out/traced"; fail "SHARDSCOPE_ERROR_TRACE=1 shows no file:line trail"; }
# An output in a folder that does not exist is bad input, found before the work.
"$bin" simulate $small --summary /nonexistent-dir-shardscope/s.json > "$out/nodir" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "summary in a missing folder exit $rc (expected 2)"
grep -q "the folder '/nonexistent-dir-shardscope' does not exist" "$out/nodir" ||
  { cat "$out/nodir"; fail "missing folder not named"; }
grep -q "MFU" "$out/nodir" && fail "simulated before checking --summary"
# Every command's outputs: checked before the work, never one another or an input.
"$bin" simulate $small --trace "$out/t.json" > /dev/null 2>&1 || fail "simulate --trace"
for args in "stats $out/t.json --json $out/t.json" "diff $out/t.json $out/t.json --json $out/t.json" \
            "model llama3.2-1b --tree $out/m.json --json $out/m.json" \
            "plan examples/tied_llama3.2_1b.json --json $out/nodir/p.json" \
            "simulate $small --summary $out/s --trace $out/s"; do
  "$bin" $args > "$out/o" 2>&1
  rc=$?
  [ $rc -eq 2 ] || { cat "$out/o"; fail "$args: exit $rc (expected 2)"; }
  grep -Eq "an output would overwrite an input|the same file as|does not exist|is not a folder" "$out/o" ||
    { cat "$out/o"; fail "$args: the output is not named"; }
done
"$bin" check-trace "$out/t.json" > /dev/null 2>&1 || fail "stats --json over its input replaced it"
# A runtime error (a write that fails: /dev/full has no space) always shows the trail.
[ -c /dev/full ] || fail "no /dev/full on this machine"
"$bin" simulate $small --summary /dev/full > "$out/rt" 2>&1
rc=$?
[ $rc -eq 3 ] || fail "summary to /dev/full exit $rc (expected 3)"
[ -c /dev/full ] || fail "/dev/full was replaced"
grep -q "error trail: core/util/output_files.cpp:" "$out/rt" || { cat "$out/rt"; fail "runtime error without trail"; }
# One file for both streams: what the command printed comes before the error (stdout, fully
# buffered into a file, is flushed before the error is written).
mfu_line=$(grep -n "MFU" "$out/rt" | head -1 | cut -d: -f1)
err_line=$(grep -n "shardscope: error:" "$out/rt" | head -1 | cut -d: -f1)
[ -n "$mfu_line" ] && [ -n "$err_line" ] && [ "$mfu_line" -lt "$err_line" ] ||
  { cat "$out/rt"; fail "stdout was not flushed before the error"; }

# dp_replicate omitted is derived (planning.md §1.2); given and inconsistent, exit 2 naming both.
printf '{"model": "llama3-8b", "cluster": {"nodes": 2}, "parallelism": {"dp_shard": 4}}\n' > "$out/hsdp.json"
"$bin" plan "$out/hsdp.json" > "$out/hsdp" 2>&1 || { cat "$out/hsdp"; fail "16 GPUs, dp_shard 4 rejected"; }
grep -q "dp_replicate=4 dp_shard=4" "$out/hsdp" || fail "16 GPUs, dp_shard 4 did not derive dp_replicate 4"
"$bin" plan "$out/hsdp.json" --set parallelism.dp_replicate=2 > "$out/hsdp2" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "inconsistent dp_replicate exit $rc (expected 2)"
grep -q "parallelism.dp_replicate = 2 and parallelism.dp_shard = 4 do not fit the world size" "$out/hsdp2" ||
  { cat "$out/hsdp2"; fail "inconsistent dp_replicate error does not name both fields"; }

# With cp, plan prints the scenario's dp_shard (the sizes multiply to the world size) and the
# FSDP shard group beside it; it printed dp_shard=8 for tp 1 cp 2 on 8 GPUs.
"$bin" plan "$out/hsdp.json" --set parallelism.cp=2 --set parallelism.dp_shard=2 > "$out/cp" 2>&1 ||
  { cat "$out/cp"; fail "cp 2 rejected"; }
grep -q "16 GPUs (2 nodes × 8 h100-sxm), tp=1 cp=2 pp=1 ep=1, dp_replicate=4 dp_shard=2 (FSDP shards over dp_shard·cp = 4 ranks)" "$out/cp" ||
  { head -1 "$out/cp"; fail "plan's mesh line under cp"; }

# diff as a CI gate, on summaries.
printf '{"step_time_s": 1.0, "peak_memory_reserved_gib": 70.0, "fits": true, "comm_s": {"all_reduce": 0.0}}\n' > "$out/a.json"
printf '{"step_time_s": 0.945, "peak_memory_reserved_gib": 70.0, "fits": true, "comm_s": {"all_reduce": 1.47509}}\n' > "$out/faster.json"
printf '{"step_time_s": 1.055, "peak_memory_reserved_gib": 70.0, "fits": true}\n' > "$out/slower.json"
printf '{"step_time_s": 1.0, "peak_memory_reserved_gib": 70.5, "fits": false}\n' > "$out/nofit.json"
expect() {  # expect RC A B TOL
  "$bin" diff "$out/$2" "$out/$3" --tol "$4" > "$out/diff" 2>&1
  rc=$?
  [ $rc -eq "$1" ] || { cat "$out/diff"; fail "diff $2 $3 --tol $4: exit $rc (expected $1)"; }
}
expect 1 a.json faster.json step_time=2%
expect 0 a.json faster.json step_time=+2%
expect 1 a.json faster.json step_time=-2%
expect 1 a.json slower.json step_time=+2%
expect 0 a.json slower.json step_time=-2%
expect 0 a.json slower.json step_time=off
expect 1 a.json nofit.json peak_memory=off
expect 1 a.json nofit.json peak_memory=100%
expect 0 nofit.json a.json peak_memory=off
expect 2 a.json faster.json step_time=2
expect 2 a.json faster.json peak_memory=5ms
"$bin" diff "$out/a.json" "$out/faster.json" --tol step_time=+2% > "$out/diff" 2>&1
grep -q "comm_s.all_reduce.*new" "$out/diff" || { cat "$out/diff"; fail "a figure from 0 is not shown as new"; }
grep -q "+0.00%" "$out/diff" && grep "comm_s.all_reduce" "$out/diff" | grep -q "+0.00%" &&
  fail "comm_s.all_reduce from 0 printed as +0.00%"
"$bin" diff "$out/a.json" "$out/faster.json" --tol step_time=+2% --json "$out/d.json" > /dev/null ||
  fail "diff --json"
grep -q '"unit": "s"' "$out/d.json" || fail "summary step_time_s is not reported in s"
grep -q '"a": 1.0' "$out/d.json" || fail "step_time_s a is not 1.0 (seconds)"
grep -q '"relative": null' "$out/d.json" || fail "relative change from 0 is not null"
"$bin" diff --help > "$out/help" 2>&1
grep -q "Defaults: exposed_comm=5%,op=50us,peak_memory=1%,step_time=2%" "$out/help" ||
  { cat "$out/help"; fail "diff --help does not document the defaults"; }
echo "cli_test: ok"
