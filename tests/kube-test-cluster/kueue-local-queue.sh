#!/usr/bin/env bash
# LocalQueue `user-queue` in <namespace>, pointing at kueue-up.sh's ClusterQueue `cluster-queue`.
# usage: kueue-local-queue.sh <workdir> <namespace>
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: kueue-local-queue.sh <workdir> <namespace>" >&2; exit 2; }
kubectl --kubeconfig="$1/kubeconfig" --request-timeout=10s apply -f - >&2 <<OBJ
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: $2}
spec: {clusterQueue: cluster-queue}
OBJ
