#!/usr/bin/env bash
# Builds the benchmarks (RelWithDebInfo: optimized, with symbols for perf) and runs them all,
# printing each table and writing bench/results/<benchmark>.json (<benchmark>-smoke.json with
# --smoke; results/ is not committed).
#
#   bench/run.sh                 # full run (several minutes each; tj-bench-goodput ~11)
#   bench/run.sh --smoke         # seconds: checks that everything runs, figures not meaningful
#   bench/run.sh --only ps,checkpoint             # some of the benchmarks (names as in BENCHMARKS)
#   bench/run.sh --only dispatch --closures 50000 --workers 1,4   # other flags go to each benchmark
#
# Environment: BUILD_DIR (default <repo>/build-bench), BUILD_TYPE (RelWithDebInfo or Release),
# JOBS (parallel build jobs, default 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-bench}"
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
JOBS="${JOBS:-2}"
RESULTS="$ROOT/bench/results"

case "$BUILD_TYPE" in
  Release|RelWithDebInfo) ;;
  *) echo "run.sh: BUILD_TYPE must be Release or RelWithDebInfo (got '$BUILD_TYPE')" >&2; exit 2 ;;
esac

# name:target pairs; every benchmark binary accepts --json PATH and --smoke.
BENCHMARKS=(
  "dispatch:tj-bench-dispatch"
  "ps:tj-bench-ps"
  "checkpoint:tj-bench-checkpoint"
  "push-memory:tj-bench-push-memory"
  "recovery:tj-bench-recovery"
  "goodput:tj-bench-goodput"
  "memory:tj-bench-memory"
  "scale:tj-bench-scale"
  "watch-decode:tj-bench-watch-decode"
)

generator=()
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DTJ_BUILD_BENCH=ON >/dev/null
# --only NAME[,NAME...] picks benchmarks; every other argument is passed to each one run.
only=""
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only="${2:-}"; shift 2 || { echo "run.sh: --only needs a list" >&2; exit 2; } ;;
    --only=*) only="${1#--only=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ -n "$only" ]]; then
  selected=()
  for b in "${BENCHMARKS[@]}"; do
    [[ ",$only," == *",${b%%:*},"* ]] && selected+=("$b")
  done
  if [[ ${#selected[@]} -eq 0 ]]; then echo "run.sh: --only '$only' names no benchmark" >&2; exit 2; fi
  BENCHMARKS=("${selected[@]}")
fi
set -- "${args[@]+"${args[@]}"}"

targets=()
for b in "${BENCHMARKS[@]}"; do targets+=("${b#*:}"); done
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${targets[@]}"

mkdir -p "$RESULTS"
suffix=""
for arg in "$@"; do [[ "$arg" == "--smoke" ]] && suffix="-smoke"; done
status=0
for b in "${BENCHMARKS[@]}"; do
  name="${b%%:*}"
  target="${b#*:}"
  binary="$(find "$BUILD_DIR" -type f -name "$target" -perm -u+x | head -n1)"
  if [[ -z "$binary" ]]; then echo "run.sh: $target was not built" >&2; exit 1; fi
  echo "=== $name ($binary) ==="
  "$binary" --json "$RESULTS/$name$suffix.json" "$@" || status=$?
  echo
done

# Optional: TensorFlow's ClusterCoordinator as a baseline of dispatch, when bench/tf/setup.sh has
# made its venv (TJ_TF_VENV). Gets --quick for --smoke and --workers; writes dispatch-tf.json.
if [[ " ${BENCHMARKS[*]} " == *" dispatch:"* ]]; then
  tf_python="${TJ_TF_VENV:-$HOME/.cache/trainingjob-operator/tf-venv}/bin/python"
  echo "=== dispatch: TensorFlow baseline (bench/tf/tf_dispatch_bench.py) ==="
  if [[ -x "$tf_python" ]]; then
    tf_args=()
    [[ -n "$suffix" ]] && tf_args+=(--quick)
    prev=""
    for arg in "$@"; do
      [[ "$prev" == "--workers" ]] && tf_args+=(--workers "$arg")
      [[ "$arg" == --workers=* ]] && tf_args+=("$arg")
      prev="$arg"
    done
    "$tf_python" "$ROOT/bench/tf/tf_dispatch_bench.py" "${tf_args[@]}" \
      --json "$RESULTS/dispatch-tf$suffix.json" --ours "$RESULTS/dispatch$suffix.json" || status=$?
  else
    echo "TensorFlow baseline unavailable: run bench/tf/setup.sh"
  fi
  echo
fi
exit "$status"
