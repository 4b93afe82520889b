# A real OCI registry for the e2e (docs/e2e.md, "A real registry"): the CNCF distribution registry
# (scripts/install-registry.sh, built once and cached) on a free port of 127.0.0.1, with TLS from a
# test CA made here and htpasswd (bcrypt, Debian's apache2-utils) basic auth. The node agent pulls
# from it (--pull-registry, --pull-cert-dir) and the cluster doc's steps log in and push to it.
# Sourced by e2e.sh; uses its repo, log and fail.
#
# start_registry <dir> sets:
#   registry_host      127.0.0.1:<port>
#   registry_user, registry_password_file   the one account of its htpasswd file
#   registry_certs     a directory holding only the test CA's ca.crt (buildah's --cert-dir)
#   registry_access    its access log (combined log format, one line a request)
registry_pid=""

start_registry() { # <dir>
  local dir="$1" bin port
  bin="$(bash "$repo/scripts/install-registry.sh")" || fail "scripts/install-registry.sh could not build the registry"
  command -v htpasswd >/dev/null || fail "htpasswd not found: install Debian's apache2-utils (scripts/install-deps.sh)"
  mkdir -p "$dir/certs" "$dir/data"
  registry_certs="$dir/certs"
  registry_access="$dir/access.log"
  registry_user=tj-e2e
  registry_password_file="$dir/password"
  (umask 077 && openssl rand -hex 16 >"$registry_password_file")
  # The test CA (in the directory buildah and the agent trust) and the server's certificate for
  # the address the registry is reached at.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=tj-e2e registry CA" \
    -keyout "$dir/ca.key" -out "$registry_certs/ca.crt" 2>/dev/null || fail "openssl: the registry's test CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null || fail "openssl: the registry's key"
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$registry_certs/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null || fail "openssl: the registry's certificate"
  htpasswd -Bci "$dir/htpasswd" "$registry_user" <"$registry_password_file" 2>/dev/null || fail "htpasswd -B: the registry's account"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  registry_host="127.0.0.1:$port"
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
  accesslog: {disabled: false}
storage:
  filesystem: {rootdirectory: $dir/data}
  delete: {enabled: false}
http:
  addr: $registry_host
  secret: $(openssl rand -hex 16)
  tls: {certificate: $dir/server.crt, key: $dir/server.key}
auth:
  htpasswd: {realm: tj-e2e-registry, path: $dir/htpasswd}
EOF
  # No OpenTelemetry exporter: its default would send traces to an OTLP collector that is not there.
  OTEL_TRACES_EXPORTER=none setsid "$bin" serve "$dir/config.yml" </dev/null >"$registry_access" 2>"$dir/registry.log" &
  registry_pid=$!
  registry_up() { # the API root answers 401 to a request without credentials
    [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$registry_certs/ca.crt" "https://$registry_host/v2/")" == 401 ]]
  }
  wait_for 60 "the registry answers at https://$registry_host/v2/ (TLS, htpasswd)" registry_up
}

stop_registry() {
  [[ -n "$registry_pid" ]] || return 0
  kill -TERM -- "-$registry_pid" 2>/dev/null || true
  wait "$registry_pid" 2>/dev/null || true
  registry_pid=""
}

# registry_requests <method> <path> <status>: how many such requests the access log holds, e.g.
# registry_requests GET /v2/ml/tj-runtime/manifests/0.1.0 200.
registry_requests() {
  awk -v req="\"$1 $2 HTTP/" -v status="$3" 'index($0, req) { split(substr($0, index($0, req)), a, "\" "); split(a[2], b, " "); if (b[1] == status) n++ } END { print n + 0 }' \
    "$registry_access" 2>/dev/null || echo 0
}
