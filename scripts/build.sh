#!/usr/bin/env bash
# Configures and builds shardscope into build/ (or $BUILD_DIR). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
# A unity build (CMake's, 8 files a compilation) halves a fresh build's CPU time: each file
# otherwise parses and instantiates the same JSON, fmt and GoogleTest templates again. Measured on
# core_trace, core_model and their tests in Release: 505 CPU-s one file a time, 255 unity.
# UNITY=OFF for a tree you edit file by file (a change then recompiles only its own file).
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DCMAKE_UNITY_BUILD=${UNITY:-ON} "$@"
cmake --build "$build_dir" -j "$jobs"
