#!/usr/bin/env bash
# A pipeline's measured traces pass check-trace:
#   measured_pipeline_traces.sh SHARDSCOPE SCENARIO MPIRUN [MPIRUN FLAGS...]
# A send and the receive after it in one point-to-point group ended together, overlapping on
# their lane, so check-trace and calibrate refused every measured pipeline trace.
set -euo pipefail
shardscope=$1
scenario=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$@" -np 2 "$shardscope" run "$scenario" --device cpu --trace "$out/rank{rank}.json" > /dev/null
for r in 0 1; do
  "$shardscope" check-trace "$out/rank$r.json"
  grep -q '/send"' "$out/rank$r.json" || { echo "rank $r's trace has no send"; exit 1; }
done
echo "measured_pipeline_traces: both stages' traces check"
