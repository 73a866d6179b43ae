#!/usr/bin/env bash
# `shardscope calibrate` end to end: a fit from a trace writes a file `simulate` reads back
# (exit 0); a bad run table is exit 2 naming the file and the field; a fit whose held-out
# error gets worse is exit 1 and writes no file; output paths are checked before the work,
# may not collide with each other or an input, and are written all or none; with several GPU
# types a failed GPU's file is left as it was while the others are written, and both the
# output and the --json report say which.
#   calibrate_cli_test.sh SHARDSCOPE
set -euo pipefail
ss=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/job.json" <<'JSON'
{"model": {"hf_config": "REPO/tests/backend_mpi/scenarios/tiny_llama.config.json"},
 "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": 2},
 "training": {"local_batch": 2, "seq_len": 256, "activation_checkpoint": "none"}}
JSON
sed -i "s#REPO#$PWD#" "$out/job.json"
echo '{"compute": {"kernel_overhead_us": 3.1, "unit_overhead_us": 45}}' >"$out/truth.json"

# 1. A trace made with other figures: calibrate fits them and writes a file simulate reads.
"$ss" simulate "$out/job.json" --set cluster.cost_model="$out/truth.json" \
  --trace "$out/measured.json" >/dev/null
"$ss" calibrate "$out/measured.json" --out "$out/cal.json" --json "$out/report.json" \
  | tee "$out/log.txt"
grep -q "compute.kernel_overhead_us" "$out/log.txt"
grep -q "Calibration written to $out/cal.json" "$out/log.txt"
"$ss" simulate "$out/job.json" --set cluster.cost_model="$out/cal.json" >/dev/null

# 2. Bad input: exit 2 naming the file and the field.
cat >"$out/bad.json" <<JSON
{"format": "shardscope-runs/1", "runs": [{"id": "a", "scenario": "job.json",
  "measured": {"step_time_s": "slow"}}]}
JSON
set +e
msg=$("$ss" calibrate "$out/bad.json" --out "$out/x.json" 2>&1)
rc=$?
set -e
echo "$msg"
[[ $rc -eq 2 ]] || { echo "bad input: exit $rc, expected 2"; exit 1; }
[[ $msg == *"$out/bad.json: runs[0] (id \"a\").measured.step_time_s: expected a number"* ]]
# A negative timing floor is a usage error naming the flag and what it takes.
set +e
msg=$("$ss" calibrate "$out/bad.json" --out "$out/x.json" --timing-floor-us -5 2>&1)
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "--timing-floor-us -5: exit $rc, expected 2"; exit 1; }
[[ $msg == *"--timing-floor-us: expected a number >= 0, got -5"* ]] || { echo "$msg"; exit 1; }

# 3. Four runs as predicted and one three times slower: the held-out error gets worse.
"$ss" simulate "$out/job.json" --summary "$out/summary.json" >/dev/null
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/summary.json"))["step_time_s"]
runs = [{"id": f"r{i}", "scenario": "job.json", "measured": {"step_time_s": t * f}}
        for i, f in enumerate([1, 1, 1, 1, 3])]
json.dump({"format": "shardscope-runs/1", "runs": runs}, open(d + "/runs.json", "w"))
PY
set +e
"$ss" calibrate "$out/runs.json" --out "$out/worse.json" >"$out/worse.txt" 2>&1
rc=$?
set -e
cat "$out/worse.txt"
[[ $rc -eq 1 ]] || { echo "held-out worse: exit $rc, expected 1"; exit 1; }
grep -q "worse than the catalog defaults" "$out/worse.txt"
[[ ! -e "$out/worse.json" ]] || { echo "a worse calibration was written"; exit 1; }

expect_exit() {  # CODE TEXT ARGS...: calibrate ARGS exits CODE and says TEXT
  local code=$1 text=$2
  shift 2
  set +e
  msg=$("$ss" calibrate "$@" 2>&1)
  local rc=$?
  set -e
  [[ $rc -eq $code ]] || { echo "calibrate $*: exit $rc, expected $code: $msg"; exit 1; }
  [[ $msg == *"$text"* ]] || { echo "calibrate $*: expected '$text' in: $msg"; exit 1; }
}

