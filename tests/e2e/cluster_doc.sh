# Scenario cluster-doc of tests/e2e/e2e.sh (ctest tj_e2e_cluster_doc_test): the commands of
# docs/run-on-your-cluster.md, as written, in page order, on a cluster without the operator.
# Sourced by e2e.sh once the registry (tests/e2e/registry.sh), the control plane, the node agent
# (pulling from that registry, containers in their images) and the default StorageClass are up;
# uses its repo, build, wd, helm, kc, log, fail, wait_for and registry_*.
#
# What the test changes in the page's commands is listed here and on the page ("What the test
# changes"); doc_steps.py fails when a change no longer matches the page.

# tj_doc_step / tj_doc_step_done: called by the generated script around each step; the checks of
# what the page promises run after the step that should have done it, in the steps' shell.
tj_doc_step() {
  echo "$1" >"$wd/cluster-doc-step"
  log "----- page step $1"
}
tj_doc_step_done() {
  echo "$1" >>"$wd/cluster-doc-done"
  case "$1" in
    registry-login)
      grep -q "\"$registry_host\"" registry-auth.json || fail "buildah login wrote no credential for $registry_host into registry-auth.json"
      ;;
    push-images)
      # What the node will pull (and the test untags from the machine's buildah storage at the end).
      printf '%s\n' "$REGISTRY/tj-operator:$TJ_VERSION" "$REGISTRY/tj-runtime:$TJ_VERSION" >"$wd/cluster-doc-pushed"
      local image
      for image in tj-operator tj-runtime; do
        expect_ge "registry: manifests of ml/$image:$TJ_VERSION pushed" \
          "$(registry_requests PUT "/v2/ml/$image/manifests/$TJ_VERSION" 201)" 1
        expect_eq "registry: manifests of ml/$image served before any pod ran" \
          "$(registry_requests GET "/v2/ml/$image/manifests/$TJ_VERSION" 200)" 0
      done
      ;;
    helm-install)
      local op
      op="$(kc -n tj-system get pods -l app.kubernetes.io/name=trainingjob-operator -o jsonpath='{.items[0].metadata.name}')"
      expect_eq "operator pod's image" "$(kc -n tj-system get pod "$op" -o jsonpath='{.spec.containers[0].image}')" \
        "$REGISTRY/tj-operator:$TJ_VERSION"
      expect_eq "operator pod's imagePullSecrets" "$(kc -n tj-system get pod "$op" -o jsonpath='{.spec.imagePullSecrets[*].name}')" regcred
      expect_pulled tj-operator tj-system
      ;;
    rbac)
      expect_eq "may alice (group ml-team) create TrainingJobs in tj-system" \
        "$(kubectl auth can-i create trainingjobs.trainingjob.dev -n tj-system --as=alice --as-group=ml-team || true)" no
      expect_eq "may alice (group ml-team) read TrainingJobs in $JOBS_NAMESPACE" \
        "$(kubectl auth can-i watch trainingjobs.trainingjob.dev -n "$JOBS_NAMESPACE" --as=alice --as-group=ml-team)" yes
      ;;
    first-job)
      local line pods acc
      # One snapshot of the pods left (cleanPodPolicy Running is removing the PS and workers),
      # the coordinator's at least: name, image, pull secrets.
      pods="$(kc -n "$JOBS_NAMESPACE" get pods -l trainingjob.dev/job-name=digits -o json |
        jq -r '.items[] | "\(.metadata.name) \(.spec.containers[0].image) \([.spec.imagePullSecrets[]?.name] | join(","))"')"
      grep -q '^digits-coordinator-0 ' <<<"$pods" || fail "no coordinator pod of digits in $JOBS_NAMESPACE after Succeeded: [$pods]"
      while read -r line; do
        expect_eq "pod image and imagePullSecrets (from the namespace's default ServiceAccount)" \
          "$line" "${line%% *} $REGISTRY/tj-runtime:$TJ_VERSION regcred"
      done <<<"$pods"
      acc="$(cat "$wd"/root/pods/"${JOBS_NAMESPACE}"_digits-coordinator-0_*/logs/trainer/*.log 2>/dev/null |
        grep -oE 'final: .*accuracy=[0-9.]+' | tail -1 | grep -oE '[0-9.]+$' || true)"
      awk -v a="${acc:-0}" 'BEGIN{exit !(a >= 0.92)}' || fail "digits in $JOBS_NAMESPACE: accuracy '${acc}' < 0.92"
      log "ok: digits in $JOBS_NAMESPACE accuracy $acc >= 0.92"
      expect_pulled tj-runtime "$JOBS_NAMESPACE"
      ;;
    look)
      refused_pulls
      ;;
    clean-up)
      ns_job_gone() { [[ -z "$(kc -n "$JOBS_NAMESPACE" get pods,services,secrets,persistentvolumeclaims -l trainingjob.dev/job-name=digits -o name)" ]]; }
      wait_for 90 "digits' pods, Services, Secret and claim garbage-collected" ns_job_gone
      no_operator_pods() { [[ -z "$(kc -n tj-system get pods -o name)" ]]; }
      wait_for 60 "no operator pod after helm uninstall" no_operator_pods
      ;;
  esac
}

