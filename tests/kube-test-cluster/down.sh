#!/usr/bin/env bash
# Stop a control plane started by up.sh <workdir>: each *_PID in <workdir>/env
# in turn (Kueue if kueue-up.sh started it, scheduler, controller-manager,
# apiserver, then etcd) gets SIGTERM,
# then SIGKILL if it is still running after TJ_KUBE_DOWN_GRACE seconds
# (default 10).
# Safe to run twice, and on a workdir where up.sh failed half-way: pids that
# are gone, or that now belong to another program, are skipped.
# Keeps the workdir (logs, certs) for inspection; delete it yourself.
set -uo pipefail

log() { printf 'down.sh: %s\n' "$*" >&2; }
[[ $# -eq 1 ]] || { log "usage: down.sh <workdir>"; exit 2; }
wd="$1"
envf="$wd/env"
grace="${TJ_KUBE_DOWN_GRACE:-10}"

if [[ ! -f "$envf" ]]; then
  log "no $envf: nothing to stop"
  exit 0
fi

declare -A pid_of=()
bin=""
kueue_dir=""
while IFS='=' read -r k val; do
  case "$k" in
    *_PID) pid_of[$k]="$val" ;;
    TJ_KUBE_BIN) bin="$val" ;;
    TJ_KUEUE_DIR) kueue_dir="$val" ;;
  esac
done <"$envf"

# is_ours <pid> [dir]: alive and still running one of our binaries, from $bin
# or from dir (guards against pid reuse after a previous down.sh or a crash).
is_ours() {
  local pid=$1 dir=${2:-$bin} exe
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  [[ -d /proc/self ]] || return 0 # no /proc: trust kill -0
  # A zombie (exited, not yet reaped by its parent) is gone for our purposes.
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
  exe="${exe% (deleted)}"
  [[ -z "$dir" || "$exe" == "$dir"/* ]]
}

# stop <pid> <name> [dir]: SIGTERM, wait up to $grace seconds, then SIGKILL.
stop() {
  local pid=$1 name=$2 dir=${3:-$bin} end
  log "SIGTERM $name=$pid"
  kill -TERM "$pid" 2>/dev/null || return 0
  end=$(( $(date +%s) + grace ))
  while is_ours "$pid" "$dir"; do
    if (( $(date +%s) >= end )); then
      log "SIGKILL $name=$pid (still running after ${grace}s)"
      kill -KILL "$pid" 2>/dev/null || true
      return 0
    fi
    sleep 0.1
  done
}

# One at a time, clients first and etcd last: an apiserver whose etcd is
# already gone hangs in its graceful shutdown until SIGKILL.
n=0
p="${pid_of[KUEUE_PID]:-}"
if [[ -n "$p" ]] && is_ours "$p" "$kueue_dir"; then
  stop "$p" KUEUE_PID "$kueue_dir"
  n=$(( n + 1 ))
fi
for k in KUBE_SCHEDULER_PID KUBE_CONTROLLER_MANAGER_PID KUBE_APISERVER_PID ETCD_PID; do
  p="${pid_of[$k]:-}"
  if [[ -n "$p" ]] && is_ours "$p"; then
    stop "$p" "$k"
    n=$(( n + 1 ))
  fi
done
if (( n == 0 )); then log "nothing running"; else log "stopped $n process(es)"; fi
