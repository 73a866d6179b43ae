#!/usr/bin/env python3
"""Compares measured FSDP2 steps (tools/measure_fsdp2_step.py output) with `shardscope simulate`.

For every step_<name>.json in RESULTS_DIR: rebuilds the scenario the measurement ran, predicts it
(optionally under a calibration file), and prints measured vs predicted step time, tokens/s per
GPU and peak memory (allocated and reserved). Where a Kineto trace trace_<name>.json.gz sits
beside it, it also splits the measured GPU time the way `simulate` splits its compute
(compute_by_kind_s): gemm, attention, model elementwise, loss, optimizer (+ gradient clipping),
FSDP copies — each kernel attributed by the CPU op or FSDP annotation that launched it.

  bench/device/compare.py bench/device/results --shardscope build/tools/shardscope \
      [--calibration bench/device/results/h200_torch2.11_calibration.json] [--json out.json]
"""
import argparse
import collections
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))
# The scenario a measurement ran, from measure_fsdp2_step.py's torch-free half: comparing
# committed results must work where PyTorch is not installed.
import fsdp2_step_scenario  # noqa: E402

KINDS = ("gemm", "attention", "elementwise", "loss", "optimizer", "fsdp_copy")


def kernel_kind(name, cat):
    n = name.lower()
    if cat != "kernel":
        return "copy"
    if "nccl" in n:
        return "nccl"
    if any(k in n for k in ("sdpa", "flash", "fmha", "attention")):
        return "attention"
    if any(k in n for k in ("nvjet", "gemm", "cutlass", "xmma", "cublas")):
        return "gemm"
    return "elementwise"


def measured_kinds(trace_path):
    """GPU seconds per simulate compute kind, attributing each kernel to its launching CPU op."""
    with gzip.open(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    # One sweep per CPU thread: the ops open at a launch (a stack of nested intervals) are the
    # launch's enclosing ops.
    enclosing = {}
    by_tid = collections.defaultdict(list)
    for e in events:
        if e.get("cat") in ("cpu_op", "user_annotation") and "dur" in e:
            by_tid[e["tid"]].append((e["ts"], 0, -e["dur"], e))
        elif e.get("cat") in ("cuda_runtime", "cuda_driver") and "args" in e:
            by_tid[e["tid"]].append((e["ts"], 1, 0, e))
    for items in by_tid.values():
        items.sort(key=lambda x: x[:3])
        stack = []
        for ts, is_launch, _, e in items:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < ts:
                stack.pop()
            if is_launch:
                enclosing[e["args"].get("correlation")] = [o["name"] for o in stack]
            else:
                stack.append(e)
    out = collections.defaultdict(float)
    for k in events:
        if k.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or "dur" not in k:
            continue
        kind = kernel_kind(k["name"], k["cat"])
        if kind == "nccl":
            continue  # communication, not compute
        names = enclosing.get(k["args"].get("correlation"), [])
        if any(n.startswith(("Optimizer.step", "aten::_foreach")) for n in names):
            kind = "optimizer"
        elif any(n.startswith("FSDP::") for n in names):
            kind = "fsdp_copy"
        elif any(("log_softmax" in n or "nll_loss" in n or "cross_entropy" in n or
                  "LogSoftmax" in n or "NllLoss" in n) for n in names):
            kind = "loss"
        elif kind == "copy":
            kind = "elementwise"
        out[kind] += k["dur"] * 1e-6
    return dict(out)


def pct(pred, meas):
    return 100.0 * (pred - meas) / meas if meas else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--shardscope", default=os.path.join(REPO, "build", "tools", "shardscope"))
    p.add_argument("--calibration")
    p.add_argument("--json")
    a = p.parse_args()
    rows = []
    steps = sorted(glob.glob(os.path.join(a.results, "step_*.json")))
    if not steps:
        print(f"compare.py: no step_*.json in {a.results}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        for path in steps:
            name = os.path.basename(path)[len("step_"):-len(".json")]
            meas = json.load(open(path))
            args = argparse.Namespace(**meas["args"])
            sc = fsdp2_step_scenario.scenario(args, meas["world_size"])
            if a.calibration:
                sc["cluster"]["cost_model"] = os.path.abspath(a.calibration)
            sc_path = os.path.join(tmp, name + ".json")
            sum_path = os.path.join(tmp, name + ".summary.json")
            json.dump(sc, open(sc_path, "w"))
            run = subprocess.run([a.shardscope, "simulate", sc_path, "--summary", sum_path],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: simulate failed: {run.stderr.strip()}", file=sys.stderr)
                return 2
            pred = json.load(open(sum_path))
            row = {"name": name, "measured_step_s": meas["step_time_s"],
                   "predicted_step_s": pred["step_time_s"],
                   "measured_tokens_per_s": meas["tokens_per_s_per_gpu"],
                   "predicted_tokens_per_s": pred["tokens_per_s_per_gpu"],
                   "measured_reserved_gib": meas.get("max_reserved_gib"),
                   "predicted_reserved_gib": pred["peak_memory_reserved_gib"],
                   "measured_allocated_gib": meas.get("max_allocated_gib"),
                   "predicted_allocated_gib": pred["peak_memory_allocated_gib"],
                   "predicted_kinds_s": pred.get("compute_by_kind_s", {})}
            trace = os.path.join(a.results, f"trace_{name}.json.gz")
            if os.path.exists(trace):
                row["measured_kinds_s"] = measured_kinds(trace)
            rows.append(row)
    print(f"{'step':10} {'meas s':>8} {'pred s':>8} {'tok/s err':>9}  {'res GiB meas/pred':>18} "
          f"{'err':>6}  {'alloc GiB meas/pred':>20} {'err':>6}")
    for r in rows:
        r["tokens_error_pct"] = pct(r["predicted_tokens_per_s"], r["measured_tokens_per_s"])
        r["reserved_error_pct"] = pct(r["predicted_reserved_gib"], r["measured_reserved_gib"])
        r["allocated_error_pct"] = pct(r["predicted_allocated_gib"], r["measured_allocated_gib"])
        print(f"{r['name']:10} {r['measured_step_s']:8.3f} {r['predicted_step_s']:8.3f} "
              f"{r['tokens_error_pct']:+8.1f}%  {r['measured_reserved_gib']:8.1f} / "
              f"{r['predicted_reserved_gib']:6.1f} {r['reserved_error_pct']:+5.1f}%  "
              f"{r['measured_allocated_gib']:9.1f} / {r['predicted_allocated_gib']:6.1f} "
              f"{r['allocated_error_pct']:+5.1f}%")
    for r in rows:
        if "measured_kinds_s" not in r:
            continue
        print(f"\n{r['name']}: GPU time by kind, measured (Kineto) vs predicted (s)")
        for kind in KINDS:
            m = r["measured_kinds_s"].get(kind, 0.0)
            q = r["predicted_kinds_s"].get(kind, 0.0)
            print(f"  {kind:12} {m:8.4f} {q:8.4f}  {pct(q, m):+7.1f}%")
    if a.json:
        fsdp2_step_scenario.write_atomic(a.json, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
