#!/usr/bin/env bash
# Build Kubeflow's training-operator (v1: TFJob, PyTorchJob, ...) from its Go module, the peer of
# bench/operator_scale.py --peer kubeflow, into a cache directory OUTSIDE the repository:
#
#   ${TJ_KUBEFLOW_CACHE:-$HOME/.cache/trainingjob-operator/kubeflow}/<version>/
#     bin/training-operator        the binary (upstream's cmd/training-operator.v1, i.e. /manager)
#     crds/kubeflow.org_tfjobs.yaml the TFJob CRD, copied from the module zip (manifests/base/crds)
#
# The module is fetched by `go install <module>/cmd/training-operator.v1@<version>` through the Go
# module proxy: the module's own go.mod and go.sum are the pin (go verifies them against the
# checksum database), nothing is vendored or hand-written here.
#
# Idempotent: when both files exist for the version nothing is built. Prints the cache directory
# (and only that) on stdout; progress goes to stderr.
#
# Environment:
#   TJ_KUBEFLOW_VERSION  module version (default v1.9.2, the last v1 release with the TFJob controller)
#   TJ_KUBEFLOW_CACHE    cache root (default $HOME/.cache/trainingjob-operator/kubeflow)
#   TJ_KUBEFLOW_NICE     niceness for the Go build (default 19)
#   TJ_KUBEFLOW_PAR      go build -p (default 2: the machine's 2 cores are shared)
#   GOCACHE, GOMODCACHE, GOPROXY are honoured as usual.
set -euo pipefail

module="github.com/kubeflow/training-operator"
version="${TJ_KUBEFLOW_VERSION:-v1.9.2}"
cache_root="${TJ_KUBEFLOW_CACHE:-${HOME}/.cache/trainingjob-operator/kubeflow}"
out="${cache_root}/${version}"
bin="${out}/bin/training-operator"
crd="${out}/crds/kubeflow.org_tfjobs.yaml"

log() { printf 'kubeflow/build.sh: %s\n' "$*" >&2; }

command -v go >/dev/null || { log "go not found in PATH"; exit 1; }

if [[ -x "$bin" && -s "$crd" ]]; then
  log "cached: ${out}"
  echo "$out"
  exit 0
fi

mkdir -p "$out"
exec 9>"${out}/.lock"
flock 9
if [[ -x "$bin" && -s "$crd" ]]; then
  log "cached (built concurrently): ${out}"
  echo "$out"
  exit 0
fi

export GOTOOLCHAIN=local   # never download a toolchain; fail clearly instead
export CGO_ENABLED=0       # as upstream's Dockerfile
export GOTMPDIR="${out}/tmp"
mkdir -p "$GOTMPDIR"
staging="${out}/bin.partial"
rm -rf "$staging"
mkdir -p "$staging"

log "building ${module}/cmd/training-operator.v1@${version} ($(go version | awk '{print $3}')) -> ${out}"
start=$(date +%s)
# go install pkg@version: module mode outside any main module, the module's own go.mod/go.sum.
GOBIN="$staging" nice -n "${TJ_KUBEFLOW_NICE:-19}" \
  go install -p "${TJ_KUBEFLOW_PAR:-2}" -trimpath -ldflags "-s -w" \
  "${module}/cmd/training-operator.v1@${version}"
[[ -x "${staging}/training-operator.v1" ]] || { log "missing binary after build"; exit 1; }

# The CRD, from the module zip as extracted in the module cache.
moddir="$(go mod download -json "${module}@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -s "${moddir}/manifests/base/crds/kubeflow.org_tfjobs.yaml" ]] ||
  { log "no manifests/base/crds/kubeflow.org_tfjobs.yaml in ${moddir}"; exit 1; }
mkdir -p "${out}/crds"
cp "${moddir}/manifests/base/crds/kubeflow.org_tfjobs.yaml" "${crd}.partial"
chmod 644 "${crd}.partial"
mv "${crd}.partial" "$crd"

mkdir -p "${out}/bin"
mv "${staging}/training-operator.v1" "$bin"
rm -rf "$staging" "$GOTMPDIR"
log "built in $(( $(date +%s) - start ))s"
echo "$out"
