#!/usr/bin/env python3
"""Validation report: predicted vs measured tokens/s/GPU and peak memory.

Turns every row of measured_runs.json (`training_runs`) that a scenario can express into a
scenario file, predicts it with `shardscope simulate`, and prints per row the measured and
predicted tokens/s/GPU and memory (the predicted *reserved* estimate when the source reports
max reserved, which torchtitan, torchao and PR #165 do; *allocated* when it reports active),
the error in %, and the median and 90th percentile of |error|. Rows that cannot be expressed
are listed with the reason (ours, or the simulator's own error message).

No constant is fitted to any row: every prediction uses the catalog defaults. What the
defaults rest on, the last before/after figures and the residual misses: README.md here.

With --calibrate-on FRACTION, a fixed share of the predicted rows per GPU (chosen by a hash of
the row id, at least one row per GPU) is written as a shardscope-runs/1 table and fitted with
`shardscope calibrate`; the other rows are predicted again with the fitted file of their GPU
(cluster.cost_model) and the report compares their errors before and after: calibration
measured on rows it was not fitted on.

With --max-median-error PCT / --max-row-error PCT / --min-rows N it is a regression check
(CTest `validate_accuracy_test`): exit 1 when the FSDP2 target rows run eagerly (the rows the
model is held to) have a tokens/s/GPU or peak-memory median |error| over PCT, any one of them a
tokens/s/GPU |error| over the row limit, or fewer than N of them are predicted; and when the
catalog's `validated_by` (sim/hardware/catalog.json) disagrees with those rows.

Usage:
  bench/validate/validate.py [MEASURED_RUNS_JSON] [--shardscope BIN] [--json OUT] [--keep DIR]
                             [--calibrate-on FRACTION] [--max-median-error PCT]
                             [--max-row-error PCT] [--min-rows N]
Default input: measured_runs.json beside this script, a copy of the public measurements (each
row cites its source) that the project validates against.
"""
import argparse
import glob
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Source GPU descriptions → catalog names. torchtitan's published H100 tables ran on 96 GB,
# 500 W parts (cost-model.md): their own entry, h100-96g.
GPU_RULES = [
    ("GB200", None), ("GB300", None),
    ("H100 SXM (96GB", "h100-96g"), ("H100 SXM (95GB", "h100-96g"), ("95.04 GiB", "h100-96g"),
    ("H200", "h200"), ("B200", "b200"), ("MI300X", "mi300x"),
    ("A100 SXM 40", "a100-40g"), ("A100", "a100-80g"), ("H100", "h100-sxm"),
]

# FSDP2 rows the targets are set on: torchtitan, torchao, torchtitan PR #165.
TARGET_REPOS = ("pytorch/torchtitan", "pytorch/ao")

# Whether a run's launcher set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which changes
# what the caching allocator reserves (the scenario's training.expandable_segments). torchtitan's
# run_llama_train.sh sets it since a5e57e4 (2024-10-22, torchtitan PR #643; run_train.sh after the
# rename), and torchao's float8 benchmarks launch through that script. First matching id prefix
# wins; a row no prefix matches ran with PyTorch's default, off. README.md has the evidence.
EXPANDABLE_SEGMENTS = [
    ("torchtitan-2412-t1-", True),   # 8 GPUs: run_llama_train.sh at 9dec370 sets it
    ("torchtitan-2412-t2-", True),
    # 128-512 GPUs: their multi-node launcher is not published; torchtitan's default by then.
    ("torchtitan-2412-", True),
    # ROCm 6.4 build: PyTorch ignores the setting on ROCm before 7.0.
    ("torchao-mi300x-", False),
    ("torchao-", True),              # through torchtitan's run_train.sh
    ("pr165-", False),               # run_llama_train.sh at 83c879f (2024-03) does not set it
]


def expandable_segments(row_id):
    return next((on for prefix, on in EXPANDABLE_SEGMENTS if row_id.startswith(prefix)), False)


class Unexpressible(Exception):
    pass


def gpu_name(desc):
    for key, name in GPU_RULES:
        if key in desc:
            if name is None:
                raise Unexpressible(f"GPU '{desc}' is not in the catalog")
            return name
    raise Unexpressible(f"GPU '{desc}' is not in the catalog")


# torchtitan's op-level selective AC (torchtitan/parallelisms/parallelize_llama.py, since its
# torchtrain days): save the outputs of aten.mm, SDPA and reduce-scatter except every second mm
# of a block (mm_count % 2 == 0 is recomputed). shardscope calls that policy selective_op:2.
# torchao's and PR #165's runs use torchtitan's trainer, so the same policy.
TORCHTITAN_OP_SAC = "selective_op:2"


