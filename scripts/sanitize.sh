#!/usr/bin/env bash
# The sanitizer runs of docs/sanitizers.md: builds only the suites a sanitizer is for,
# in build-<sanitizer>/, runs each test binary (niced, two at a time) and counts the reports.
#   scripts/sanitize.sh thread    TSan (clang 14) over the concurrency-heavy suites: closures, the
#                                 coordination service, the PS (client, server, tj-ps), the cluster
#                                 (real tj-worker/tj-ps processes, preemption) and the trainer SDK.
#                                 Debian's Abseil rebuilt with TSan (scripts/build-tsan-deps.sh) is
#                                 put first on LD_LIBRARY_PATH, for the tests and the processes
#                                 they start; tests/sanitizers/tsan.supp says what is suppressed.
#   scripts/sanitize.sh address   ASan + UBSan (g++, like TJ_SANITIZE=address scripts/test.sh) over
#                                 the operator, kube client, tjctl and S3 suites, the
#                                 coordinator, PS and trainer SDK ones TSan runs, and the PS's
#                                 hostile-wire suite (its decoders of peers' bytes).
# Options: --only NAME[,NAME]  run only these test binaries;
#          --uninstrumented-absl  (thread) Debian's own Abseil, to count what it costs.
# Reports go to build-<sanitizer>/sanitizer-logs/<binary>.<pid> (children's too); the script
# prints one line per binary and exits 1 if any binary failed or reported.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer="${1:-}"
shift || true
only=""
uninstrumented=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --uninstrumented-absl) uninstrumented=1; shift ;;
    *) echo "sanitize: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

case "$sanitizer" in
  thread)
    tests=(closure_test coordination_test ps_test cluster_test base_test
           sdk_preemption_test sdk_incremental_checkpoint_test sdk_checkpoint_process_test)
    compilers=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
    ;;
  address)
    tests=(tj_work_queue_test tj_operator_controller_test tj_kube_unit_test
           tjctl_local_test tjctl_run_pieces_test tjctl_run_test tjctl_preempt_test
           s3_xml_test checkpoint_test s3_checkpoint_test tjctl_run_s3_test
           closure_test coordination_test base_test ps_test ps_hostile_wire_test cluster_test
           sdk_preemption_test sdk_incremental_checkpoint_test sdk_checkpoint_process_test
           sdk_s3_checkpoint_process_test sdk_placement_record_test sdk_golden_checkpoint_test
           sdk_example_test)
    compilers=()
    ;;
  *) echo "usage: scripts/sanitize.sh thread|address [--only a,b] [--uninstrumented-absl]" >&2
     exit 2 ;;
esac
if [ -n "$only" ]; then IFS=, read -r -a tests <<< "$only"; fi

bash scripts/install-deps.sh > /dev/null
build_dir="build-$sanitizer"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DTJ_SANITIZE="$sanitizer" -DTJ_BUILD_BENCH=OFF \
    "${compilers[@]}" > /dev/null
fi
jobs="${TJ_JOBS:-2}"
start=$(date +%s)
nice -n 5 ninja -C "$build_dir" -j"$jobs" "${tests[@]}"
built=$(date +%s)

logs="$PWD/$build_dir/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
if [ "$sanitizer" = thread ]; then
  if [ "$uninstrumented" = 0 ]; then
    export LD_LIBRARY_PATH="$(bash scripts/build-tsan-deps.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  # halt_on_error=0: every report of a run, not only the first; exitcode 66 (the default) fails
  # the binary that reported.
  base_options="halt_on_error=0 second_deadlock_stack=1 history_size=4"
  base_options+=" suppressions=$PWD/tests/sanitizers/tsan.supp"
  marker="WARNING: ThreadSanitizer"
else
  base_options="detect_leaks=1 abort_on_error=0"
  # UBSan prints to stderr (the .out file, counted); halt_on_error makes a finding fail the binary.
  export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
  marker="ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:"
fi

# The cases that assert a real tj-ps's memory against a tight bound skip themselves under the
# sanitizers whose allocator and shadow memory break it (tests/support/sanitizers.h), so this
# script and `TJ_SANITIZE=... scripts/test.sh` run the same cases.

run_one() {  # binary name -> "name exit reports seconds"
  local name="$1" t0 rc=0
  t0=$(date +%s)
  local options_var=TSAN_OPTIONS
  if [ "$sanitizer" = address ]; then options_var=ASAN_OPTIONS; fi
  env "$options_var=$base_options log_path=$logs/$name" nice -n 5 timeout 1800 \
    "$build_dir/bin/$name" --gtest_brief=1 \
    > "$logs/$name.out" 2>&1 || rc=$?
  local reports
  reports=$(cat "$logs/$name".[0-9]* "$logs/$name.out" 2>/dev/null | grep -c "$marker" || true)
  echo "$name exit=$rc reports=$reports seconds=$(( $(date +%s) - t0 ))"
}
export -f run_one
export build_dir logs base_options sanitizer marker
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' | tee "$logs/summary"
echo "sanitize: $sanitizer, build $(( built - start )) s, run $(( $(date +%s) - built )) s," \
  "logs in $logs"
if grep -qv "exit=0 reports=0" "$logs/summary"; then exit 1; fi
