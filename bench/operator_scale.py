#!/usr/bin/env python3
"""The operator at scale ([bench] / [operator]): N TrainingJobs of 5 pods applied in one burst
against a real control plane (tests/kube-test-cluster), with tj-operator running.

Measured:
  - time from the burst until every pod of every job exists (target: 500 jobs within 30 s);
  - reconcile latency p50/p99 from tj-operator's own histogram (bucket upper bounds);
  - tj-operator's peak RSS (VmHWM; target < 200 MiB);
and, in the same run, the baseline: the same number of Pods and Services created directly by a
client with the same parallelism (what the API server alone takes to store that many objects).

With --peer kubeflow, also in the same run and on the same control plane, the peer: Kubeflow's
training-operator (v1, built from its Go module by bench/kubeflow/build.sh) with only the TFJob
scheme, and the same burst of N TFJobs of the same shape (1 Chief, 1 PS, 3 Workers, the same
container): time until all pods exist, its peak RSS, and controller-runtime's reconcile histogram
(controller_runtime_reconcile_time_seconds{controller="tfjob-controller"}). It runs after ours, once
ours and its objects are gone, once per --kubeflow-config. If it cannot be built or started, the
figures are "unavailable: <reason>", never numbers.

usage: bench/operator_scale.py [--jobs 500] [--build-dir build] [--json out.json] [--smoke]
                               [--peer kubeflow [--kubeflow-config matched,defaults]]
Needs the project's build (scripts/build.sh) and Go for the control plane (cached build).
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "tests", "kube-test-cluster")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def kubectl(kubeconfig, *args, input_text=None, check=True):
    result = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=input_text,
                            capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def job_manifest(name, namespace):
    container = {"name": "trainer", "image": "trainingjob/tj-runtime:dev", "command": ["tj-train"]}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "trainingjob.dev/v1alpha1", "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicaSpecs": {
            "Coordinator": {"replicas": 1, "template": template},
            "PS": {"replicas": 1, "template": template},
            "Worker": {"replicas": 3, "template": template}}},
    }


def pod_and_service(name, namespace):
    labels = {"bench": "baseline", "pod": name}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "spec": {"restartPolicy": "Never", "containers": [
               {"name": "trainer", "image": "trainingjob/tj-runtime:dev", "command": ["tj-train"],
                "env": [{"name": "TF_CONFIG", "value": "x" * 600}]}]}}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": namespace, "labels": labels},
               "spec": {"clusterIP": "None", "selector": labels,
                        "ports": [{"name": "tj-port", "port": 2222}]}}
    return pod, service


def create_in_parallel(kubeconfig, objects, parallelism):
    """kubectl create, `parallelism` processes at once, each with a slice of the objects."""
    chunks = [objects[i::parallelism] for i in range(parallelism)]

    def create(chunk):
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": chunk})
        kubectl(kubeconfig, "create", "-f", "-", input_text=text)

    with concurrent.futures.ThreadPoolExecutor(parallelism) as pool:
        list(pool.map(create, [c for c in chunks if c]))


def count_pods(kubeconfig, namespace):
    out = kubectl(kubeconfig, "get", "pods", "-n", namespace, "--no-headers", "-o", "name",
                  check=False)
    return len([line for line in out.splitlines() if line.strip()])


def histogram_quantiles(metrics_text, name, quantiles):
    """Quantiles (bucket upper bounds) of histogram `name`, every series summed (ours has a
    `result` label: success and error reconciles both count). Returns ({q: bound}, count)."""
    return labeled_histogram_quantiles(metrics_text, name, {}, quantiles)


def metric_value(metrics_text, name):
    """The value of an unlabelled gauge or counter, or None."""
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", metrics_text, re.MULTILINE)
    return float(m.group(1)) if m else None


def write_counts(metrics_text):
    """tj-operator's API writes during the run, by "verb resource", with each series' p99 (bucket
    upper bound), from tj_operator_api_write_duration_seconds (creates, status writes, Events)."""
    out = {}
    for m in re.finditer(r'^tj_operator_api_write_duration_seconds_count\{([^}]*)\} (\S+)$',
                         metrics_text, re.MULTILINE):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        (q, count) = labeled_histogram_quantiles(
            metrics_text, "tj_operator_api_write_duration_seconds", labels, [0.5, 0.99])
        out[f'{labels.get("verb")} {labels.get("resource")}'] = {
            "count": int(float(m.group(2))), "p50_le_seconds": q[0.5], "p99_le_seconds": q[0.99]}
    return out


def wait_until_quiet(metrics_url, count_of, depth_of, timeout=60):
    """Waits until the operator has nothing queued and its reconcile count stopped moving (two
    scrapes a second apart), i.e. the status writes that follow the creations are done."""
    last = None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = urllib.request.urlopen(metrics_url).read().decode()
        now = (count_of(text), depth_of(text))
        if now[1] == 0 and last is not None and now[0] == last[0]:
            return text
        last = now
        time.sleep(1)
    return urllib.request.urlopen(metrics_url).read().decode()


# ------------------------------------------------------------------ the peer: Kubeflow's operator
KUBEFLOW_BUILD = os.path.join(ROOT, "bench", "kubeflow", "build.sh")
# Where training-operator v1's cert rotator expects the webhook serving certificate: hard-coded in
# its pkg/cert (in a cluster, the Secret is mounted there); the webhook server reads it too.
KUBEFLOW_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
KUBEFLOW_NAMESPACE = "tj-bench-kubeflow-system"  # MY_POD_NAMESPACE: where its cert Secret lives
KUBEFLOW_SECRET = "training-operator-webhook-cert"
# The configurations the peer can run with. "matched": as many reconcile workers as ours
# (--workers), no client-side request throttle (ours has none) and info-level logs (ours logs
# at info). "defaults": upstream's flags as its manifests deploy it (1 worker, client 20 QPS /
# burst 30, development logger at debug level).
KUBEFLOW_CONFIGS = {
    "matched": ["--controller-threads=8", "--kube-api-qps=100000", "--kube-api-burst=100000",
                "--zap-log-level=info"],
    "defaults": [],
}


def tfjob_manifest(name, namespace):
    # The same container as job_manifest's; "tensorflow" is the container name the TFJob
    # controller gives the port and TF_CONFIG to.
    container = {"name": "tensorflow", "image": "trainingjob/tj-runtime:dev", "command": ["tj-train"]}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"tfReplicaSpecs": {
            "Chief": {"replicas": 1, "template": template},
            "PS": {"replicas": 1, "template": template},
            "Worker": {"replicas": 3, "template": template}}},
    }


def labeled_histogram_quantiles(metrics_text, name, labels, quantiles):
    """Like histogram_quantiles, for the series of `name` whose labels include `labels`
    (any label order), the matching series summed. Returns ({q: bucket upper bound or None},
    count)."""
    summed = {}
    for line in metrics_text.splitlines():
        m = re.match(name + r'_bucket\{([^}]*)\} (\S+)$', line)
        if not m:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if any(got.get(k) != v for k, v in labels.items()) or "le" not in got:
            continue
        le = float("inf") if got["le"] == "+Inf" else float(got["le"])
        summed[le] = summed.get(le, 0.0) + float(m.group(2))
    buckets = sorted(summed.items())
    if not buckets or buckets[-1][1] == 0:
        return {q: None for q in quantiles}, 0
    total = buckets[-1][1]
    return {q: next(le for le, count in buckets if count >= q * total) for q in quantiles}, total


def process_cpu_seconds(pid):
    """utime + stime of a process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return round(int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024, 1)


