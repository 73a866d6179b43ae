#!/usr/bin/env python3
"""examples/README.md's table of predictions against the binary: each row names an example
scenario (and the --set flags of a variant of it) with the GPUs, peak reserved memory, usable
memory, tokens/s/GPU and fit verdict that `shardscope simulate` gives it. Every row is simulated
again here and must read the same to the table's precision, so the figures a new user compares
with are this version's, not an older one's.

Usage: examples_figures_test.py SHARDSCOPE EXAMPLES_README   (run from the repository root)

Rows are those of the table under the heading "## What each example predicts"; its columns:
| scenario | --set | GPUs | peak reserved (GiB) | usable (GiB) | tokens/s/GPU | fits |
where scenario is `examples/<file>.json` and --set is empty or `path=value` items in backticks.
Exit 0 when every row matches, 1 naming the rows that do not (with what the binary says).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HEADING = "## What each example predicts"
CODE = re.compile(r"`([^`]*)`")


def rows_of(text, readme):
    start = text.find(HEADING)
    if start < 0:
        sys.exit(f"{readme}: no '{HEADING}' section")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7:
            sys.exit(f"{readme}: expected 7 cells in the row: {line}")
        rows.append((line, CODE.findall(cells[0])[0], CODE.findall(cells[1]), cells[2:]))
    if not rows:
        sys.exit(f"{readme}: the '{HEADING}' table has no rows")
    return rows


def predicted(binary, scenario, sets, out):
    args = [binary, "simulate", scenario, "--margin", "0", "--summary", out]
    for s in sets:
        args += ["--set", s]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip().splitlines()[-1:] or [f"exit {run.returncode}"]
    s = json.load(open(out, encoding="utf-8"))
    return [
        str(s["world_size"]),
        f"{s['peak_memory_reserved_gib']:.2f}",
        f"{s['usable_gib']:.2f}",
        f"{s['tokens_per_s_per_gpu']:.0f}",
        "yes" if s["fits"] else "no",
    ], None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, readme = sys.argv[1], sys.argv[2]
    text = open(readme, encoding="utf-8").read()
    problems = []
    rows = rows_of(text, readme)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "summary.json")
        for line, scenario, sets, quoted in rows:
            got, error = predicted(binary, scenario, sets, out)
            if error:
                problems.append(f"{readme}: `{scenario}` {' '.join(sets)}: simulate failed: {error}")
            elif got != quoted:
                problems.append(f"{readme}: row\n    {line}\n  the binary gives "
                                f"| {' | '.join(got)} |")
    for p in problems:
        print(p)
    if problems:
        print("update the table with what `simulate` predicts now")
        return 1
    print(f"examples_figures_test: {len(rows)} rows match the binary's predictions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
