#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs dependencies, builds everything, checks the
# mutex annotations with clang (scripts/check-thread-safety.sh), runs every test under ctest.
# TJ_SANITIZE=address|thread builds and tests in build-<sanitizer>/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build_dir="${BUILD_DIR:-build${TJ_SANITIZE:+-$TJ_SANITIZE}}"
bash scripts/check-thread-safety.sh "$build_dir"
ctest --test-dir "$build_dir" -j"$(nproc)" --output-on-failure --timeout 600