def checkpoint_mode(text):
    if text is None:
        raise Unexpressible("activation checkpointing not stated")
    t = text.lower()
    if t == "full":
        return "full"
    if t in ("none",):
        return "none"
    if "layer or op" in t:
        return TORCHTITAN_OP_SAC
    if "layer" in t:
        # torchtitan's selective layer AC checkpoints every 2nd block by default
        # (selective_ac_option = "2"); the rows that say so explicitly agree.
        return "selective_layer:2"
    if "selective" in t:
        return TORCHTITAN_OP_SAC  # torchtitan's "selective" default is op-level
    raise Unexpressible(f"activation checkpointing '{text}' not understood")


def mix_precision(text):
    t = (text or "").lower()
    if any(k in t for k in ("float8", "fp8", "mxfp8")):
        raise Unexpressible(f"low-precision compute not modelled ({text})")
    if "bf16 reduce" in t or "bfsixteen" in t or "pure" in t:
        return {"param_dtype": "bfloat16", "reduce_dtype": "bfloat16"}
    if t.startswith("bf16"):
        # torchtitan's default mixed precision: bf16 params, fp32 reduce.
        return {"param_dtype": "bfloat16", "reduce_dtype": "float32"}
    raise Unexpressible(f"precision '{text}' not understood")


def model_source(m):
    if m.get("moe"):
        builtin = {"Qwen3-30B-A3B": "qwen3-30b-a3b", "DeepSeek-V3": "deepseek-v3",
                   "gpt-oss-20b": "gpt-oss-20b", "gpt-oss-120b": "gpt-oss-120b"}
        for key, name in builtin.items():
            if m["name"].startswith(key):
                return name
        raise Unexpressible(f"MoE model '{m['name']}' has no built-in")
    need = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
    if any(m.get(k) is None for k in need):
        raise Unexpressible("model architecture not stated")
    return {"hf": {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "hidden_size": m["hidden"], "intermediate_size": m["ffn"],
        "num_hidden_layers": m["layers"], "num_attention_heads": m["heads"],
        "num_key_value_heads": m["kv_heads"], "vocab_size": m["vocab"],
        "max_position_embeddings": max(m.get("seq_len") or 4096, 4096),
        "rms_norm_eps": 1e-5, "tie_word_embeddings": False}}


