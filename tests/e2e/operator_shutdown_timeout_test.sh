#!/usr/bin/env bash
# tj-operator stops within --shutdown-timeout of SIGTERM even when its orderly stop cannot finish:
# its API server accepts connections and never answers (a hung control plane), so the Lease request
# in flight never returns. The process must log why and exit 1 once the timeout has passed, instead
# of running on until a SIGKILL. No cluster needed: the "API server" is a socket that never talks.
# usage: operator_shutdown_timeout_test.sh <tj-operator>
set -euo pipefail
op="$1"
wd="$(mktemp -d /tmp/tj-operator-shutdown-XXXXXX)"
hole_pid=""
op_pid=""
cleanup() {
  [[ -n "$op_pid" ]] && kill -KILL "$op_pid" 2>/dev/null || true
  [[ -n "$hole_pid" ]] && kill "$hole_pid" 2>/dev/null || true
  rm -rf "$wd"
}
trap cleanup EXIT

# A listener that accepts every connection and holds it open, silent.
python3 - "$wd/port" <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    conn, _ = s.accept()
    held.append(conn)
PY
hole_pid=$!
end=$(( $(date +%s) + 20 ))
until [[ -s "$wd/port" ]]; do
  (( $(date +%s) < end )) || { echo "FAIL: the silent listener did not start"; exit 1; }
  sleep 0.1
done
port="$(cat "$wd/port")"
cat >"$wd/kubeconfig" <<EOF2
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
EOF2
"$op" --kubeconfig="$wd/kubeconfig" --leader-elect=true --leader-election-namespace=default \
  --leader-election-id=t --metrics-address=127.0.0.1:0 --health-address=127.0.0.1:0 --workers=1 \
  --log-format=text --shutdown-timeout=3s >"$wd/log" 2>&1 &
op_pid=$!
# Started, and its first Lease request sent into the silence.
end=$(( $(date +%s) + 20 ))
until grep -q "starting:" "$wd/log" && [[ -n "$(ss -Htn state established "( dport = :${port} )")" ]]; do
  kill -0 "$op_pid" 2>/dev/null || { cat "$wd/log"; echo "FAIL: tj-operator exited early"; exit 1; }
  (( $(date +%s) < end )) || { cat "$wd/log"; echo "FAIL: no connection to the API server in 20 s"; exit 1; }
  sleep 0.1
done
kill -TERM "$op_pid"
signalled=$(date +%s)
# Waited for, not slept: the process's end. 20 s bounds a broken build, the assertion is below.
status=0
end=$(( signalled + 20 ))
while kill -0 "$op_pid" 2>/dev/null; do
  (( $(date +%s) < end )) || { cat "$wd/log"; echo "FAIL: still running 20 s after SIGTERM (--shutdown-timeout=3s)"; exit 1; }
  sleep 0.1
done
wait "$op_pid" || status=$?
op_pid=""
grep -q "still stopping 3s after signal 15" "$wd/log" ||
  { cat "$wd/log"; echo "FAIL: no log line saying why it stopped without finishing"; exit 1; }
[[ "$status" == 1 ]] || { cat "$wd/log"; echo "FAIL: exit status $status, want 1 (stop cut short)"; exit 1; }
echo "PASS: exited with status 1 after the 3 s shutdown timeout; $(grep "still stopping" "$wd/log")"
