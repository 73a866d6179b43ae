#!/usr/bin/env bash
# `shardscope calibrate` end to end: a fit from a trace writes a file `simulate` reads back
# (exit 0); a bad run table is exit 2 naming the file and the field; a fit whose held-out
# error gets worse is exit 1 and writes no file.
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
echo "calibrate_cli_test: ok"
