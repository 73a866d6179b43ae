#!/usr/bin/env bash
# Not yet run. Compiled FSDP2 steps (torch.compile per block, as torchtitan's compile option)
# with Kineto traces: the measurement a compile mode of the cost model needs (bench/validate/
# README.md "torch.compile"). Inductor's first compile of 16 blocks takes a minute or two,
# hence the longer timeouts.
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
run_step() {  # name, extra args
  local name=$1; shift
  timeout 280 python3 tools/measure_fsdp2_step.py --layers 16 --compile --out "$OUT/step_$name.json" "$@" 2>&1 | grep -v "^\[W\|Warning" | tail -4
}
run_step compile_none_b1 --batch 1 --ac none --trace "$OUT/trace_compile_none_b1.json.gz"
run_step compile_sac_b2 --batch 2 --ac selective_op --trace "$OUT/trace_compile_sac_b2.json.gz"
ls -la "$OUT"
