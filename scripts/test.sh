#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every CTest test.
# GPU tests (label `gpu`) skip cleanly on machines without a device; `torch` tests skip where
# PyTorch is not importable. Extra args go to cmake (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --viewer  # the viewer's packages too, so CI builds and tests it
bash scripts/build.sh "$@"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
