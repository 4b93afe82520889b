#!/usr/bin/env bash
# Start the real Kueue controller manager (scripts/install-kueue.sh) against a control plane that
# up.sh <workdir> started, and give it one queue to admit from:
#
#   - Kueue's CRDs (from its Go module), applied server-side (the Workload CRD is too large for
#     the last-applied annotation of a client-side apply);
#   - its webhooks for kueue.x-k8s.io objects (Workload, ClusterQueue, ResourceFlavor, Cohort
#     defaulting and validation) registered with `url: https://127.0.0.1:<port>/...` and a caBundle
#     of up.sh's CA, which also signs the webhook server's certificate: the API server reaches a
#     process on the loopback without a Service, and what we create goes through the checks a
#     real installation makes. The webhooks for pods and batch Jobs are left out: no test
#     object is theirs, and a pod webhook would stand between the operator and every pod;
#   - ResourceFlavor `default-flavor` (nodeLabels tj.dev/pool=kueue, a toleration for the taint
#     tj.dev/kueue=true:NoSchedule), ClusterQueue `cluster-queue` with nominal quota
#     cpu=${TJ_KUEUE_CPU:-4} memory=${TJ_KUEUE_MEMORY:-8Gi} and preemption withinClusterQueue
#     LowerPriority, WorkloadPriorityClasses `low` (100) and `high` (1000). LocalQueues are the
#     tests' (namespaced): kueue-local-queue.sh <workdir> <namespace> makes `user-queue`.
#   - with TJ_KUEUE_MULTIKUEUE_WORKER=<worker workdir> (a control plane of up.sh with its own
#     kueue-up.sh and the TrainingJob CRD): this Kueue is a MultiKueue manager dispatching to that
#     worker. Its configuration lists TrainingJob under multiKueue.externalFrameworks (Kueue's
#     generic adapter copies a job whose spec.managedBy is kueue.x-k8s.io/multikueue to the worker
#     and its status back); the worker's kubeconfig is Secret kueue-system/worker-kubeconfig (key
#     `kubeconfig`, client certificate and CA embedded, as Kueue requires), MultiKueueCluster
#     `worker`, MultiKueueConfig and AdmissionCheck `multikueue`, and the ClusterQueue admits
#     through that check. The TrainingJob CRD must be applied here first.
#
# usage: kueue-up.sh <workdir>     (stop: down.sh <workdir>, which stops Kueue first)
# Appends KUEUE_PID and TJ_KUEUE_DIR to <workdir>/env; Kueue logs to <workdir>/logs/kueue.log.
# Environment: TJ_KUEUE_DIR (default: the output of scripts/install-kueue.sh),
#              TJ_KUEUE_UP_TIMEOUT (seconds, default 180), TJ_KUEUE_MULTIKUEUE_WORKER (above).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf 'kueue-up.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
[[ $# -eq 1 ]] || die "usage: kueue-up.sh <workdir>"
wd="$(cd "$1" && pwd)"
[[ -f "$wd/env" && -f "$wd/kubeconfig" ]] || die "$wd has no control plane (run up.sh $wd first)"
kdir="${TJ_KUEUE_DIR:-}"
[[ -n "$kdir" ]] || kdir="$("$here/../../scripts/install-kueue.sh")"
[[ -x "$kdir/kueue" ]] || die "no kueue binary in $kdir (scripts/install-kueue.sh)"
timeout_s="${TJ_KUEUE_UP_TIMEOUT:-180}"
worker="${TJ_KUEUE_MULTIKUEUE_WORKER:-}"
if [[ -n "$worker" ]]; then
  [[ -f "$worker/kubeconfig" ]] || die "TJ_KUEUE_MULTIKUEUE_WORKER=$worker: no kubeconfig there (up.sh)"
fi
t0=$(date +%s)
deadline=$(( t0 + timeout_s ))

kc() { kubectl --kubeconfig="$wd/kubeconfig" --request-timeout=10s "$@"; }
put_env() { printf '%s=%q\n' "$1" "$2" >>"$wd/env"; }

free_port() {
  local p i
  for i in $(seq 1 500); do
    p=$(( 20000 + RANDOM % 12000 ))
    if ! ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . && ! grep -qx "$p" "$wd/kueue/ports" 2>/dev/null; then
      echo "$p" >>"$wd/kueue/ports"
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

kpid=""
on_exit() {
  local rc=$?
  (( rc == 0 )) && return 0
  [[ -s "$wd/logs/kueue.log" ]] && { printf '\n----- tail %s\n' "$wd/logs/kueue.log" >&2; tail -n 30 "$wd/logs/kueue.log" >&2; }
  [[ -n "$kpid" ]] && kill -TERM "$kpid" 2>/dev/null
  exit "$rc"
}
trap on_exit EXIT
wait_for() {
  local what=$1; shift
  until "$@" >/dev/null 2>&1; do
    [[ -z "$kpid" ]] || kill -0 "$kpid" 2>/dev/null || die "kueue exited while waiting for $what"
    (( $(date +%s) < deadline )) || die "timed out after ${timeout_s}s waiting for $what"
    sleep 0.5
  done
  log "$what ready ($(( $(date +%s) - t0 ))s)"
}

rm -rf "$wd/kueue"
mkdir -p "$wd/kueue/certs" "$wd/logs"
webhook_port=$(free_port)
health_port=$(free_port)
metrics_port=$(free_port)
visibility_port=$(free_port)

# The webhook server's certificate, for the address the API server dials.
pki="$wd/pki"
printf '%s\n' 'basicConstraints=critical,CA:FALSE' 'keyUsage=critical,digitalSignature' \
  'extendedKeyUsage=serverAuth' 'subjectAltName=IP:127.0.0.1' >"$wd/kueue/certs/ext"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=kueue-webhook" \
  -keyout "$wd/kueue/certs/tls.key" -out "$wd/kueue/certs/tls.csr" 2>/dev/null
openssl x509 -req -in "$wd/kueue/certs/tls.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
  -CAcreateserial -out "$wd/kueue/certs/tls.crt" -days 3650 -extfile "$wd/kueue/certs/ext" 2>/dev/null

kc create namespace kueue-system --dry-run=client -o yaml | kc apply -f - >/dev/null
kc apply --server-side --force-conflicts -f "$kdir/crds" >/dev/null
crds="workloads clusterqueues localqueues resourceflavors workloadpriorityclasses"
[[ -z "$worker" ]] || crds+=" multikueueclusters multikueueconfigs admissionchecks"
for crd in $crds; do
  wait_for "CRD $crd" kc wait --for=condition=Established --timeout=5s "crd/$crd.kueue.x-k8s.io"
done

cat >"$wd/kueue/config.yaml" <<CFG
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:${health_port}
metrics:
  bindAddress: 127.0.0.1:${metrics_port}
webhook:
  host: 127.0.0.1
  port: ${webhook_port}
  certDir: $wd/kueue/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks: ["batch/job"]
  externalFrameworks: ["TrainingJob.v1alpha1.trainingjob.dev"]
CFG
if [[ -n "$worker" ]]; then
  cat >>"$wd/kueue/config.yaml" <<'CFG'
multiKueue:
  externalFrameworks: [{name: TrainingJob.v1alpha1.trainingjob.dev}]
CFG
fi

# With internal cert management off, Kueue 0.17 reads its metrics server's certificate from the
# fixed path /etc/kueue/metrics/certs. It gets the webhook's pair there in a mount namespace of its
# own, over an overlay of /etc: the host's /etc is not touched. unshare and sh exec in place, so
# $! is Kueue's pid (down.sh stops it).
mkdir -p "$wd/kueue/etc-upper" "$wd/kueue/etc-work"
setsid env KUBECONFIG="$wd/kubeconfig" unshare --mount --propagation private sh -c '
  set -e
  mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc-upper,workdir=$1/etc-work" /etc
  mkdir -p /etc/kueue/metrics/certs
  cp "$1/certs/tls.crt" "$1/certs/tls.key" /etc/kueue/metrics/certs/
  shift
  exec "$@"' kueue-up "$wd/kueue" "$kdir/kueue" --config="$wd/kueue/config.yaml" \
  --visibility-server-port="$visibility_port" --feature-gates=VisibilityOnDemand=false \
  --zap-log-level=2 \
  </dev/null >"$wd/logs/kueue.log" 2>&1 &
kpid=$!
put_env KUEUE_PID "$kpid"
put_env TJ_KUEUE_DIR "$kdir"
wait_for "kueue /readyz" curl -fsS --max-time 2 "http://127.0.0.1:${health_port}/readyz"
wait_for "kueue webhook server" curl -sk --max-time 2 -o /dev/null "https://127.0.0.1:${webhook_port}/"

# Kueue's own webhook manifests, kept to the kueue.x-k8s.io objects and pointed at the loopback.
python3 - "$kdir/webhook.yaml" "$webhook_port" "$pki/ca.crt" >"$wd/kueue/webhooks.yaml" <<'PY'
import base64, sys, yaml
path, port, ca = sys.argv[1], sys.argv[2], sys.argv[3]
bundle = base64.b64encode(open(ca, "rb").read()).decode()
out = []
for doc in yaml.safe_load_all(open(path)):
    if not doc:
        continue
    hooks = [h for h in doc.get("webhooks", [])
             if all("kueue.x-k8s.io" in r.get("apiGroups", []) for r in h.get("rules", []))]
    for h in hooks:
        svc = h["clientConfig"].pop("service")
        h["clientConfig"] = {"url": f"https://127.0.0.1:{port}{svc['path']}", "caBundle": bundle}
        h.pop("namespaceSelector", None)
    doc["webhooks"] = hooks
    doc["metadata"] = {"name": "tj-test-" + doc["metadata"]["name"]}
    out.append(doc)
yaml.safe_dump_all(out, sys.stdout)
PY
kc apply -f "$wd/kueue/webhooks.yaml" >/dev/null

cpu="${TJ_KUEUE_CPU:-4}"
memory="${TJ_KUEUE_MEMORY:-8Gi}"
checks=""
if [[ -n "$worker" ]]; then
  checks="admissionChecksStrategy: {admissionChecks: [{name: multikueue}]}"
  kc -n kueue-system create secret generic worker-kubeconfig --from-file=kubeconfig="$worker/kubeconfig" \
    --dry-run=client -o yaml | kc apply -f - >/dev/null
  apply_multikueue() {
    kc apply -f - <<OBJ
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: worker}
spec:
  clusterSource:
    kubeConfig: {locationType: Secret, location: worker-kubeconfig}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: multikueue}
spec: {clusters: [worker]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: multikueue}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: multikueue}
OBJ
  }
  wait_for "MultiKueueCluster, MultiKueueConfig, AdmissionCheck" apply_multikueue
  wait_for "MultiKueueCluster worker Active (connected to $worker)" \
    kc wait --for=condition=Active --timeout=5s multikueuecluster/worker
  wait_for "AdmissionCheck multikueue Active" \
    kc wait --for=condition=Active --timeout=5s admissioncheck/multikueue
fi
apply_queue() {
  kc apply -f - <<OBJ
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec:
  nodeLabels: {tj.dev/pool: kueue}
  tolerations: [{key: tj.dev/kueue, operator: Equal, value: "true", effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  ${checks}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "${cpu}"}
      - {name: memory, nominalQuota: "${memory}"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
OBJ
}
# The webhooks answer once the API server has picked up their configuration.
wait_for "ResourceFlavor, ClusterQueue, WorkloadPriorityClasses" apply_queue
wait_for "ClusterQueue cluster-queue Active" \
  kc wait --for=condition=Active --timeout=5s clusterqueue/cluster-queue

trap - EXIT
log "kueue up in $(( $(date +%s) - t0 ))s (webhooks https://127.0.0.1:${webhook_port})"
