#!/usr/bin/env python3
"""README.md's quoted output against the binary: each ```text block is what the nearest ```sh
block before it prints, and every line of the block (but "…", which stands for lines left out)
must be a line of that command's output, verbatim. A README that shows another version's numbers
fails here instead of misleading a new user.

Usage: readme_output_test.py SHARDSCOPE README_MD   (run from the repository root)

The command is the ```sh block's line that starts with ./build/tools/shardscope; the binary
given replaces that path. Exit 0 when every line is found, 1 with the missing lines.
"""
import re
import shlex
import subprocess
import sys

PROGRAM = "./build/tools/shardscope"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, readme = sys.argv[1], sys.argv[2]
    text = open(readme, encoding="utf-8").read()
    problems, checked = [], 0
    command = None
    for match in BLOCK.finditer(text):
        kind, body = match.group(1), match.group(2)
        if kind == "sh":
            lines = [l for l in body.splitlines() if l.startswith(PROGRAM + " ")]
            command = lines[-1] if lines else None
            continue
        if kind != "text":
            continue
        if command is None:
            problems.append(f"{readme}: a ```text block with no ./build/tools/shardscope command "
                            "in a ```sh block before it")
            continue
        args = [binary] + shlex.split(command[len(PROGRAM) + 1:])
        run = subprocess.run(args, capture_output=True, text=True)
        output = {l.rstrip() for l in (run.stdout + run.stderr).splitlines()}
        for line in body.splitlines():
            if line.strip() in ("", "…"):
                continue
            checked += 1
            if line.rstrip() not in output:
                problems.append(f"{readme}: `{command}` no longer prints:\n    {line}")
        command = None
    if checked == 0:
        problems.append(f"{readme}: no quoted output line checked (the README's layout changed?)")
    for p in problems:
        print(p)
    if problems:
        print("update the README's block with what the command prints now")
        return 1
    print(f"readme_output_test: {checked} quoted lines match the binary's output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