def scenario_of(row):
    m, hw, par, tr = row["model"], row["hardware"], row["parallelism"], row["training"]
    impl = str(par.get("fsdp_impl") or "")
    if "FSDP1" in impl or "Megatron" in impl or par.get("ddp"):
        raise Unexpressible(f"not FSDP2 ({impl or 'DDP'})")
    if tr.get("lora"):
        raise Unexpressible("LoRA fine-tuning not modelled")
    if tr.get("fsdp_cpu_offload"):
        raise Unexpressible("CPU offload run (variable-length data)")
    if par.get("async_tp") not in (None, False):
        raise Unexpressible("async TP not modelled")
    if tr.get("local_batch") is None or m.get("seq_len") is None:
        raise Unexpressible("batch or sequence length not stated")
    count = hw["count"]
    gpn = min(hw.get("gpus_per_node") or 8, count)
    model = model_source(m)
    if row["source"].get("repo") in TARGET_REPOS:
        # torchtitan's (and torchao's, which trains with torchtitan) model code: what autograd
        # saves follows it (docs/memory.md).
        model = {"builtin": model} if isinstance(model, str) else dict(model)
        model["implementation"] = "torchtitan"
    sc = {
        "model": model,
        "cluster": {"gpu": gpu_name(hw["gpu"]), "nodes": max(count // gpn, 1), "gpus_per_node": gpn},
        "parallelism": {"dp_shard": -1, "dp_replicate": par.get("hsdp_replicate") or 1,
                        "tp": par.get("tp") or 1, "cp": par.get("cp") or 1,
                        "pp": par.get("pp") or 1, "ep": par.get("ep") or 1},
        "fsdp": {"mix_precision": mix_precision(tr.get("precision"))},
        "training": {"local_batch": tr["local_batch"], "seq_len": m["seq_len"],
                     "grad_accum": tr.get("grad_accum") or 1,
                     "activation_checkpoint": checkpoint_mode(tr.get("activation_checkpointing")),
                     "expandable_segments": expandable_segments(row["id"])},
    }
    if (par.get("pp") or 1) > 1:
        sched = str(par.get("pp_schedule") or "1F1B").lower()
        sc["parallelism"]["pp_schedule"] = "interleaved_1f1b" if "interleaved" in sched else "1f1b"
        if par.get("vp"):
            sc["parallelism"]["pp_virtual_stages"] = par["vp"]
    return sc


def measured_memory(row):
    meas = row["measured"]
    if meas.get("peak_memory_gib") is not None:
        return meas["peak_memory_gib"], "reserved"
    if meas.get("peak_reserved_gib_derived") is not None:
        return meas["peak_reserved_gib_derived"], "reserved"
    return None, None


def find_shardscope(arg):
    if arg:
        return arg
    if os.environ.get("SHARDSCOPE"):
        return os.environ["SHARDSCOPE"]
    found = glob.glob(os.path.join(REPO, "build*", "tools", "shardscope"))
    if not found:
        sys.exit("validate.py: no shardscope binary found (build it, or pass --shardscope)")
    return max(found, key=os.path.getmtime)


def pct_error(pred, meas):
    return 100.0 * (pred - meas) / meas


def quantile(values, q):
    v = sorted(values)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def stats_line(label, errors):
    a = [abs(e) for e in errors]
    if not a:
        return f"  {label}: no rows"
    return (f"  {label}: n={len(a)}  median |error| {statistics.median(a):.1f}%  "
            f"p90 |error| {quantile(a, 0.9):.1f}%")


def simulate(binary, scen_path, summ_path, sets=()):
    """Runs `shardscope simulate`; the summary, or (None, the error line)."""
    cmd = [binary, "simulate", scen_path, "--summary", summ_path]
    for s in sets:
        cmd += ["--set", s]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not os.path.exists(summ_path):
        msg = (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[-1]
        return None, msg.replace("shardscope: error: ", "")
    with open(summ_path) as f:
        return json.load(f), None


def calibration_split(results, fraction):
    """Row ids to calibrate on: per GPU, the first ceil(fraction * n) rows by a hash of the id."""
    by_gpu = {}
    for r in results:
        if r["measured_tps"]:
            by_gpu.setdefault(r["gpu"], []).append(r)
    chosen = set()
    for gpu, rows in by_gpu.items():
        if len(rows) < 2:
            continue  # nothing would be left to check the fit on
        rows = sorted(rows, key=lambda r: hashlib.sha1(r["id"].encode()).hexdigest())
        k = max(1, min(len(rows) - 1, int(-(-fraction * len(rows) // 1))))
        chosen.update(r["id"] for r in rows[:k])
    return chosen


def calibrate_and_check(binary, work, results, fraction):
    """Fits on a share of the rows, re-predicts the rest; prints and returns the comparison."""
    chosen = calibration_split(results, fraction)
    table = {"format": "shardscope-runs/1", "runs": [
        {"id": r["id"], "scenario": r["scenario_path"],
         "measured": {"tokens_per_s_per_gpu": r["measured_tps"]}}
        for r in results if r["id"] in chosen]}
    runs_path = os.path.join(work, "calibration_runs.json")
    with open(runs_path, "w") as f:
        json.dump(table, f, indent=1)
    cal_path = os.path.join(work, "calibration.json")
    report_path = os.path.join(work, "calibration_report.json")
    proc = subprocess.run([binary, "calibrate", runs_path, "--out", cal_path,
                           "--json", report_path], capture_output=True, text=True)
    print(f"\nCalibration on {len(chosen)} rows (--calibrate-on {fraction}):")
    print(proc.stdout.rstrip())
    if proc.returncode not in (0, 1):
        print(proc.stderr.rstrip())
        return None
    with open(report_path) as f:
        report = json.load(f)
    files = {g["gpu"]: g["file"] for g in report["gpus"] if g.get("file")}
    before, after, rows = [], [], []
    for r in results:
        if r["id"] in chosen or not r["measured_tps"] or r["gpu"] not in files:
            continue
        summ = os.path.join(work, r["id"] + ".calibrated.summary.json")
        s, err = simulate(binary, r["scenario_path"], summ,
                          ["cluster.cost_model=" + os.path.abspath(files[r["gpu"]])])
        if s is None:
            print(f"  {r['id']}: calibrated prediction failed: {err}")
            continue
        e_after = pct_error(s["tokens_per_s_per_gpu"], r["measured_tps"])
        before.append(r["tps_error_pct"])
        after.append(e_after)
        rows.append({"id": r["id"], "gpu": r["gpu"], "before_pct": r["tps_error_pct"],
                     "after_pct": e_after})
    print(f"\nHeld-out rows (not calibrated on), tokens/s/GPU, {len(rows)} rows:")
    for x in rows:
        print(f"  {x['id'][:52]:<52} {x['gpu']:<10} before {x['before_pct']:+7.1f}%  "
              f"after {x['after_pct']:+7.1f}%")
    print(stats_line("before calibration", before))
    print(stats_line("after calibration ", after))
    return {"calibrated_on": sorted(chosen), "held_out": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="?",
                    default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "measured_runs.json"))
    ap.add_argument("--shardscope")
    ap.add_argument("--json", help="write the per-row results here")
    ap.add_argument("--keep", help="keep scenario and summary files in this folder")
    ap.add_argument("--calibrate-on", type=float, metavar="FRACTION",
                    help="fit the cost model on this share of the rows per GPU and report the "
                         "error on the others before and after")
    ap.add_argument("--max-median-error", type=float, metavar="PCT",
                    help="exit 1 when the eager FSDP2 target rows' median |error| (tokens/s/GPU "
                         "or peak memory) is over PCT")
    ap.add_argument("--max-row-error", type=float, metavar="PCT",
                    help="exit 1 when one eager FSDP2 target row's tokens/s/GPU |error| is over PCT")
    ap.add_argument("--min-rows", type=int, metavar="N",
                    help="exit 1 when fewer than N eager FSDP2 target rows are predicted")
    args = ap.parse_args()
    if args.calibrate_on is not None and not 0 < args.calibrate_on < 1:
        print("validate.py: --calibrate-on: expected a fraction between 0 and 1", file=sys.stderr)
        return 2
    try:
        with open(args.runs) as f:
            runs = json.load(f)["training_runs"]
    except (OSError, ValueError, KeyError) as e:
        print(f"validate.py: {args.runs}: cannot read training_runs ({e})", file=sys.stderr)
        return 2
    binary = find_shardscope(args.shardscope)
    work = args.keep or tempfile.mkdtemp(prefix="shardscope-validate-")
    os.makedirs(work, exist_ok=True)

    results, skipped = [], []
    for row in runs:
        rid = row["id"]
        try:
            sc = scenario_of(row)
        except Unexpressible as e:
            skipped.append((rid, str(e)))
            continue
        scen_path = os.path.join(work, rid + ".json")
        summ_path = os.path.join(work, rid + ".summary.json")
        with open(scen_path, "w") as f:
            json.dump(sc, f, indent=1)
        s, err = simulate(binary, scen_path, summ_path)
        if s is None:
            skipped.append((rid, "simulator: " + err))
            continue
        meas_tps = row["measured"].get("tokens_per_s_per_gpu")
        meas_mem, mem_kind = measured_memory(row)
        pred_mem = None
        if meas_mem is not None:
            pred_mem = s["peak_memory_reserved_gib"] if mem_kind == "reserved" else s["peak_memory_allocated_gib"]
        impl = str(row["parallelism"].get("fsdp_impl") or "")
        target = row["source"].get("repo") in TARGET_REPOS and "FSDP1" not in impl
        results.append({
            "id": rid, "gpu": sc["cluster"]["gpu"], "scenario_path": os.path.abspath(scen_path),
            "target": target, "compile": bool(row["training"].get("compile")),
            "expandable": sc["training"]["expandable_segments"],
            "measured_tps": meas_tps, "predicted_tps": s["tokens_per_s_per_gpu"],
            "tps_error_pct": pct_error(s["tokens_per_s_per_gpu"], meas_tps) if meas_tps else None,
            "memory_kind": mem_kind, "measured_mem_gib": meas_mem, "predicted_mem_gib": pred_mem,
            "mem_error_pct": pct_error(pred_mem, meas_mem) if meas_mem else None,
            "fits": s["fits"], "step_time_s": s["step_time_s"], "mfu": s["mfu"],
            # A part run under a power cap the source does not state is priced at the
            # catalog's full power: its error is partly the cap's, which no figure here knows.
            "power_limited": "power limited" in row["hardware"]["gpu"].lower(),
        })

    print(f"{'row':<52} {'tok/s/GPU meas':>14} {'pred':>8} {'err%':>7}  {'mem GiB meas':>12} {'pred':>7} {'err%':>7}  notes")
    for r in results:
        tps = (f"{r['measured_tps']:>14.0f} {r['predicted_tps']:>8.0f} {r['tps_error_pct']:>+7.1f}"
               if r["measured_tps"] else f"{'-':>14} {r['predicted_tps']:>8.0f} {'-':>7}")
        mem = (f"{r['measured_mem_gib']:>12.1f} {r['predicted_mem_gib']:>7.1f} {r['mem_error_pct']:>+7.1f}"
               if r["measured_mem_gib"] else f"{'-':>12} {'-':>7} {'-':>7}")
        notes = []
        if r["compile"]:
            notes.append("torch.compile run, predicted as eager")
        if r["power_limited"]:
            notes.append("power-limited part, cap not stated, predicted at full power")
        if r["memory_kind"]:
            notes.append(r["memory_kind"] + (", expandable segments" if r["expandable"] else ""))
        if not r["fits"]:
            notes.append("predicted not to fit")
        if not r["target"]:
            notes.append("not a target row")
        print(f"{r['id'][:52]:<52} {tps}  {mem}  {', '.join(notes)}")

    def errs(key, pred):
        return [r[key] for r in results if r[key] is not None and pred(r)]

    print("\nSummary (|error| = |predicted - measured| / measured):")
    groups = [
        ("FSDP2 target rows, eager", lambda r: r["target"] and not r["compile"]),
        ("FSDP2 target rows, eager + compile", lambda r: r["target"]),
        ("all expressed rows", lambda r: True),
    ]
    for label, pred in groups:
        print(stats_line(f"tokens/s/GPU, {label}", errs("tps_error_pct", pred)))
        print(stats_line(f"peak memory,  {label}", errs("mem_error_pct", pred)))
    print(f"\nRows not expressed ({len(skipped)} of {len(runs)}):")
    for rid, why in skipped:
        print(f"  {rid}: {why}")
    calibration = None
    if args.calibrate_on is not None:
        calibration = calibrate_and_check(binary, work, results, args.calibrate_on)
    if args.json:
        # Written beside the target and renamed: a failed run leaves an older report whole.
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"results": results, "skipped": [{"id": i, "reason": w} for i, w in skipped],
                       "calibration": calibration}, f, indent=1)
        os.replace(tmp, args.json)
    return check_limits(args, results)


def check_validated_by(rows, limit):
    """The catalog's validated_by against the rows: a GPU that names itself has eager FSDP2
    target rows, every one within the row limit; one that names none has no such rows (else the
    catalog understates what is checked); one that names another names a GPU validated so.
    sweep and recommend tell users which GPUs no measured run checks from this field."""
    with open(os.path.join(REPO, "sim", "hardware", "catalog.json"), encoding="utf-8") as f:
        catalog = {g["name"]: g.get("validated_by") for g in json.load(f)["gpus"]}
    by_gpu = {}
    for r in rows:
        by_gpu.setdefault(r["gpu"], []).append(r)
    missed = []
    for gpu, by in sorted(catalog.items()):
        own = by_gpu.get(gpu, [])
        within = own and all(abs(r["tps_error_pct"]) <= limit for r in own)
        if by == gpu and not within:
            missed.append(f"catalog.json: {gpu}: validated_by {gpu}, but "
                          + (f"{len(own)} eager FSDP2 target rows are not all within ±{limit:g}%"
                             if own else "no eager FSDP2 target row runs on it"))
        elif by is None and within:
            missed.append(f"catalog.json: {gpu}: no validated_by, but {len(own)} eager FSDP2 "
                          f"target rows are within ±{limit:g}% ({own[0]['id']}, ...)")
        elif by is not None and by != gpu and catalog.get(by) != by:
            missed.append(f"catalog.json: {gpu}: validated_by {by}, which is not validated "
                          "itself")
    return missed


def check_limits(args, results):
    """0, or 1 with each limit of --max-median-error / --max-row-error / --min-rows missed."""
    held = [r for r in results if r["target"] and not r["compile"]]
    tps = [r for r in held if r["tps_error_pct"] is not None]
    mem = [abs(r["mem_error_pct"]) for r in held if r["mem_error_pct"] is not None]
    missed = []
    if args.min_rows is not None and len(tps) < args.min_rows:
        missed.append(f"{len(tps)} eager FSDP2 target rows predicted, fewer than {args.min_rows}")
    if args.max_median_error is not None:
        for what, errors in (("tokens/s/GPU", [abs(r["tps_error_pct"]) for r in tps]),
                             ("peak memory", mem)):
            if errors and statistics.median(errors) > args.max_median_error:
                missed.append(f"{what} median |error| {statistics.median(errors):.1f}% is over "
                              f"{args.max_median_error:g}%")
    if args.max_row_error is not None:
        for r in tps:
            if abs(r["tps_error_pct"]) > args.max_row_error:
                missed.append(f"{r['id']}: tokens/s/GPU error {r['tps_error_pct']:+.1f}% is over "
                              f"±{args.max_row_error:g}%")
        missed += check_validated_by(tps, args.max_row_error)
    for m in missed:
        print(f"validate.py: {m}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
