#!/usr/bin/env bash
# Builds the Kueue controller manager (sigs.k8s.io/kueue, cmd/kueue) from its Go module and copies
# the module's CRDs (config/components/crd/bases) and webhook manifests beside it, into a cache
# directory OUTSIDE the repository keyed by the pinned version:
#
#   ${TJ_KUEUE_CACHE:-$HOME/.cache/trainingjob-operator/kueue}/<hash>/{kueue,crds/,webhook.yaml}
#
# The module is fetched with `go mod download -json` and built inside its own directory with its own
# go.mod and go.sum (so its pins are the ones Kueue tests with; `go install pkg@version` would
# refuse the module the day its go.mod gains a replace directive). Not a `require` in
# tests/kube-test-cluster/go.mod: Kueue pins k8s.io/* v0.35 while the control plane is v0.36, and
# that go.sum is the key of the control plane's cache.
#
# Idempotent: when the binary exists for this key nothing is built. Prints the cache directory (and
# only that) on stdout; progress goes to stderr. Exit 3 without Go (the Kueue tests then skip,
# saying so). Cold, measured (docs/kueue.md): 14 s of download (137 modules, 543 MB) and 7.2
# CPU-minutes of compile (1.7 GB resident at most).
#
# Environment: TJ_KUEUE_CACHE, TJ_KUEUE_NICE (default 19), GOCACHE, GOMODCACHE, GOPROXY.
set -euo pipefail

kueue_version="v0.17.0"
cache_root="${TJ_KUEUE_CACHE:-${HOME}/.cache/trainingjob-operator/kueue}"
ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=${kueue_version}"

log() { printf 'install-kueue.sh: %s\n' "$*" >&2; }

key="$(printf '%s\n' "$kueue_version" "$ldflags" | sha256sum | cut -c1-16)"
out="${cache_root}/${key}"
have_all() { [[ -x "${out}/kueue" && -f "${out}/crds/kueue.x-k8s.io_workloads.yaml" ]]; }
if have_all; then
  log "cached: ${out}"
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { log "go not found in PATH: cannot build Kueue"; exit 3; }

export GOTOOLCHAIN=local       # never download a toolchain; fail clearly instead
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"

mkdir -p "$out"
exec 9>"${out}/.lock"
flock 9
if have_all; then
  log "cached (built concurrently): ${out}"
  echo "$out"
  exit 0
fi
export GOTMPDIR="${out}/tmp"   # real disk, not a small tmpfs
mkdir -p "$GOTMPDIR"

# Outside any module, so no go.mod around the caller takes part.
download_start=$(date +%s)
dir="$(cd "$out" && go mod download -json "sigs.k8s.io/kueue@${kueue_version}" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -n "$dir" && -f "${dir}/go.mod" ]] || { log "go mod download gave no module directory"; exit 1; }

# The modules cmd/kueue imports (not the whole build list: its tests' modules are not needed),
# downloaded apart from the compile so each is timed on its own.
(cd "$dir" && go list -deps ./cmd/kueue > /dev/null)
log "modules downloaded in $(( $(date +%s) - download_start ))s"

log "building kueue ${kueue_version} ($(go version | awk '{print $3}')) in ${dir} -> ${out}"
start=$(date +%s)
rm -rf "${out}/crds.partial"
cp -r "${dir}/config/components/crd/bases" "${out}/crds.partial"
chmod -R u+w "${out}/crds.partial"
cp "${dir}/config/components/webhook/manifests.yaml" "${out}/webhook.yaml"
chmod u+w "${out}/webhook.yaml"
(cd "$dir" && nice -n "${TJ_KUEUE_NICE:-19}" go build -trimpath -ldflags "$ldflags" \
  -o "${out}/kueue.partial.$$" ./cmd/kueue)
rm -rf "${out}/crds"
mv "${out}/crds.partial" "${out}/crds"
mv "${out}/kueue.partial.$$" "${out}/kueue"
rm -rf "$GOTMPDIR"
log "compiled in $(( $(date +%s) - start ))s"
echo "$out"
