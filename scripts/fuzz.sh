#!/usr/bin/env bash
# Fuzzes every parser of outside bytes (fuzz/, docs/fuzzing.md) with libFuzzer + ASan + UBSan.
#   scripts/fuzz.sh                  short run (CI, after ctest in scripts/test.sh): 15 s per target
#   scripts/fuzz.sh --minutes N      long run: N minutes per target
#   scripts/fuzz.sh --only NAME      one target (e.g. ps_push_fuzzer); combines with the above
# Idempotent: configures build-fuzz/ with clang once, builds only the fuzzers and the sources they
# need, then runs each target on its seed corpus (fuzz/corpus/<target>/, never modified) plus a
# working corpus in build-fuzz/corpus/<target>/. Fails on any crash, leak, timeout, allocation
# over the limit or RSS over the limit; the input that did it is left in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=15
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) seconds=$(($2 * 60)); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--minutes N | --seconds N] [--only TARGET]" >&2; exit 2 ;;
  esac
done

# Inputs are at most kMaxLen bytes; no single allocation may exceed kMallocLimitMb (64 times the
# largest input: every decoder allocates in proportion to the bytes it was given) and the process
# may not exceed kRssLimitMb (ASan's shadow memory and the in-memory corpus are most of it).
readonly kMaxLen=65536
readonly kMallocLimitMb=4
readonly kRssLimitMb=1024
readonly kTimeoutSeconds=10
# Except where protobuf parses the input (ps_lookup_fuzzer): Debian's protobuf 3.21 reserves up to
# its kSafeStringSize (50,000,000 bytes) for a string whose declared length lies past the input,
# when an enclosing message's declared length (never clamped to the bytes there) lets it through; a
# 35-byte request did it. protobuf bounds it itself and frees it when the parse fails a moment
# later; gRPC parses every PS request that way. docs/fuzzing.md, "Limits".
malloc_limit_mb() { # <target>
  case "$1" in
    ps_lookup_fuzzer) echo 64 ;;
    *) echo "$kMallocLimitMb" ;;
  esac
}

if ! command -v clang++-14 >/dev/null || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  bash scripts/install-deps.sh
fi

build_dir="${FUZZ_BUILD_DIR:-build-fuzz}"  # another directory: e.g. to time a cold build
if [ ! -f "$build_dir/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -G Ninja -DTJ_FUZZ=ON \
    -DTJ_BUILD_TESTS=OFF -DTJ_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" >/dev/null
fi
ninja -C "$build_dir" tj_fuzzers

targets=()
for dir in fuzz/corpus/*/; do
  name=$(basename "$dir")
  if [ -z "$only" ] || [ "$only" = "$name" ]; then targets+=("$name"); fi
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no target named '$only' (see fuzz/corpus/)" >&2
  exit 2
fi

failed=()
for name in "${targets[@]}"; do
  binary="$build_dir/bin/$name"
  if [ ! -x "$binary" ]; then
    echo "fuzz: $name has a corpus but no binary (fuzz/CMakeLists.txt)" >&2
    failed+=("$name")
    continue
  fi
  mkdir -p "$build_dir/corpus/$name" "$build_dir/artifacts/$name"
  log="$build_dir/artifacts/$name/last-run.log"
  echo "fuzz: $name for ${seconds}s"
  if "$binary" "$build_dir/corpus/$name" "fuzz/corpus/$name" \
      -max_total_time="$seconds" -max_len="$kMaxLen" -malloc_limit_mb="$(malloc_limit_mb "$name")" \
      -rss_limit_mb="$kRssLimitMb" -timeout="$kTimeoutSeconds" \
      -artifact_prefix="$build_dir/artifacts/$name/" -print_final_stats=1 >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$log" | tr '\n' ' '
    echo
  else
    echo "fuzz: $name FAILED; the end of its log ($log):" >&2
    tail -n 40 "$log" >&2
    failed+=("$name")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $build_dir/artifacts/; see docs/fuzzing.md)" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a finding"
