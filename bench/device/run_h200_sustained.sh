#!/usr/bin/env bash
# Second device session: sustained GEMM rate with clocks and power (60 s), a 30-step run of the
# selective-op batch-2 step (step-time drift under sustained load) and memory per phase.
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
timeout 100 python3 bench/device/sustained.py --seconds 60 --out "$OUT/sustained.json" 2>&1 | tail -32
timeout 200 python3 tools/measure_fsdp2_step.py --layers 16 --batch 2 --ac selective_op --steps 30 \
  --out "$OUT/step_sac_b2_long.json" 2>&1 | grep -v "Warn\|warn" | tail -3
timeout 120 python3 tools/measure_fsdp2_step.py --layers 16 --batch 1 --ac none --steps 5 \
  --out "$OUT/step_none_b1_phases.json" 2>&1 | grep -v "Warn\|warn" | tail -3
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv
ls -la "$OUT"