# 4. Output paths are checked before the inputs are read: the missing input is never reached.
expect_exit 2 "--out $out/nodir/cal.json: the folder" "$out/missing.json" --out "$out/nodir/cal.json"
expect_exit 2 "--json $out: is a directory" "$out/missing.json" --out "$out/c.json" --json "$out"
expect_exit 2 "--json: empty path" "$out/missing.json" --out "$out/c.json" --json ''
# ... nor may they name one file twice or an input (the table, or a scenario it reads).
expect_exit 2 "--json $out/same.json: the same file as --out $out/same.json" \
  "$out/measured.json" --out "$out/same.json" --json "$out/same.json"
cp "$out/runs.json" "$out/keep_runs.json"
expect_exit 2 "--out $out/runs.json: is the input $out/runs.json" "$out/runs.json" --out "$out/runs.json"
cmp -s "$out/runs.json" "$out/keep_runs.json" || { echo "the input was overwritten"; exit 1; }
expect_exit 2 "--out $out/job.json: is the $out/runs.json: runs[0] (id \"r0\") scenario" \
  "$out/runs.json" --out "$out/job.json"
# An input named twice would count twice, whatever the spelling of its path.
expect_exit 2 "calibrate: input 2 $out/./measured.json: the same file as input 1 $out/measured.json" \
  "$out/measured.json" "$out/./measured.json" --out "$out/c.json"
# A report that cannot be written leaves the calibration file as it was (all or none).
echo ORIGINAL >"$out/keep.json"
expect_exit 2 "--json $out/nodir/r.json" "$out/measured.json" --out "$out/keep.json" \
  --json "$out/nodir/r.json"
[[ $(cat "$out/keep.json") == ORIGINAL ]] || { echo "keep.json replaced by a failed run"; exit 1; }

# 5. Two GPU types, the H100's fit not better than the defaults (exit 1): the A100's file is
# written, the H100's old one left as it was, and the output and the report say which.
"$ss" simulate "$out/job.json" --set cluster.gpu=a100-80g --summary "$out/a100.json" >/dev/null
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/summary.json"))["step_time_s"]
ta = json.load(open(d + "/a100.json"))["step_time_s"]
job = json.load(open(d + "/job.json"))
a100 = dict(job, cluster=dict(job["cluster"], gpu="a100-80g"))
runs = [{"id": f"h{i}", "scenario": "job.json", "measured": {"step_time_s": t * f}}
        for i, f in enumerate([1, 1, 1, 1, 3])]
runs += [{"id": f"a{i}", "scenario": a100, "measured": {"step_time_s": ta * f}}
         for i, f in enumerate([1.5, 1.55])]
json.dump({"format": "shardscope-runs/1", "runs": runs}, open(d + "/mixed.json", "w"))
PY
echo ORIGINAL >"$out/mixed_cal.h100-sxm.json"
set +e
"$ss" calibrate "$out/mixed.json" --out "$out/mixed_cal.json" --json "$out/mixed_report.json" \
  >"$out/mixed.txt" 2>&1
rc=$?
set -e
cat "$out/mixed.txt"
[[ $rc -eq 1 ]] || { echo "one GPU's fit failed: exit $rc, expected 1"; exit 1; }
[[ $(cat "$out/mixed_cal.h100-sxm.json") == ORIGINAL ]] || { echo "h100 file replaced"; exit 1; }
"$ss" simulate "$out/job.json" --set cluster.gpu=a100-80g \
  --set cluster.cost_model="$out/mixed_cal.a100-80g.json" >/dev/null
