#!/usr/bin/env python3
"""The chart's jobs dashboard against a real Prometheus scraping a real job.

  dashboards_prometheus_test.py --source-dir S --tjctl T --tj-train B [--tj-operator O]
                                [--keep DIR]

Runs `tjctl run --metrics-targets` on the digits job (tj-train: a coordinator, a PS, two
workers), Debian's prometheus on 127.0.0.1 with a temporary storage directory and a file_sd
scrape config reading tjctl's targets file (every 500 ms), and two faults: the PS is SIGKILLed
(the coordinator restarts from its checkpoint) and worker 1 is preempted through `tjctl preempt`
(a notice, then a restart). Then, polling Prometheus' HTTP API until it holds (no sleeps):

  - every target of every panel of dashboards/trainingjob-jobs.json that reads the job's pods
    (template variables substituted) returns data through /api/v1/query, and so do the
    dashboard's namespace and trainingjob variables (they list "default" and "digits");
    a failure names the panel, the query and the metrics it names that Prometheus never saw;
  - no value of any query, nor any sample of any tj_* series over the whole run (scrapes during
    the restarts and before the first checkpoint included), is negative, NaN or infinite;
  - `promtool check metrics` accepts every endpoint (coordinator, PS, workers, operator).

With --tj-operator (and Go, to build the control plane as the `kube` tests do), tj-operator
also runs against a throw-away control plane (tests/kube-test-cluster) with a TrainingJob of the
same namespace and name, its status completed with what a coordinator would report (step,
checkpoint step, goodput); Prometheus scrapes it too, and

  - the panels' operator targets (tj_trainingjob_*) are evaluated like the others;
  - every target of the operator's dashboard (trainingjob-operator.json) returns data, except
    those of counters that only count failures this test does not provoke (API errors, Events
    dropped, restarts, preemption notices), which must still evaluate and name a metric that
    operator/ registers; and its namespace variable lists the operator's namespace.

Exit 0 when everything holds; every failure is printed. Prints "SKIPPING" and exits 0 without
prometheus, promtool or the digits data (python3-sklearn).
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

DIGITS_DATA = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
JOB = "digits"
NAMESPACE = "default"
# Sources of metrics a tjctl run job does not have.
OPERATOR_METRIC = re.compile(r"\btj_(trainingjob|operator)_[a-z0-9_]+")
METRIC = re.compile(r"\btj_[a-z0-9_]+")
TIMEOUT = 240  # seconds for each wait; the job itself runs far longer

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, condition, timeout=TIMEOUT, poll=0.2):
    """Polls `condition` (another process's state has nothing to block on) until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("timed out waiting for " + what)
        time.sleep(poll)


def read_json(path):
    try:
        with open(path) as f:
            value = json.load(f)
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


class Prometheus:
    def __init__(self, workdir, targets_file, operator_targets_file):
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            json.dump({  # YAML is a superset of JSON
                "global": {"scrape_interval": "500ms", "evaluation_interval": "1s"},
                "scrape_configs": [{
                    "job_name": "trainingjob-pods",
                    "scrape_interval": "500ms",
                    "scrape_timeout": "450ms",
                    "file_sd_configs": [{"files": [targets_file], "refresh_interval": "1s"}],
                }, {
                    # The operator, as the chart's ServiceMonitor scrapes it: `namespace` is the
                    # operator's own.
                    "job_name": "trainingjob-operator",
                    "scrape_interval": "500ms",
                    "scrape_timeout": "450ms",
                    "file_sd_configs": [{"files": [operator_targets_file],
                                         "refresh_interval": "1s"}],
                }],
            }, f)
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.process = subprocess.Popen(
            ["prometheus", "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        self.started = time.time()

        def ready():
            if self.process.poll() is not None:
                raise RuntimeError("prometheus exited; see prometheus.log")
            try:
                return http_get(self.base + "/-/ready") is not None
            except (urllib.error.URLError, OSError):
                return False
        wait_for("prometheus to be ready", ready)

    def api(self, path, **params):
        url = self.base + path + "?" + urllib.parse.urlencode(params, doseq=True)
        body = json.loads(http_get(url, timeout=30))
        if body.get("status") != "success":
            raise RuntimeError("%s: %s" % (url, body))
        return body["data"]

    def query(self, expr):
        """The result of an instant query now: a list of (labels, value)."""
        data = self.api("/api/v1/query", query=expr)
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        if data["resultType"] == "vector":
            return [(r["metric"], float(r["value"][1])) for r in data["result"]]
        raise RuntimeError("unexpected result type %s of %s" % (data["resultType"], expr))

    def metric_names(self):
        return set(self.api("/api/v1/label/__name__/values"))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class Operator:
    """tj-operator against a throw-away control plane (tests/kube-test-cluster), managing a
    TrainingJob of the same namespace and name as the local run: no node runs its pods, so its
    status is what the operator decides, plus what a coordinator would have reported (step,
    checkpoint, goodput), written by the test."""

    def __init__(self, args, workdir, targets_file):
        self.source_dir = args.source_dir
        self.kube_dir = os.path.join(workdir, "kube")
        self.process = None
        up = subprocess.run([os.path.join(args.source_dir, "tests/kube-test-cluster/up.sh"),
                             self.kube_dir], capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError("tests/kube-test-cluster/up.sh failed: " + up.stderr[-3000:])
        self.kubeconfig = up.stdout.strip().splitlines()[-1]
        self.kubectl("apply", "-f", os.path.join(args.source_dir,
                                                 "crds/trainingjob.dev_trainingjobs.yaml"))
        self.kubectl("wait", "--for=condition=Established", "--timeout=120s",
                      "crd/trainingjobs.trainingjob.dev")
        port = free_port()
        self.log = open(os.path.join(workdir, "operator.log"), "w")
        self.process = subprocess.Popen(
            [args.tj_operator, "--kubeconfig=" + self.kubeconfig, "--leader-elect=false",
             "--metrics-address=127.0.0.1:%d" % port,
             "--health-address=127.0.0.1:%d" % free_port(), "--workers=2", "--log-format=text"],
            stdout=self.log, stderr=subprocess.STDOUT)
        with open(targets_file + ".tmp", "w") as f:
            json.dump([{"targets": ["127.0.0.1:%d" % port],
                        "labels": {"namespace": "tj-system", "pod": "tj-operator-0"}}], f)
        os.rename(targets_file + ".tmp", targets_file)

    def replace_a_pod(self, prom):
        """Deletes a pod the operator made, once Prometheus holds the operator's pod-create series,
        and waits until it has scraped the re-creation. A labelled histogram's series is born with
        its first observation, so the creations at the job's start are never an increase to
        Prometheus: without later work, the dashboard's rates and quantiles of them are empty."""
        creates = 'tj_operator_api_write_duration_seconds_count{resource="pods",verb="create"}'
        wait_for("Prometheus to hold the operator's pod creations", lambda: prom.query(creates),
                 timeout=60)
        before = max(value for _, value in prom.query(creates))
        self.kubectl("delete", "pod", "%s-worker-1" % JOB, "-n", NAMESPACE, "--wait=false")
        wait_for("Prometheus to scrape the operator's re-creation of the pod",
                 lambda: any(value > before for _, value in prom.query(creates)), timeout=60)

    def kubectl(self, *args, stdin=None):
        result = subprocess.run(["kubectl", "--kubeconfig=" + self.kubeconfig] + list(args),
                                input=stdin, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), result.stderr))
        return result.stdout

    def create_job(self, manifest):
        self.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=manifest)
        # What the coordinator would have reported by now; the operator keeps these fields.
        self.kubectl("patch", "trainingjob", JOB, "-n", NAMESPACE, "--subresource=status",
                     "--type=merge", "-p", json.dumps({"status": {
                         "step": 250, "lastCheckpointStep": 200, "goodput": 0.9,
                         "goodputSeconds": {"wallSeconds": 100, "productiveSeconds": 90,
                                            "lostSeconds": {"startup": 6, "restart": 4}}}}))

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.log.close()
        subprocess.run([os.path.join(self.source_dir, "tests/kube-test-cluster/down.sh"),
                        self.kube_dir], capture_output=True)


def job_yaml(tj_train):
    container = "containers: [{name: trainer, command: [%s]" % tj_train
    return "\n".join([
        "apiVersion: trainingjob.dev/v1alpha1",
        "kind: TrainingJob",
        "metadata: {name: %s}" % JOB,
        "spec:",
        "  replicaSpecs:",
        "    Coordinator:",
        # Long enough never to end while the test looks (it is stopped at the end); evaluated
        # every 100 steps so tj_eval_metric exists mid-run.
        "      template: {spec: {%s, args: [--model=softmax, --data=%s, --epochs=2000, "
        "--step-sleep-ms=50, --log-every-steps=5, --eval-every-steps=100]}]}}" % (container,
                                                                               DIGITS_DATA),
        "    PS:",
        "      template: {spec: {%s}]}}" % container,
        "    Worker:",
        "      replicas: 2",
        "      template: {spec: {%s}]}}" % container,
        "  checkpoint: {dir: /unused, intervalSteps: 200}",
        ""])


def substitute(expr, range_seconds):
    # Grafana's variables as a user picking the job would get them; the rate window spans the
    # whole run so that increases and resets of the faults fall inside it.
    return (expr.replace("$namespace", NAMESPACE).replace("$trainingjob", JOB)
            .replace("$__rate_interval", "%ds" % range_seconds)
            .replace("${datasource}", ""))


def check_values(where, results):
    for labels, value in results:
        if math.isnan(value) or math.isinf(value) or value < 0:
            fail("%s: %s %r: a negative or non-finite figure" % (where, labels, value))


def evaluate_dashboard(prom, dashboard, run_started, with_operator):
    """Polls until every target returns data; then reports what still does not."""
    targets = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            if OPERATOR_METRIC.search(expr) and not with_operator:
                print("not evaluated (no operator; tj_job_metrics_test checks its names): "
                      "%s: %s" % (panel["title"], expr))
                continue
            targets.append((panel["title"], expr))
    if len(targets) < 20:
        fail("only %d targets of the jobs dashboard evaluated" % len(targets))

    def window():
        return int(time.time() - run_started) + 30

    def empty_targets():
        return [(title, expr) for title, expr in targets
                if not prom.query(substitute(expr, window()))]
    try:
        wait_for("every panel of the jobs dashboard to have data",
                 lambda: not empty_targets(), timeout=120, poll=1)
    except TimeoutError:
        pass
    names = prom.metric_names()
    for title, expr in empty_targets():
        missing = sorted(set(METRIC.findall(expr)) - names)
        fail("panel %r: no data for %s%s" % (
            title, substitute(expr, window()),
            "; Prometheus never saw %s" % ", ".join(missing) if missing else ""))
    for title, expr in targets:
        results = prom.query(substitute(expr, window()))
        print("%-26s %d series: %s" % (title, len(results), expr))
        check_values("panel %r: %s" % (title, expr), results)

    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = substitute(variable["query"], window())
        match = re.fullmatch(r"query_result\((.*)\)", query, re.S)
        if not match:
            fail("variable %s: not a query_result(...) query: %s" % (variable["name"], query))
            continue
        regex = re.compile(variable["regex"].strip("/"))
        values = set()
        for labels, _ in prom.query(match.group(1)):
            # Grafana applies the regex to each series as text: name{label="value",...} value.
            text = "{%s}" % ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
            found = regex.search(text)
            if found:
                values.add(found.group(1))
        expected = NAMESPACE if variable["name"] == "namespace" else JOB
        if expected not in values:
            fail("variable %s lists %s, not %s" % (variable["name"], sorted(values), expected))


# Counters of the operator that count only failures (API errors, Events dropped, restarts,
# preemption notices): they have no series until one happens, which this test does not provoke on
# the operator's side. Their panels' queries must still evaluate, and name a metric the operator's
# source registers.
OPERATOR_FAILURE_COUNTERS = {"tj_operator_api_errors_total", "tj_operator_events_dropped_total",
                             "tj_operator_restarts_total", "tj_operator_preemption_notices_total"}


def evaluate_operator_dashboard(prom, dashboard, run_started, source_dir):
    sources = ""
    for root, _, files in os.walk(os.path.join(source_dir, "operator")):
        for name in files:
            if name.endswith(".cc"):
                with open(os.path.join(root, name)) as f:
                    sources += f.read()
    window = int(time.time() - run_started) + 30

    def query(expr):
        # The operator dashboard's namespace is the operator's.
        return prom.query(substitute(expr.replace("$namespace", "tj-system"), window))
    targets = [(panel["title"], target["expr"]) for panel in dashboard["panels"]
               for target in panel.get("targets", [])]

    def expected_but_empty():
        return [(title, expr) for title, expr in targets
                if not set(METRIC.findall(expr)) & OPERATOR_FAILURE_COUNTERS and not query(expr)]
    try:
        wait_for("every operator panel to have data", lambda: not expected_but_empty(),
                 timeout=120, poll=1)
    except TimeoutError:
        pass
    for title, expr in targets:
        names = set(METRIC.findall(expr))
        for name in names:
            base = re.sub(r"_(bucket|count|sum)$", "", name)
            if '"%s"' % base not in sources:
                fail("operator panel %r names %s, which operator/ does not register" % (
                    title, name))
        results = query(expr)
        print("%-26s %d series: %s" % (title, len(results), expr))
        check_values("operator panel %r: %s" % (title, expr), results)
        if not results and not names & OPERATOR_FAILURE_COUNTERS:
            fail("operator panel %r: no data for %s" % (title, expr))
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"])
            if not match or not any(labels.get(match.group(2)) == "tj-system"
                                    for labels, _ in query(match.group(1))):
                fail("operator dashboard variable %s does not list tj-system" % variable["name"])


def check_all_samples(prom, run_started):
    """Every sample scraped of every tj_* series: none negative or non-finite."""
    data = prom.api("/api/v1/query",
                    query='{__name__=~"tj_.+"}[%ds]' % (int(time.time() - run_started) + 30))
    samples = 0
    for series in data["result"]:
        for _, value in series["values"]:
            samples += 1
            v = float(value)
            if math.isnan(v) or math.isinf(v) or v < 0:
                fail("%s: sample %s" % (series["metric"], value))
                break
    print("checked %d samples of %d tj_* series" % (samples, len(data["result"])))
    if samples == 0:
        fail("no tj_* sample at all")
    # The figures above include scrapes of a coordinator with no checkpoint yet.
    steps = [float(v) for series in data["result"]
             if series["metric"]["__name__"] == "tj_training_step"
             for _, v in series["values"]]
    if not steps or min(steps) >= 200:
        fail("no scrape before the first checkpoint (steps seen: %s)" % (
            "none" if not steps else "from %g" % min(steps)))


def check_endpoints_with_promtool(targets_files):
    for group in [g for path in targets_files if os.path.exists(path)
                  for g in read_json_list(path)]:
        for address in group["targets"]:
            who = group["labels"]["pod"]
            try:
                text = http_get("http://%s/metrics" % address)
            except (urllib.error.URLError, OSError) as e:
                fail("%s: /metrics at %s: %s" % (who, address, e))
                continue
            check = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                                   capture_output=True)
            if check.returncode != 0:
                fail("%s: promtool check metrics: %s%s" % (who, check.stdout, check.stderr))
            else:
                print("promtool check metrics: %s: ok (%d lines)" % (who, text.count("\n")))