def wait_namespaces_gone(kubeconfig, namespaces, timeout):
    deadline = time.monotonic() + timeout
    for ns in namespaces:
        kubectl(kubeconfig, "delete", "namespace", ns, "--wait=false", "--ignore-not-found",
                check=False)
    while time.monotonic() < deadline:
        out = kubectl(kubeconfig, "get", "namespaces", "-o", "name", check=False)
        if not any(f"namespace/{ns}" in out.split() for ns in namespaces):
            return True
        time.sleep(1)
    return False


def build_kubeflow():
    """(cache dir, None) or (None, reason)."""
    if not os.access(KUBEFLOW_BUILD, os.X_OK):
        return None, f"{KUBEFLOW_BUILD} missing"
    result = subprocess.run([KUBEFLOW_BUILD], capture_output=True, text=True)
    if result.returncode != 0:
        tail = " | ".join(result.stderr.strip().splitlines()[-3:])
        return None, f"bench/kubeflow/build.sh failed: {tail}"
    return result.stdout.strip(), None


class CertVolume:
    """Plays the kubelet's Secret volume for the peer: copies the webhook certificate that its
    cert rotator writes into the Secret to the directory it watches. Removes what it wrote."""

    def __init__(self):
        self.written = []
        self.made_dir = False

    def mount(self, kubeconfig, deadline):
        import base64
        while time.monotonic() < deadline:
            out = kubectl(kubeconfig, "get", "secret", "-n", KUBEFLOW_NAMESPACE, KUBEFLOW_SECRET,
                          "-o", "json", check=False)
            data = (json.loads(out).get("data") or {}) if out.strip() else {}
            if "tls.crt" in data and "tls.key" in data:
                if not os.path.isdir(KUBEFLOW_CERT_DIR):
                    os.makedirs(KUBEFLOW_CERT_DIR)
                    self.made_dir = True
                for key, value in data.items():
                    path = os.path.join(KUBEFLOW_CERT_DIR, key)
                    with open(path, "wb") as f:
                        f.write(base64.b64decode(value))
                    os.chmod(path, 0o600)
                    self.written.append(path)
                return True
            time.sleep(0.2)
        return False

    def unmount(self):
        for path in self.written:
            try:
                os.remove(path)
            except OSError:
                pass
        if self.made_dir:
            shutil.rmtree(os.path.dirname(KUBEFLOW_CERT_DIR), ignore_errors=True)


