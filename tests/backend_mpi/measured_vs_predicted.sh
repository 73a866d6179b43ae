#!/usr/bin/env bash
# A 2-rank MPI run's measured traces against the prediction for the same scenario:
#   measured_vs_predicted.sh SHARDSCOPE SCENARIO MPIRUN [MPIRUN FLAGS...]
# every rank writes its own trace and summary ({rank} paths, each {rank} in them replaced), each
# passes check-trace, and
# `diff` of `simulate`'s trace against each rank's finds no structural change (the same op_ids
# in the same lane order; a rank joins the predicted role that stands for it, a pipeline stage
# its own; timings are reported, not limited: a CPU is no H100).
set -euo pipefail
shardscope=$1
scenario=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$@" -np 2 "$shardscope" run "$scenario" --device cpu --set cluster.gpus_per_node=2 \
  --trace "$out/rank{rank}.json" --summary "$out/summary{rank}_of_rank{rank}.json"
for r in 0 1; do
  test -s "$out/rank$r.json" || { echo "rank $r wrote no trace"; exit 1; }
  test -s "$out/summary${r}_of_rank$r.json" || { echo "rank $r wrote no summary"; exit 1; }
  mv "$out/summary${r}_of_rank$r.json" "$out/summary$r.json"
done
for r in 0 1; do
  grep -q '"kind": *"measured"' "$out/summary$r.json"
  "$shardscope" check-trace "$out/rank$r.json"
done
"$shardscope" simulate "$scenario" --set cluster.gpus_per_node=2 --trace "$out/predicted.json" \
  >/dev/null
for r in 0 1; do
  # Rank 1's file joins the role that stands for it (the prediction simulates rank 0).
  "$shardscope" diff "$out/predicted.json" "$out/rank$r.json" \
    --tol step_time=off,exposed_comm=off,compute=off,peak_memory=off,op=off
done
echo "measured_vs_predicted: both ranks' traces check and have the prediction's ops"
