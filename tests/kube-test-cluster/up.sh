#!/usr/bin/env bash
# Start a throw-away Kubernetes control plane on 127.0.0.1:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler
# (no nodes, no kubelet, no container runtime).
#
# usage: up.sh <workdir>
#
# Writes into <workdir>:
#   kubeconfig        admin kubeconfig (client cert in group system:masters)
#   env               KEY=value lines (bash-sourceable): KUBECONFIG, TJ_KUBE_*,
#                     and the *_PID of each process
#   pki/              CA, serving/client certs, front-proxy CA, service-account keys
#   etcd-data/, logs/ data and one log file per component; logs/audit.jsonl, the
#                     requests of ServiceAccounts outside kube-system (audit level Metadata)
# Waits (polled, bounded by TJ_KUBE_UP_TIMEOUT seconds, default 300) until
#   `kubectl get --raw /readyz` succeeds, the controller-manager answers
#   /healthz and the scheduler /readyz, and ServiceAccount default/default
#   exists;
# then prints the kubeconfig path on stdout (progress goes to stderr).
# On failure it prints the log tails, stops what it started and exits 1.
# Stop with: down.sh <workdir>
#
# Environment:
#   TJ_KUBE_BIN         directory with the four binaries (default: output of build.sh,
#                       which builds them on first use)
#   TJ_KUBE_UP_TIMEOUT  seconds to wait for readiness (default 300)
#   TJ_KUBE_LOG_V       klog verbosity of the kube components (default 1)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf 'up.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[[ $# -eq 1 ]] || die "usage: up.sh <workdir>"
command -v kubectl >/dev/null || die "kubectl not found in PATH"
command -v openssl >/dev/null || die "openssl not found in PATH"
command -v curl >/dev/null || die "curl not found in PATH"

mkdir -p "$1"
wd="$(cd "$1" && pwd)"
timeout_s="${TJ_KUBE_UP_TIMEOUT:-300}"
v="${TJ_KUBE_LOG_V:-1}"

# Refuse to start over a live cluster in the same workdir.
if [[ -f "$wd/env" ]]; then
  while IFS='=' read -r k val; do
    if [[ "$k" == *_PID && -n "$val" ]] && kill -0 "$val" 2>/dev/null; then
      die "$wd already has running processes ($k=$val); run down.sh $wd first"
    fi
  done <"$wd/env"
fi

bin="${TJ_KUBE_BIN:-}"
if [[ -z "$bin" ]]; then
  bin="$("$here/build.sh")"
fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler; do
  [[ -x "$bin/$b" ]] || die "missing $bin/$b (run build.sh)"
done

