#!/usr/bin/env bash
# End-to-end check of the test control plane: build (cached), up, exercise
# apiserver / controller-manager / scheduler, down.
#
# usage: smoke.sh [workdir]   (default: a fresh mktemp dir, removed on success)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wd="${1:-$(mktemp -d -t tj-kube-smoke.XXXXXX)}"
log() { printf 'smoke.sh: %s\n' "$*" >&2; }

bin="$("$here/build.sh")"
export TJ_KUBE_BIN="$bin"

trap '"$here/down.sh" "$wd" || true' EXIT
t0=$(date +%s)
kubeconfig="$("$here/up.sh" "$wd")"
log "up.sh took $(( $(date +%s) - t0 ))s"
k() { kubectl --kubeconfig="$kubeconfig" --request-timeout=10s "$@"; }
# poll <seconds> <cmd...>: retry until cmd succeeds (quietly) or time is up.
poll() {
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < end )) || { log "FAIL: timed out: $*"; return 1; }
    sleep 0.5
  done
}

log "server version: $(k version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1)"

# 1. ServiceAccounts readable; the default SA exists (created by the
#    controller-manager's serviceaccount controller).
k get --raw /api/v1/namespaces/default/serviceaccounts | grep -q '"name":"default"'
log "ok: GET /api/v1/namespaces/default/serviceaccounts lists default"

# 2. Service-account token issuance (TokenRequest, signed with sa.key) and
#    the root CA published into every namespace (--root-ca-file).
tok="$(k -n default create token default --duration=10m)"
[[ "$tok" == *.*.* ]]
poll 60 k -n default get configmap kube-root-ca.crt
log "ok: token issued; configmap kube-root-ca.crt published"

# 3. CRD: establish it and store an object of the new kind.
k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.tj.test
spec:
  group: smoke.tj.test
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
EOF
k wait --for=condition=Established crd/widgets.smoke.tj.test --timeout=60s >/dev/null
# The CRD's REST mapping can lag "Established" in kubectl's discovery cache.
apply_w1() {
  printf 'apiVersion: smoke.tj.test/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {size: 2}\n' | k apply -f -
}
poll 30 apply_w1
[[ "$(k -n default get widget w1 -o jsonpath='{.spec.size}')" == 2 ]]
if printf 'apiVersion: smoke.tj.test/v1\nkind: Widget\nmetadata: {name: bad, namespace: default}\nspec: {size: 0}\n' \
     | k apply -f - >/dev/null 2>&1; then
  log "FAIL: schema validation did not reject size=0"; exit 1
fi
log "ok: CRD established, Widget stored, schema validation enforced"

# 4. Scheduler: no nodes exist, so a pod must end up PodScheduled=False,
#    reason Unschedulable.
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: smoke-pod, namespace: default}
spec:
  containers:
  - name: c
    image: example.invalid/none:0
EOF
k -n default wait pod/smoke-pod --timeout=60s \
  --for=jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'=Unschedulable >/dev/null
log "ok: pod Pending: $(k -n default get pod smoke-pod -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="PodScheduled")].message}')"

# 5. Controller-manager: a Deployment gets a ReplicaSet and a Pod.
k -n default create deployment smoke-deploy --image=example.invalid/none:0 >/dev/null
poll 60 bash -c 'kubectl --kubeconfig="$1" -n default get pod -l app=smoke-deploy -o name | grep -q .' _ "$kubeconfig"
log "ok: deployment controller created $(k -n default get rs,pod -l app=smoke-deploy -o name | tr '\n' ' ')"

trap - EXIT
"$here/down.sh" "$wd"
"$here/down.sh" "$wd" # idempotent
if [[ $# -eq 0 ]]; then rm -rf "$wd"; fi
log "PASS"
