#!/usr/bin/env python3
"""Checks `shardscope simulate` against the H200 steps measured in bench/device/results.

Each measured step (one H200, torch 2.11, a 16-layer Llama 3 8B-shaped model under FSDP2;
bench/device/README.md) is predicted under the calibration file measured on the same machine.
Bounds: tokens/s/GPU within 12% (the measurements on one GPU include FSDP2's world-size-1
copies, which the model prices only in part), peak allocated memory within 8%, and the GPU
time of the two traced steps per kind (GEMM; attention + model elementwise + loss together;
optimizer) within 10%.  compare.py runs with torch made unimportable, so the check proves it
reads the committed results without PyTorch (a fresh machine has none).
Usage: check_h200_steps.py SHARDSCOPE_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Runs a script with `import torch` failing (a None entry in sys.modules raises ImportError).
WITHOUT_TORCH = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
                 "runpy.run_path(sys.argv[0], run_name='__main__')")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = os.path.join(REPO, "bench", "device", "results")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        run = subprocess.run([sys.executable, "-c", WITHOUT_TORCH,
                              os.path.join(REPO, "bench", "device", "compare.py"),
                              results, "--shardscope", sys.argv[1], "--calibration",
                              os.path.join(results, "h200_torch2.11_calibration.json"),
                              "--json", out], capture_output=True, text=True)
        print(run.stdout)
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            return 1
        rows = json.load(open(out))
    failures = []
    if len(rows) < 4:
        failures.append(f"expected at least 4 measured steps, found {len(rows)}")
    for r in rows:
        if abs(r["tokens_error_pct"]) > 12:
            failures.append(f"{r['name']}: tokens/s error {r['tokens_error_pct']:+.1f}% (bound 12%)")
        if abs(r["allocated_error_pct"]) > 8:
            failures.append(f"{r['name']}: allocated error {r['allocated_error_pct']:+.1f}% (bound 8%)")
        meas, pred = r.get("measured_kinds_s"), r["predicted_kinds_s"]
        if meas is None:
            continue
        groups = {"gemm": ("gemm",), "attention+elementwise+loss": ("attention", "elementwise", "loss"),
                  "optimizer": ("optimizer",)}
        for label, kinds in groups.items():
            m = sum(meas.get(k, 0.0) for k in kinds)
            p = sum(pred.get(k, 0.0) for k in kinds)
            err = 100.0 * (p - m) / m
            if abs(err) > 10:
                failures.append(f"{r['name']}: {label} GPU time {p:.4f} s predicted vs {m:.4f} s "
                                f"measured ({err:+.1f}%, bound 10%)")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
