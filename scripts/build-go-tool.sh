#!/usr/bin/env bash
# Builds one Go program that a test runs against (a server pinned by a module of tests/: its
# go.mod, go.sum and tools.go are the whole pin) into a cache directory OUTSIDE the repository,
# keyed by the hash of the pin:
#
#   build-go-tool.sh <module dir> <package> <binary name> <cache root>
#   -> <cache root>/<hash>/<binary name>
#
# Idempotent: when the binary exists for this hash nothing is built, and two builds at once wait
# for each other (flock). Prints the binary's path (and only that) on stdout; progress goes to
# stderr. Exit 3 without Go (the tests then skip, saying so). Callers: install-s3-server.sh,
# install-registry.sh.
#
# Environment: TJ_GO_TOOL_NICE (default 19), GOCACHE, GOMODCACHE, GOPROXY.
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: build-go-tool.sh <module dir> <package> <binary> <cache root>" >&2; exit 2; }
here="$(cd "$1" && pwd)"
pkg="$2"
name="$3"
cache_root="$4"

log() { printf '%s: %s\n' "$name" "$*" >&2; }

key="$(cd "$here" && cat go.mod go.sum tools.go | sha256sum | cut -c1-16)"
out="${cache_root}/${key}"
if [[ -x "${out}/${name}" ]]; then
  log "cached: ${out}/${name}"
  echo "${out}/${name}"
  exit 0
fi
command -v go >/dev/null || { log "go not found in PATH: cannot build ${pkg}"; exit 3; }

export GOTOOLCHAIN=local       # never download a toolchain; fail clearly instead
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly" # go.mod/go.sum are the pin: never rewrite them

mkdir -p "$out"
exec 9>"${out}/.lock"
flock 9
if [[ -x "${out}/${name}" ]]; then
  log "cached (built concurrently): ${out}/${name}"
  echo "${out}/${name}"
  exit 0
fi
export GOTMPDIR="${out}/tmp"   # real disk, not a small tmpfs
mkdir -p "$GOTMPDIR"
log "building ${pkg} ($(go version | awk '{print $3}')) -> ${out}"
start=$(date +%s)
(cd "$here" && nice -n "${TJ_GO_TOOL_NICE:-19}" go build -trimpath -ldflags "-s -w" \
  -o "${out}/${name}.partial.$$" "$pkg")
mv "${out}/${name}.partial.$$" "${out}/${name}"
rm -rf "$GOTMPDIR"
log "built in $(( $(date +%s) - start ))s"
echo "${out}/${name}"