grep -q "Not written: $out/mixed_cal.h100-sxm.json (left as it was); written: $out/mixed_cal.a100-80g.json" \
  "$out/mixed.txt"
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
g = {x["gpu"]: x for x in json.load(open(d + "/mixed_report.json"))["gpus"]}
assert g["a100-80g"]["written"] and g["a100-80g"]["file"] == d + "/mixed_cal.a100-80g.json", g
assert not g["h100-sxm"]["written"] and g["h100-sxm"]["file"] is None, g["h100-sxm"]
assert g["h100-sxm"]["not_written_because"], g["h100-sxm"]
PY
# A per-GPU file may not be an input either: checked before the fit.
cp "$out/mixed.json" "$out/mixed_cal.a100-80g.json"
expect_exit 2 "--out (a100-80g) $out/mixed_cal.a100-80g.json: is the input" \
  "$out/mixed_cal.a100-80g.json" --out "$out/mixed_cal.json"

# 6. The ranks of one run (metadata.run_id) join: one rank twice, or traces of two different
# jobs under one id, is exit 2 naming both files (each operation counted twice before, or
# timed by the other job's). An operation of zero duration is left out and said.
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/measured.json"))
t["metadata"]["run_id"] = "run-qa"
t["metadata"]["kind"] = "measured"
json.dump(t, open(d + "/r0.json", "w"))
json.dump(t, open(d + "/r0copy.json", "w"))
other = json.loads(json.dumps(t))
other["metadata"]["scenario"]["training"]["local_batch"] = 4
json.dump(other, open(d + "/r0other.json", "w"))
zero = json.loads(json.dumps(t))
del zero["metadata"]["run_id"]
x = [e for e in zero["traceEvents"] if e.get("ph") == "X" and e.get("args", {}).get("op_id")]
x[0]["dur"] = 0
json.dump(zero, open(d + "/zero.json", "w"))
PY
expect_exit 2 "$out/r0copy.json: rank 0 of run run-qa is already in $out/r0.json" \
  "$out/r0.json" "$out/r0copy.json" --out "$out/c.json"
expect_exit 2 "$out/r0other.json: metadata.scenario: not the scenario of $out/r0.json" \
  "$out/r0.json" "$out/r0other.json" --out "$out/c.json"
"$ss" calibrate "$out/zero.json" --out "$out/zero_cal.json" --json "$out/zero_report.json" \
  >"$out/zero.txt" 2>&1 || true
zero_note="1 operation with an op_id and a zero duration (under 1 ns) left out"
grep -q "$out/zero.json rank 0: $zero_note" "$out/zero.txt" \
  || { cat "$out/zero.txt"; echo "no note of the zero-duration operation"; exit 1; }
# Held out nothing (fewer than two folds): the report's held-out errors are null, not 0%.
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
for name in ("report", "zero_report"):
    for g in json.load(open(f"{d}/{name}.json"))["gpus"]:
        for key in ("cv_before", "cv_after"):
            if g["folds"] < 2:
                assert g[key] is None, (name, key, g[key])
            else:
                assert g[key]["count"] > 0, (name, key, g[key])
PY
# A CSV run table as spreadsheets write it (a byte-order mark first) reads as without one; a
# scenario path with a NUL byte is refused, not read up to the NUL.
printf '\xef\xbb\xbfid,scenario,step_time_s\nb1,job.json,0.0014\n' >"$out/bom.csv"
"$ss" calibrate "$out/bom.csv" --out "$out/bom_cal.json" >"$out/bom.txt" 2>&1 || true
if grep -q "unknown (expected id" "$out/bom.txt"; then
  cat "$out/bom.txt"; echo "the byte-order mark was read as part of a column name"; exit 1
fi
printf '{"format": "shardscope-runs/1", "runs": [{"id": "n", "scenario": "job.json\\u0000x",
  "measured": {"step_time_s": 0.0014}}]}' >"$out/nul.json"
expect_exit 2 'job.json\0x: a file name with a NUL byte in it' "$out/nul.json" --out "$out/c.json"
echo "calibrate_cli_test: ok"
