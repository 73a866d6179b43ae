#!/usr/bin/env bash
# Fourth device session: compute slowdown beside an emulated collective (bench/device/overlap.py).
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -c "import cupy; print('cupy', cupy.__version__)"
timeout 240 python3 bench/device/overlap.py --out "$OUT/overlap.json" 2>&1 | tail -20
ls -la "$OUT"
