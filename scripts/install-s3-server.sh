#!/usr/bin/env bash
# Builds the S3-compatible server the s3:// checkpoint tests run against: SeaweedFS (Apache-2.0),
# `weed`, from its Go module as pinned by tests/s3-test-server/go.mod and go.sum, into a cache
# directory OUTSIDE the repository keyed by the hash of the pin (scripts/build-go-tool.sh):
#
#   ${TJ_S3_CACHE:-$HOME/.cache/trainingjob-operator/s3}/<hash>/weed
#
# Idempotent: when the binary exists for this hash nothing is built. Prints the binary's path (and
# only that) on stdout; progress goes to stderr. Exit 3 without Go (the tests then skip, saying so).
# Cold build on 2 shared cores: see docs/training.md ("S3-compatible storage").
#
# Environment: TJ_S3_CACHE, TJ_S3_NICE (default 19), GOCACHE, GOMODCACHE, GOPROXY.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TJ_GO_TOOL_NICE="${TJ_S3_NICE:-19}" exec bash "$repo/scripts/build-go-tool.sh" "$repo/tests/s3-test-server" \
  github.com/seaweedfs/seaweedfs/weed weed "${TJ_S3_CACHE:-${HOME}/.cache/trainingjob-operator/s3}"
