# Sourced by the node agent's integration tests (node_agent_test.sh, node_agent_netns_test.sh):
# logging, polling, the agent's stop and the exit trap. The caller sets kt (tests/kube-test-cluster),
# wd (the work directory) and t0, and starts the agent with its pid in agent_pid; `failed=0` at the
# end marks success (the trap then removes wd unless TJ_KUBE_KEEP_WORKDIR is set).
agent_pid=""
failed=1
log() { printf '[%3ds] %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
# wait_for <seconds> <description> <cmd...>: poll the condition until it holds or the deadline.
wait_for() {
  local secs=$1 what=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < end )) || fail "timed out after ${secs}s waiting for: $what"
    sleep 0.2
  done
  log "ok: $what"
}
expect_eq() { # <what> <got> <want>
  [[ "$2" == "$3" ]] || fail "$1: got '$2', want '$3'"
  log "ok: $1 = '$3'"
}
stop_agent() {
  [[ -n "$agent_pid" ]] || return 0
  kill -TERM "$agent_pid" 2>/dev/null || true
  local end=$(( $(date +%s) + 20 ))
  while kill -0 "$agent_pid" 2>/dev/null; do
    (( $(date +%s) < end )) || { kill -KILL "$agent_pid"; fail "agent did not exit within 20s of SIGTERM"; }
    sleep 0.1
  done
  wait "$agent_pid" 2>/dev/null || true
  agent_pid=""
}
harness_cleanup() {
  local rc=$?
  [[ -n "${wd:-}" ]] || return 0  # stopped before it made anything (a SKIPPING line)
  stop_agent || true
  "$kt/down.sh" "$wd/cluster" >/dev/null 2>&1 || true
  if (( failed )); then
    printf '\n----- agent log (tail)\n' >&2
    tail -n 40 "$wd"/agent*.log >&2 2>/dev/null || true
    echo "FAILED (rc=$rc); workdir kept: $wd" >&2
  elif [[ -z "${TJ_KUBE_KEEP_WORKDIR:-}" ]]; then
    rm -rf "$wd"
  fi
}
trap harness_cleanup EXIT
