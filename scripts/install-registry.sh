#!/usr/bin/env bash
# Builds the OCI registry the cluster doc test pushes to and its node agent pulls from: the CNCF
# distribution registry (Apache-2.0), `registry`, from its Go module as pinned by
# tests/registry-test-server/go.mod and go.sum, into a cache directory OUTSIDE the repository keyed
# by the hash of the pin (scripts/build-go-tool.sh):
#
#   ${TJ_REGISTRY_CACHE:-$HOME/.cache/trainingjob-operator/registry}/<hash>/registry
#
# Idempotent; prints the binary's path (and only that) on stdout. Exit 3 without Go (the test then
# skips, saying so). Cold build on 2 shared cores: see docs/e2e.md ("A real registry").
#
# Environment: TJ_REGISTRY_CACHE, TJ_GO_TOOL_NICE (default 19), GOCACHE, GOMODCACHE, GOPROXY.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec bash "$repo/scripts/build-go-tool.sh" "$repo/tests/registry-test-server" \
  github.com/distribution/distribution/v3/cmd/registry registry \
  "${TJ_REGISTRY_CACHE:-${HOME}/.cache/trainingjob-operator/registry}"
