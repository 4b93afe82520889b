#!/usr/bin/env bash
# Builds the S3-compatible server the s3:// checkpoint tests run against: SeaweedFS (Apache-2.0),
# `weed`, from its Go module as pinned by tests/s3-test-server/go.mod and go.sum, into a cache
# directory OUTSIDE the repository keyed by the hash of the pin:
#
#   ${TJ_S3_CACHE:-$HOME/.cache/trainingjob-operator/s3}/<hash>/weed
#
# Idempotent: when the binary exists for this hash nothing is built. Prints the binary's path (and
# only that) on stdout; progress goes to stderr. Exit 3 without Go (the tests then skip, saying so).
# Cold build on 2 shared cores: see docs/training.md ("S3-compatible storage").
#
# Environment: TJ_S3_CACHE, TJ_S3_NICE (default 19), GOCACHE, GOMODCACHE, GOPROXY.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/s3-test-server" && pwd)"
cache_root="${TJ_S3_CACHE:-${HOME}/.cache/trainingjob-operator/s3}"

log() { printf 'install-s3-server.sh: %s\n' "$*" >&2; }

key="$(cd "$here" && cat go.mod go.sum tools.go | sha256sum | cut -c1-16)"
out="${cache_root}/${key}"
if [[ -x "${out}/weed" ]]; then
  log "cached: ${out}/weed"
  echo "${out}/weed"
  exit 0
fi
command -v go >/dev/null || { log "go not found in PATH: cannot build the S3 test server"; exit 3; }

export GOTOOLCHAIN=local       # never download a toolchain; fail clearly instead
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly" # go.mod/go.sum are the pin: never rewrite them

mkdir -p "$out"
exec 9>"${out}/.lock"
flock 9
if [[ -x "${out}/weed" ]]; then
  log "cached (built concurrently): ${out}/weed"
  echo "${out}/weed"
  exit 0
fi
export GOTMPDIR="${out}/tmp"   # real disk, not a small tmpfs
mkdir -p "$GOTMPDIR"
log "building weed ($(go version | awk '{print $3}')) -> ${out}"
start=$(date +%s)
(cd "$here" && nice -n "${TJ_S3_NICE:-19}" go build -trimpath -ldflags "-s -w" \
  -o "${out}/weed.partial.$$" github.com/seaweedfs/seaweedfs/weed)
mv "${out}/weed.partial.$$" "${out}/weed"
rm -rf "$GOTMPDIR"
log "built in $(( $(date +%s) - start ))s"
echo "${out}/weed"
