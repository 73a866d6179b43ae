#!/bin/sh
# Usage: run_fuzz_smoke.sh FUZZER CORPUS_DIR SECONDS
# A short libFuzzer run for CTest: every committed input first, then SECONDS of mutation. The
# committed corpus is only read; new inputs go to a scratch folder, and a crashing input is
# kept in the current (build) folder as crash-<sha1> to reproduce with `FUZZER crash-<sha1>`.
set -eu
bin=$1; corpus=$2; seconds=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="./$(basename "$bin")-" "$scratch" "$corpus"
