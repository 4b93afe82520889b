#!/usr/bin/env bash
# The main job until `tjctl run job.yaml` lands: builds, then runs a local cluster (1 PS, 3 workers)
# driven by the coordinator, with a worker killed and restarted midway. Extra arguments go to
# `tjctl demo` (see `build/bin/tjctl demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/bin/tjctl demo "$@"
