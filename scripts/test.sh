#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs dependencies, builds everything, checks the
# mutex annotations with clang (scripts/check-thread-safety.sh), builds the S3 test server
# (scripts/install-s3-server.sh, cached), installs TensorFlow and the python/ package for the
# `tf` tests (scripts/install-tf.sh, a cached venv), builds Kueue (scripts/install-kueue.sh, cached;
# TJ_SKIP_KUEUE=1 leaves it and the `kueue` tests out) and the images (scripts/build-images.sh: the
# runtime stages over this build, for the `images` tests; TJ_SKIP_IMAGES=1 leaves both out), runs
# every test under ctest, then the short fuzzing run (scripts/fuzz.sh: every parser of outside bytes
# for 15 s, in build-fuzz/; TJ_SKIP_FUZZ=1 leaves it out). TJ_SANITIZE=address|thread builds and
# tests in build-<sanitizer>/ (thread with clang 14 and an instrumented Abseil); scripts/sanitize.sh
# runs only the suites each sanitizer is for.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build_dir="${BUILD_DIR:-build${TJ_SANITIZE:+-$TJ_SANITIZE}}"
bash scripts/check-thread-safety.sh "$build_dir"
# The S3-compatible server of the s3:// checkpoint tests (built once, cached outside the tree; exit 3:
# no Go, and those tests then skip saying so).
bash scripts/install-s3-server.sh > /dev/null || [ $? -eq 3 ]
# The OCI registry the cluster doc test pushes to and pulls from (the same way; docs/e2e.md, "A real
# registry").
bash scripts/install-registry.sh > /dev/null || [ $? -eq 3 ]
# TensorFlow and the trainingjob package (python/) for the `tf` tests, in a cached venv
# (scripts/install-tf.sh; a cold install took 48 s, then it only checks).
bash scripts/install-tf.sh > /dev/null
# The Kueue controller manager of the Kueue tests (built once, cached outside the tree; exit 3: no
# Go, and those tests skip with the other Kubernetes ones). Cold: 14 s of download and 7.2
# CPU-minutes of compile (docs/kueue.md), a few minutes of a CI run's 60.
excluded=()
if [ "${TJ_SKIP_KUEUE:-0}" != "1" ]; then
  bash scripts/install-kueue.sh > /dev/null || [ $? -eq 3 ]
else
  excluded+=(kueue)
fi
# The images (scripts/build-images.sh, docker/README.md): the runtime stages of docker/Dockerfile.*
# over the binaries just built, with buildah; the `images` tests run them. Cold 14.4 min (the
# Debian bases by debootstrap, cached in ~/.cache), then a no-op while the binaries are unchanged.
# Not in a sanitizer build (its tests/docker/ has no image tests); TJ_SKIP_IMAGES=1 leaves them out.
# It also builds docker/Dockerfile.tf-pss for tj_e2e_tf_test (label images too): TensorFlow from
# PyPI, 750 s cold here, a cached layer after (TJ_SKIP_TF_IMAGE=1 leaves the image out).
if [ -z "${TJ_SANITIZE:-}" ] && [ "${TJ_SKIP_IMAGES:-0}" != "1" ]; then
  BUILD_DIR="$build_dir" bash scripts/build-images.sh
else
  excluded+=(images)
fi
exclude_labels=()
[ ${#excluded[@]} -eq 0 ] || exclude_labels=(-LE "$(IFS='|'; echo "${excluded[*]}")")
if [ "${TJ_SANITIZE:-}" = thread ]; then
  # Debian's Abseil rebuilt with TSan (absl::Mutex is otherwise invisible to it) and the
  # suppressions for uninstrumented gRPC/protobuf (docs/sanitizers.md).
  LD_LIBRARY_PATH="$(bash scripts/build-tsan-deps.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
  export TSAN_OPTIONS="halt_on_error=0 suppressions=$PWD/tests/sanitizers/tsan.supp"
elif [ "${TJ_SANITIZE:-}" = address ]; then
  export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"  # a UBSan report fails the test
fi
ctest --test-dir "$build_dir" -j"$(nproc)" --output-on-failure --timeout 600 "${exclude_labels[@]}"
if [ "${TJ_SKIP_FUZZ:-0}" != "1" ]; then
  bash scripts/fuzz.sh
fi
