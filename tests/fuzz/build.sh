#!/usr/bin/env bash
# Usage: tests/fuzz/build.sh [BUILD_DIR]   (from the repository root; default build-fuzz)
# Installs clang 16 if needed (scripts/setup.sh --fuzz) and builds the libFuzzer targets with
# ASan/UBSan into BUILD_DIR; then `ctest --test-dir BUILD_DIR -L fuzz` runs each briefly.
# This is the build for long fuzz runs: the five targets alone (at -O1, as every Debug build under
# the sanitizers compiles them). CI builds the same instrumentation with every test in it
# instead (.ci/run).
set -euo pipefail
dir="${1:-build-fuzz}"
bash scripts/setup.sh --fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_C_COMPILER=clang-16 "${launcher[@]}" \
  -DSHARDSCOPE_BUILD_FUZZ=ON -DSHARDSCOPE_BUILD_BENCH=OFF -DSHARDSCOPE_BUILD_VIEWER=OFF \
  -DSHARDSCOPE_BUILD_CUDA=OFF >/dev/null
cmake --build "$dir" --target tree_fuzz trace_fuzz scenario_fuzz plan_fuzz explore_fuzz
