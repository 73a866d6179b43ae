#!/usr/bin/env bash
# `sweep` under mpirun: the combinations split over the ranks and gathered on rank 0 give the
# same output, byte for byte (table, CSV, JSON), as one process; the other ranks print nothing;
# variants differing only in the GPU stay on one rank; an error is said once.
#   sweep_mpi_test.sh SHARDSCOPE MPIRUN [MPIRUN FLAGS...]
set -euo pipefail
ss=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/job.json" <<JSON
{"model": {"hf_config": "$PWD/tests/backend_mpi/scenarios/tiny_llama.config.json"},
 "cluster": {"gpu": "h100-sxm", "nodes": 1, "gpus_per_node": 4},
 "training": {"local_batch": 1, "seq_len": 256, "activation_checkpoint": "none"}}
JSON
# 15 combinations over 4 ranks (4, 4, 4 and 3 each), a few invalid ones (tp 4: the model has
# 2 KV heads).
axes=(--vary training.seq_len=128,256,512,1024,2048 --vary parallelism.tp=1,2,4 --vary training.local_batch=1
      --vary fsdp.reshard_after_forward=true)
mkdir "$out/one" "$out/np4"
(cd "$out/one" && "$ss" sweep ../job.json "${axes[@]}" --vary cluster.nodes=1 --top 0 \
   --csv s.csv --json s.json >table.txt)
(cd "$out/np4" && "$@" -np 4 "$ss" sweep ../job.json "${axes[@]}" --vary cluster.nodes=1 \
   --top 0 --csv s.csv --json s.json >table.txt 2>split.txt)
cat "$out/np4/split.txt"
grep -q "rank 3 of 4 simulates 3 of the 15 combinations" "$out/np4/split.txt"
for f in table.txt s.csv s.json; do
  cmp "$out/one/$f" "$out/np4/$f" || { diff "$out/one/$f" "$out/np4/$f" | head -20; exit 1; }
done
# The GPU axis last: one mesh's two GPUs are neighbours, which round-robin would split; they stay
# on one rank (15 groups of 2 over 4 ranks: 8, 8, 8 and 6), sharing their schedules, and the
# output is still the one process's.
mkdir "$out/gpu_one" "$out/gpu_np4"
gpus=(--vary cluster.gpu=h100-sxm,h200)
(cd "$out/gpu_one" && "$ss" sweep ../job.json "${axes[@]}" "${gpus[@]}" --top 0 --json s.json \
   >table.txt)
(cd "$out/gpu_np4" && "$@" -np 4 "$ss" sweep ../job.json "${axes[@]}" "${gpus[@]}" --top 0 \
   --json s.json >table.txt 2>split.txt)
grep -q "rank 3 of 4 simulates 6 of the 30 combinations" "$out/gpu_np4/split.txt" ||
  { cat "$out/gpu_np4/split.txt"; echo "a mesh's GPU variants were split over ranks"; exit 1; }
for f in table.txt s.json; do
  cmp "$out/gpu_one/$f" "$out/gpu_np4/$f" ||
    { diff "$out/gpu_one/$f" "$out/gpu_np4/$f" | head -20; exit 1; }
done
grep -q "CSV written to s.csv" "$out/np4/table.txt"
[[ $(grep -c "CSV written" "$out/np4/table.txt") -eq 1 ]] || { echo "more than one rank printed"; exit 1; }
# Errors too: one that every rank finds is said once, by rank 0 (not once per rank), with the
# one process's exit code; where ranks differ (MPMD: rank 1 given another scenario), rank 0 says
# the first failing rank's error and a rank whose own error rank 0 does not say adds it.
errors_once() {  # expected-count text file
  local n
  n=$(grep -cF -- "$2" "$3" || true)
  [[ $n -eq $1 ]] || { cat "$3"; echo "'$2': said $n times, expected $1"; exit 1; }
}
rc=0
"$@" -np 4 "$ss" sweep "$out/job.json" --vary parallelism.tp=1..x >/dev/null 2>"$out/err4.txt" ||
  rc=$?
[[ $rc -eq 2 ]] || { cat "$out/err4.txt"; echo "exit $rc, expected 2"; exit 1; }
errors_once 1 "error: --vary parallelism.tp=1..x: range '1..x': expected an integer" "$out/err4.txt"
"$@" -np 1 "$ss" sweep "$out/job.json" "${axes[@]}" : -np 1 "$ss" sweep "$out/none.json" \
  "${axes[@]}" >/dev/null 2>"$out/err_r1.txt" && { echo "a failing rank went unnoticed"; exit 1; }
errors_once 1 "error: rank 1 of 2: $out/none.json: cannot open" "$out/err_r1.txt"
errors_once 1 "none.json" "$out/err_r1.txt"
"$@" -np 1 "$ss" sweep "$out/zero.json" "${axes[@]}" : -np 1 "$ss" sweep "$out/one.json" \
  "${axes[@]}" >/dev/null 2>"$out/err_both.txt" && { echo "failing ranks went unnoticed"; exit 1; }
errors_once 1 "error: $out/zero.json: cannot open" "$out/err_both.txt"
errors_once 1 "error: rank 1 of 2: $out/one.json: cannot open" "$out/err_both.txt"
echo "sweep_mpi_test: 4 ranks give the one-process output byte for byte ($(wc -l <"$out/one/s.csv") CSV lines), errors said once"
