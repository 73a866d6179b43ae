#!/usr/bin/env bash
# Issue 14's CPU calibration check: a 4-rank CPU run (`mpirun -np 4 shardscope run --device
# cpu`), calibrated on its own measured traces, predicts a second CPU scenario's step time
# within 15%.
#   cpu_calibration_mpi.sh SHARDSCOPE MPIRUN [MPIRUN FLAGS...]
set -euo pipefail
ss=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
model="$PWD/tests/backend_mpi/scenarios/tiny_llama.config.json"
job() {  # job FILE BATCH SEQ
  cat >"$1" <<JSON
{"model": {"hf_config": "$model"},
 "cluster": {"gpu": "host-cpu", "nodes": 1, "gpus_per_node": 4},
 "training": {"local_batch": $2, "seq_len": $3, "activation_checkpoint": "none"}}
JSON
}
job "$out/a.json" 2 64
job "$out/b.json" 4 128
# Two steps each: the first warms allocators and threads; the last one is measured.
"$@" -np 4 "$ss" run "$out/a.json" --device cpu --steps 2 --trace "$out/a{rank}.json" >/dev/null
"$ss" calibrate "$out"/a[0-3].json --out "$out/cal.json"
"$@" -np 4 "$ss" run "$out/b.json" --device cpu --steps 2 --summary "$out/b{rank}.json" >/dev/null
"$ss" simulate "$out/b.json" --set cluster.cost_model="$out/cal.json" --summary "$out/pred.json" \
  >/dev/null
"$ss" simulate "$out/b.json" --summary "$out/default.json" >/dev/null
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
measured = max(json.load(open(f"{d}/b{r}.json"))["step_time_s"] for r in range(4))
pred = json.load(open(f"{d}/pred.json"))["step_time_s"]
default = json.load(open(f"{d}/default.json"))["step_time_s"]
err = pred / measured - 1
print(f"second scenario: measured {measured * 1e3:.2f} ms (slowest rank), calibrated prediction "
      f"{pred * 1e3:.2f} ms ({100 * err:+.1f}%), catalog default {default * 1e3:.2f} ms "
      f"({100 * (default / measured - 1):+.1f}%)")
sys.exit(0 if abs(err) <= 0.15 else 1)
PY
