#!/usr/bin/env python3
"""PyTorch's interleaved 1F1B orders, for core/schedule/pipeline_order.cpp to be checked against.

torch.distributed.pipelining's ScheduleInterleaved1F1B runs its pipeline_order (the IR the
multi-stage schedules execute): per rank, forwards and backwards of its local stages, with the
micro-batches in rounds of `microbatches_per_round`. This script asks the installed torch for
that order on a set of (pp, virtual stages, micro-batches) cases, drops the timing no-ops, and
writes them as JSON; a case torch refuses is recorded with its error.

    pipeline_order_reference.py --out tests/schedule/pipeline_orders_torch.json
    pipeline_order_reference.py --check tests/schedule/pipeline_orders_torch.json
                                  (exit 1 when the installed torch disagrees, 77 without torch)

Only the order is asked for: no process group, no stage module. `_calculate_single_rank_operations`
reads four attributes of the schedule, set here as __init__ sets them.
"""

import argparse
import json
import os
import sys
import types

# (pp, virtual stages, micro-batches): multiples of pp (one round per pp micro-batches), fewer
# micro-batches than stages (one round), rounds longer than pp, and counts torch refuses.
CASES = [
    (2, 2, 4), (2, 2, 6), (4, 2, 8), (4, 3, 8), (2, 2, 3), (4, 2, 2), (4, 2, 6),
    (4, 2, 10), (8, 2, 12), (8, 2, 20), (3, 2, 7), (4, 2, 9), (8, 2, 17),
]


def orders(torch_schedules, pp, v, m):
    rounds = max(1, m // pp)
    if m % rounds != 0:
        return None, (f"Interleaved 1F1B requires the number of microbatches to be a multiple "
                      f"of the number of rounds ({rounds}), but got {m}.")
    stub = types.SimpleNamespace(n_local_stages=v, pp_group_size=pp, number_of_rounds=rounds,
                                 microbatches_per_round=m // rounds, _n_microbatches=m)
    out = []
    for rank in range(pp):
        ops = torch_schedules.ScheduleInterleaved1F1B._calculate_single_rank_operations(stub, rank)
        text = []
        for a in ops:
            if a is None:
                continue
            kind = a.computation_type
            if kind == torch_schedules._ComputationType.FORWARD:
                text.append(f"F{a.stage_index}.{a.microbatch_index}")
            elif kind == torch_schedules._ComputationType.FULL_BACKWARD:
                text.append(f"B{a.stage_index}.{a.microbatch_index}")
            else:
                raise SystemExit(f"unexpected action {a} in pp={pp} v={v} m={m}")
        out.append(text)
    return out, None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", help="write the reference here")
    g.add_argument("--check", help="compare the installed torch with this reference")
    args = p.parse_args()
    try:
        import torch
        from torch.distributed.pipelining import schedules
    except ImportError as e:
        print(f"pipeline_order_reference: torch not importable ({e}); skipped")
        return 77
    doc = {"format": "shardscope-pipeline-orders/1", "torch": torch.__version__, "cases": []}
    for pp, v, m in CASES:
        order, error = orders(schedules, pp, v, m)
        case = {"pp": pp, "virtual_stages": v, "micro_batches": m}
        if error:
            case["error"] = error
        else:
            case["orders"] = [" ".join(o) for o in order]
        doc["cases"].append(case)
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)
        print(f"wrote {len(doc['cases'])} cases from torch {torch.__version__} to {args.out}")
        return 0
    with open(args.check) as f:
        ref = json.load(f)
    if ref["cases"] != doc["cases"]:
        if len(ref["cases"]) != len(doc["cases"]):
            print(f"{len(ref['cases'])} cases in {args.check}, {len(doc['cases'])} asked of torch")
        for a, b in zip(ref["cases"], doc["cases"]):
            if a != b:
                print(f"differs from torch {torch.__version__}: {a} against {b}")
        return 1
    print(f"{len(doc['cases'])} cases agree with torch {torch.__version__} "
          f"(reference from {ref['torch']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
