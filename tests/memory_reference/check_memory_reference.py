#!/usr/bin/env python3
"""Checks `shardscope simulate` against PyTorch's FSDPMemTracker reference (no torch needed).

reference.json beside this file is tools/memtracker_reference.py's output: per case one FSDP2
step measured by FSDPMemTracker under FakeTensorMode (torch 2.15, transformers 5.24). Each case
is turned into a scenario (h100-sxm, the case's ranks as 8-GPU nodes, dp_shard = all ranks,
bf16 params / fp32 reduce, batch 1, the case's sequence, checkpointing, prefetch depths and
reshard_after_forward, model.implementation) and simulated. Bounds (issue 11):
  - peak allocated within 3% of the tracker's;
  - each category at the peak within 5% or 64 MiB, whichever is larger, after mapping the
    tracker's categories onto ours (reference.json's category_map):
      Sharded Param (+ Buffer) -> sharded_params, OptState -> optimizer,
      Sharded Grad -> sharded_grads, Unsharded Param + All Gather -> unsharded_params,
      Unsharded Grad -> unsharded_grads, Reduce Scatter -> comm_buffers,
      Activation + Temp (+ Inputs) -> activations + temporaries.
    The tracker's Activation / Temp split is by *when* a tensor was allocated, not by its
    role: everything allocated during forward (saved tensors and forward transients alike,
    and recomputation inside a checkpointed region) counts as Activation, everything
    allocated during backward outside checkpoint recomputation (activation gradients, the
    loss backward's fp32 tensors) as Temp. Ours splits by role (saved for backward vs.
    transient), so only the sum of the two is comparable. The same rule files some FSDP2
    tensors by time, not role; the reference records those live at the peak
    (relabelled_bytes: tracker label -> our category -> bytes) and they are moved back to
    their role before comparing: an explicit backward prefetch's all-gather output (issued
    by FSDPState._pre_backward after the group's instrumented pre_backward: Temp), unsharded
    gradients before their group's post_backward (Temp), and the slice reshard_after_forward
    = int keeps (FSDPParam.to_sharded_post_forward's clone in forward: Activation);
  - for the knob cases, each knob's change of the phase peaks (forward, loss, backward,
    optimizer) against the knob base within 10% or 64 MiB. Those cases carry
    "requires": "fsdp2-prefetch-rules" (FSDP2's prefetch and reshard rules in the schedule
    builder, issue 11 deliverable 3) and are checked only when capabilities.json beside this
    file lists that capability as satisfied; until then they are reported, not checked. Until
    then, too, the root pre-backward prefetch of the last layer that the tracker holds at the
    loss peak of a transformers case (the loss inside the root) is taken out of its figures.
  - a case's `checked_phases` (forward, loss, backward, optimizer): those phases' peaks within
    3% of the tracker's, also when the case is gated on a capability.
Usage: check_memory_reference.py SHARDSCOPE_BINARY [--only NAME,...] [--report]
  --report prints the comparison table and exits 0 (no bounds).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GIB = 1024**3
MIB = 1024**2
OURS = ("sharded_params", "optimizer", "sharded_grads", "unsharded_params", "unsharded_grads",
        "comm_buffers")
PHASES = ("forward", "loss", "backward", "optimizer")
KNOBS = "fsdp2-prefetch-rules"


def scenario(case, legacy=False):
    model = case["model"]
    if isinstance(model, str) and ":" in model:  # NAME:LAYERS, the built-in config cut short
        name, layers = model.split(":")
        with open(os.path.join(REPO, "core", "model", "configs", name + ".json")) as f:
            model = json.load(f)
        model["num_hidden_layers"] = int(layers)
    if legacy:  # a binary from before model.implementation (before/after figures)
        m = {"hf": model} if isinstance(model, dict) else model
    else:
        m = {"hf": model} if isinstance(model, dict) else {"builtin": model}
        m["implementation"] = case["implementation"]
    ranks = case["ranks"]
    return {
        "description": f"memory reference case {case['name']}",
        "model": m,
        "cluster": {"gpu": "h100-sxm", "nodes": max(1, ranks // 8),
                    "gpus_per_node": min(8, ranks)},
        "parallelism": {"dp_shard": -1},
        "fsdp": {"reshard_after_forward": case["reshard_after_forward"],
                 "forward_prefetch_depth": case["forward_prefetch_depth"],
                 "backward_prefetch_depth": case["backward_prefetch_depth"],
                 "mix_precision": {"param_dtype": "bfloat16", "reduce_dtype": "float32"}},
        "training": {"local_batch": case["batch"], "seq_len": case["seq"],
                     "activation_checkpoint": case["activation_checkpoint"],
                     "optimizer": "adamw"},
    }


def simulate(binary, case, tmp, legacy):
    path = os.path.join(tmp, case["name"] + ".json")
    with open(path, "w") as f:
        json.dump(scenario(case, legacy), f)
    out = os.path.join(tmp, case["name"] + ".summary.json")
    run = subprocess.run([binary, "simulate", path, "--summary", out], capture_output=True,
                         text=True)
    if run.returncode != 0:
        return None, run.stderr.strip()
    with open(out) as f:
        return json.load(f), ""


def within(got, want, rel, floor):
    return abs(got - want) <= max(rel * abs(want), floor)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--only")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--legacy", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    with open(os.path.join(HERE, "reference.json")) as f:
        ref = json.load(f)
    with open(os.path.join(HERE, "capabilities.json")) as f:
        satisfied = set(json.load(f)["satisfied"])
    cases = ref["cases"]
    if a.only:
        cases = [c for c in cases if c["name"] in a.only.split(",")]
    failures = []
    summaries = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'case':34} {'tracker GiB':>11} {'ours GiB':>9} {'diff':>7}  peak phase/op")
        for c in cases:
            summary, err = simulate(a.binary, c, tmp, a.legacy)
            if summary is None:
                failures.append(f"{c['name']}: simulate failed: {err}")
                continue
            summaries[c["name"]] = summary
            t = c["tracker"]
            # With the loss inside the root (transformers), FSDP2's root pre-backward hook fires
            # on the loss and all-gathers the last layer while the loss backward runs: at the
            # loss peak the tracker holds that all-gather. Its timing is the schedule builder's
            # prefetch rules (fsdp2-prefetch-rules); until they are in, that buffer is taken
            # out of the tracker's figures rather than the bounds widened.
            prefetch = 0
            if (KNOBS not in satisfied and c["implementation"] == "transformers" and
                    t["peak_phase"] == "loss"):
                prefetch = t["categories_bytes"].get("All Gather", 0)
            want = (t["peak_allocated_bytes"] - prefetch) / GIB
            got = summary["peak_memory_allocated_gib"]
            gated = c.get("requires") and c["requires"] not in satisfied
            print(f"{c['name']:34} {want:11.2f} {got:9.2f} {100 * (got - want) / want:+6.1f}%  "
                  f"{t['peak_phase']}/{t['peak_op'].replace('aten.', '')} vs "
                  f"{summary.get('peak_memory_op')}{'  (not checked: requires ' + c['requires'] + ')' if gated else ''}")
            # A case gated on a capability may still name phases whose peaks are checked
            # now (checked_phases: e.g. the forward and loss peaks, which hold every saved
            # tensor, when only the backward's gradient lifetimes are open), within 3%.
            by_phase = {k: v["allocated_gib"]
                        for k, v in (summary.get("peak_memory_by_phase") or {}).items()}
            for p in c.get("checked_phases", []):
                want_p = t["phase_peak_bytes"].get(p, 0) / GIB
                if not within(by_phase.get(p, 0.0), want_p, 0.03, 0):
                    failures.append(f"{c['name']}: {p} peak {by_phase.get(p, 0.0):.3f} GiB, "
                                    f"tracker {want_p:.3f} GiB (bound 3%)")
            if gated:
                continue
            if not within(got, want, 0.03, 0):
                failures.append(f"{c['name']}: peak allocated {got:.3f} GiB, tracker "
                                f"{want:.3f} GiB (bound 3%)")
            at_peak = summary["memory_at_peak_gib"]
            mapped = dict(t["mapped_bytes"])
            for label, by_role in t.get("relabelled_bytes", {}).items():
                for role, n in by_role.items():
                    mapped[ref["category_map"][label]] = mapped.get(ref["category_map"][label], 0) - n
                    mapped[role] = mapped.get(role, 0) + n
            mapped["unsharded_params"] = mapped.get("unsharded_params", 0) - prefetch
            pairs = [(k, at_peak.get(k, 0.0), mapped.get(k, 0) / GIB) for k in OURS]
            pairs.append(("activations+temporaries",
                          at_peak.get("activations", 0.0) + at_peak.get("temporaries", 0.0),
                          mapped.get("activations+temporaries", 0) / GIB))
            for name, ours, theirs in pairs:
                if not within(ours, theirs, 0.05, 64 * MIB / GIB):
                    failures.append(f"{c['name']}: {name} at the peak {ours:.3f} GiB, tracker "
                                    f"{theirs:.3f} GiB (bound 5% or 64 MiB)")
        base = ref.get("knob_base")
        for c in cases:
            if "requires" not in c or c["name"] == base or c["requires"] not in satisfied:
                continue
            if base not in summaries or c["name"] not in summaries:
                continue
            base_case = next(b for b in ref["cases"] if b["name"] == base)
            ours_phase = summaries[c["name"]].get("peak_memory_by_phase")
            ours_base = summaries[base].get("peak_memory_by_phase")
            if ours_phase is None or ours_base is None:
                failures.append(f"{c['name']}: the summary has no peak_memory_by_phase")
                continue
            ours_phase = {k: v["allocated_gib"] for k, v in ours_phase.items()}
            ours_base = {k: v["allocated_gib"] for k, v in ours_base.items()}
            for p in PHASES:
                want = (c["tracker"]["phase_peak_bytes"].get(p, 0) -
                        base_case["tracker"]["phase_peak_bytes"].get(p, 0)) / GIB
                got = ours_phase.get(p, 0.0) - ours_base.get(p, 0.0)
                if not within(got, want, 0.10, 64 * MIB / GIB):
                    failures.append(f"{c['name']}: {p} peak change {got:+.3f} GiB, tracker "
                                    f"{want:+.3f} GiB (bound 10% or 64 MiB)")
    for f in failures:
        print("FAIL", f)
    return 0 if a.report else 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
