#!/bin/sh
# `shardscope run` end to end on the CPU (docs/cli.md "run"): a measured trace and summary that
# check-trace accepts, that `diff` compares with the prediction (exit 1 beyond tolerance, 0
# against itself), an emulated rank of an 8-rank plan, and the documented exit codes.
set -u
bin="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() {  # expect CODE PATTERN cmd...
  code=$1; pattern=$2; shift 2
  "$@" >"$dir/out" 2>&1
  rc=$?
  [ "$rc" -eq "$code" ] || { cat "$dir/out"; fail "$* exited $rc, expected $code"; }
  [ -z "$pattern" ] || grep -q -- "$pattern" "$dir/out" || { cat "$dir/out"; fail "$* did not say '$pattern'"; }
}
one=tests/backend/scenarios/one_rank.json
eight=tests/backend/scenarios/eight_ranks.json

expect 0 "Measured step 2 of 2" "$bin" run "$one" --device cpu --steps 2 --trace "$dir/m.json" --summary "$dir/m_sum.json"
grep -q '"kind": "measured"' "$dir/m_sum.json" || fail "summary is not kind measured"
expect 0 "valid shardscope-trace/1" "$bin" check-trace "$dir/m.json"
expect 0 "" "$bin" simulate "$one" --trace "$dir/p.json" --summary "$dir/p_sum.json"
# The CPU is far slower than the predicted H100: beyond a 2% step-time tolerance.
expect 1 "BEYOND tolerance" "$bin" diff "$dir/p.json" "$dir/m.json" --tol step_time=2%
expect 1 "" "$bin" diff "$dir/p_sum.json" "$dir/m_sum.json" --tol step_time=2%
expect 0 "" "$bin" diff "$dir/m.json" "$dir/m.json"

# The measured summary's usable memory is the run's limit (it was the scenario GPU's).
expect 0 "" "$bin" run "$one" --device cpu --memory-limit 3 --summary "$dir/lim.json"
grep -q '"usable_gib": 3.0' "$dir/lim.json" || fail "usable_gib is not the --memory-limit: $(grep usable_gib "$dir/lim.json")"

# One rank of the 8-rank plan alone; its trace is that rank's.
expect 0 "rank 5 of 8 (emulated world)" "$bin" run "$eight" --device cpu --emulate-world 8 --rank 5 --trace "$dir/e.json"
expect 0 "ranks 1," "$bin" check-trace "$dir/e.json"
grep -q '"pid":5' "$dir/e.json" || fail "the emulated rank's events are not pid 5"

# Exit codes: 2 for a world that does not match, --rank without --emulate-world, or an
# unknown device; 3 for a GPU that does not answer (naming --device cpu) or out of memory.
expect 2 "runs on 8 ranks" "$bin" run "$eight" --device cpu
expect 2 "set --emulate-world 8" "$bin" run "$eight" --device cpu --emulate-world 4
expect 2 "--rank needs --emulate-world" "$bin" run "$one" --device cpu --rank 0
expect 2 "" "$bin" run "$one" --device tpu
# Under a launcher each rank's error names the rank (every rank prints its own); alone, none.
expect 2 "shardscope: error: rank 1 of 8: mpirun started 8 ranks" env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=8 "$bin" run "$eight" --device cpu --set cluster.gpus_per_node=4
expect 2 "shardscope: error: rank 3 of 4: .*seq_len" env SLURM_PROCID=3 SLURM_NTASKS=4 "$bin" run "$eight" --device cpu --set training.seq_len=0
"$bin" run "$eight" --device cpu >"$dir/out" 2>&1
grep -q "rank [0-9]* of" "$dir/out" && { cat "$dir/out"; fail "an error outside a launcher names a rank"; }
# Where a GPU answers (and the CUDA device is built) this runs; elsewhere exit 3 naming --device cpu.
"$bin" run "$one" --device cuda >"$dir/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  [ "$rc" -eq 3 ] && grep -q -- "--device cpu" "$dir/out" || { cat "$dir/out"; fail "--device cuda without a GPU: exit $rc"; }
  # The hint once, not once per layer that saw the error.
  [ "$(grep -o -- "--device cpu" "$dir/out" | wc -l)" -eq 1 ] || { cat "$dir/out"; fail "--device cuda without a GPU names --device cpu more than once"; }
fi
expect 3 "out of memory at op '" "$bin" run "$eight" --device cpu --emulate-world 8 --memory-limit 0.004 --trace "$dir/oom.json"
[ -s "$dir/oom.json" ] || fail "no trace written up to the out-of-memory op"
expect 0 "valid" "$bin" check-trace "$dir/oom.json"
echo "run CLI: all checks passed"