def run_kubeflow(kubeconfig, workdir, kf_dir, config, jobs, parallelism, deadline_seconds):
    """One burst of `jobs` TFJobs against a fresh training-operator. Returns the figures, or
    {"unavailable": reason} if the operator could not be made ready."""
    namespace = f"bench-kubeflow-{config}"
    kubectl(kubeconfig, "create", "namespace", namespace)
    metrics_port, health_port, webhook_port = free_port(), free_port(), free_port()
    log = open(os.path.join(workdir, f"kubeflow-{config}.log"), "w")
    env = dict(os.environ, KUBECONFIG=kubeconfig, MY_POD_NAMESPACE=KUBEFLOW_NAMESPACE)
    cmd = [os.path.join(kf_dir, "bin", "training-operator"), "--enable-scheme=tfjob",
           "--leader-elect=false", f"--metrics-bind-address=127.0.0.1:{metrics_port}",
           f"--health-probe-bind-address=127.0.0.1:{health_port}",
           f"--webhook-server-port={webhook_port}", *KUBEFLOW_CONFIGS[config]]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    certs = CertVolume()
    try:
        ready_deadline = time.monotonic() + 120
        if not certs.mount(kubeconfig, ready_deadline):
            return {"unavailable": "its cert rotator wrote no certificate into the Secret "
                                   f"within 120 s (see kubeflow-{config}.log)"}
        ready = False
        while time.monotonic() < ready_deadline and proc.poll() is None:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz",
                                          timeout=1).status == 200:
                    ready = True
                    break
            except OSError:
                pass
            time.sleep(0.1)
        if not ready:
            why = f"exited {proc.returncode}" if proc.poll() is not None else "not ready in 120 s"
            return {"unavailable": f"training-operator {why} (see kubeflow-{config}.log)"}
        # readyz says the webhook server and certificates are ready; the TFJob controller is set
        # up after that in a goroutine: wait until its caches are synced and its workers run.
        log_path = os.path.join(workdir, f"kubeflow-{config}.log")
        while time.monotonic() < ready_deadline and proc.poll() is None:
            with open(log_path, errors="replace") as f:
                if any("Starting workers" in line and "tfjob-controller" in line for line in f):
                    break
            time.sleep(0.2)
        else:
            return {"unavailable": "the TFJob controller did not start its workers in 120 s "
                                   f"(see kubeflow-{config}.log)"}
        cpu_before = process_cpu_seconds(proc.pid)

        manifests = [tfjob_manifest(f"job-{j}", namespace) for j in range(jobs)]
        start = time.monotonic()
        create_in_parallel(kubeconfig, manifests, parallelism)
        applied_seconds = time.monotonic() - start
        want = 5 * jobs
        deadline = start + deadline_seconds
        while count_pods(kubeconfig, namespace) < want and time.monotonic() < deadline:
            time.sleep(0.2)
        all_pods_seconds = time.monotonic() - start
        pods = count_pods(kubeconfig, namespace)
        services = len(kubectl(kubeconfig, "get", "services", "-n", namespace, "--no-headers",
                               "-o", "name", check=False).split())

        # As for ours: the status writes that follow the creations are done.
        metrics = wait_until_quiet(
            f"http://127.0.0.1:{metrics_port}/metrics",
            lambda t: labeled_histogram_quantiles(t, "controller_runtime_reconcile_time_seconds",
                                                  {"controller": "tfjob-controller"}, [0.5])[1],
            lambda t: sum(float(v) for v in re.findall(
                r'^workqueue_depth\{[^}]*name="tfjob-controller"[^}]*\} (\S+)$', t, re.MULTILINE)))
        quantiles, reconciles = labeled_histogram_quantiles(
            metrics, "controller_runtime_reconcile_time_seconds",
            {"controller": "tfjob-controller"}, [0.5, 0.99])
        return {
            "config": config, "flags": KUBEFLOW_CONFIGS[config],
            "pods_expected": want, "pods_created": pods, "services_created": services,
            "apply_seconds": round(applied_seconds, 2),
            "all_pods_seconds": round(all_pods_seconds, 2) if pods == want else None,
            "pods_at_deadline_seconds": None if pods == want else round(all_pods_seconds, 2),
            "reconciles": reconciles,
            "reconcile_p50_le_seconds": quantiles[0.5],
            "reconcile_p99_le_seconds": quantiles[0.99],
            "operator_peak_rss_mib": peak_rss_mib(proc.pid),
            "operator_cpu_seconds": round(process_cpu_seconds(proc.pid) - cpu_before, 1),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        certs.unmount()
        log.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--parallelism", type=int, default=8)
    parser.add_argument("--workers", type=int, default=8,
                        help="tj-operator --workers (its default), and the peer's matched threads")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--json")
    parser.add_argument("--smoke", action="store_true", help="20 jobs: checks that it runs")
    parser.add_argument("--peer", choices=["kubeflow"], action="append", default=[],
                        help="also run the same burst against this peer operator, after ours")
    parser.add_argument("--kubeflow-config", default="matched",
                        help="comma-separated configurations of the Kubeflow peer, run in turn: "
                             + ", ".join(f"{k} ({' '.join(v) or 'upstream flags'})"
                                         for k, v in KUBEFLOW_CONFIGS.items()))
    parser.add_argument("--peer-deadline", type=float, default=600,
                        help="seconds the peer gets to create every pod")
    args = parser.parse_args()
    if args.smoke:
        args.jobs = 20
    KUBEFLOW_CONFIGS["matched"][0] = f"--controller-threads={args.workers}"
    kubeflow_configs = [c for c in args.kubeflow_config.split(",") if c]
    for c in kubeflow_configs:
        if c not in KUBEFLOW_CONFIGS:
            sys.exit(f"operator_scale: unknown --kubeflow-config {c}")
    operator_bin = os.path.join(args.build_dir, "bin", "tj-operator")
    if not os.access(operator_bin, os.X_OK):
        sys.exit(f"operator_scale: {operator_bin} missing: run scripts/build.sh first")
    if shutil.which("go") is None:
        sys.exit("operator_scale: SKIPPED: no Go toolchain to build the control plane")

    kf_dir, kf_unavailable = None, None
    if "kubeflow" in args.peer:
        # Built before the control plane starts, so a cold build does not overlap the figures.
        print("operator_scale: building the Kubeflow peer (bench/kubeflow/build.sh)",
              file=sys.stderr)
        kf_dir, kf_unavailable = build_kubeflow()

    workdir = tempfile.mkdtemp(prefix="tj-bench-scale-")
    operator = None
    try:
        kubeconfig = subprocess.run([os.path.join(CLUSTER, "up.sh"), workdir], check=True,
                                    capture_output=True, text=True).stdout.strip()
        kubectl(kubeconfig, "apply", "-f", os.path.join(ROOT, "crds",
                                                        "trainingjob.dev_trainingjobs.yaml"))
        for _ in range(300):
            if kubectl(kubeconfig, "get", "crd", "trainingjobs.trainingjob.dev", "-o",
                       "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
                       check=False) == "True":
                break
            time.sleep(0.1)
        for ns in ("bench-baseline", "bench-jobs"):
            kubectl(kubeconfig, "create", "namespace", ns)

        # Baseline: the objects the operator will create (5 pods + 5 services per job), created
        # directly with the same parallelism. The scheduler is running: there are no nodes, so
        # pods stay Pending, as the operator's will.
        objects = []
        for j in range(args.jobs):
            for r in range(5):
                pod, service = pod_and_service(f"b{j}-r{r}", "bench-baseline")
                objects += [pod, service]
        start = time.monotonic()
        create_in_parallel(kubeconfig, objects, args.parallelism)
        baseline_seconds = time.monotonic() - start
        kubectl(kubeconfig, "delete", "namespace", "bench-baseline", "--wait=false")

        metrics_port, health_port = free_port(), free_port()
        log = open(os.path.join(workdir, "operator.log"), "w")
        operator = subprocess.Popen(
            [operator_bin, f"--kubeconfig={kubeconfig}", "--leader-elect=false",
             f"--metrics-address=127.0.0.1:{metrics_port}",
             f"--health-address=127.0.0.1:{health_port}", f"--workers={args.workers}", "--log-format=json"],
            stdout=log, stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz",
                                          timeout=1).status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)

        jobs = [job_manifest(f"job-{j}", "bench-jobs") for j in range(args.jobs)]
        cpu_before = process_cpu_seconds(operator.pid)
        load_before = os.getloadavg()
        start = time.monotonic()
        create_in_parallel(kubeconfig, jobs, args.parallelism)
        applied_seconds = time.monotonic() - start
        want = 5 * args.jobs
        deadline = start + 600
        while count_pods(kubeconfig, "bench-jobs") < want and time.monotonic() < deadline:
            time.sleep(0.2)
        all_pods_seconds = time.monotonic() - start
        pods = count_pods(kubeconfig, "bench-jobs")

        # The status writes that follow the creations are done: nothing queued, no new reconciles.
        metrics = wait_until_quiet(
            f"http://127.0.0.1:{metrics_port}/metrics",
            lambda t: histogram_quantiles(t, "tj_operator_reconcile_duration_seconds", [0.5])[1],
            lambda t: (metric_value(t, "tj_operator_workqueue_depth") or 0) +
            (metric_value(t, "tj_operator_write_queue_depth") or 0))
        (quantiles, reconciles) = histogram_quantiles(
            metrics, "tj_operator_reconcile_duration_seconds", [0.5, 0.99])
        with open(f"/proc/{operator.pid}/status") as f:
            status = f.read()
        rss_kib = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
        operator_cpu = process_cpu_seconds(operator.pid) - cpu_before  # the burst's, as the peer's

        result = {
            "jobs": args.jobs, "pods_expected": want, "pods_created": pods,
            "parallelism": args.parallelism,
            "workers": args.workers,
            "apply_seconds": round(applied_seconds, 2),
            "all_pods_seconds": round(all_pods_seconds, 2),
            "baseline_direct_create_seconds": round(baseline_seconds, 2),
            "baseline_objects": len(objects),
            "reconciles": reconciles,
            "reconcile_p50_le_seconds": quantiles[0.5],
            "reconcile_p99_le_seconds": quantiles[0.99],
            "operator_peak_rss_mib": round(rss_kib / 1024, 1),
            "operator_cpu_seconds": round(operator_cpu, 1),
            "load_average_before_burst": load_before,
            "load_average_after_burst": os.getloadavg(),
            "api_writes": write_counts(metrics),
        }
        ok = pods == want

        if "kubeflow" in args.peer:
            # Ours (its informers, its objects) is gone before the peer starts: the peer caches
            # every pod of the cluster, and the API server should not be deleting ours meanwhile.
            operator.send_signal(signal.SIGTERM)
            try:
                operator.wait(30)
            except subprocess.TimeoutExpired:
                operator.kill()
                operator.wait()
            operator = None
            result["operator_cpu_seconds"] = round(operator_cpu, 1)
            result["load_average_before_peer"] = os.getloadavg()
            peers = {}
            if kf_unavailable is None and not wait_namespaces_gone(
                    kubeconfig, ["bench-baseline", "bench-jobs"], 600):
                kf_unavailable = "the namespaces of the first runs were not deleted in 600 s"
            if kf_unavailable is None:
                kubectl(kubeconfig, "create", "-f", os.path.join(kf_dir, "crds",
                                                                 "kubeflow.org_tfjobs.yaml"))
                for _ in range(600):
                    if kubectl(kubeconfig, "get", "crd", "tfjobs.kubeflow.org", "-o",
                               "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
                               check=False) == "True":
                        break
                    time.sleep(0.1)
                kubectl(kubeconfig, "create", "namespace", KUBEFLOW_NAMESPACE)
                # The Secret its cert rotator fills (in a cluster: from its manifests).
                kubectl(kubeconfig, "create", "secret", "generic", KUBEFLOW_SECRET,
                        "-n", KUBEFLOW_NAMESPACE)
            for i, config in enumerate(kubeflow_configs):
                if kf_unavailable is not None:
                    peers[config] = {"unavailable": kf_unavailable}
                    continue
                if i > 0 and not wait_namespaces_gone(
                        kubeconfig, [f"bench-kubeflow-{kubeflow_configs[i - 1]}"], 600):
                    peers[config] = {"unavailable": "the previous run's namespace was not "
                                                    "deleted in 600 s"}
                    continue
                print(f"operator_scale: Kubeflow training-operator ({config})", file=sys.stderr)
                peers[config] = run_kubeflow(kubeconfig, workdir, kf_dir, config, args.jobs,
                                             args.parallelism, args.peer_deadline)
                peers[config]["load_average_after"] = os.getloadavg()
            result["kubeflow_training_operator"] = {
                "version": os.path.basename(kf_dir) if kf_dir else None, "runs": peers}
        print(json.dumps(result, indent=2))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
        return 0 if ok else 1
    finally:
        if operator is not None:
            operator.send_signal(signal.SIGTERM)
            try:
                operator.wait(30)
            except subprocess.TimeoutExpired:
                operator.kill()
        subprocess.run([os.path.join(CLUSTER, "down.sh"), workdir], capture_output=True)
        if not os.environ.get("TJ_KUBE_KEEP_WORKDIR"):
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
