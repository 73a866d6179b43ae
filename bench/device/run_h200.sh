#!/usr/bin/env bash
# One device session's measurements (the H200 of the device tool): kernel rates, four real FSDP2
# steps of a 16-layer Llama 3 8B-shaped model, and the backend's GPU test. Everything lands in
# $OUT (default ./device_out). The figures are compared with `shardscope simulate` here by
# bench/device/compare.py; the results of a run are kept in bench/device/results/.
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit,driver_version --format=csv
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
date
run_step() {  # name, extra args
  local name=$1; shift
  timeout 150 python3 tools/measure_fsdp2_step.py --layers 16 --out "$OUT/step_$name.json" "$@" 2>&1 | grep -v "^\[W\|Warning" | tail -4
}
run_step none_b1 --batch 1 --ac none --trace "$OUT/trace_none_b1.json.gz"
run_step sac_b2 --batch 2 --ac selective_op --trace "$OUT/trace_sac_b2.json.gz"
run_step full_b2 --batch 2 --ac full
run_step full_b4 --batch 4 --ac full
date
timeout 200 python3 bench/device/kernel_rates.py --out "$OUT/kernel_rates.json" 2>&1 | tail -60
date
if [ -x .devcarry/backend_gpu_test ]; then
  NCCL_LIB=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
  LD_LIBRARY_PATH=.devcarry:/usr/local/cuda/lib64:${NCCL_LIB:-}:${LD_LIBRARY_PATH:-} \
    timeout 60 .devcarry/backend_gpu_test 2>&1 | tail -15
fi
ls -la "$OUT"
