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
#                                         #  evict scale operator s3 agent kueue multikueue)
#   TJ_E2E_SCENARIOS=kueue ...            # Kueue preemption (ctest tj_e2e_kueue_test, label kueue):
#                                         #  starts the real Kueue (kueue-up.sh), --kueue in the chart
#   TJ_E2E_SCENARIOS=cluster-doc ...      # the commands of docs/run-on-your-cluster.md, alone (ctest
#                                         #  tj_e2e_cluster_doc_test; tests/e2e/cluster_doc.sh)
#   TJ_E2E_SCENARIOS=multikueue ...       # MultiKueue (ctest tj_e2e_multikueue_test, label kueue):
#                                         #  this cluster is the worker; a second control plane is
#                                         #  the manager, with its own Kueue and tj-operator
#   TJ_E2E_SCENARIOS=tf-evict ...         # TensorFlow (ctest tj_e2e_tf_test, label tf): the tf-pss
#                                         #  image, pods in their own network namespaces
#
# Environment: TJ_BUILD_DIR (default <repo>/build; needs bin/tj-operator, bin/tj-train),
# TJ_E2E_POD_IP_BASE (default 127.0.42.; pods get <base>2 to <base>254), TJ_E2E_POD_NETWORK (netns,
# a network namespace per pod, the default where available; or host), TJ_TF_PYTHON
# (tf-evict reads the checkpoint with it; default scripts/install-tf.sh's venv),
# TJ_KUBE_KEEP_WORKDIR=1 keeps the workdir. Exit 0 = every check passed; prints "*** SKIPPING ..."
# and exits 0 without Go (ctest reports Skipped).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kt="$repo/tests/kube-test-cluster"
build="${TJ_BUILD_DIR:-$repo/build}"
t0=$(date +%s)
# log, fail, wait_for, expect_eq, stop_agent (its trap is replaced by cleanup below).
source "$repo/tests/e2e/agent_harness.sh"

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
declare -A timing=()
manager_operator_pid=""
cleanup() {
  local rc=$?
  stop_agent || true
  stop_s3 2>/dev/null || true
  stop_registry 2>/dev/null || true
  stop_manager 2>/dev/null || true
  "$kt/down.sh" "$wd/cluster" >/dev/null 2>&1 || true
  if (( failed )); then
    printf '\n----- agent log (tail)\n' >&2
    tail -n 30 "$wd"/agent*.log >&2 2>/dev/null || true
    printf '\n----- operator log (tail)\n' >&2
    tail -n 30 "$wd"/root/pods/tj-system_*/logs/operator/*.log >&2 2>/dev/null || true
    [[ -s "$wd/registry/registry.log" ]] && { printf '\n----- registry log (tail)\n' >&2; tail -n 10 "$wd/registry/registry.log" >&2; }
    [[ -s "$wd/manager-operator.log" ]] && { printf '\n----- manager operator log (tail)\n' >&2; tail -n 30 "$wd/manager-operator.log" >&2; }
    [[ -s "$wd/manager/logs/kueue.log" ]] && { printf '\n----- manager Kueue log (MultiKueue lines, tail)\n' >&2; grep -i multikueue "$wd/manager/logs/kueue.log" | tail -n 20 >&2; }
    echo "FAILED (rc=$rc); workdir kept: $wd" >&2
  elif [[ -z "${TJ_KUBE_KEEP_WORKDIR:-}" ]]; then
    rm -rf "$wd"
  fi
}
trap cleanup EXIT

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
with_kueue=0
[[ " $scenarios " == *" kueue "* || " $scenarios " == *" multikueue "* ]] && with_kueue=1
if (( with_kueue )); then
  tk=$(date +%s)
  "$kt/kueue-up.sh" "$wd/cluster" >"$wd/kueue-up.log" 2>&1 || { cat "$wd/kueue-up.log" >&2; fail "kueue-up.sh"; }
  "$kt/kueue-local-queue.sh" "$wd/cluster" default 2>/dev/null
  timing[kueue-up]=$(( $(date +%s) - tk ))
  log "ok: Kueue running, LocalQueue default/user-queue"
fi

# Images: the chart's default operator image and the examples' runtime image.
mkdir -p "$wd/root"
cat >"$wd/image-map" <<EOF
ghcr.io/trainingjob-dev/tj-operator:*=$build/bin/tj-operator
ghcr.io/trainingjob-dev/tj-runtime:*=$build/bin
EOF
# Pod IPs 127.0.42.x: apart from tj_node_agent_test's agent (127.0.0.x) when ctest runs both at once;
# tj_e2e_kueue_test sets TJ_E2E_POD_IP_BASE=127.0.43. and tj_e2e_multikueue_test 127.0.47., tj_e2e_tf_test 127.0.46. (the
# operator pod binds its metrics and health ports on its IP, which two e2e runs at once would
# otherwise share).
# Checkpoints live on PersistentVolumeClaims (spec.checkpoint.volume) bound by a real provisioner,
# kube-controller-manager's hostPath one (--enable-hostpath-provisioner, up.sh) behind the default
# StorageClass below; the agent mounts a claim's volume as the kubelet would (volumes.go).
# TJ_E2E_IMAGES=1: every container runs inside the image its pod names, from buildah's storage
# (scripts/build-images.sh; the agent's --image-store=buildah); 0: the host's binaries by the image
# map above. auto (the default): 1 when buildah holds both images, which scripts/test.sh builds
# before ctest (and the `images` tests fail without them, so CI cannot drop to 0 unseen).
e2e_images="${TJ_E2E_IMAGES:-auto}"
# docs/run-on-your-cluster.md builds and pushes the images, and its pods run in them.
[[ "$scenarios" != cluster-doc ]] || e2e_images=1
if [[ "$e2e_images" == auto ]]; then
  e2e_images=0
  if command -v buildah >/dev/null && buildah inspect --type image ghcr.io/trainingjob-dev/tj-operator:0.1.0 >/dev/null 2>&1 &&
    buildah inspect --type image ghcr.io/trainingjob-dev/tj-runtime:0.1.0 >/dev/null 2>&1; then
    e2e_images=1
  fi
fi
image_flags=()
if [[ "$e2e_images" == 1 ]]; then
  image_flags=(--image-store=buildah)
  log "containers run inside their images (buildah's storage)"
  if [[ "$scenarios" == cluster-doc ]]; then
    # The page pushes to a registry and the node pulls from it (tests/e2e/registry.sh): a real
    # one on 127.0.0.1, TLS from a test CA, htpasswd auth.
    source "$repo/tests/e2e/registry.sh"
    start_registry "$wd/registry"
    image_flags+=(--pull-registry="$registry_host" --pull-cert-dir="$registry_certs")
    log "registry at https://$registry_host: the node pulls its images with the pods' pull secrets"
  fi
else
  log "containers run the host's binaries (TJ_E2E_IMAGES=0, or no images: scripts/build-images.sh)"
fi
# TJ_E2E_POD_NETWORK=netns (the default where network namespaces and iproute2 are available): each
# pod in its own network namespace (the agent's --pod-network, docs/e2e.md "Pod network"), which
# TensorFlow's 0.0.0.0 binds need (tf-evict fails without it); host: the node's namespace.
pod_network="${TJ_E2E_POD_NETWORK:-}"
if [[ -z "$pod_network" ]]; then
  pod_network=host
  if command -v ip >/dev/null && unshare --net true 2>/dev/null; then pod_network=netns; fi
fi
pod_ip_base="${TJ_E2E_POD_IP_BASE:-127.0.42.}"
node_ip=127.0.0.1                     # the node's address as pods reach it (S3 server, metrics)
[[ "$pod_network" != netns ]] || node_ip="${pod_ip_base}1"
log "pod network: $pod_network (pod IPs ${pod_ip_base}2-254, the node at $node_ip)"
start_agent() { # <log name>
  setsid "$agent" --kubeconfig="$kubeconfig" --node-name="$node" --root-dir="$wd/root" --heartbeat=2s --pod-cidr-base="$pod_ip_base" \
    --pod-network="$pod_network" \
    --capacity=cpu=8,memory=16Gi,pods=50 --image-map-file="$wd/image-map" --mount-namespaces=true "${image_flags[@]}" \
    </dev/null >>"$wd/$1.log" 2>&1 &
  agent_pid=$!
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

# docs/run-on-your-cluster.md installs the chart itself, on a cluster without it: alone, from here.
if [[ " $scenarios " == *" cluster-doc "* ]]; then
  [[ "$scenarios" == cluster-doc ]] || fail "scenario cluster-doc runs alone (TJ_E2E_SCENARIOS=cluster-doc)"
  source "$repo/tests/e2e/cluster_doc.sh"
  ts=$(date +%s)
  scenario_cluster_doc
  stop_agent
  failed=0
  log "PASS (cluster-doc in $(( $(date +%s) - ts ))s)"
  exit 0
fi

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
if (( with_kueue )); then printf 'kueue:\n  enabled: true\n' >>"$wd/values.yaml"; fi
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
# lands mid-training, and the coordinator's /metrics on an ephemeral port (every address: the node
# reaches it at the pod's IP, in the pod's own network namespace too).
variant() { # <name> <step sleep ms>
  sed -e "s/^  name: digits$/  name: $1/" \
      -e "s|checkpoints/digits$|checkpoints/$1|" \
      -e "s/- --min-accuracy=0.92/- --min-accuracy=0.92\n                - --step-sleep-ms=$2\n              env: [{name: TJ_METRICS_ADDRESS, value: \":0\"}]/" \
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
  local ip
  ip="$(kc get pod "$1-coordinator-0" -o jsonpath='{.status.podIP}')"
  curl -fsS --max-time 5 "http://$ip:$port/metrics" >"$wd/coordinator-metrics.txt" || fail "GET coordinator /metrics $ip:$port"
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
            - {name: trainer, image: "ghcr.io/trainingjob-dev/tj-runtime:0.1.0", command: [tj-train], env: [{name: TF_CONFIG, value: "{}"}]}
    PS:
      replicas: 1
      template: {spec: {containers: [{name: trainer, image: "ghcr.io/trainingjob-dev/tj-runtime:0.1.0", command: [tj-train]}]}}
    Worker:
      replicas: 1
      template: {spec: {containers: [{name: trainer, image: "ghcr.io/trainingjob-dev/tj-runtime:0.1.0", command: [tj-train]}]}}
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
      image: ghcr.io/trainingjob-dev/tj-runtime:0.1.0
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
# <job> <sed pattern of the notice's log line> <what the notice was>: the coordinator exited 42
# after the notice, saved a checkpoint between the two, and its successor resumed at exactly that
# step (the first restore of the job's log).
expect_resumed_at_notice_checkpoint() {
  local job=$1 notice=$2 what=$3 log_text saved restored
  log_text="$(coord_log "$job")"
  grep -q "preempted.*Exiting with the restart code 42" <<<"$log_text" ||
    fail "the coordinator of $job did not exit with 42 after $what"
  saved="$(sed -n "/$notice/,/Exiting with the restart code/p" <<<"$log_text" | grep -oE 'saved: step [0-9]+' | tail -1 | grep -oE '[0-9]+$')"
  [[ -n "$saved" ]] || fail "no checkpoint saved between $what and the exit of $job's coordinator"
  restored="$(grep -oE 'restored checkpoint .*training resumes at step [0-9]+' <<<"$log_text" | head -1 | grep -oE '[0-9]+$')"
  expect_eq "$job resumed at the notice checkpoint" "$restored" "$saved"
}
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
  local log_text
  log_text="$(coord_log "$job")"
  grep -q "lost parameter server" <<<"$log_text" && fail "the coordinator of $job lost its PS before checkpointing"
  expect_resumed_at_notice_checkpoint "$job" 'notice for ps:0' "the PS notice"
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

# examples/digits-s3.yaml against a real S3-compatible server on the node's address (SeaweedFS's
# `weed mini`, scripts/install-s3-server.sh, cached): 127.0.0.1, or the pods' gateway in their own
# network namespaces, where 127.0.0.1 is each pod's own. Applied before its credentials Secret exists, the job is held
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
s3_identity() { # <action>...: the rights of the test's one identity, in weed's -s3.config
  local actions
  actions="$(printf '"%s",' "$@")"
  printf '{"identities":[{"name":"tj","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":[%s]}]}' \
    "$s3_key" "$s3_secret" "${actions%,}" >"$wd/s3.json"
}
checkpoint_failing() { # <job>: the status of its CheckpointFailing condition
  kc get tj "$1" -o jsonpath='{.status.conditions[?(@.type=="CheckpointFailing")].status}'
}
scenario_s3() {
  local weed job=digits-s3 ports keys manifests
  weed="$(bash "$repo/scripts/install-s3-server.sh")" || fail "scripts/install-s3-server.sh could not build the S3 test server"
  mapfile -t ports < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(9)]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])')
  s3_endpoint="http://$node_ip:${ports[0]}"
  # The keys may read and list the bucket but not write it, until the job is seen held for it.
  s3_identity Read List Tagging
  setsid "$weed" mini -dir="$wd/s3-data" -ip="$node_ip" -ip.bind="$node_ip" -s3.config="$wd/s3.json" \
    -bucket=digits-checkpoints -s3.port="${ports[0]}" -s3.port.grpc="${ports[1]}" \
    -master.port="${ports[2]}" -master.port.grpc="${ports[3]}" -volume.port="${ports[4]}" \
    -volume.port.grpc="${ports[5]}" -filer.port="${ports[6]}" -filer.port.grpc="${ports[7]}" \
    -admin.port="${ports[8]}" -s3.port.iceberg=0 -s3.port.lance=0 -webdav=false -admin.ui=false \
    -master.telemetry=false -s3.autoCreateBucket=false </dev/null >"$wd/s3.log" 2>&1 &
  s3_pid=$!
  wait_for 120 "SeaweedFS serves bucket digits-checkpoints at $s3_endpoint" s3_list ""

  # 25 ms a step: ~20 s of training after the first save, so the operator's reads while
  # CheckpointFailing is True (every 5 s) see the save that clears it before the job ends.
  sed -e "s#http://minio.storage.svc.cluster.local:9000#$s3_endpoint#" \
      -e "s/- --min-accuracy=0.92/- --min-accuracy=0.92\n                - --step-sleep-ms=25/" \
      "$repo/examples/digits-s3.yaml" | kc apply -f - >/dev/null
  held() { [[ "$(created_reason "$job")" == CheckpointStorageUnavailable ]]; }
  wait_for 30 "$job held: Created False, CheckpointStorageUnavailable" held
  kc get tj "$job" -o jsonpath='{.status.conditions[?(@.type=="Created")].message}' | grep -q "Secret default/digits-s3-credentials" ||
    fail "the held condition does not name the Secret: $(kc get tj "$job" -o jsonpath='{.status.conditions}')"
  kc get events --field-selector "involvedObject.name=$job,reason=CheckpointStorageUnavailable" -o name | grep -q . ||
    fail "no CheckpointStorageUnavailable Event on $job"
  expect_eq "$job pods while held" "$(job_pods "$job")" ""

  kc create secret generic digits-s3-credentials --from-literal=AWS_ACCESS_KEY_ID="$s3_key" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$s3_secret" >/dev/null
  # The keys pass the operator's probe (a list), so the pods start; the coordinator's claim of the
  # location (its first write) is refused, and it is held: CheckpointFailing True with the storage's
  # answer and a Warning Event saying so, no step trained, no restart.
  failing_true() { [[ "$(checkpoint_failing "$job")" == True ]]; }
  wait_for 180 "$job CheckpointFailing True while the keys may not write (the coordinator held)" failing_true
  local failing_message
  failing_message="$(kc get tj "$job" -o jsonpath='{.status.conditions[?(@.type=="CheckpointFailing")].message}')"
  grep -q "s3://digits-checkpoints/runs/digits-s3/" <<<"$failing_message" && grep -q refused <<<"$failing_message" ||
    fail "CheckpointFailing does not name the location and the refusal: $failing_message"
  kc get events --field-selector "involvedObject.name=$job,reason=CheckpointStorageUnavailable,type=Warning" \
    -o jsonpath='{.items[*].message}' | grep -q refused || fail "no Warning Event on $job for the refused claim"
  held_attempts() { (( $(coord_log "$job" | grep -c 'not taken at start') >= 2 )); }
  wait_for 60 "$job's coordinator tries its claim again while held" held_attempts
  if coord_trained "$job" 1; then fail "$job trained while its storage refused the claim"; fi
  expect_eq "$job coordinator restarts while held" \
    "$(kc get pod "$job-coordinator-0" -o jsonpath='{.status.containerStatuses[0].restartCount}')" 0
  # Write granted (weed reloads -s3.config on SIGHUP): the next attempt takes the location.
  s3_identity Read Write List Tagging
  kill -HUP "$s3_pid"
  wait_succeeded "$job" 240
  expect_counters "$job" '{"preemptions":0,"restartCount":0,"coordinatorRestarts":0}'
  expect_eq "$job CheckpointFailing after the first save" \
    "$(kc get tj "$job" -o jsonpath='{.status.conditions[?(@.type=="CheckpointFailing")].status}/{.status.conditions[?(@.type=="CheckpointFailing")].reason}')" \
    "False/CheckpointSaved"
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

# Only with the images (TJ_E2E_IMAGES, every container in its image): a job whose workers name an
# image the node does not have is Stuck with the kubelet's reason, and a pod whose command is not
# in its image waits in CreateContainerError.
scenario_images() {
  variant no-image 0 | sed -e '/^    Worker:$/,/^  runPolicy:$/s|image: ghcr.io/trainingjob-dev/tj-runtime:0.1.0|image: ghcr.io/trainingjob-dev/tj-no-such-image:0.1.0|' |
    kc apply -f - >/dev/null
  stuck_on_image() {
    [[ "$(kc get tj no-image -o jsonpath='{.status.conditions[?(@.type=="Stuck")].reason}')" =~ ^(ErrImagePull|ImagePullBackOff)$ ]]
  }
  wait_for 60 "job no-image Stuck on its workers' image" stuck_on_image
  local out
  out="$(kc get tj no-image -o jsonpath='{.status.conditions[?(@.type=="Stuck")].message}')"
  [[ "$out" == *no-image-worker-0* && "$out" == *tj-no-such-image* ]] || fail "Stuck does not name the worker and its image: $out"
  out="$(kc get pod no-image-worker-0 -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')"
  [[ "$out" =~ ^(ErrImagePull|ImagePullBackOff)$ ]] || fail "no-image-worker-0 waits in '$out', not ErrImagePull/ImagePullBackOff"
  log "ok: a missing image: job no-image Stuck, its worker in $out"
  delete_job no-image
  kc apply -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: Pod
metadata: {name: no-command}
spec:
  restartPolicy: Never
  containers: [{name: main, image: "ghcr.io/trainingjob-dev/tj-runtime:0.1.0", command: [tj-no-such-command]}]
EOF2
  create_error() {
    [[ "$(kc get pod no-command -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" == CreateContainerError ]]
  }
  wait_for 30 "pod no-command in CreateContainerError" create_error
  out="$(kc get pod no-command -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')"
  [[ "$out" == *tj-no-such-command*"not found"* ]] || fail "CreateContainerError does not name the command: $out"
  log "ok: a command the image lacks: CreateContainerError ($out)"
  kc delete pod no-command --wait=false >/dev/null
}
[[ "$e2e_images" != 1 || -n "${TJ_E2E_SCENARIOS:-}" ]] || scenarios="${scenarios/#main /main images }"

# Kueue (docs/kueue.md): kueue-up.sh's ClusterQueue holds 4 CPUs, one job of 4 pods of 1 CPU. A
# low-priority job is admitted and trains; a high-priority one preempts it: the low job's
# coordinator gets the notice (KueueEviction/Preempted), checkpoints at its next step boundary and
# exits 42, its pods go, the quota goes to the high job, which runs to Succeeded; the low job is
# readmitted, resumes from exactly that checkpoint and ends Succeeded with every step.
kueue_variant() { # <name> <priority class> <step sleep ms>
  variant "$1" "$3" |
    sed -e "s|^  name: $1\$|  name: $1\n  labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/priority-class: $2}|" \
        -e 's|^              command: \[tj-train\]$|              command: [tj-train]\n              resources: {requests: {cpu: "1", memory: 256Mi}}|'
}
workload_condition() { # <job> <type>: the status of that condition of the job's Workload
  kc get workloads.kueue.x-k8s.io "trainingjob-$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}"
}
workload_is() { [[ "$(workload_condition "$1" "$2")" == True ]]; } # <job> <condition type>
suspended_reason() { kc get tj "$1" -o jsonpath='{.status.conditions[?(@.type=="Suspended")].reason}'; }
low_notified() { coord_log "$1" | grep -qE 'notice for [a-z]+:0 \(KueueEviction/Preempted\)'; }
scenario_kueue() {
  local low=digits-low high=digits-high
  # The admitted flavour's nodeSelector (kueue-up.sh's default-flavor: tj.dev/pool=kueue).
  kc label node "$node" tj.dev/pool=kueue --overwrite >/dev/null
  kueue_variant "$low" low 40 | kc apply -f - >/dev/null
  wait_for 60 "Kueue admitted $low's Workload" workload_is "$low" Admitted
  if ! (wait_for 60 "$low's coordinator pod created" kc get pod "$low-coordinator-0"); then
    kc get tj "$low" -o yaml >&2
    kc get workloads.kueue.x-k8s.io -o yaml >&2
    curl -sS --max-time 5 "http://$(kc -n "$ns" get pod "$(operator_pod)" -o jsonpath='{.status.podIP}'):8080/metrics" | grep -E '^tj_operator_(reconcile|workqueue|api)' >&2
    fail "$low admitted but its coordinator pod was never created"
  fi
  expect_eq "$low coordinator's nodeSelector" \
    "$(kc get pod "$low-coordinator-0" -o jsonpath='{.spec.nodeSelector.tj\.dev/pool}')" kueue
  wait_for 120 "$low checkpointed once (step >= 200)" coord_trained "$low" 200
  kueue_variant "$high" high 0 | kc apply -f - >/dev/null
  wait_for 60 "$low evicted: its coordinator got the notice KueueEviction/Preempted" low_notified "$low"
  low_released() { [[ "$(job_state "$low")/$(workload_condition "$low" QuotaReserved)" == Suspended/False ]]; }
  wait_for 90 "$low suspended and its quota released" low_released
  log "$low: Suspended condition reason $(suspended_reason "$low")"
  wait_succeeded "$high" 180
  check_accuracy "$high"
  wait_succeeded "$low" 300
  check_accuracy "$low"
  expect_resumed_at_notice_checkpoint "$low" 'notice for [a-z]*:0 (KueueEviction' "the Kueue notice"
  expect_eq "$low steps" "$(coord_log "$low" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  expect_eq "$high steps" "$(coord_log "$high" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  log "status counters of $low: $(status_counters "$low")"
  expect_eq "$low restartCount (a preemption is not a failure)" "$(status_field "$low" restartCount)" 0
  # One Kueue preemption is one, not also each pod the hold deleted that a reconcile saw Terminating.
  expect_eq "$low status.preemptions (the Kueue eviction, once)" "$(status_counters "$low" | jq .preemptions)" 1
  expect_eq "$high status.preemptions" "$(status_counters "$high" | jq .preemptions)" 0
  wait_for 30 "$high's Workload Finished" workload_is "$high" Finished
  wait_for 30 "$low's Workload Finished" workload_is "$low" Finished
  delete_job "$high"
  delete_job "$low"
}

# MultiKueue (docs/kueue.md): this cluster, with its Kueue and the chart's operator, is the worker.
# A second control plane is the manager: Kueue as a MultiKueue manager (kueue-up.sh with
# TJ_KUEUE_MULTIKUEUE_WORKER: TrainingJob in multiKueue.externalFrameworks, the worker's kubeconfig
# in a Secret, the MultiKueueCluster, the admission check on the ClusterQueue) and tj-operator
# --kueue as a process (the manager has no node). A job created on the manager with spec.managedBy
# kueue.x-k8s.io/multikueue gets its Workload from the manager's operator; Kueue reserves quota
# there, copies the Workload to the worker, where it is admitted, then copies the job (without
# managedBy, labelled with the prebuilt Workload's name); the worker's operator adopts that
# Workload and runs the job; its status comes back to the manager's job, which ends Succeeded
# with every step, and MultiKueue then removes the worker's copy.
mk_kc() { kubectl --kubeconfig="$wd/manager/kubeconfig" --request-timeout=10s "$@"; }
free_local_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 12000 ))
    ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  fail "no free port"
}
stop_manager() {
  if [[ -n "$manager_operator_pid" ]]; then
    kill -TERM "$manager_operator_pid" 2>/dev/null || true
    wait "$manager_operator_pid" 2>/dev/null || true
    manager_operator_pid=""
  fi
  [[ -d "$wd/manager" ]] && "$kt/down.sh" "$wd/manager" >/dev/null 2>&1
  return 0
}
start_manager() {
  local tm health metrics
  tm=$(date +%s)
  TJ_KUBE_BIN="$bin" "$kt/up.sh" "$wd/manager" >"$wd/manager-up.log" 2>&1 ||
    { cat "$wd/manager-up.log" >&2; fail "up.sh (manager)"; }
  mk_kc apply --server-side -f "$repo/crds/trainingjob.dev_trainingjobs.yaml" >/dev/null
  wait_for 30 "manager: TrainingJob CRD established" \
    mk_kc wait --for=condition=Established --timeout=5s crd/trainingjobs.trainingjob.dev
  TJ_KUEUE_MULTIKUEUE_WORKER="$wd/cluster" "$kt/kueue-up.sh" "$wd/manager" >"$wd/manager-kueue-up.log" 2>&1 ||
    { cat "$wd/manager-kueue-up.log" >&2; fail "kueue-up.sh (manager)"; }
  "$kt/kueue-local-queue.sh" "$wd/manager" default 2>/dev/null
  health=$(free_local_port)
  metrics=$(free_local_port)
  setsid "$build/bin/tj-operator" --kubeconfig="$wd/manager/kubeconfig" --kueue=true --leader-elect=false \
    --log-format=text --metrics-address="127.0.0.1:$metrics" --health-address="127.0.0.1:$health" \
    </dev/null >"$wd/manager-operator.log" 2>&1 &
  manager_operator_pid=$!
  wait_for 30 "manager: tj-operator --kueue ready" curl -fsS --max-time 2 "http://127.0.0.1:$health/readyz"
  timing[multikueue-manager-up]=$(( $(date +%s) - tm ))
}
scenario_multikueue() {
  local job=digits-mk wl=trainingjob-digits-mk
  kc label node "$node" tj.dev/pool=kueue --overwrite >/dev/null
  start_manager
  kueue_variant "$job" low 20 | sed -e 's|^spec:$|spec:\n  managedBy: kueue.x-k8s.io/multikueue|' |
    mk_kc apply -f - >/dev/null
  mk_workload_controller() {
    mk_kc get workloads.kueue.x-k8s.io "$wl" -o jsonpath='{.metadata.ownerReferences[?(@.controller==true)].kind}/{.metadata.ownerReferences[?(@.controller==true)].name}'
  }
  mk_controlled() { [[ "$(mk_workload_controller)" == "TrainingJob/$job" ]]; }
  wait_for 30 "manager: the operator made Workload $wl, controlled by TrainingJob $job" mk_controlled
  mk_workload_is() {
    [[ "$(mk_kc get workloads.kueue.x-k8s.io "$wl" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}")" == True ]]
  }
  copied() { [[ "$(kc get tj "$job" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')" == "$wl" ]]; }
  wait_for 90 "worker: MultiKueue copied $job, labelled with the prebuilt Workload $wl" copied
  expect_eq "worker copy's spec.managedBy" "$(kc get tj "$job" -o jsonpath='{.spec.managedBy}')" ""
  adopted() { [[ "$(kc get workloads.kueue.x-k8s.io "$wl" -o jsonpath='{.metadata.ownerReferences[?(@.controller==true)].name}')" == "$job" ]]; }
  wait_for 30 "worker: the operator adopted Workload $wl (controller reference to $job)" adopted
  wait_for 30 "manager: Workload $wl admitted through the MultiKueue check" mk_workload_is Admitted
  expect_eq "worker: its Workloads (the prebuilt one, none of the operator's own)" \
    "$(kc get workloads.kueue.x-k8s.io -o jsonpath='{.items[*].metadata.name}')" "$wl"
  if ! (wait_for 60 "worker: $job's coordinator pod created" kc get pod "$job-coordinator-0"); then
    kc get tj "$job" -o yaml >&2
    kc get workloads.kueue.x-k8s.io -o yaml >&2
    kc get events --field-selector "involvedObject.name=$job" >&2
    fail "worker: $job admitted but its coordinator pod was never created"
  fi
  expect_eq "worker: $job coordinator's nodeSelector (the worker's flavour)" \
    "$(kc get pod "$job-coordinator-0" -o jsonpath='{.spec.nodeSelector.tj\.dev/pool}')" kueue
  mk_state() { mk_kc get tj "$job" -o jsonpath='{.status.state}'; }
  mk_running() { [[ "$(mk_state)" == Running ]]; }
  wait_for 120 "manager: $job's status (the worker's, copied back) says Running" mk_running
  local end=$(( $(date +%s) + 240 )) st
  while st="$(mk_state 2>/dev/null || true)"; [[ "$st" != Succeeded ]]; do
    [[ "$st" != Failed ]] || { mk_kc get tj "$job" -o yaml >&2; fail "manager: $job Failed"; }
    (( $(date +%s) < end )) || { mk_kc get tj "$job" -o yaml >&2; kc get tj,workloads.kueue.x-k8s.io -o yaml >&2; fail "manager: $job not Succeeded after 240s (state '$st')"; }
    sleep 0.3
  done
  log "ok: manager: $job Succeeded (the worker's status)"
  expect_eq "manager: $job's Succeeded condition" \
    "$(mk_kc get tj "$job" -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].status}')" True
  # Written only by the worker's operator (the manager's writes no status): copied back whole.
  expect_eq "manager: $job's replica statuses (the worker's)" \
    "$(mk_kc get tj "$job" -o json | jq -r '.status.replicaStatuses | keys | join(" ")')" "Coordinator PS Worker"
  [[ -n "$(mk_kc get tj "$job" -o jsonpath='{.status.completionTime}')" ]] || fail "manager: $job has no completionTime"
  expect_eq "worker: $job steps" "$(coord_log "$job" | grep -oE 'final: [0-9]+ steps' | tail -1)" "final: 900 steps"
  check_accuracy "$job"
  wait_for 30 "manager: Workload $wl Finished" mk_workload_is Finished
  expect_eq "manager: reason of $wl's Finished" \
    "$(mk_kc get workloads.kueue.x-k8s.io "$wl" -o jsonpath='{.status.conditions[?(@.type=="Finished")].reason}')" Succeeded
  worker_copy_gone() { ! kc get tj "$job" >/dev/null 2>&1; }
  wait_for 60 "worker: MultiKueue removed its copy of $job once the manager's Workload finished" worker_copy_gone
  wait_for 60 "worker: $job's pods, Services, Secret and claim garbage-collected" job_objects_gone "$job"
  expect_eq "manager: pods (none: the job ran on the worker)" "$(mk_kc get pods -A -o name)" ""
  mk_kc delete tj "$job" --wait=false >/dev/null
  mk_workload_gone() { ! mk_kc get workloads.kueue.x-k8s.io "$wl" >/dev/null 2>&1; }
  wait_for 60 "manager: Workload $wl deleted with $job" mk_workload_gone
  stop_manager
}

# A TensorFlow ParameterServerStrategy program (examples/tf-ctr/ctr_pss.py in the tf-pss image,
# docker/Dockerfile.tf-pss) with 2 PS and 2 workers, ps-0 evicted through the Eviction API after
# the first checkpoint. Every PS and worker binds TensorFlow's 0.0.0.0:2222, so the pods need
# their own network namespaces (--pod-network=netns). The operator's notice (DisruptionTarget)
# reaches the chief's tj-coordination port; the chief checkpoints at the next step boundary while
# the evicted PS serves on (trainingjob.tf.serve); the notice's deadline is the PS pod's grace
# period (15 s, more than three checkpoint times), so the chief trains on and saves again two
# checkpoint times before it, exits with the restart code, and its successor restores exactly the
# step of that last save; the job ends Succeeded with its exact step count in the
# checkpointed run counter (read with TensorFlow) and in the status.
tf_steps=200
tf_variant() { # <name>
  local args="[--steps=$tf_steps, --step-sleep-ms=100, --batch=64, --vocab=100, --id-space=4096, --dim=4, --examples=20000, --report-every=5, --eval-examples=512]"
  cat <<EOF2
apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata: {name: $1}
spec:
  replicaSpecs:
    Coordinator:
      replicas: 1
      template:
        spec:
          containers:
            - name: trainer
              image: ghcr.io/trainingjob-dev/tf-pss:0.1.0
              command: [python3, examples/tf-ctr/ctr_pss.py]
              args: $args
              env: [{name: PYTHONUNBUFFERED, value: "1"}]
              ports: [{name: tj-coordination, containerPort: 2223}]
    PS:
      replicas: 2
      template:
        spec:
          terminationGracePeriodSeconds: 15
          containers:
            - {name: trainer, image: "ghcr.io/trainingjob-dev/tf-pss:0.1.0", command: [python3, examples/tf-ctr/ctr_pss.py], env: [{name: PYTHONUNBUFFERED, value: "1"}]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - {name: trainer, image: "ghcr.io/trainingjob-dev/tf-pss:0.1.0", command: [python3, examples/tf-ctr/ctr_pss.py], env: [{name: PYTHONUNBUFFERED, value: "1"}]}
  runPolicy: {backoffLimit: 6, activeDeadlineSeconds: 900}
  checkpoint:
    dir: /var/lib/trainingjob/checkpoints/$1
    intervalSteps: 25
    keep: 3
    volume:
      claimTemplate:
        resources: {requests: {storage: 1Gi}}
      reclaimPolicy: Delete
EOF2
}
# The log of each run of the coordinator, one file per line, oldest first.
coord_logs_in_order() { ls -tr "$wd"/root/pods/default_"$1"-coordinator-0_*/logs/trainer/*.log 2>/dev/null; }
tf_checkpointed() { coord_log "$1" | grep -qE "checkpoint .* at step [0-9]+ \(periodic"; }
scenario_tf_evict() {
  local job=tf-evict tf_python="${TJ_TF_PYTHON:-$HOME/.cache/trainingjob-operator/tf-venv/bin/python}"
  [[ "$e2e_images" == 1 ]] && buildah inspect --type image ghcr.io/trainingjob-dev/tf-pss:0.1.0 >/dev/null 2>&1 ||
    fail "tf-evict needs the images in buildah's storage, ghcr.io/trainingjob-dev/tf-pss:0.1.0 among them: run scripts/build-images.sh"
  [[ "$pod_network" == netns ]] || fail "tf-evict needs --pod-network=netns (TJ_E2E_POD_NETWORK=netns): every TensorFlow task binds 0.0.0.0:2222"
  [[ -x "$tf_python" ]] || fail "tf-evict reads the checkpoint with TensorFlow: $tf_python not found (scripts/install-tf.sh)"
  tf_variant "$job" | kc apply -f - >/dev/null
  wait_for 300 "$job's chief saved its first periodic checkpoint" tf_checkpointed "$job"
  local ps_uid code
  ps_uid="$(kc get pod "$job-ps-0" -o jsonpath='{.metadata.uid}')"
  code="$(curl -sS -o "$wd/evict.json" -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    -X POST -H 'Content-Type: application/json' "$api/api/v1/namespaces/default/pods/$job-ps-0/eviction" \
    -d "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$job-ps-0\",\"namespace\":\"default\"}}")"
  [[ "$code" == 201 ]] || { cat "$wd/evict.json" >&2; fail "eviction of $job-ps-0: HTTP $code"; }
  log "evicted $job-ps-0 through the Eviction API"
  wait_succeeded "$job" 600
  local logs first last saved restored
  mapfile -t logs < <(coord_logs_in_order "$job")
  expect_eq "$job coordinator runs" "${#logs[@]}" 2
  first="$(cat "${logs[0]}")"
  last="$(cat "${logs[1]}")"
  grep -q "notice for ps:0 (DisruptionTarget/EvictionByEvictionAPI)" <<<"$first" ||
    fail "the operator's notice for ps:0 did not reach the chief of $job: $(grep -E 'notice|exiting' <<<"$first")"
  log "ok: the chief got $(grep -oE 'notice for ps:0 \([^)]*\)' <<<"$first" | head -1)"
  grep -q "a parameter server was lost" <<<"$first" && fail "the chief of $job lost its PS before checkpointing"
  saved="$(sed -n '/notice for ps:0/,$p' <<<"$first" | grep -oE 'at step [0-9]+ \(preemption' | tail -1 | grep -oE '[0-9]+')"
  [[ -n "$saved" ]] || fail "no preemption checkpoint after the notice in the chief's log of $job"
  grep -q "exiting with code 42: preempted" <<<"$first" || fail "the chief of $job did not exit with the restart code 42"
  log "ok: checkpoint at step $saved after the notice, then exit 42"
  restored="$(grep -oE 'total_run_calls [0-9]+' <<<"$last" | head -1 | grep -oE '[0-9]+')"
  expect_eq "$job's successor chief restored the notice checkpoint" "$restored" "$saved"
  grep -q "serving until the coordinator at $job-coordinator-0" <<<"$(cat "$wd"/root/pods/default_"$job"-ps-0_"$ps_uid"/logs/trainer/*.log)" ||
    fail "the evicted PS of $job did not serve on until the chief was done"
  [[ "$(kc get pod "$job-ps-0" -o jsonpath='{.metadata.uid}' 2>/dev/null)" != "$ps_uid" ]] || fail "$job-ps-0 was not replaced"
  expect_counters "$job" '{"preemptions":1,"restartCount":0,"coordinatorRestarts":1}'
  # The status's progress is the operator's last read of the chief's tj-coordination port (every
  # 30 s while it runs), so it trails the end; the exact count is the checkpoint's, below.
  local step
  step="$(status_field "$job" step)"
  expect_ge "$job status.step (read from the chief)" "$step" 1
  (( step <= tf_steps )) || fail "$job status.step $step > $tf_steps"
  expect_ge "$job status.lastCheckpointStep" "$(status_field "$job" lastCheckpointStep)" 25
  grep -q "trained $tf_steps steps" <<<"$last" || fail "the chief of $job did not report $tf_steps steps"
  local pv_dir counter
  pv_dir="$(kc get pv "$(kc get pvc "$job-checkpoint" -o jsonpath='{.spec.volumeName}')" -o jsonpath='{.spec.hostPath.path}')"
  counter="$("$tf_python" -c 'import sys, tensorflow as tf
latest = tf.train.latest_checkpoint(sys.argv[1])
print(int(tf.train.load_variable(latest, "tj_total_run_calls/.ATTRIBUTES/VARIABLE_VALUE")) if latest else "none")' "$pv_dir" 2>/dev/null)"
  expect_eq "$job checkpointed run counter (tj_total_run_calls in $pv_dir)" "$counter" "$tf_steps"
  delete_job "$job"
}

for s in $scenarios; do
  ts=$(date +%s)
  log "===== scenario $s"
  case "$s" in
    main) scenario_main ;;
    bad-input) scenario_bad_input ;;
    images) scenario_images ;;
    worker) scenario_worker ;;
    coordinator-42) scenario_coordinator_42 ;;
    evict) scenario_evict ;;
    scale) scenario_scale ;;
    operator) scenario_operator ;;
    s3) scenario_s3 ;;
    agent) scenario_agent ;;
    kueue) scenario_kueue ;;
    multikueue) scenario_multikueue ;;
    tf-evict) scenario_tf_evict ;;
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
