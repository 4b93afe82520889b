#!/usr/bin/env bash
# The product end to end on this machine (docs/e2e.md, README "End to end"): the real control plane
# of tests/kube-test-cluster/, the test-only node agent standing in for the kubelet, `helm install`
# of helm/trainingjob-operator, tj-operator running in-cluster as a pod under the chart's
# ServiceAccount, `kubectl apply -f examples/digits.yaml`, the training really running as pods that
# find each other by Service name over mutual TLS (the operator's default, with certificates it
# issues per job), then fault scenarios, each ending Succeeded.
#
#   tests/e2e/e2e.sh                      # every scenario (ctest tj_e2e_test), ~2.5 min
#   TJ_E2E_QUICK=1 tests/e2e/e2e.sh       # without the node agent restart (~1 min of waiting for
#                                         #  the Node to go NotReady), ~1.5 min
#   TJ_E2E_SCENARIOS="main evict" ...     # only these (names: main bad-input worker coordinator-42
#                                         #  evict scale operator s3 agent)
#
# Environment: TJ_BUILD_DIR (default <repo>/build; needs bin/tj-operator, bin/tj-train),
# TJ_KUBE_KEEP_WORKDIR=1 keeps the workdir. Exit 0 = every check passed; prints "*** SKIPPING ..."
# and exits 0 without Go (ctest reports Skipped).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kt="$repo/tests/kube-test-cluster"
build="${TJ_BUILD_DIR:-$repo/build}"
t0=$(date +%s)
log() { printf '[%3ds] %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  echo "*** SKIPPING the end-to-end test: \`go\` is not on PATH, so the control plane, the node agent and helm cannot be built. Install Go to run it. ***"
  exit 0
fi
# Pods find each other by Service name through a hosts file bind-mounted in their own mount
# namespace: without CAP_SYS_ADMIN the training could not resolve TF_CONFIG's names.
if ! unshare --mount --propagation private true 2>/dev/null; then
  echo "*** SKIPPING the end-to-end test: no mount namespaces here (\`unshare --mount\` fails; needs CAP_SYS_ADMIN), which the node agent needs to give pods /etc/hosts entries for Service names. ***"
  exit 0
fi
for b in tj-operator tj-train; do
  [[ -x "$build/bin/$b" ]] || { echo "e2e.sh: $build/bin/$b not found: build it first (ninja -C $build tj-operator tj-train) or set TJ_BUILD_DIR" >&2; exit 2; }
done
for tool in kubectl curl promtool; do
  command -v "$tool" >/dev/null || { echo "e2e.sh: $tool not found on PATH" >&2; exit 2; }
done

default_scenarios="main bad-input worker coordinator-42 evict scale operator s3"
[[ "${TJ_E2E_QUICK:-0}" == 1 ]] || default_scenarios+=" agent"
scenarios="${TJ_E2E_SCENARIOS:-$default_scenarios}"

wd="$(mktemp -d /tmp/tj-e2e-XXXXXX)"
node=tj-e2e-node
agent_pid=""
failed=1
declare -A timing=()
cleanup() {
  local rc=$?
  stop_agent || true
  stop_s3 2>/dev/null || true
  "$kt/down.sh" "$wd/cluster" >/dev/null 2>&1 || true
  if (( failed )); then
    printf '\n----- agent log (tail)\n' >&2
    tail -n 30 "$wd"/agent*.log >&2 2>/dev/null || true
    printf '\n----- operator log (tail)\n' >&2
    tail -n 30 "$wd"/root/pods/tj-system_*/logs/operator/*.log >&2 2>/dev/null || true
    echo "FAILED (rc=$rc); workdir kept: $wd" >&2
  elif [[ -z "${TJ_KUBE_KEEP_WORKDIR:-}" ]]; then
    rm -rf "$wd"
  fi
}
trap cleanup EXIT

fail() { log "FAIL: $*"; exit 1; }
# wait_for <seconds> <description> <cmd...>: poll the condition until it holds or the deadline.
wait_for() {
  local secs=$1 what=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < end )) || fail "timed out after ${secs}s waiting for: $what"
    sleep 0.3
  done
  log "ok: $what"
}
expect_eq() { # <what> <got> <want>
  [[ "$2" == "$3" ]] || fail "$1: got '$2', want '$3'"
  log "ok: $1 = '$3'"
}
expect_ge() { # <what> <got> <min>
  [[ "$2" =~ ^[0-9]+$ ]] && (( $2 >= $3 )) || fail "$1: got '$2', want >= $3"
  log "ok: $1 = $2 (>= $3)"
}

# ------------------------------------------------------------------ control plane, agent, helm
bin="$("$kt/build.sh")"
agent="$("$kt/build.sh" --node-agent)"
helm="$("$kt/build-helm.sh")/helm"
kubeconfig="$(TJ_KUBE_BIN="$bin" "$kt/up.sh" "$wd/cluster")"
export KUBECONFIG="$kubeconfig"
api="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
pki="$wd/cluster/pki"
kc() { kubectl --request-timeout=10s "$@"; }
timing[control-plane]=$(( $(date +%s) - t0 ))

# Images: the chart's default operator image and the examples' runtime image (both spellings).
mkdir -p "$wd/root"
cat >"$wd/image-map" <<EOF
ghcr.io/trainingjob-dev/tj-operator:*=$build/bin/tj-operator
trainingjob/tj-operator:*=$build/bin/tj-operator
ghcr.io/trainingjob-dev/tj-runtime:*=$build/bin
trainingjob/tj-runtime:*=$build/bin
EOF
# Pod IPs 127.0.42.x: apart from tj_node_agent_test's agent (127.0.0.x) when ctest runs both at once.
# Checkpoints live on PersistentVolumeClaims (spec.checkpoint.volume) bound by a real provisioner,
# kube-controller-manager's hostPath one (--enable-hostpath-provisioner, up.sh) behind the default
# StorageClass below; the agent mounts a claim's volume as the kubelet would (volumes.go).
start_agent() { # <log name>
  setsid "$agent" --kubeconfig="$kubeconfig" --node-name="$node" --root-dir="$wd/root" --heartbeat=2s --pod-cidr-base=127.0.42. \
    --capacity=cpu=8,memory=16Gi,pods=50 --image-map-file="$wd/image-map" --mount-namespaces=true \
    </dev/null >>"$wd/$1.log" 2>&1 &
  agent_pid=$!
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
node_ready() { [[ "$(kc get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]; }
untainted() { [[ -z "$(kc get node "$node" -o jsonpath='{.spec.taints}')" ]]; }
start_agent agent
wait_for 30 "node $node Ready" node_ready
# The cluster's default StorageClass: examples/digits.yaml's claimTemplate names none.
kc apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: hostpath
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
wait_for 30 "node $node untainted" untainted

ns=tj-system
release=tj
cat >"$wd/values.yaml" <<'EOF'
# This machine: one node, pods share the loopback network, so the operator listens on its pod IP.
replicaCount: 1
leaderElection:
  enabled: true
metrics:
  host: "$(POD_IP)"
health:
  host: "$(POD_IP)"
EOF
t_helm=$(date +%s)
"$helm" install "$release" "$repo/helm/trainingjob-operator" -n "$ns" --create-namespace \
  -f "$wd/values.yaml" --wait --timeout 2m >"$wd/helm-install.log" 2>&1 ||
  { cat "$wd/helm-install.log" >&2; fail "helm install"; }
log "ok: helm install (chart deployed, operator Deployment ready)"
operator_pod() { # the operator pod that is not being deleted
  kc -n "$ns" get pods -l app.kubernetes.io/name=trainingjob-operator -o json |
    jq -r '[.items[] | select(.metadata.deletionTimestamp == null)][0].metadata.name // empty'
}
op="$(operator_pod)"
[[ -n "$op" ]] || fail "no operator pod after helm install"
lease_holder() { kc -n "$ns" get lease trainingjob-operator-leader -o jsonpath='{.spec.holderIdentity}'; }
leader_is() { [[ "$(lease_holder)" == "$1"_* ]]; }
wait_for 60 "operator pod $op holds the leader Lease" leader_is "$op"
timing[helm-install-to-leader]=$(( $(date +%s) - t_helm ))
sa="$(kc -n "$ns" get pod "$op" -o jsonpath='{.spec.serviceAccountName}')"
expect_eq "operator pod's ServiceAccount" "$sa" "tj-trainingjob-operator"
expect_eq "operator pod's node" "$(kc -n "$ns" get pod "$op" -o jsonpath='{.spec.nodeName}')" "$node"
# Its token (TokenRequest, projected where a real pod has it) is the ServiceAccount's identity.
op_dir() { echo "$wd/root/pods/${ns}_$1_$(kc -n "$ns" get pod "$1" -o jsonpath='{.metadata.uid}')"; }
token_file="$(ls "$(op_dir "$op")"/volumes/kube-api-access-*/token)"
who="$(kubectl --kubeconfig=/dev/null --server="$api" --certificate-authority="$pki/ca.crt" \
  --token="$(cat "$token_file")" auth whoami -o jsonpath='{.status.userInfo.username}')"
expect_eq "operator's API identity" "$who" "system:serviceaccount:$ns:$sa"

# ------------------------------------------------------------------ helpers for jobs
job_state() { kc get tj "$1" -o jsonpath='{.status.state}'; }
state_is() { [[ "$(job_state "$1")" == "$2" ]]; }
job_pods() { kc get pods -l "trainingjob.dev/job-name=$1" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.phase}{" "}{.metadata.uid}{"\n"}{end}'; }
# The coordinator's log, every run of every incarnation of its pod.
coord_log() { cat "$wd"/root/pods/default_"$1"-coordinator-0_*/logs/trainer/*.log 2>/dev/null; }
ps_log() { cat "$wd"/root/pods/default_"$1"-ps-0_*/logs/trainer/*.log 2>/dev/null; }
coord_trained() { # <job> <step>: the coordinator logged a step >= <step>
  coord_log "$1" | grep -oE 'step[ =:]+[0-9]+' | grep -oE '[0-9]+$' | awk -v s="$2" '$1>=s{f=1} END{exit !f}'
}
final_accuracy() { coord_log "$1" | grep -oE 'final: .*accuracy=[0-9.]+' | tail -1 | grep -oE '[0-9.]+$'; }
no_running_ps_or_worker() {
  local out
  out="$(kc get pods -l "trainingjob.dev/job-name=$1,trainingjob.dev/replica-type in (ps,worker)" \
    -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')" || return 1
  ! grep -qE 'Running|Pending' <<<"$out"
}
job_objects_gone() {
  local out
  out="$(kc get pods,services,secrets,persistentvolumeclaims -l "trainingjob.dev/job-name=$1" -o name)" || return 1
  [[ -z "$out" ]]
}
# Processes the agent started for the job's pods (their environment names the pod directory).
job_processes() {
  grep -ls "TJ_NODE_AGENT_POD_DIR=$wd/root/pods/default_$1-" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}
# A variant of examples/digits.yaml: another name (and checkpoint directory), slower steps so a fault
# lands mid-training, and the coordinator's /metrics on an ephemeral port of 127.0.0.1.
variant() { # <name> <step sleep ms>
  sed -e "s/^  name: digits$/  name: $1/" \
      -e "s|checkpoints/digits$|checkpoints/$1|" \
      -e "s/- --min-accuracy=0.92/- --min-accuracy=0.92\n                - --step-sleep-ms=$2\n              env: [{name: TJ_METRICS_ADDRESS, value: \"127.0.0.1:0\"}]/" \
      "$repo/examples/digits.yaml"
}
# <job> <seconds>: Succeeded within the deadline; Failed is reported at once.
wait_succeeded() {
  local job=$1 secs=$2 end=$(( $(date +%s) + $2 )) s
  while :; do
    s="$(job_state "$job" 2>/dev/null || true)"
    [[ "$s" == Succeeded ]] && break
    [[ "$s" == Failed ]] && { kc get tj "$job" -o yaml >&2; fail "job $job Failed"; }
    (( $(date +%s) < end )) || { kc get tj "$job" -o yaml >&2; job_pods "$job" >&2; fail "job $job not Succeeded after ${secs}s (state '$s')"; }
    sleep 0.3
  done
  log "ok: job $job Succeeded"
}
check_accuracy() {
  local acc
  acc="$(final_accuracy "$1")"
  [[ -n "$acc" ]] || fail "no final accuracy in the coordinator log of $1"
  awk -v a="$acc" 'BEGIN{exit !(a >= 0.92)}' || fail "job $1: accuracy $acc < 0.92"
  log "ok: job $1 accuracy $acc >= 0.92"
}
# Delete the job; the garbage collector removes its pods, Services and Secret; nothing keeps running.
delete_job() {
  kc delete tj "$1" --wait=false >/dev/null
  wait_for 60 "job $1's pods, services, secret and checkpoint claim garbage-collected" job_objects_gone "$1"
  wait_for 20 "no process of job $1 left" test -z "$(job_processes "$1")"
}
status_field() { kc get tj "$1" -o jsonpath="{.status.$2}"; }
expect_counters() { # <job> <json>: logs every counter, checks preemptions/restartCount/coordinatorRestarts
  log "status counters of $1: $(status_counters "$1")"
  expect_eq "$1 status counters" "$(status_counters "$1" | jq -c '{preemptions, restartCount, coordinatorRestarts}')" "$2"
}
status_counters() { # the job's status counters, one line (for the log and for checks)
  kc get tj "$1" -o json | jq -c '.status | {preemptions: (.preemptions // 0), restartCount, coordinatorRestarts,
    restarts: ((.replicaStatuses // {}) | with_entries(.value = (.value.restarts // 0)))}'
}

# ------------------------------------------------------------------ scenarios
scenario_main() {
  kc apply -f "$repo/examples/digits.yaml" >/dev/null
  wait_succeeded digits 120
  check_accuracy digits
  kc get tj >"$wd/get-tj.txt"
  grep -qE '^digits +.*Succeeded' "$wd/get-tj.txt" || { cat "$wd/get-tj.txt" >&2; fail "kubectl get tj does not show digits Succeeded"; }
  log "ok: kubectl get tj: $(grep '^digits' "$wd/get-tj.txt" | tr -s ' ')"
  wait_for 30 "no PS/worker pod of digits left running" no_running_ps_or_worker digits
  metrics_check
  checkpoint_claim_check digits
  delete_job digits
  pv_gone() { ! kc get pv "$pv" >/dev/null 2>&1 && [[ ! -e "$pv_dir" ]]; }
  wait_for 30 "PersistentVolume $pv and its directory $pv_dir deleted with the claim" pv_gone
}

# The job's checkpoints are on a claim the operator made, bound to a volume the provisioner made,
# which holds the coordinator's manifests and the PS's shards.
checkpoint_claim_check() { # <job>; sets pv and pv_dir
  local claim="$1-checkpoint" phase provisioner
  phase="$(kc get pvc "$claim" -o jsonpath='{.status.phase}')"
  expect_eq "claim $claim phase" "$phase" Bound
  pv="$(kc get pvc "$claim" -o jsonpath='{.spec.volumeName}')"
  provisioner="$(kc get pv "$pv" -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}')"
  expect_eq "provisioner of $pv" "$provisioner" kubernetes.io/host-path
  pv_dir="$(kc get pv "$pv" -o jsonpath='{.spec.hostPath.path}')"
  ls -d "$pv_dir"/ckpt-* >/dev/null 2>&1 || fail "no checkpoint in $pv_dir (the volume of $claim): $(ls -la "$pv_dir")"
  log "ok: $1's checkpoints are on claim $claim, volume $pv ($pv_dir: $(ls -d "$pv_dir"/ckpt-* | wc -l) checkpoints)"
}

# promtool (Prometheus' own parser and linter) on the operator's /metrics, at its pod IP.
metrics_check() {
  local ip
  ip="$(kc -n "$ns" get pod "$(operator_pod)" -o jsonpath='{.status.podIP}')"
  curl -fsS --max-time 5 "http://$ip:8080/metrics" >"$wd/operator-metrics.txt" || fail "GET http://$ip:8080/metrics"
  curl -fsS --max-time 5 "http://$ip:8081/healthz" >/dev/null || fail "GET http://$ip:8081/healthz"
  grep -q '^tj_operator' "$wd/operator-metrics.txt" || fail "operator /metrics has no tj_operator_* series"
  promtool check metrics <"$wd/operator-metrics.txt" >"$wd/promtool.txt" 2>&1 ||
    { cat "$wd/promtool.txt" >&2; fail "promtool check metrics rejects the operator's /metrics"; }
  log "ok: promtool check metrics accepts the operator's /metrics ($(grep -c '^tj_' "$wd/operator-metrics.txt") samples)"
}

# promtool on the coordinator's /metrics (TJ_METRICS_ADDRESS; the port is in its log).
coordinator_metrics_check() { # <job>
  local port
  port="$(coord_log "$1" | grep -oE 'Prometheus metrics on port [0-9]+' | head -1 | grep -oE '[0-9]+$')"
  [[ -n "$port" ]] || fail "the coordinator of $1 logged no metrics port"
  curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" >"$wd/coordinator-metrics.txt" || fail "GET coordinator /metrics :$port"
  grep -q '^tj_' "$wd/coordinator-metrics.txt" || fail "coordinator /metrics has no tj_* series"
  promtool check metrics <"$wd/coordinator-metrics.txt" >"$wd/promtool-coordinator.txt" 2>&1 ||
    { cat "$wd/promtool-coordinator.txt" >&2; fail "promtool check metrics rejects the coordinator's /metrics"; }
  log "ok: promtool check metrics accepts the coordinator's /metrics ($(grep -c '^tj_' "$wd/coordinator-metrics.txt") samples)"
}

# Invalid manifests against the live operator: the API server (the CRD's schema and validation
# rules) rejects them with the field named; the scenarios after this one show the operator serving.
scenario_bad_input() {
  local out
  if out="$(variant bad-schema 0 | sed 's/replicas: 2/replicas: -2/' | kc apply -f - 2>&1)"; then
    fail "a TrainingJob with replicas -2 was accepted: $out"
  fi
  grep -qi "replicas" <<<"$out" || fail "the rejection does not name the field: $out"
  log "ok: API server rejects replicas -2: $(grep -m1 replicas <<<"$out")"
  # A user TF_CONFIG: the CRD's validation rules (the operator's own checks, in CEL) name the field.
  if out="$(kc apply -f - 2>&1 <<'EOF2'
apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata: {name: bad-env}
spec:
  replicaSpecs:
    Coordinator:
      replicas: 1
      template:
        spec:
          containers:
            - {name: trainer, image: "trainingjob/tj-runtime:0.1.0", command: [tj-train], env: [{name: TF_CONFIG, value: "{}"}]}
    PS:
      replicas: 1
      template: {spec: {containers: [{name: trainer, image: "trainingjob/tj-runtime:0.1.0", command: [tj-train]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: trainer, image: "trainingjob/tj-runtime:0.1.0", command: [tj-train]}]}}
EOF2
  )"; then
    fail "a TrainingJob setting TF_CONFIG was accepted: $out"
  fi
  [[ "$out" == *"containers[0].env[0].name"*TF_CONFIG* ]] || fail "the rejection does not name env[0].name and TF_CONFIG: $out"
  log "ok: API server rejects a user TF_CONFIG: $out"
  [[ -z "$(kc get tj -o name)" ]] || fail "an invalid TrainingJob exists: $(kc get tj -o name)"
  # A claim that does not exist: the job is held with a condition and a Warning naming it, no pod.
  variant missing-claim 0 | sed -e 's/^      claimTemplate:$/      claimName: no-such-claim/' \
    -e '/^        resources: {requests: {storage: 1Gi}}$/d' | kc apply -f - >/dev/null
  held() {
    [[ "$(kc get tj missing-claim -o jsonpath='{.status.conditions[?(@.type=="Created")].reason}')" == CheckpointVolumeUnavailable ]]
  }
  wait_for 30 "missing-claim held (Created False, CheckpointVolumeUnavailable)" held
  out="$(kc get events --field-selector involvedObject.name=missing-claim,reason=CheckpointVolumeUnavailable -o jsonpath='{.items[*].message}')"
  [[ "$out" == *"PersistentVolumeClaim default/no-such-claim"* ]] || fail "no Warning Event naming the claim: $out"
  [[ -z "$(job_pods missing-claim)" ]] || fail "pods of a job whose claim is missing: $(job_pods missing-claim)"
  log "ok: a missing claim holds the job: $out"
  delete_job missing-claim
}

# The replicas find each other by Service name (TF_CONFIG says <pod>.<ns>.svc:2222): a pod of the
# namespace resolves the PS's names to the PS pod's IP through its /etc/hosts.
service_names_resolve() { # <job>
  local ps_ip
  ps_ip="$(kc get pod "$1-ps-0" -o jsonpath='{.status.podIP}')"
  kc apply -f - >/dev/null <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: resolver}
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: busybox
      command: [/bin/sh, -c, "getent hosts $1-ps-0.default.svc; getent hosts $1-ps-0; getent hosts $1-ps-0.default.svc.cluster.local"]
EOF2
  resolver_done() { [[ "$(kc get pod resolver -o jsonpath='{.status.phase}')" == Succeeded ]]; }
  wait_for 30 "pod resolver Succeeded" resolver_done
  local out
  out="$(cat "$wd"/root/pods/default_resolver_*/logs/main/0.log)"
  [[ "$(grep -c "^$ps_ip " <<<"$out")" == 3 ]] || fail "pod resolver: Service names of $1-ps-0 did not resolve to $ps_ip: $out"
  log "ok: $1-ps-0, $1-ps-0.default.svc(.cluster.local) resolve to $ps_ip inside a pod"
  kc delete pod resolver --wait=false >/dev/null
}

