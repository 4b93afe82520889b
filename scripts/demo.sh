#!/usr/bin/env bash
# The main job: builds only what it needs (tjctl, and tj-train, the one binary of every role),
# then runs examples/digits.yaml (softmax regression on the digits data set,
# 1 coordinator, 1 parameter server, 2 workers) as local processes with `tjctl run`. Extra
# arguments go to `tjctl run` (see `build/bin/tjctl run --help`), e.g. --work-dir DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh tjctl tj-train
exec build/bin/tjctl run examples/digits.yaml "$@"
