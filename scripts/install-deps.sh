#!/usr/bin/env bash
# Installs every Debian package the project builds and tests with. Idempotent and non-interactive:
# packages already present are skipped, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config clang-format
  clang-14 libclang-rt-14-dev  # check-thread-safety.sh (annotations), fuzz.sh (libFuzzer, sanitizers)
  # the design's packages
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcpprest-dev libyaml-cpp-dev libssl-dev libgtest-dev libgmock-dev googletest
  # well-kept libraries used instead of hand-written code
  nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev libbenchmark-dev libabsl-dev zlib1g-dev
  libcivetweb-dev prometheus-cpp-dev  # the /metrics and health endpoints, the metrics registry
  libcurl4-openssl-dev libxml2-dev  # s3:// checkpoints: HTTP with AWS SigV4 signing, S3's XML replies
  # tools the tests use (Prometheus' metric checker)
  prometheus
  iperf3  # loopback TCP bandwidth, the same-run baseline of bench/ps_bench.cc and scale_bench.cc
  python3-sklearn  # ships sklearn/datasets/data/digits.csv.gz, the digits data set of examples and tests
  python3-yaml  # tests/kube-test-cluster/kueue-up.sh: Kueue's webhook manifests pointed at the loopback
  apache2-utils  # htpasswd -B: the account of the cluster doc test's registry (tests/e2e/registry.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# TensorBoard itself (PyPI) reads our event files in a test; Debian does not package it.
if ! python3 -c "import tensorboard" 2>/dev/null; then
  echo "install-deps: installing tensorboard from PyPI"
  python3 -m pip install --quiet --disable-pip-version-check tensorboard
fi