# Every job runs mutual TLS (the operator's default): its replicas mount the job's CA and their
# role's certificate from its Secret and are given TJ_TLS_DIR. The training itself shows that they
# reach each other (servers refuse any client without a certificate of the job's CA).
tls_check() { # <job>
  local pod envs items
  for pod in "$1-coordinator-0" "$1-ps-0" "$1-worker-0"; do
    envs="$(kc get pod "$pod" -o jsonpath='{.spec.containers[0].env[?(@.name=="TJ_TLS_DIR")].value}')"
    [[ -n "$envs" ]] || fail "pod $pod has no TJ_TLS_DIR"
    items="$(kc get pod "$pod" -o jsonpath='{.spec.volumes[?(@.name=="tj-job-token")].secret.items[*].path}')"
    [[ "$items" == *tls/ca.crt*tls/tls.crt*tls/tls.key* ]] || fail "pod $pod does not mount its certificate: $items"
  done
  [[ -n "$(kc get secret "$1-job-token" -o jsonpath='{.data.ca\.key}')" ]] || fail "secret $1-job-token holds no CA"
  log "ok: $1's pods run mutual TLS with the job's certificates (TJ_TLS_DIR=$envs)"
}
operator_log() { cat "$wd"/root/pods/tj-system_*/logs/operator/*.log 2>/dev/null; }

# A worker pod deleted mid-training: the operator recreates it, training goes on.
scenario_worker() {
  local job=digits-worker
  variant "$job" 20 | kc apply -f - >/dev/null
  wait_for 90 "$job training (step >= 90)" coord_trained "$job" 90
  tls_check "$job"
  service_names_resolve "$job"
  coordinator_metrics_check "$job"
  local uid
  uid="$(kc get pod "$job-worker-0" -o jsonpath='{.metadata.uid}')"
  kc delete pod "$job-worker-0" --wait=false >/dev/null
  log "deleted pod $job-worker-0 mid-training"
  wait_succeeded "$job" 180
  check_accuracy "$job"
  expect_eq "$job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  [[ "$(kc get pod "$job-worker-0" -o jsonpath='{.metadata.uid}' 2>/dev/null)" != "$uid" ]] || fail "worker-0 was not recreated"
  # The operator's notice about the deleted worker, and its progress reads, reached the
  # coordinator over mutual TLS (its control certificate; a plaintext call gets no connection).
  operator_log | grep -q "default/$job: notice for worker 0 (" ||
    fail "the operator's notice about worker 0 did not reach the coordinator of $job"
  log "ok: operator delivered over TLS: $(operator_log | grep -m1 -oE "default/$job: notice for worker 0 .*")"
  expect_ge "$job status.step (the operator's progress reads over TLS)" "$(status_field "$job" step)" 90
  # the deletion is a disruption (a notice), not a failure counted against backoffLimit
  expect_counters "$job" '{"preemptions":1,"restartCount":0,"coordinatorRestarts":0}'
  delete_job "$job"
}

# The coordinator process exits 42 (SIGTERM to it: notice, checkpoint, exit with the restart code):
# restarted in place of counting toward backoffLimit.
scenario_coordinator_42() {
  local job=digits-coord42
  variant "$job" 20 | kc apply -f - >/dev/null
  wait_for 90 "$job training (step >= 200)" coord_trained "$job" 200
  local pid
  pid="$( (grep -ls "TJ_NODE_AGENT_POD_DIR=$wd/root/pods/default_$job-coordinator-0_" /proc/[0-9]*/environ 2>/dev/null || true) |
    cut -d/ -f3 | head -1)"
  [[ -n "$pid" ]] || fail "coordinator process of $job not found"
  kill -TERM "$pid"
  log "SIGTERM to the coordinator process $pid"
  wait_succeeded "$job" 180
  check_accuracy "$job"
  expect_ge "$job status.coordinatorRestarts" "$(status_field "$job" coordinatorRestarts)" 1
  grep -q "Exiting with the restart code 42" <<<"$(coord_log "$job")" || fail "the coordinator of $job did not exit with 42"
  grep -q "restored checkpoint .*training resumes at step [1-9]" <<<"$(coord_log "$job")" ||
    fail "the restarted coordinator of $job did not resume from its preemption checkpoint"
  log "ok: exit 42, then $(coord_log "$job" | grep -oE 'restored checkpoint .*' | head -1)"
  expect_eq "$job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  # exit 42 of the process itself: a restart counted against backoffLimit
  expect_counters "$job" '{"preemptions":0,"restartCount":1,"coordinatorRestarts":1}'
  delete_job "$job"
}

