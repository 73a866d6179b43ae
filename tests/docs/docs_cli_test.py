#!/usr/bin/env python3
"""docs/cli.md against the binary: every subcommand and flag in `--help` is documented, and
every one documented exists.

Usage: docs_cli_test.py SHARDSCOPE DOCS_CLI_MD

docs/cli.md has one section per subcommand, headed "## `shardscope <sub>`" ("## `shardscope`"
for the program's own flags); a flag counts as documented when it appears in backticks in the
first cell of a table row of its section. `-h` / `--help` are checked only for the program
itself (every subcommand has them). Exit 0 when both sides agree, 1 with one line per problem.
"""
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
HELP_FLAGS = {"-h", "--help"}


def run_help(binary, args):
    p = subprocess.run([binary] + args + ["--help"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"`{' '.join(['shardscope'] + args)} --help` exited {p.returncode}: {p.stderr}")
    return p.stdout


def help_sections(text):
    """CLI11 help → {"Options": [lines], "Subcommands": [lines], ...}."""
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^([A-Z][A-Za-z ]*):\s*$", line)
        if m:
            current = m.group(1)
            sections[current] = []
        elif current and line.startswith("  "):
            sections[current].append(line)
    return sections


def help_flags(text):
    flags = set()
    for line in help_sections(text).get("Options", []):
        # The first column (flag names and the value type) ends at a run of 2+ spaces; a
        # continuation line of a long description starts with many spaces and has none.
        first = re.split(r"\s{2,}", line.strip())[0]
        if not first.startswith("-"):
            continue
        flags.update(FLAG.findall(first.split(" ")[0]))
    return flags


def help_subcommands(text):
    subs = []
    for line in help_sections(text).get("Subcommands", []):
        m = re.match(r"^  (\S+)", line)
        if m:
            subs.append(m.group(1))
    return subs


def doc_sections(md):
    """docs/cli.md → {"" (the program) or "<sub>": set of flags in its table rows}."""
    sections, current = {}, None
    for line in md.splitlines():
        m = re.match(r"^## `shardscope(?: ([\w-]+))?`\s*$", line)
        if m:
            current = m.group(1) or ""
            sections[current] = set()
            continue
        if line.startswith("## "):
            current = None
            continue
        if current is None or not line.startswith("|"):
            continue
        cells = line.split("|")
        if len(cells) < 3:
            continue
        for code in re.findall(r"`([^`]*)`", cells[1]):
            sections[current].update(FLAG.findall(code.split(" ")[0]))
    return sections


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, md_path = sys.argv[1], sys.argv[2]
    with open(md_path, encoding="utf-8") as f:
        docs = doc_sections(f.read())
    problems = []
    top = run_help(binary, [])
    subs = help_subcommands(top)
    if not subs:
        problems.append("`shardscope --help` lists no subcommands (did its format change?)")

    def compare(name, in_help):
        label = f"shardscope {name}".strip()
        heading = f"## `{label}`"
        if name not in docs:
            problems.append(f"{md_path}: no section {heading} for `{label}` "
                            f"(it is in `shardscope --help`); add one with a flag table")
            return
        documented = docs[name]
        if name:
            in_help = in_help - HELP_FLAGS
            documented = documented - HELP_FLAGS
        for flag in sorted(in_help - documented):
            problems.append(f"{md_path}: `{label} {flag}` is in `{label} --help` but not "
                            f"documented: add a row \"| `{flag} …` | … |\" to the table under "
                            f"{heading}")
        for flag in sorted(documented - in_help):
            problems.append(f"{md_path}: `{label} {flag}` is documented under {heading} but "
                            f"`{label} --help` has no such flag: remove the row or add the flag")

    compare("", help_flags(top))
    for sub in subs:
        compare(sub, help_flags(run_help(binary, [sub])))
    for name in sorted(set(docs) - set(subs) - {""}):
        problems.append(f"{md_path}: section ## `shardscope {name}` documents a subcommand "
                        f"that `shardscope --help` does not list: remove it or register the "
                        f"subcommand")
    for p in problems:
        print(p)
    if problems:
        print(f"docs vs --help: {len(problems)} problem(s)")
        return 1
    print(f"docs vs --help: {len(subs)} subcommands, "
          f"{sum(len(v) for v in docs.values())} documented flags, all in step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