# expect_pulled <image> <namespace>: the registry served the image's manifest, and the node agent
# pulled it with the credential of `regcred` in that namespace (the pod's imagePullSecrets).
expect_pulled() {
  expect_ge "registry: manifests of ml/$1:$TJ_VERSION served (GET 200)" \
    "$(registry_requests GET "/v2/ml/$1/manifests/$TJ_VERSION" 200)" 1
  grep -qF "pulled $REGISTRY/$1:$TJ_VERSION with \"$registry_host\" of Secret $2/regcred" "$wd"/agent.log ||
    fail "the node agent's log has no pull of $REGISTRY/$1:$TJ_VERSION with Secret $2/regcred"
  log "ok: the node pulled $REGISTRY/$1:$TJ_VERSION with $2/regcred"
}

# refused_pulls: what section 8 of the page promises when a node cannot pull. A job in a namespace
# whose regcred holds a wrong password (imagePullPolicy Always: the node has the image already, and
# only a pull checks the credential), and a pod naming an image the registry lacks, wait in
# ErrImagePull/ImagePullBackOff with a message naming the image, and the job's Stuck condition
# says so.
refused_pulls() {
  local ns=ml-badcred image="$REGISTRY/tj-runtime:$TJ_VERSION" out refused
  refused="$(registry_requests GET "/v2/ml/tj-runtime/manifests/$TJ_VERSION" 401)"
  kc create namespace "$ns" >/dev/null
  printf '{"auths": {"%s": {"auth": "%s"}}}' "$registry_host" "$(printf '%s:wrong-password' "$registry_user" | base64 -w0)" \
    >"$wd/badcred.json"
  kc create secret generic regcred -n "$ns" --type=kubernetes.io/dockerconfigjson \
    --from-file=.dockerconfigjson="$wd/badcred.json" >/dev/null
  kc patch serviceaccount default -n "$ns" -p '{"imagePullSecrets": [{"name": "regcred"}]}' >/dev/null
  sed -E -e "s#ghcr.io/trainingjob-dev/#$REGISTRY/#" -e 's#^( +)image: (.*)$#\1image: \2\n\1imagePullPolicy: Always#' \
    "$repo/examples/digits.yaml" | kc apply -n "$ns" -f - >/dev/null
  stuck_on_pull() {
    [[ "$(kc get tj digits -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Stuck")].reason}')" =~ ^(ErrImagePull|ImagePullBackOff)$ ]]
  }
  wait_for 90 "digits in $ns Stuck on pulling its image with a wrong password" stuck_on_pull
  out="$(kc get tj digits -n "$ns" -o jsonpath='{.status.conditions[?(@.type=="Stuck")].message}')"
  [[ "$out" == *"$image"* ]] || fail "digits in $ns: Stuck does not name the image $image: $out"
  log "ok: digits in $ns Stuck: $out"
  # Every pod of the job waits on the pull; the first one's status says why.
  out="$(kc get pods -n "$ns" -l trainingjob.dev/job-name=digits -o jsonpath='{.items[0].status.containerStatuses[0].state.waiting.reason} {.items[0].status.containerStatuses[0].state.waiting.message}')"
  [[ "$out" =~ ^(ErrImagePull|ImagePullBackOff)\  && "$out" == *"$image"* && "$out" == *"Secret $ns/regcred"*unauthorized* ]] ||
    fail "a pod of digits in $ns: want ErrImagePull/ImagePullBackOff naming the image, the Secret and the refusal: $out"
  log "ok: its pod waits: $out"
  expect_ge "registry: refused manifest requests of ml/tj-runtime (401) since the wrong password" \
    "$(( $(registry_requests GET "/v2/ml/tj-runtime/manifests/$TJ_VERSION" 401) - refused ))" 1
  kc delete tj digits -n "$ns" --wait=true --timeout=60s >/dev/null
  kc delete namespace "$ns" --wait=false >/dev/null

  kc apply -n "$JOBS_NAMESPACE" -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: no-such-image}
