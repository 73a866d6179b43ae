#!/usr/bin/env python3
"""Sustained bf16 GEMM rate, SM clock, power and temperature over time on one GPU.

Catalogs quote the best matmul rate of short bursts (MAMF); training keeps the GPU busy for
hours under its power cap. This runs back-to-back M=N=K matmuls for --seconds and reports, per
--window seconds, the achieved TFLOP/s with the SM clock, power draw and temperature NVML
reads, as JSON:  bench/device/sustained.py --out sustained.json [--seconds 60] [--size 8192]
"""
import argparse
import json
import os
import sys
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--window", type=float, default=2)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    except Exception as err:  # NVML is optional: rates are still measured
        print(f"sustained.py: NVML unavailable ({err})", file=sys.stderr)
        handle = None
    n = a.size
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * n * n * n
    windows = []
    start = time.perf_counter()
    while time.perf_counter() - start < a.seconds:
        t0 = time.perf_counter()
        count = 0
        while time.perf_counter() - t0 < a.window:
            for _ in range(10):
                x @ w
            count += 10
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        row = {"t_s": round(time.perf_counter() - start, 2), "tflops": flops * count / dt / 1e12}
        if handle is not None:
            row["sm_mhz"] = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
            row["power_w"] = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
            row["temp_c"] = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
        windows.append(row)
        print(json.dumps(row))
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "size": n, "windows": windows}, f, indent=1)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
