#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs dependencies, builds everything, runs every
# test under ctest. TJ_SANITIZE=address|thread builds the tests with sanitizers in build-<sanitizer>/.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir="${BUILD_DIR:-build${TJ_SANITIZE:+-$TJ_SANITIZE}}"
cmake -S . -B "$build_dir" -G Ninja -DTJ_SANITIZE="${TJ_SANITIZE:-}"
cmake --build "$build_dir" -j"$(nproc)"
ctest --test-dir "$build_dir" -j"$(nproc)" --output-on-failure --timeout 600