spec:
  restartPolicy: Never
  containers: [{name: main, image: "$REGISTRY/tj-no-such-image:$TJ_VERSION", command: ["true"]}]
EOF
  no_such_image() {
    [[ "$(kc get pod no-such-image -n "$JOBS_NAMESPACE" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" =~ ^(ErrImagePull|ImagePullBackOff)$ ]]
  }
  wait_for 60 "pod no-such-image waits on its image" no_such_image
  out="$(kc get pod no-such-image -n "$JOBS_NAMESPACE" -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')"
  [[ "$out" == *"$REGISTRY/tj-no-such-image:$TJ_VERSION"*"manifest unknown"* ]] ||
    fail "pod no-such-image: the message does not name the image and the registry's answer: $out"
  log "ok: an image the registry lacks: $out"
  kc delete pod no-such-image -n "$JOBS_NAMESPACE" --wait=false >/dev/null
}

scenario_cluster_doc() {
  local page="$repo/docs/run-on-your-cluster.md" checkout="$wd/checkout" steps="$wd/cluster-doc-steps.sh" f rc=0
  # The checkout: links to the repository's files, `build` to the build directory ctest tested,
  # so what the steps write stays in the work directory.
  mkdir -p "$checkout"
  for f in "$repo"/* "$repo"/.dockerignore; do
    [[ "$(basename "$f")" == build* ]] || ln -s "$f" "$checkout/"
  done
  ln -s "$build" "$checkout/build"
  # The registry of tests/e2e/registry.sh for the page's; buildah trusts its test CA by --cert-dir
  # and logs in with its account without asking.
  python3 "$repo/tests/e2e/doc_steps.py" script "$page" \
    --sub registry 'registry.example.com/ml' "$registry_host/ml" \
    --sub registry-login 'buildah login' \
    'buildah login --cert-dir "$registry_certs" --username "$registry_user" --password-stdin <"$registry_password_file"' \
    --sub push-images 'buildah push' 'buildah push --cert-dir "$registry_certs"' \
    --sub helm-install '--wait --timeout' "--set metrics.host='\$(POD_IP)' --set health.host='\$(POD_IP)' --wait --timeout" \
    >"$steps" || fail "docs/run-on-your-cluster.md: doc_steps.py refused the page (above)"
  # The steps' shell: a subshell of this one (the harness's functions, not its EXIT trap).
  # Not under `||`: bash would ignore the steps' own `set -e` there.
  set +e
  (cd "$checkout" && PATH="$(dirname "$helm"):$PATH" && source "$steps")
  rc=$?
  set -e
  if [[ -s "$wd/cluster-doc-pushed" ]]; then
    # Untag what the node pulled into the machine's buildah storage (the layers are the images').
    xargs buildah rmi <"$wd/cluster-doc-pushed" >/dev/null 2>&1 || true
  fi
  if (( rc != 0 )); then
    kc get tj -A -o wide >&2 || true
    kc get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
    fail "docs/run-on-your-cluster.md: step '$(cat "$wd/cluster-doc-step" 2>/dev/null)' failed (exit $rc)"
  fi
  # A check tied to a step the page renamed or dropped must not go quietly.
  for f in registry-login push-images helm-install rbac first-job look clean-up; do
    grep -qx "$f" "$wd/cluster-doc-done" || fail "the test checks after page step '$f', which the page no longer has"
  done
  log "ok: every e2e step of docs/run-on-your-cluster.md ran: $(python3 "$repo/tests/e2e/doc_steps.py" check "$page")"
}