# The PS evicted through the Eviction API: DisruptionTarget, notice, checkpoint, coordinator restart.
scenario_evict() {
  local job=digits-evict
  variant "$job" 20 | kc apply -f - >/dev/null
  wait_for 90 "$job checkpointed once (step >= 200)" coord_trained "$job" 200
  local code
  code="$(curl -sS -o "$wd/evict.json" -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    -X POST -H 'Content-Type: application/json' "$api/api/v1/namespaces/default/pods/$job-ps-0/eviction" \
    -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$job-ps-0\",\"namespace\":\"default\"}}")"
  [[ "$code" == 201 ]] || { cat "$wd/evict.json" >&2; fail "eviction of $job-ps-0: HTTP $code"; }
  log "evicted $job-ps-0 through the Eviction API"
  wait_succeeded "$job" 180
  check_accuracy "$job"
  expect_ge "$job status.coordinatorRestarts" "$(status_field "$job" coordinatorRestarts)" 1
  # Two notices race: the operator's (the pod's DisruptionTarget condition) and the PS's own (the
  # agent's SIGTERM after the deletion). Whichever lands first leads; if the PS's does, the
  # coordinator may be gone before the operator's arrives. Either is the eviction reaching it.
  local first_notice
  first_notice="$(coord_log "$job" | grep -oE 'notice for ps:0 \((DisruptionTarget/EvictionByEvictionAPI|SIGTERM)\)' | head -1)"
  [[ -n "$first_notice" ]] || fail "no notice for ps:0 reached the coordinator of $job"
  log "ok: the eviction reached the coordinator first as '$first_notice'"
  # The PS outlived the notice: the coordinator checkpointed and exited with the restart code (not
  # "lost parameter server"), and its successor resumed from exactly that checkpoint.
  local log_text saved restored
  log_text="$(coord_log "$job")"
  grep -q "lost parameter server" <<<"$log_text" && fail "the coordinator of $job lost its PS before checkpointing"
  grep -q "preempted.*Exiting with the restart code 42" <<<"$log_text" ||
    fail "the coordinator of $job did not exit with 42 after a preemption checkpoint"
  saved="$(sed -n '/notice for ps:0/,/Exiting with the restart code/p' <<<"$log_text" | grep -oE 'saved: step [0-9]+' | tail -1 | grep -oE '[0-9]+$')"
  [[ -n "$saved" ]] || fail "no checkpoint saved between the PS notice and the exit of $job's coordinator"
  restored="$(grep -oE 'restored checkpoint .*training resumes at step [0-9]+' <<<"$log_text" | head -1 | grep -oE '[0-9]+$')"
  expect_eq "$job resumed at the notice checkpoint" "$restored" "$saved"
  grep -q "serving until the coordinator" <<<"$(ps_log "$job")" ||
    fail "the evicted PS of $job did not serve on until the coordinator was done"
  expect_eq "$job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  # the eviction is a disruption: the PS replaced, the coordinator restarted to restore, neither counted against backoffLimit
  expect_counters "$job" '{"preemptions":1,"restartCount":0,"coordinatorRestarts":1}'
  delete_job "$job"
}

