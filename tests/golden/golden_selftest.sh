#!/usr/bin/env bash
# Proves golden_check.sh can fail: copies one golden scenario into a temp folder, alters its
# golden files in ways a model change would, and expects golden_check.sh to exit 1 for each
# (0 for the untouched copy and for a different tool version, 2 for a missing golden).
#
#   golden_selftest.sh SHARDSCOPE TRACES_DIR [NAME]
#
# NAME defaults to the first scenario. Perturbations edit digits in place (prefix a "1"), so
# no figure is hard-coded and they keep working after the goldens are regenerated.
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: golden_selftest.sh SHARDSCOPE TRACES_DIR [NAME]" >&2
  exit 2
fi
tool=$1
traces=$2
here=$(cd "$(dirname "$0")" && pwd)
check=$here/golden_check.sh
name=${3:-}
if [ -z "$name" ]; then
  for s in "$traces"/*/scenario.json; do
    [ -e "$s" ] && name=$(basename "$(dirname "$s")") && break
  done
fi
if [ -z "$name" ] || [ ! -f "$traces/$name/trace.json" ]; then
  echo "golden_selftest: no golden scenario with a trace under $traces" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardscope-golden-self.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
case_dir=$tmp/traces/$name
failures=0

reset_copy() {
  rm -rf "$tmp/traces"
  mkdir -p "$tmp/traces"
  cp -R "$traces/$name" "$case_dir"
}

# expect RC WHAT: runs the check on the copy and compares its exit code.
expect() {
  local want=$1 what=$2 log rc
  log=$(bash "$check" "$tool" "$tmp/traces" "$name" 2>&1)
  rc=$?
  if [ $rc -ne "$want" ]; then
    printf '%s\n' "$log"
    echo "FAIL: $what: golden_check exit $rc, expected $want"
    failures=$((failures + 1))
  else
    echo "ok   $what (exit $rc)"
  fi
}

# perturb FILE SED_SCRIPT WHAT: edits the copy's FILE; a no-op edit is itself a failure, so the
# test cannot pass because a pattern stopped matching.
perturb() {
  local file=$case_dir/$1 script=$2 what=$3
  sed "$script" "$file" > "$file.new" && mv "$file.new" "$file"
  if cmp -s "$file" "$traces/$name/$1"; then
    echo "FAIL: $what: the edit changed nothing (pattern no longer matches $1)"
    failures=$((failures + 1))
    return 1
  fi
}

reset_copy
expect 0 "unchanged goldens match"

reset_copy
perturb trace.json 's/"tool_version":"[^"]*"/"tool_version":"shardscope 0.0.0-selftest"/' \
  "another tool version" && expect 0 "another tool version is not a change"

reset_copy
perturb summary.json 's/^  "step_time_s": /  "step_time_s": 1/' "summary step time" &&
  expect 1 "a changed summary step time fails"

reset_copy
perturb summary.json 's/^  "fits": true/  "fits": false/; t; s/^  "fits": false/  "fits": true/' \
  "summary fits flag" && expect 1 "a changed summary field that diff does not measure fails"

reset_copy
perturb trace.json '/"op_id":"step\/optimizer"/s/"dur":/"dur":1/' "optimizer duration" &&
  expect 1 "a changed op duration fails"

reset_copy
perturb trace.json '0,/"bytes":\([1-9]\)/s//"bytes":1\1/' "collective bytes" &&
  expect 1 "changed collective bytes (not a diff metric) fail"

reset_copy
perturb trace.json '0,/"ph":"X","name":"ncclReduceScatter"/{/"ph":"X","name":"ncclReduceScatter"/d}' \
  "a removed reduce-scatter" && expect 1 "a removed op fails"

reset_copy
rm "$case_dir/summary.json"
expect 2 "a missing golden is bad input"

if [ $failures -ne 0 ]; then
  echo "golden_selftest: $failures check(s) failed"
  exit 1
fi
echo "golden_selftest: golden_check.sh detects every change tried on '$name'"
