#!/usr/bin/env bash
# Clang's thread-safety analysis over every source file of the project (tests and benchmarks
# included), as errors: the ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations are
# enforced by the compiler, not only read. The build itself uses g++, which ignores them, so this
# runs clang in -fsyntax-only mode (the analysis is part of semantic analysis: a full clang build
# would report exactly the same) on each file's own command from compile_commands.json.
# Usage: scripts/check-thread-safety.sh [build-dir [path-substring...]]   (after scripts/build.sh,
# which generates the protobuf headers the sources include); with substrings, only the files whose
# path contains one are checked.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-${BUILD_DIR:-build}}"
exec python3 scripts/check_thread_safety.py "$build_dir" "${@:2}"