def read_json_list(path):
    with open(path) as f:
        return json.load(f)


def run(args, workdir):
    with open(os.path.join(args.source_dir,
                           "helm/trainingjob-operator/dashboards/trainingjob-jobs.json")) as f:
        dashboard = json.load(f)
    job_file = os.path.join(workdir, "job.yaml")
    with open(job_file, "w") as f:
        f.write(job_yaml(args.tj_train))
    work = os.path.join(workdir, "work")
    targets_file = os.path.join(workdir, "targets.json")
    operator_targets_file = os.path.join(workdir, "operator-targets.json")
    run_log = open(os.path.join(workdir, "run.log"), "w")
    run_started = time.time()
    # Prometheus first, watching for the targets files: the first scrapes find a coordinator with
    # no checkpoint yet.
    prom = Prometheus(workdir, targets_file, operator_targets_file)
    operator = None
    if args.tj_operator and shutil.which("go") is None:
        print("\n*** SKIPPING the operator's part: `go` is not on PATH, so the control plane "
              "cannot be built (as the `kube` tests) ***\n")
    elif args.tj_operator:
        try:
            operator = Operator(args, workdir, operator_targets_file)
            # Scraped once before the job exists: the operator's reconciles and writes for the job
            # then fall between two scrapes, so their rates and quantiles have data (a job created
            # before the first scrape left every reconcile in it, and the quantiles empty).
            wait_for("Prometheus to scrape the operator",
                     lambda: prom.query('up{pod="tj-operator-0"} == 1'), timeout=60)
            # An image for the API server's eyes only: no node runs the pods.
            operator.create_job(job_yaml(args.tj_train).replace(
                "{name: trainer, ", "{name: trainer, image: example.com/tj-train, "))
        except Exception:
            prom.stop()
            run_log.close()
            if operator is not None:
                operator.stop()
            raise
    tjctl = subprocess.Popen([args.tjctl, "run", job_file, "--work-dir", work, "--quiet",
                              "--metrics-targets", targets_file],
                             stdout=run_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for("tjctl's targets file", lambda: os.path.exists(targets_file))
        groups = read_json_list(targets_file)
        pods = sorted(g["labels"]["pod"] for g in groups)
        if pods != ["digits-coordinator-0", "digits-ps-0", "digits-worker-0", "digits-worker-1"]:
            fail("targets file lists %s" % pods)

        def progress():
            return read_json(os.path.join(work, "progress.json"))

        def alive():
            if tjctl.poll() is not None:
                raise RuntimeError("tjctl run ended (exit %s); see run.log" % tjctl.returncode)
            return True

        wait_for("every target to be scraped", lambda: alive() and len(
            prom.query('up{trainingjob="%s"} == 1' % JOB)) == 4)

        # Fault 1: the PS is killed outright after the checkpoint of step 200; the coordinator
        # restarts and restores it.
        wait_for("step 260", lambda: alive() and progress().get("step", 0) >= 260)
        status = read_json(os.path.join(work, "status.json"))
        os.kill(status["replicas"]["digits-ps-0"]["pid"], signal.SIGKILL)
        wait_for("the restored coordinator to train on",
                 lambda: alive() and "restoredFromStep" in progress() and
                 progress().get("step", 0) >= progress()["restoredFromStep"] + 30)

        # Fault 2: worker 1 is preempted (a notice to the coordinator, then a restart).
        preempt = subprocess.run([args.tjctl, "preempt", JOB, "worker-1", "--grace", "1",
                                  "--work-dir", work], capture_output=True, text=True,
                                 timeout=120)
        if preempt.returncode != 0:
            fail("tjctl preempt: %s%s" % (preempt.stdout, preempt.stderr))
        wait_for("worker 1 to restart", lambda: alive() and read_json(
            os.path.join(work, "status.json")).get("replicas", {}).get(
                "digits-worker-1", {}).get("starts", 0) >= 2)

        evaluate_dashboard(prom, dashboard, run_started, operator is not None)
        alive()
        check_endpoints_with_promtool([targets_file, operator_targets_file])
        if operator is not None:
            operator.replace_a_pod(prom)
            with open(os.path.join(args.source_dir, "helm/trainingjob-operator/dashboards/"
                                   "trainingjob-operator.json")) as f:
                evaluate_operator_dashboard(prom, json.load(f), run_started, args.source_dir)
        check_all_samples(prom, run_started)
    finally:
        if tjctl.poll() is None:
            os.killpg(tjctl.pid, signal.SIGTERM)
            try:
                tjctl.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(tjctl.pid, signal.SIGKILL)
                tjctl.wait()
        run_log.close()
        prom.stop()
        if operator is not None:
            operator.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--tjctl", required=True)
    parser.add_argument("--tj-train", required=True)
    parser.add_argument("--tj-operator", help="also run tj-operator on a throw-away control "
                        "plane (needs Go, as the `kube` tests) and evaluate the operator's "
                        "targets")
    parser.add_argument("--keep", help="work in this directory and keep it")
    args = parser.parse_args()
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print("SKIPPING the dashboard test: %s not installed (scripts/install-deps.sh)" % tool)
            return 0
    if not os.path.exists(DIGITS_DATA):
        print("SKIPPING the dashboard test: %s absent (python3-sklearn)" % DIGITS_DATA)
        return 0
    workdir = args.keep or tempfile.mkdtemp(prefix="tj-dashboards-")
    os.makedirs(workdir, exist_ok=True)
    try:
        run(args, workdir)
    except (TimeoutError, RuntimeError, KeyError, OSError) as e:
        fail(str(e))
    if failures:
        for name in ("run.log", "prometheus.log", "operator.log"):
            path = os.path.join(workdir, name)
            if os.path.exists(path):
                with open(path) as f:
                    print("---- %s (tail) ----\n%s" % (name, f.read()[-4000:]))
        print("%d failure(s); files in %s" % (len(failures), workdir))
        return 1
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
