#!/usr/bin/env bash
# Regenerates the golden predicted traces: for every traces/<name>/scenario.json, writes
# traces/<name>/trace.json and traces/<name>/summary.json with `shardscope simulate`, then
# validates the new trace with `shardscope check-trace`. The only way golden files are made
# (never edit them by hand); see traces/README.md for when to run it.
#
#   scripts/regen_golden.sh [BUILD_DIR] [NAME ...]
#
# BUILD_DIR defaults to $BUILD_DIR or build/ (where scripts/build.sh builds); NAMEs limit the
# run to those scenarios (default: all). Exit 0 done, 2 bad usage / missing binary or scenario,
# 3 a simulation or validation failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-${BUILD_DIR:-build}}
[ $# -gt 0 ] && shift
case $build_dir in /*) ;; *) build_dir=$repo/$build_dir ;; esac
tool=$build_dir/tools/shardscope
if [ ! -x "$tool" ]; then
  echo "regen_golden: no shardscope binary at $tool (build it first: cmake --build $build_dir --target shardscope)" >&2
  exit 2
fi

cd "$repo"
if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for s in traces/*/scenario.json; do
    [ -e "$s" ] || continue
    names+=("$(basename "$(dirname "$s")")")
  done
fi
if [ ${#names[@]} -eq 0 ]; then
  echo "regen_golden: no scenarios under $repo/traces (expected traces/<name>/scenario.json)" >&2
  exit 2
fi

printf '%-16s %12s %14s %14s %10s\n' scenario step_s peak_alloc_GiB peak_rsvd_GiB trace_KiB
for name in "${names[@]}"; do
  dir=traces/$name
  if [ ! -f "$dir/scenario.json" ]; then
    echo "regen_golden: $dir/scenario.json: no such scenario" >&2
    exit 2
  fi
  if ! log=$("$tool" simulate "$dir/scenario.json" --trace "$dir/trace.json" \
               --summary "$dir/summary.json" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "regen_golden: $dir: simulate failed" >&2
    exit 3
  fi
  if ! log=$("$tool" check-trace "$dir/trace.json" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "regen_golden: $dir/trace.json: check-trace failed" >&2
    exit 3
  fi
  # The summary is pretty-printed one field per line, so grep reads the headline figures.
  field() { sed -n "s/^  \"$1\": \([^,]*\),\{0,1\}\$/\1/p" "$dir/summary.json"; }
  printf '%-16s %12.6f %14.3f %14.3f %10d\n' "$name" "$(field step_time_s)" \
    "$(field peak_memory_allocated_gib)" "$(field peak_memory_reserved_gib)" \
    $(( ($(wc -c < "$dir/trace.json") + 1023) / 1024 ))
done
echo "Golden traces written. Review them with 'git diff --stat traces/' and commit them with the change that caused them."
