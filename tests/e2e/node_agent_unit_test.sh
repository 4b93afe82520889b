#!/usr/bin/env bash
# Go unit tests of the test-only node agent (env expansion, mount path rewriting, IP allocation,
# image map, downward API fields, capacity flag). Skips loudly without Go. Arguments go to `go test`
# (tests/docker: -run with TJ_IMAGE_TEST_RUNTIME, the containers-in-images tests).
set -euo pipefail
# Same GOFLAGS/CGO/-trimpath as build.sh, so the compiled dependencies are shared with its build.
if ! command -v go >/dev/null 2>&1; then
  echo "*** SKIPPING the node agent unit tests: \`go\` is not on PATH. Install Go to run them. ***"
  exit 0
fi
cd "$(dirname "${BASH_SOURCE[0]}")/../kube-test-cluster"
GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0 exec go test -trimpath -count=1 -v ./cmd/tj-node-agent "$@"
