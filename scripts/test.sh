#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs dependencies, builds everything, runs every
# test under ctest. TJ_SANITIZE=address|thread builds and tests in build-<sanitizer>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build_dir="${BUILD_DIR:-build${TJ_SANITIZE:+-$TJ_SANITIZE}}"
ctest --test-dir "$build_dir" -j"$(nproc)" --output-on-failure --timeout 600