# kubectl scale up mid-job: the operator creates the worker, which registers with the running
# coordinator and takes closures (the coordinator's TF_CONFIG predates it).
scenario_scale() {
  local job=digits-scale
  variant "$job" 20 | kc apply -f - >/dev/null
  wait_for 90 "$job training (step >= 90)" coord_trained "$job" 90
  kc scale tj "$job" --replicas=3 >/dev/null
  log "scaled $job to 3 workers"
  joined() { coord_log "$job" | grep -q "worker 2 at $job-worker-2[.:].* added"; }
  wait_for 60 "worker 2 joined the running coordinator of $job" joined
  wait_succeeded "$job" 180
  check_accuracy "$job"
  local took
  took="$(coord_log "$job" | grep -oE "worker 2 at $job-worker-2[^ ]*: [0-9]+ closure" | tail -1 | grep -oE '[0-9]+ closure' | grep -oE '[0-9]+')"
  expect_ge "$job closures run by the added worker" "${took:-0}" 1
  expect_eq "$job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  # scaling is neither a disruption nor a restart
  expect_counters "$job" '{"preemptions":0,"restartCount":0,"coordinatorRestarts":0}'
  delete_job "$job"
}

# The operator pod deleted mid-job: the Deployment recreates it, the new pod takes the Lease and
# carries the job on without duplicating its pods.
scenario_operator() {
  local job=digits-operator old new
  variant "$job" 20 | kc apply -f - >/dev/null
  wait_for 90 "$job training (step >= 90)" coord_trained "$job" 90
  local before
  before="$(job_pods "$job" | awk '{print $1, $3}' | sort)"
  old="$(operator_pod)"
  kc -n "$ns" delete pod "$old" --wait=false >/dev/null
  log "deleted the operator pod $old mid-job"
  new_operator() { local p; p="$(operator_pod)"; [[ -n "$p" && "$p" != "$old" ]] && leader_is "$p"; }
  wait_for 90 "a new operator pod leads" new_operator
  new="$(operator_pod)"
  log "new leader: $new"
  wait_succeeded "$job" 180
  check_accuracy "$job"
  # Same pods (names and UIDs) as before the takeover, except those cleaned up after success.
  local after
  after="$(job_pods "$job" | awk '{print $1, $3}' | sort)"
  [[ -z "$(comm -13 <(echo "$before") <(echo "$after"))" ]] ||
    fail "the new operator created pods: before=[$before] after=[$after]"
  log "ok: no pod created by the new leader"
  # the new leader saw nothing fail
  expect_counters "$job" '{"preemptions":0,"restartCount":0,"coordinatorRestarts":0}'
  delete_job "$job"
}