t0=$(date +%s)
rm -rf "$wd/pki" "$wd/etcd-data" "$wd/logs" "$wd"/*.kubeconfig "$wd/kubeconfig" "$wd/env"
mkdir -p "$wd/pki" "$wd/logs"
chmod 700 "$wd/pki"

# ---------------------------------------------------------------- ports
# Random free TCP ports on 127.0.0.1 below the ephemeral range (so outgoing
# connections do not take them in the meantime), distinct from each other.
picked=" "
port=""
free_port() { # sets $port (no subshell, so $picked is remembered)
  local p i
  for i in $(seq 1 500); do
    p=$(( 20000 + RANDOM % 12000 ))
    [[ "$picked" == *" $p "* ]] && continue
    if ! ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
      picked+="$p "
      port=$p
      return 0
    fi
  done
  die "no free port found"
}
free_port; etcd_port=$port
free_port; etcd_peer_port=$port
free_port; api_port=$port
free_port; kcm_port=$port
free_port; sched_port=$port
api_url="https://127.0.0.1:${api_port}"

# ---------------------------------------------------------------- env file
envf="$wd/env"
put_env() { printf '%s=%q\n' "$1" "$2" >>"$envf"; }
put_env KUBECONFIG "$wd/kubeconfig"
put_env TJ_KUBE_WORKDIR "$wd"
put_env TJ_KUBE_BIN "$bin"
put_env TJ_KUBE_APISERVER "$api_url"
put_env TJ_KUBE_ETCD "http://127.0.0.1:${etcd_port}"

# ---------------------------------------------------------------- failure path
# Any failure exit (fail, die, set -e, Ctrl-C) prints the log tails and
# stops whatever was started; success clears the trap.
started=()
on_exit() {
  local rc=$? f
  (( rc == 0 )) && return 0
  for f in "$wd"/logs/*.log; do
    [[ -s "$f" ]] || continue
    printf '\n----- tail %s\n' "$f" >&2
    tail -n 25 "$f" >&2 || true
  done
  "$here/down.sh" "$wd" >&2 || true
  exit "$rc"
}
trap on_exit EXIT
trap 'fail "interrupted"' INT TERM
fail() { log "FAILED: $*"; exit 1; }

# ---------------------------------------------------------------- PKI
# ECDSA P-256 throughout: key generation is instant, where RSA took seconds
# on a loaded 2-core machine.
pki="$wd/pki"
ossl() {
  local out
  out=$(openssl "$@" 2>&1) || { printf '%s\n' "$out" >&2; die "openssl $1 failed"; }
}

ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
  -days 3650 -subj "/CN=tj-kube-test-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"

# sign <name> <subject> <extfile-content>
sign() {
  local name=$1 subj=$2 ext=$3
  printf '%s\n' "$ext" >"$pki/$name.ext"
  ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj"
  ossl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -out "$pki/$name.crt" -days 3650 -extfile "$pki/$name.ext"
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}
client_ext=$'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth'

# First IP of --service-cluster-ip-range is the "kubernetes" service ClusterIP.
svc_cidr="10.0.0.0/24"
sign apiserver "/CN=kube-apiserver" \
  $'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local'
# Admin: group system:masters is bound to cluster-admin and bypasses RBAC.
sign admin "/O=system:masters/CN=tj-admin" "$client_ext"
# The components use their bootstrap RBAC identities, as in a real cluster.
sign kube-controller-manager "/CN=system:kube-controller-manager" "$client_ext"
sign kube-scheduler "/CN=system:kube-scheduler" "$client_ext"
# Front proxy (request-header authentication / API aggregation): a separate
# CA, as kubeadm does. Without it the controller-manager and scheduler log
# "missing content for CA bundle ...requestheader-client-ca-file" forever.
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/front-proxy-ca.key" \
  -out "$pki/front-proxy-ca.crt" -days 3650 -subj "/CN=tj-kube-test-front-proxy-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
ossl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/front-proxy-client.key" \
  -out "$pki/front-proxy-client.csr" -subj "/CN=front-proxy-client"
printf '%s\n' "$client_ext" >"$pki/front-proxy-client.ext"
ossl x509 -req -in "$pki/front-proxy-client.csr" -CA "$pki/front-proxy-ca.crt" -CAkey "$pki/front-proxy-ca.key" \
  -CAcreateserial -out "$pki/front-proxy-client.crt" -days 3650 -extfile "$pki/front-proxy-client.ext"
rm -f "$pki/front-proxy-client.csr" "$pki/front-proxy-client.ext"
# Service-account token signing key pair (ES256).
ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/sa.key"
ossl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
chmod 600 "$pki"/*.key

# write_kubeconfig <file> <cert-name>: certs embedded, so the file is
# self-contained (written directly: a dozen `kubectl config` calls cost ~2s).
b64() { base64 -w0 <"$1"; }
write_kubeconfig() {
  local f=$1 n=$2
  cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tj-kube-test
  cluster:
    server: ${api_url}
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: ${n}
  user:
    client-certificate-data: $(b64 "$pki/$n.crt")
    client-key-data: $(b64 "$pki/$n.key")
contexts:
- name: ${n}@tj-kube-test
  context: {cluster: tj-kube-test, user: ${n}}
current-context: ${n}@tj-kube-test
EOF
  chmod 600 "$f"
}
write_kubeconfig "$wd/kubeconfig" admin
write_kubeconfig "$wd/kube-controller-manager.kubeconfig" kube-controller-manager
write_kubeconfig "$wd/kube-scheduler.kubeconfig" kube-scheduler
log "pki and kubeconfigs written ($(( $(date +%s) - t0 ))s)"

# ---------------------------------------------------------------- processes
# start <NAME_PID-prefix> <logname> <cmd...>: own session (setsid) so that the
# caller's process group / terminal signals do not reach it; down.sh stops it
# by pid.
start() {
  local var=$1 name=$2; shift 2
  setsid "$@" </dev/null >"$wd/logs/$name.log" 2>&1 &
  local pid=$!
  started+=("$pid")
  put_env "$var" "$pid"
}

# wait_for <what> <cmd...>: poll until cmd succeeds, a started process dies,
# or the deadline passes.
deadline=$(( t0 + timeout_s ))
wait_for() {
  local what=$1; shift
  local p
  until "$@" >/dev/null 2>&1; do
    for p in "${started[@]}"; do
      kill -0 "$p" 2>/dev/null || fail "process $p exited while waiting for $what"
    done
    (( $(date +%s) < deadline )) || fail "timed out after ${timeout_s}s waiting for $what"
    sleep 0.5
  done
  log "$what ready ($(( $(date +%s) - t0 ))s)"
}

start ETCD_PID etcd "$bin/etcd" \
  --name=tj-etcd \
  --data-dir="$wd/etcd-data" \
  --listen-client-urls="http://127.0.0.1:${etcd_port}" \
  --advertise-client-urls="http://127.0.0.1:${etcd_port}" \
  --listen-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
  --initial-cluster="tj-etcd=http://127.0.0.1:${etcd_peer_port}" \
  --unsafe-no-fsync=true \
  --log-level=warn
wait_for etcd curl -fsS --max-time 2 "http://127.0.0.1:${etcd_port}/health"

# The audit log records what ServiceAccounts outside kube-system do (verb, resource, user, code;
# no bodies): the operator's tests compare it with the calls the operator declares
# (operator/controller/api_permissions.cc). The controllers' own ServiceAccounts are left out.
cat >"$wd/audit-policy.yaml" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    userGroups: ["system:serviceaccounts:kube-system"]
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
POLICY

start KUBE_APISERVER_PID kube-apiserver "$bin/kube-apiserver" \
  --audit-policy-file="$wd/audit-policy.yaml" \
  --audit-log-path="$wd/logs/audit.jsonl" \
  --audit-log-maxbackup=1 \
  --audit-log-maxsize=200 \
  --etcd-servers="http://127.0.0.1:${etcd_port}" \
  --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 \
  --secure-port="${api_port}" \
  --tls-cert-file="$pki/apiserver.crt" \
  --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --service-cluster-ip-range="$svc_cidr" \
  --authorization-mode=Node,RBAC \
  --service-account-issuer="${api_url}" \
  --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" \
  --allow-privileged=true \
  --requestheader-client-ca-file="$pki/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$pki/front-proxy-client.crt" \
  --proxy-client-key-file="$pki/front-proxy-client.key" \
  --v="$v"
kc() { kubectl --kubeconfig="$wd/kubeconfig" --request-timeout=5s "$@"; }
wait_for "kube-apiserver /readyz" kc get --raw /readyz

start KUBE_CONTROLLER_MANAGER_PID kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig="$wd/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$wd/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$wd/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${kcm_port}" \
  --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file="$pki/sa.key" \
  --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" \
  --cluster-signing-key-file="$pki/ca.key" \
  --enable-hostpath-provisioner=true \
  --v="$v"
start KUBE_SCHEDULER_PID kube-scheduler "$bin/kube-scheduler" \
  --kubeconfig="$wd/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$wd/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$wd/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${sched_port}" \
  --leader-elect=false \
  --v="$v"

wait_for "kube-controller-manager /healthz" curl -fsSk --max-time 2 "https://127.0.0.1:${kcm_port}/healthz"
wait_for "kube-scheduler /readyz" curl -fsSk --max-time 2 "https://127.0.0.1:${sched_port}/readyz"
wait_for "ServiceAccount default/default" kc -n default get serviceaccount default

trap - EXIT INT TERM
put_env TJ_KUBE_UP_SECONDS "$(( $(date +%s) - t0 ))"
log "control plane up in $(( $(date +%s) - t0 ))s: $api_url"
echo "$wd/kubeconfig"
