#!/usr/bin/env bash
# The node agent's --pod-network=netns (docs/e2e.md "Pod network") on the real control plane of
# tests/kube-test-cluster: two pods both bind 0.0.0.0:2222 (as every TensorFlow task does) and
# answer, a third reaches both by their pod IPs and the API server by its in-cluster name over
# verified TLS, the node reaches a pod at its IP, and nothing of the pods' networks is left once
# they are deleted and once the agent stops.
#
# Exit 0 = all checks passed; prints "*** SKIPPING ..." and exits 0 without Go or without network
# namespaces (ctest reports it as skipped). TJ_KUBE_KEEP_WORKDIR=1 keeps the workdir.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kt="$repo/tests/kube-test-cluster"
t0=$(date +%s)

if ! command -v go >/dev/null 2>&1; then
  echo "*** SKIPPING the node agent netns test: \`go\` is not on PATH, so the control plane and the node agent cannot be built. ***"
  exit 0
fi
if ! unshare --net --mount --propagation private true 2>/dev/null || ! command -v ip >/dev/null; then
  echo "*** SKIPPING the node agent netns test: no network and mount namespaces here (needs root and iproute2's ip). ***"
  exit 0
fi

base=127.0.45.
wd="$(mktemp -d /tmp/tj-node-agent-netns-XXXXXX)"
node=tj-netns-node
source "$repo/tests/e2e/agent_harness.sh"

bin="$("$kt/build.sh")"
agent="$("$kt/build.sh" --node-agent)"
kubeconfig="$(TJ_KUBE_BIN="$bin" "$kt/up.sh" "$wd/cluster")"
export KUBECONFIG="$kubeconfig"
kc() { kubectl --request-timeout=10s "$@"; }

mkdir -p "$wd/root"
setsid "$agent" --kubeconfig="$kubeconfig" --node-name="$node" --root-dir="$wd/root" --heartbeat=1s \
  --pod-cidr-base="$base" --pod-network=netns --mount-namespaces=true --capacity=cpu=4,memory=8Gi,pods=20 \
  </dev/null >"$wd/agent.log" 2>&1 &
agent_pid=$!
node_ready() { [[ "$(kc get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
untainted() { [[ -z "$(kc get node "$node" -o jsonpath='{.spec.taints}')" ]]; }
wait_for 30 "node $node Ready" node_ready
wait_for 30 "node $node untainted" untainted

# Two servers on the same 0.0.0.0:2222 (images are unmapped: the host's python3 runs).
server='import socket, os
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 2222)); s.listen()
print("listening", flush=True)
while True:
    c, peer = s.accept(); c.sendall((os.environ["HOSTNAME"] + " saw " + peer[0] + "\n").encode()); c.close()'
for p in srv-a srv-b; do
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $p}
spec:
  terminationGracePeriodSeconds: 2
  containers: [{name: main, image: busybox, command: [python3, -c, $(jq -Rs . <<<"$server")]}]
EOF
done
listening() { grep -q listening "$wd"/root/pods/default_"$1"_*/logs/main/0.log; }
wait_for 30 "srv-a listens on 0.0.0.0:2222" listening srv-a
wait_for 30 "srv-b listens on 0.0.0.0:2222 too" listening srv-b
ip_a="$(kc get pod srv-a -o jsonpath='{.status.podIP}')"
ip_b="$(kc get pod srv-b -o jsonpath='{.status.podIP}')"
[[ "$ip_a" == "$base"* && "$ip_b" == "$base"* && "$ip_a" != "$ip_b" ]] || fail "pod IPs $ip_a, $ip_b: want two addresses of $base"
expect_eq "srv-a's hostIP (the gateway)" "$(kc get pod srv-a -o jsonpath='{.status.hostIP}')" "${base}1"

# The node (this shell) reaches a pod; the pod sees the gateway as its peer.
got="$(python3 -c 'import socket, sys
c = socket.create_connection((sys.argv[1], 2222), timeout=5); print(c.recv(200).decode().strip())' "$ip_a")"
expect_eq "the node reaches srv-a at $ip_a:2222" "$got" "srv-a saw ${base}1"

# A client pod: both servers by IP, and the API server by its in-cluster name and verified TLS.
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: busybox
      command:
        - /bin/sh
        - -c
        - |
          set -e
          for ip in $ip_a $ip_b; do python3 -c 'import socket, sys
          c = socket.create_connection((sys.argv[1], 2222), timeout=5); print(c.recv(200).decode().strip())' \$ip; done
          sa=/var/run/secrets/kubernetes.io/serviceaccount
          code=\$(curl -sS -o /dev/null -w '%{http_code}' --cacert \$sa/ca.crt -H "Authorization: Bearer \$(cat \$sa/token)" \
            https://\$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT/api/v1/namespaces/default/pods/client)
          echo "api \$KUBERNETES_SERVICE_HOST \$code"
EOF
client_done() { [[ "$(kc get pod client -o jsonpath='{.status.phase}')" =~ ^(Succeeded|Failed)$ ]]; }
wait_for 60 "pod client finished" client_done
out="$(cat "$wd"/root/pods/default_client_*/logs/main/0.log)"
[[ "$(kc get pod client -o jsonpath='{.status.phase}')" == Succeeded ]] || fail "pod client failed: $out"
ip_c="$(kc get pod client -o jsonpath='{.status.podIP}')"
grep -qx "srv-a saw $ip_c" <<<"$out" || fail "client did not reach srv-a from its own IP $ip_c: $out"
grep -qx "srv-b saw $ip_c" <<<"$out" || fail "client did not reach srv-b from its own IP $ip_c: $out"
log "ok: client ($ip_c) reached srv-a and srv-b, both on 0.0.0.0:2222"
# 403: the API server answered over TLS verified for that name and authenticated the token (the
# default ServiceAccount may not read pods); 200 would do as well.
grep -qE '^api kubernetes.default.svc (200|403)$' <<<"$out" || fail "client did not reach the API server: $out"
log "ok: client reached the API server: $(grep '^api' <<<"$out")"

# Nothing of a deleted pod's network stays; the agent's stop removes the rest.
links() { ip -o link show | grep -oE 'tjv002d[0-9a-f]{2}' | sort -u | tr '\n' ' '; }
netns_left() { ls /run/netns 2>/dev/null | grep -E '^tjv002d' | tr '\n' ' '; }
kc delete pod client srv-b --wait=false >/dev/null
gone() { ! kc get pod "$1" >/dev/null 2>&1; }
wait_for 30 "srv-b and client deleted" gone srv-b
wait_for 30 "client deleted" gone client
expect_eq "pod links left (srv-a's only)" "$(links)" "$(printf 'tjv002d%02x ' "${ip_a##*.}")"
stop_agent
expect_eq "pod links after the agent stopped" "$(links)" ""
expect_eq "network namespaces after the agent stopped" "$(netns_left)" ""
failed=0
log "PASS"
