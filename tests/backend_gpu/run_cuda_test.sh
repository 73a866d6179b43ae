#!/usr/bin/env sh
# `shardscope run --device cuda` end to end on one GPU (label gpu): a one-rank plan under
# --check (its all-gathers, reductions and AdamW step verified against the references), and
# one emulated rank of an 8-rank plan; each trace passes check-trace and holds exactly the
# simulator's operations (diff with every figure off fails only on structural changes).
# Without a GPU: the run must exit 3 naming `--device cpu`, then the test skips (77).
#   run_cuda_test.sh SHARDSCOPE
set -u
ss=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
scen=tests/backend/scenarios
off=step_time=off,exposed_comm=off,peak_memory=off,op=off,compute=off

"$ss" run "$scen/one_rank.json" --device cuda --check --trace "$dir/one.json" \
  --summary "$dir/one.summary.json" >"$dir/log" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && grep -q "no CUDA device answers" "$dir/log"; then
  if ! grep -q -- "--device cpu" "$dir/log"; then
    echo "FAIL: the no-GPU error does not name --device cpu:"; cat "$dir/log"; exit 1
  fi
  echo "no GPU: skipped"; cat "$dir/log"; exit 77
fi
cat "$dir/log"
[ "$rc" -eq 0 ] || { echo "FAIL: run --device cuda --check exited $rc"; exit 1; }
"$ss" check-trace "$dir/one.json" || { echo "FAIL: check-trace"; exit 1; }
"$ss" simulate "$scen/one_rank.json" --trace "$dir/one.pred.json" >/dev/null || exit 1
"$ss" diff "$dir/one.pred.json" "$dir/one.json" --tol "$off" || {
  echo "FAIL: measured ops differ from the prediction's"; exit 1; }

"$ss" run "$scen/eight_ranks.json" --device cuda --emulate-world 8 --rank 3 \
  --trace "$dir/r3.json" || { echo "FAIL: emulated rank 3 of 8"; exit 1; }
"$ss" check-trace "$dir/r3.json" || { echo "FAIL: check-trace (emulated)"; exit 1; }
echo "ok"
