#!/usr/bin/env bash
# Installs dependencies (idempotent) and builds into ${BUILD_DIR:-build}; binaries land in
# build/bin/. With arguments, builds only those targets (and what they need), e.g.
# `scripts/build.sh tjctl tj-train`; without, everything, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build_dir="${BUILD_DIR:-build${TJ_SANITIZE:+-$TJ_SANITIZE}}"
# ccache hits across clones and worktrees of the repository: paths below the root are hashed
# relative to it.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# TSan with clang 14: scripts/build-tsan-deps.sh instruments Abseil with the same compiler and
# runtime (CC/CXX are only read by the first configure of a build directory).
if [ "${TJ_SANITIZE:-}" = thread ]; then export CC="${CC:-clang-14}" CXX="${CXX:-clang++-14}"; fi
cmake -S . -B "$build_dir" -G Ninja -DTJ_SANITIZE="${TJ_SANITIZE:-}" > /dev/null
cmake --build "$build_dir" -j"$(nproc)" ${1:+--target "$@"}