# The node agent stopped until the node lifecycle controller marks the Node NotReady (Unknown, ~50 s
# with the controller-manager's defaults), then restarted: lost processes, replicas restarted.
scenario_agent() {
  local job=digits-agent
  variant "$job" 20 | kc apply -f - >/dev/null
  wait_for 90 "$job checkpointed once (step >= 200)" coord_trained "$job" 200
  stop_agent
  log "node agent stopped"
  node_not_ready() { [[ "$(kc get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" != True ]]; }
  wait_for 120 "node $node NotReady" node_not_ready
  start_agent agent-restarted
  wait_for 60 "node $node Ready again" node_ready
  wait_succeeded "$job" 300
  check_accuracy "$job"
  # Every replica lost its process (restartPolicy Never: the pods ended Failed, 137) and was replaced.
  expect_eq "$job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  grep -q "restored checkpoint .*training resumes at step [1-9]" <<<"$(coord_log "$job")" ||
    fail "the replaced coordinator of $job did not resume from a checkpoint"
  log "ok: $(coord_log "$job" | grep -oE 'restored checkpoint .*' | head -1)"
  log "status counters of $job: $(status_counters "$job")"
  # The agent stops the pods' processes as a kubelet does (exit 143): restarts, counted.
  expect_ge "$job status.coordinatorRestarts" "$(status_field "$job" coordinatorRestarts)" 1
  expect_ge "$job status.restartCount" "$(status_field "$job" restartCount)" 1
  delete_job "$job"
}

