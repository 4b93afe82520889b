#!/usr/bin/env bash
# tj-operator with the chart's "all namespaces" flags: `--namespace=` must stay empty and not swallow
# the next flag (CLI11 used to take `--leader-elect=true` as the namespace, so the operator watched
# nothing). Runs the binary against an unreachable API server and reads its start-up line. Then
# the NetworkPolicy flags: refused (exit 2, naming the flag) without the operator's pod labels or
# $POD_NAMESPACE, or with labels that are not key=value.
# usage: operator_empty_flags_test.sh <tj-operator>
set -euo pipefail
op="$1"
wd="$(mktemp -d /tmp/tj-operator-flags-XXXXXX)"
trap 'rm -rf "$wd"' EXIT
cat >"$wd/kubeconfig" <<'EOF2'
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
EOF2
# Same order as helm/trainingjob-operator/templates/deployment.yaml renders by default.
"$op" --kubeconfig="$wd/kubeconfig" --namespace= --leader-elect=true --leader-election-namespace= \
  --leader-election-id=t --metrics-address=127.0.0.1:0 --health-address=127.0.0.1:0 --workers=1 \
  --log-format=text >"$wd/log" 2>&1 &
pid=$!
end=$(( $(date +%s) + 20 ))
until grep -q "starting:" "$wd/log"; do
  kill -0 "$pid" 2>/dev/null || { cat "$wd/log"; echo "FAIL: tj-operator exited before starting"; exit 1; }
  (( $(date +%s) < end )) || { kill -KILL "$pid"; cat "$wd/log"; echo "FAIL: no start-up line in 20 s"; exit 1; }
  sleep 0.1
done
kill -TERM "$pid"; wait "$pid" || true
line="$(grep "starting:" "$wd/log")"
[[ "$line" == *"namespace (all)"* && "$line" == *"leader election on"* ]] ||
  { echo "FAIL: want 'namespace (all)' and 'leader election on' in: $line"; exit 1; }
echo "PASS: $line"
refused() {  # expected message, then the flags
  local want="$1"; shift
  local out code=0
  out="$(env -u POD_NAMESPACE "$op" --kubeconfig="$wd/kubeconfig" --log-format=text "$@" 2>&1)" || code=$?
  [[ $code == 2 && "$out" == *"$want"* ]] ||
    { echo "FAIL: $* -> exit $code, want 2 and '$want' in: $out"; exit 1; }
}
refused "--job-network-policy needs --operator-pod-labels and \$POD_NAMESPACE" --job-network-policy=true
refused "--job-network-policy needs --operator-pod-labels" --job-network-policy=true --operator-pod-labels=a=b
refused '--operator-pod-labels=a=b,oops: "oops" is not key=value' --operator-pod-labels=a=b,oops
echo "PASS: the NetworkPolicy flags are checked"
