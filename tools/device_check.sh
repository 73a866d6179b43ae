#!/usr/bin/env bash
# The device check: what runs whenever a GPU machine is available (issue 12). On a fresh GPU
# machine with the CUDA toolkit and the repo's build dependencies, and no network, in under
# 8 minutes:
#   1. configure and build the CUDA parts (Release, all cores, only the targets needed);
#   2. run the `gpu` tests (kernels against host references, the device's memory accounting
#      against cudaMemGetInfo, NCCL in a world of one, `run` on one GPU);
#   3. run one emulated rank of an 8B-class scenario (Llama 3 8B, torchtitan's settings, on
#      H200s) as an 8-GPU and as a 64-GPU job, predict both with `simulate`, diff them;
#   4. the GEMM (target >= 70% of bf16 peak) and attention (>= 50%) rate benchmarks;
# and copies traces, summaries, benchmark JSON and the log to $OUT (default ./device_out).
# Every step runs whatever the previous ones gave; each step's exit code is recorded in the
# log and in $OUT/steps.tsv, and the script exits 1 when any step failed.
#
#   tools/device_check.sh                 # from anywhere; BUILD_DIR (default build-device)
#   OUT=/tmp/out SCENARIO=examples/x.json tools/device_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-device_out}
BUILD=${BUILD_DIR:-build-device}
SCENARIO=${SCENARIO:-examples/dense_llama3_8b.json}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/device_check.log"
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
printf 'step\trc\tseconds\n' >"$OUT/steps.tsv"
failed=0
# The whole check stays under 8 minutes: each step gets at most what is left of the budget.
BUDGET_S=${BUDGET_S:-470}

# step NAME TIMEOUT_S CMD...: runs CMD under a timeout, logs and records its exit code
# (124: timed out; 125: skipped, no time left).
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS rc=0 left=$((BUDGET_S - SECONDS))
  if ((left < limit)); then limit=$left; fi
  echo "=== [$name] $*"
  if ((limit < 5)); then
    echo "=== [$name] skipped: the 8-minute budget is spent"
    rc=125
  else
    timeout --kill-after=5 "$limit" "$@" || rc=$?
  fi
  echo "=== [$name] rc=$rc ($((SECONDS - start)) s)"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >>"$OUT/steps.tsv"
  if [[ $rc -ne 0 ]]; then failed=1; fi
  return 0
}

date -u
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version,compute_cap \
  --format=csv || true
nvcc --version | tail -2 || true

# sm_XY of the first GPU (compute_cap "9.0" → 90), else the build's default (90).
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_BUILD_VIEWER=OFF -DSHARDSCOPE_BUILD_BENCH=ON)
if [[ -n $arch ]]; then cmake_args+=("-DCMAKE_CUDA_ARCHITECTURES=$arch"); fi
if command -v ninja >/dev/null; then cmake_args+=(-G Ninja); fi
# NCCL outside the toolkit: the pip wheel (nvidia-nccl-cu*) ships libnccl.so.2 and nccl.h.
if [[ ! -e /usr/local/cuda/include/nccl.h ]]; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' \
    2>/dev/null || true)
  if [[ -n $nccl_dir && -e $nccl_dir/include/nccl.h ]]; then
    cmake_args+=("-DNCCL_INCLUDE_DIR=$nccl_dir/include"
      "-DNCCL_LIBRARY=$(find "$nccl_dir/lib" -name 'libnccl.so*' | sort | head -1)")
    export LD_LIBRARY_PATH=$nccl_dir/lib:${LD_LIBRARY_PATH:-}
  fi
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

step configure 120 cmake -S . -B "$BUILD" "${cmake_args[@]}"
step build 300 cmake --build "$BUILD" -j "$(nproc)" --target shardscope cuda_backend_gpu_test \
  backend_gpu_test
step build_bench 150 cmake --build "$BUILD" -j "$(nproc)" --target cuda_gemm_benchmark \
  cuda_attention_benchmark

step gpu_tests 150 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 120 \
  --output-junit "$OUT/gpu_tests.junit.xml"

ss=$BUILD/tools/shardscope
on_h200=(--set cluster.gpu=h200)
for world in 8 64; do
  sets=("${on_h200[@]}" --set cluster.gpus_per_node=8 --set "cluster.nodes=$((world / 8))")
  step "simulate_$world" 60 "$ss" simulate "$SCENARIO" "${sets[@]}" \
    --trace "$OUT/predicted_$world.trace.json.gz" --summary "$OUT/predicted_$world.summary.json"
  step "run_emulated_$world" 150 "$ss" run "$SCENARIO" "${sets[@]}" --device cuda \
    --emulate-world "$world" --rank 0 --timeout 120 \
    --trace "$OUT/measured_$world.trace.json.gz" --summary "$OUT/measured_$world.summary.json"
  step "check_trace_$world" 30 "$ss" check-trace "$OUT/measured_$world.trace.json.gz"
  # Prediction against measurement: the figures (exit 1 beyond the default tolerances is
  # information here, recorded like any step) and the per-op comparison as JSON.
  step "diff_summary_$world" 30 "$ss" diff "$OUT/predicted_$world.summary.json" \
    "$OUT/measured_$world.summary.json" --json "$OUT/diff_summary_$world.json"
  step "diff_trace_$world" 60 "$ss" diff "$OUT/predicted_$world.trace.json.gz" \
    "$OUT/measured_$world.trace.json.gz" --tol op=off --json "$OUT/diff_trace_$world.json"
done

step bench_gemm 90 "$BUILD/bench/cuda_gemm_benchmark" --benchmark_min_time=0.05 \
  --benchmark_out="$OUT/cuda_gemm_benchmark.json" --benchmark_out_format=json
step bench_attention 90 "$BUILD/bench/cuda_attention_benchmark" --benchmark_min_time=0.05 \
  --benchmark_out="$OUT/cuda_attention_benchmark.json" --benchmark_out_format=json

echo "=== steps (name, rc, seconds)"
column -t "$OUT/steps.tsv" 2>/dev/null || cat "$OUT/steps.tsv"
ls -la "$OUT"
date -u
exit "$failed"