# examples/digits-s3.yaml against a real S3-compatible server on 127.0.0.1 (SeaweedFS's `weed mini`,
# scripts/install-s3-server.sh, cached): the pods and the operator are processes of this machine,
# so they reach it there. Applied before its credentials Secret exists, the job is held
# (CheckpointStorageUnavailable naming the Secret, a Warning Event, no pod); once the Secret is
# made, the operator's next look (within 30 s) starts it, and it ends Succeeded with its 900 steps
# and its checkpoints (manifests and the PS's shard) in the bucket.
s3_pid=""
s3_key=tj-e2e-access
s3_secret=tj-e2e-secret-0123456789
stop_s3() {
  [[ -n "$s3_pid" ]] || return 0
  kill -KILL -- "-$s3_pid" 2>/dev/null || true
  wait "$s3_pid" 2>/dev/null || true
  s3_pid=""
}
s3_list() { # <prefix, URI-encoded as SigV4 wants it>: the bucket's ListObjectsV2 answer (XML)
  curl -fsS --max-time 5 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$s3_key:$s3_secret" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$s3_endpoint/digits-checkpoints?list-type=2&prefix=$1"
}
created_reason() { kc get tj "$1" -o jsonpath='{.status.conditions[?(@.type=="Created")].reason}'; }
scenario_s3() {
  local weed job=digits-s3 ports keys manifests
  weed="$(bash "$repo/scripts/install-s3-server.sh")" || fail "scripts/install-s3-server.sh could not build the S3 test server"
  mapfile -t ports < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(9)]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])')
  s3_endpoint="http://127.0.0.1:${ports[0]}"
  printf '{"identities":[{"name":"tj","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Read","Write","List","Tagging"]}]}' \
    "$s3_key" "$s3_secret" >"$wd/s3.json"
  setsid "$weed" mini -dir="$wd/s3-data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config="$wd/s3.json" \
    -bucket=digits-checkpoints -s3.port="${ports[0]}" -s3.port.grpc="${ports[1]}" \
    -master.port="${ports[2]}" -master.port.grpc="${ports[3]}" -volume.port="${ports[4]}" \
    -volume.port.grpc="${ports[5]}" -filer.port="${ports[6]}" -filer.port.grpc="${ports[7]}" \
    -admin.port="${ports[8]}" -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
    -master.telemetry=false -s3.autoCreateBucket=false </dev/null >"$wd/s3.log" 2>&1 &
  s3_pid=$!
  wait_for 120 "SeaweedFS serves bucket digits-checkpoints at $s3_endpoint" s3_list ""

  sed "s#http://minio.storage.svc.cluster.local:9000#$s3_endpoint#" "$repo/examples/digits-s3.yaml" | kc apply -f - >/dev/null
  held() { [[ "$(created_reason "$job")" == CheckpointStorageUnavailable ]]; }
  wait_for 30 "$job held: Created False, CheckpointStorageUnavailable" held
  kc get tj "$job" -o jsonpath='{.status.conditions[?(@.type=="Created")].message}' | grep -q "Secret default/digits-s3-credentials" ||
    fail "the held condition does not name the Secret: $(kc get tj "$job" -o jsonpath='{.status.conditions}')"
  kc get events --field-selector "involvedObject.name=$job,reason=CheckpointStorageUnavailable" -o name | grep -q . ||
    fail "no CheckpointStorageUnavailable Event on $job"
  expect_eq "$job pods while held" "$(job_pods "$job")" ""

  kc create secret generic digits-s3-credentials --from-literal=AWS_ACCESS_KEY_ID="$s3_key" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$s3_secret" >/dev/null
  wait_succeeded "$job" 240
  check_accuracy "$job"
  expect_eq "$job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  # The keys reached the pods from the Secret, not from the pod spec (the coordinator's pod is kept).
  if kc get pod "$job-coordinator-0" -o json | grep -q "$s3_secret"; then fail "the secret key is in the coordinator pod's spec"; fi
  keys="$(s3_list runs%2Fdigits-s3%2F | grep -oE '<Key>[^<]+</Key>' | sed -E 's#</?Key>##g')"
  manifests="$(grep -c '/MANIFEST.json$' <<<"$keys" || true)"
  expect_ge "$job manifests in s3://digits-checkpoints/runs/digits-s3" "$manifests" 1
  (( manifests <= 3 )) || fail "$manifests manifests in the bucket, more than keep: 3"
  grep -v '/MANIFEST.json$' <<<"$keys" | grep -q '/ckpt-' || fail "no shard object in the bucket: $keys"
  log "ok: the bucket holds $(wc -l <<<"$keys") objects of $job: $(tr '\n' ' ' <<<"$keys")"
  delete_job "$job"
  kc delete secret digits-s3-credentials >/dev/null
  stop_s3
}

for s in $scenarios; do
  ts=$(date +%s)
  log "===== scenario $s"
  case "$s" in
    main) scenario_main ;;
    bad-input) scenario_bad_input ;;
    worker) scenario_worker ;;
    coordinator-42) scenario_coordinator_42 ;;
    evict) scenario_evict ;;
    scale) scenario_scale ;;
    operator) scenario_operator ;;
    s3) scenario_s3 ;;
    agent) scenario_agent ;;
    *) fail "unknown scenario '$s' (TJ_E2E_SCENARIOS)" ;;
  esac
  timing[$s]=$(( $(date +%s) - ts ))
done

# ------------------------------------------------------------------ uninstall
"$helm" uninstall "$release" -n "$ns" --wait --timeout 1m >/dev/null || fail "helm uninstall"
no_operator() { [[ -z "$(kc -n "$ns" get pods -o name)" ]]; }
wait_for 60 "operator pods gone after helm uninstall" no_operator
stop_agent
failed=0
for k in "${!timing[@]}"; do printf '  %-24s %4ss\n' "$k" "${timing[$k]}" >&2; done
log "PASS ($scenarios)"
