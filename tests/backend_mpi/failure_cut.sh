#!/usr/bin/env bash
# A rank dies mid-step: rank 0's measured trace stops at the collective that timed out. Nothing
# that comes after it (the later reductions, the optimizer step) is there, though the lanes'
# queued work went on and its events completed (they were reported as having run).
#   failure_cut.sh SHARDSCOPE SCENARIO MPIRUN [MPIRUN_FLAGS...]
set -uo pipefail
ss=$1
scenario=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
SHARDSCOPE_TEST_EXIT_AT=1:bwd/model.layers.1/reduce_scatter timeout -k 5 120 \
  "$@" --mca orte_abort_on_non_zero_status 0 -np 2 "$ss" run "$scenario" --device cpu \
  --timeout 3 --set cluster.gpus_per_node=2 --trace "$out/e{rank}.json" >"$out/log" 2>&1
grep -q "Trace written to $out/e0.json (.* events, up to the failure)" "$out/log" ||
  { cat "$out/log"; echo "FAIL: rank 0 wrote no trace up to the failure"; exit 1; }
for later in step/optimizer bwd/root/reduce_scatter bwd/model.layers.0/reduce_scatter; do
  if grep -q "\"op_id\":\"$later\"" "$out/e0.json"; then
    cat "$out/log"
    echo "FAIL: $later, after the reduce-scatter that timed out, is in rank 0's trace"
    exit 1
  fi
done
grep -q '"op_id":"bwd/model.layers.1/compute"' "$out/e0.json" ||
  { echo "FAIL: what ran before the failure is missing from the trace"; exit 1; }
"$ss" check-trace "$out/e0.json" >/dev/null || { echo "FAIL: check-trace refuses the trace"; exit 1; }
echo "failure_cut: ok"
