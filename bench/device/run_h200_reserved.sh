#!/usr/bin/env bash
# Third device session: does creating AdamW's moments before the first step remove the
# reserved-minus-allocated gap? (bench/device/README.md, "Known misses").
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for cfg in "none_b1 --batch 1 --ac none" "sac_b2 --batch 2 --ac selective_op"; do
  set -- $cfg
  name=$1; shift
  timeout 120 python3 tools/measure_fsdp2_step.py --layers 16 --steps 3 --init-optimizer-first "$@" \
    --out "$OUT/reserved_${name}_optfirst.json" 2>&1 | grep -v "Warn\|warn" | tail -2
done
ls -la "$OUT"
