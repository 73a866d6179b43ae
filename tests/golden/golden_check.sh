#!/usr/bin/env bash
# Re-simulates golden scenarios and compares the result with the committed goldens.
#
#   golden_check.sh SHARDSCOPE TRACES_DIR [NAME ...]
#
# For each TRACES_DIR/<name>/scenario.json (or only the NAMEs given): `simulate` into a temp
# folder, `check-trace` the new trace, `diff` golden vs new trace and summary with zero
# tolerance, then compare the files byte for byte (ignoring only the tool_version string) so a
# change that `diff` does not measure (bytes, flops, memory series, warnings) still fails.
# Exit 0 all match, 1 a golden changed or a new trace is invalid, 2 bad usage or missing files.
# Fix a failure by fixing the regression or, when the change is intended, with
# scripts/regen_golden.sh (traces/README.md).
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: golden_check.sh SHARDSCOPE TRACES_DIR [NAME ...]" >&2
  exit 2
fi
tool=$1
traces=$2
shift 2
if [ ! -x "$tool" ]; then
  echo "golden_check: $tool: not an executable shardscope" >&2
  exit 2
fi
if [ ! -d "$traces" ]; then
  echo "golden_check: $traces: no such folder (expected the repo's traces/)" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for s in "$traces"/*/scenario.json; do
    [ -e "$s" ] || continue
    names+=("$(basename "$(dirname "$s")")")
  done
fi
if [ ${#names[@]} -eq 0 ]; then
  echo "golden_check: no scenarios under $traces (expected <name>/scenario.json)" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardscope-golden.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

# Exact: every metric `diff` knows gets a zero limit (compute has no default limit).
zero_tol="step_time=0%,exposed_comm=0%,compute=0%,peak_memory=0%,op=0ns"
regen_hint="if the change is intended, run scripts/regen_golden.sh and commit the new goldens"

# The version string changes with every release and is not a prediction.
strip_version() { sed 's/"tool_version":"[^"]*"/"tool_version":""/' "$1"; }

failed=()
for name in "${names[@]}"; do
  dir=$traces/$name
  out=$tmp/$name
  mkdir -p "$out"
  for f in scenario.json trace.json summary.json; do
    if [ ! -f "$dir/$f" ]; then
      echo "golden_check: $dir/$f: missing (scripts/regen_golden.sh writes trace.json and summary.json)" >&2
      exit 2
    fi
  done

  if ! log=$("$tool" simulate "$dir/scenario.json" --trace "$out/trace.json" \
               --summary "$out/summary.json" 2>&1); then
    printf '%s\n' "$log"
    echo "FAIL $name: simulate failed"
    failed+=("$name")
    continue
  fi
  if ! log=$("$tool" check-trace "$out/trace.json" 2>&1); then
    printf '%s\n' "$log"
    echo "FAIL $name: the new trace is not a valid shardscope trace"
    failed+=("$name")
    continue
  fi

  changed=0
  for f in trace.json summary.json; do
    log=$("$tool" diff "$dir/$f" "$out/$f" --tol "$zero_tol" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
      printf '%s\n' "$log"
      echo "FAIL $name: $f differs from the golden (shardscope diff exit $rc)"
      changed=1
    elif ! cmp -s <(strip_version "$dir/$f") <(strip_version "$out/$f"); then
      # Lines are events (trace) or fields (summary); the metadata line is long, so cut it.
      diff -u <(strip_version "$dir/$f") <(strip_version "$out/$f") \
        --label "golden $dir/$f" --label "new" | cut -c1-400 | head -n 60
      echo "FAIL $name: $f differs from the golden in content shardscope diff does not measure"
      changed=1
    fi
  done
  if [ $changed -ne 0 ]; then
    failed+=("$name")
  else
    echo "ok   $name"
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "golden_check: ${#failed[@]} of ${#names[@]} scenarios changed: ${failed[*]}"
  echo "golden_check: $regen_hint"
  exit 1
fi
echo "golden_check: all ${#names[@]} scenarios match their goldens"
