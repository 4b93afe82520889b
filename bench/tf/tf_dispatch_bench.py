#!/usr/bin/env python3
"""TensorFlow baseline of the dispatch benchmark: TensorFlow's own ClusterCoordinator.

What tj-bench-dispatch measures for our runtime, measured for TensorFlow on the same machine:
ParameterServerStrategy + tf.distribute.coordinator.ClusterCoordinator, with 1 parameter server
and N workers (N = 1, 2, 4 by default), each a separate local process running
tf.distribute.Server on a free 127.0.0.1 port. The coordinator (a process of its own per N, so
that every N gets a fresh TensorFlow context) schedules a no-op tf.function (it returns a
constant) many times and joins:

  * throughput: warm-up, then --runs measured runs of `schedule(noop)` x --closures (the
    RemoteValues are dropped), then `join()`; rate = closures / (first schedule -> join returned);
    median and best over the runs;
  * lone-closure latency (1 worker): `schedule(noop).fetch()` one at a time, --latency-iterations
    samples after a warm-up; p50 / p90 / p99 / mean.

Every process it starts is killed when it ends, whatever happens (a process group per child,
SIGTERM then SIGKILL; the children also ask the kernel to kill them if this process dies).

  bench/tf/setup.sh                                   # once: the venv with tensorflow-cpu
  ~/.cache/trainingjob-operator/tf-venv/bin/python bench/tf/tf_dispatch_bench.py \
      [--workers 1,2,4] [--closures 10000] [--runs 5] [--json PATH] [--ours dispatch.json] [--quick]

--ours PATH reads tj-bench-dispatch's JSON (bench/results/dispatch.json) and prints ours /
TensorFlow's. Exits non-zero only if something did not work; never on speed.
"""

import argparse
import json
import os
import platform
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_RATIO = 10.0  # [bench] issue: ours >= 10x TensorFlow's closures/s
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------
# Helpers shared by every role.

def die_with_parent():
  """Asks the kernel to SIGKILL this process when its parent dies (Linux prctl PR_SET_PDEATHSIG)."""
  try:
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
  except OSError:
    pass


def quiet_tensorflow_env(env):
  env = dict(env)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  env["CUDA_VISIBLE_DEVICES"] = ""  # tensorflow-cpu has no GPU support anyway
  # As TensorFlow's parameter-server tutorial recommends for the coordinator.
  env.setdefault("GRPC_FAIL_FAST", "use_caller")
  return env


def loadavg():
  try:
    with open("/proc/loadavg") as f:
      return " ".join(f.read().split()[:3])
  except OSError:
    return "?"


def proc_cpu_seconds(pid):
  """utime + stime of one process, from /proc/PID/stat (0 if it is gone)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK
  except (OSError, IndexError, ValueError):
    return 0.0


def self_cpu_seconds():
  r = resource.getrusage(resource.RUSAGE_SELF)
  return r.ru_utime + r.ru_stime


def percentile(sorted_samples, q):
  if not sorted_samples:
    return 0.0
  i = min(len(sorted_samples) - 1, max(0, int(round(q * (len(sorted_samples) - 1)))))
  return sorted_samples[i]


# ------------------------------------------------------------------------------------------------
# Role: server (one tf.distribute.Server, a worker or the parameter server).

def serve(args):
  die_with_parent()
  import tensorflow as tf
  cluster = tf.train.ClusterSpec(json.loads(args.cluster))
  server = tf.distribute.Server(cluster, job_name=args.job, task_index=args.task,
                                protocol="grpc", start=True)
  print(f"serving {args.job}:{args.task} at {server.target}", file=sys.stderr, flush=True)
  server.join()


# ------------------------------------------------------------------------------------------------
# Role: coordinator (one ClusterCoordinator over the cluster; writes its figures as JSON).

def coordinate(args):
  die_with_parent()
  import tensorflow as tf
  cluster = tf.train.ClusterSpec(json.loads(args.cluster))
  resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(cluster, rpc_layer="grpc")
  strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
  coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
  worker_pids = [int(p) for p in args.worker_pids.split(",") if p]

  @tf.function
  def noop():
    return tf.constant(0, dtype=tf.int32)

  def workers_cpu():
    return sum(proc_cpu_seconds(p) for p in worker_pids)

  def run_noops(n, budget_s):
    cpu0, wcpu0 = self_cpu_seconds(), workers_cpu()
    start = time.perf_counter()
    scheduled = 0
    while scheduled < n:
      if (scheduled & 255) == 255 and time.perf_counter() - start > budget_s:
        break
      coordinator.schedule(noop)
      scheduled += 1
    schedule_s = time.perf_counter() - start
    coordinator.join()
    seconds = time.perf_counter() - start
    return {
        "closures": scheduled,
        "seconds": seconds,
        "schedule_seconds": schedule_s,
        "closures_per_s": scheduled / seconds,
        "coordinator_cpu_us_per_closure": (self_cpu_seconds() - cpu0) * 1e6 / scheduled,
        "worker_cpu_us_per_closure": (workers_cpu() - wcpu0) * 1e6 / scheduled,
        "loadavg_after": loadavg(),
    }

  out = {"workers": len(cluster.job_tasks("worker")), "loadavg_at_start": loadavg()}
  # Warm-up: tracing of the function on each worker, connections, thread pools.
  t0 = time.perf_counter()
  coordinator.schedule(noop).fetch()
  out["first_closure_seconds"] = time.perf_counter() - t0
  if args.warmup > 0:
    run_noops(args.warmup, args.seconds)
  runs = [run_noops(args.closures, args.seconds) for _ in range(args.runs)]
  rates = [r["closures_per_s"] for r in runs]
  out.update({
      "runs": runs,
      "median_closures_per_s": statistics.median(rates),
      "best_closures_per_s": max(rates),
      "coordinator_cpu_us_per_closure":
          statistics.mean(r["coordinator_cpu_us_per_closure"] for r in runs),
      "worker_cpu_us_per_closure": statistics.mean(r["worker_cpu_us_per_closure"] for r in runs),
  })

  if args.latency_iterations > 0:
    for _ in range(max(10, args.latency_iterations // 10)):
      coordinator.schedule(noop).fetch()
    samples = []
    for _ in range(args.latency_iterations):
      t = time.perf_counter()
      coordinator.schedule(noop).fetch()
      samples.append((time.perf_counter() - t) * 1e6)
    s = sorted(samples)
    out["lone_closure"] = {
        "samples": len(s), "p50_us": percentile(s, 0.50), "p90_us": percentile(s, 0.90),
        "p99_us": percentile(s, 0.99), "mean_us": statistics.mean(s), "min_us": s[0],
        "max_us": s[-1],
    }
  out["loadavg_at_end"] = loadavg()
  with open(args.result, "w") as f:
    json.dump(out, f)
  sys.stdout.flush()
  sys.stderr.flush()
  # TensorFlow's coordinator threads can hang interpreter shutdown once the servers go away.
  os._exit(0)


# ------------------------------------------------------------------------------------------------
# Role: driver (the default): starts the servers and a coordinator per worker count, prints.

class Children:
  """Processes started by the driver; kill_all() ends every one of them (and their groups)."""

  def __init__(self):
    self.procs = []

  def start(self, argv, log_path, env):
    log = open(log_path, "ab")
    try:
      p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                           env=env, start_new_session=True)
    finally:
      log.close()
    self.procs.append(p)
    return p

  def kill_all(self):
    procs, self.procs = self.procs, []
    for p in procs:
      if p.poll() is None:
        try:
          os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
          pass
    deadline = time.monotonic() + 5
    for p in procs:
      try:
        p.wait(timeout=max(0.1, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        pass
      # The group too: anything a child may have left behind.
      try:
        os.killpg(p.pid, signal.SIGKILL)
      except (ProcessLookupError, PermissionError):
        pass
      try:
        p.wait(timeout=5)
      except subprocess.TimeoutExpired:
        print(f"tf_dispatch_bench: process {p.pid} did not die", file=sys.stderr)


def free_ports(n):
  socks, ports = [], []
  try:
    for _ in range(n):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind(("127.0.0.1", 0))
      socks.append(s)
      ports.append(s.getsockname()[1])
  finally:
    for s in socks:
      s.close()
  return ports


def wait_listening(port, proc, deadline, what):
  while time.monotonic() < deadline:
    if proc.poll() is not None:
      raise RuntimeError(f"{what} exited with code {proc.returncode} before listening")
    try:
      with socket.create_connection(("127.0.0.1", port), timeout=1):
        return
    except OSError:
      time.sleep(0.2)
  raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within the start-up timeout")


def tail(path, lines=30):
  try:
    with open(path, errors="replace") as f:
      return "".join(f.readlines()[-lines:])
  except OSError:
    return ""


def measure(args, n, children, logdir):
  """One cluster (1 PS + n workers) and one coordinator; returns the coordinator's JSON."""
  ports = free_ports(n + 1)
  cluster = {"worker": [f"127.0.0.1:{p}" for p in ports[:n]], "ps": [f"127.0.0.1:{ports[n]}"]}
  cluster_json = json.dumps(cluster)
  env = quiet_tensorflow_env(os.environ)
  me = [sys.executable, os.path.abspath(__file__)]
  servers = []
  for job, task, port in [("ps", 0, ports[n])] + [("worker", i, ports[i]) for i in range(n)]:
    p = children.start(me + ["--role", "server", "--cluster", cluster_json, "--job", job,
                             "--task", str(task)],
                       os.path.join(logdir, f"n{n}-{job}-{task}.log"), env)
    servers.append((job, task, port, p))
  deadline = time.monotonic() + args.start_timeout
  for job, task, port, p in servers:
    wait_listening(port, p, deadline, f"{job}:{task}")
  worker_pids = ",".join(str(p.pid) for job, _, _, p in servers if job == "worker")
  result = os.path.join(logdir, f"n{n}-result.json")
  coord_log = os.path.join(logdir, f"n{n}-coordinator.log")
  c = children.start(me + ["--role", "coordinator", "--cluster", cluster_json,
                           "--worker-pids", worker_pids, "--result", result,
                           "--closures", str(args.closures), "--runs", str(args.runs),
                           "--warmup", str(args.warmup), "--seconds", str(args.seconds),
                           "--latency-iterations",
                           str(args.latency_iterations if n == min(args.worker_counts) else 0)],
                     coord_log, env)
  try:
    rc = c.wait(timeout=args.coordinator_timeout)
  except subprocess.TimeoutExpired:
    raise RuntimeError(f"the coordinator for {n} worker(s) did not finish within "
                       f"{args.coordinator_timeout} s; its log:\n{tail(coord_log)}")
  if rc != 0 or not os.path.exists(result):
    raise RuntimeError(f"the coordinator for {n} worker(s) failed (exit {rc}); its log:\n"
                       f"{tail(coord_log)}")
  dead = [f"{job}:{task}" for job, task, _, p in servers if p.poll() is not None]
  if dead:
    raise RuntimeError(f"server(s) {', '.join(dead)} died during the run")
  with open(result) as f:
    return json.load(f)


def machine_info(tf_version):
  model = "?"
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          model = line.split(":", 1)[1].strip()
          break
  except OSError:
    pass
  return {"nproc": os.cpu_count(), "cpu_model": model,
          "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
          "python": platform.python_version(), "tensorflow_version": tf_version,
          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def print_ours(ours_path, rows, lone):
  """ours / TensorFlow's, from tj-bench-dispatch's JSON. Returns the comparison (or None)."""
  try:
    with open(ours_path) as f:
      ours = json.load(f)
  except (OSError, ValueError) as e:
    print(f"\n(no comparison: cannot read {ours_path}: {e})")
    return None
  by_workers = {r["workers"]: r for r in ours.get("throughput", [])}
  cmp = {"ours_json": ours_path, "ours_date": ours.get("machine", {}).get("date"),
         "ours_loadavg": [ours.get("machine", {}).get("loadavg_at_start"),
                          ours.get("machine", {}).get("loadavg_at_end")],
         "ours_smoke": ours.get("smoke", False), "throughput": [], "target_ratio": TARGET_RATIO}
  print(f"\nOurs (tj-bench-dispatch, {ours_path}, {cmp['ours_date']}, load avg "
        f"{cmp['ours_loadavg'][0]} -> {cmp['ours_loadavg'][1]}"
        f"{', --smoke' if cmp['ours_smoke'] else ''}) / TensorFlow's")
  print(f"  {'workers':>7} {'ours median':>12} {'TF median':>10} {'ratio':>8}"
        f" {'ours best':>11} {'TF best':>9} {'ratio':>8}   target >= {TARGET_RATIO:g}x")
  for row in rows:
    o = by_workers.get(row["workers"])
    if not o:
      continue
    rm = o["median_closures_per_s"] / row["median_closures_per_s"]
    rb = o["best_closures_per_s"] / row["best_closures_per_s"]
    cmp["throughput"].append({"workers": row["workers"], "ours_median": o["median_closures_per_s"],
                              "tf_median": row["median_closures_per_s"], "ratio_median": rm,
                              "ours_best": o["best_closures_per_s"],
                              "tf_best": row["best_closures_per_s"], "ratio_best": rb,
                              "met": rm >= TARGET_RATIO})
    print(f"  {row['workers']:>7} {o['median_closures_per_s']:>12.0f} "
          f"{row['median_closures_per_s']:>10.0f} {rm:>7.1f}x {o['best_closures_per_s']:>11.0f} "
          f"{row['best_closures_per_s']:>9.0f} {rb:>7.1f}x   {'MET' if rm >= TARGET_RATIO else 'MISSED'}")
  ol = ours.get("lone_closure")
  if lone and ol:
    cmp["lone_closure"] = {"ours_p50_us": ol["p50_us"], "tf_p50_us": lone["p50_us"],
                           "tf_over_ours_p50": lone["p50_us"] / ol["p50_us"]}
    print(f"  lone closure p50: ours {ol['p50_us']:.1f} us, TensorFlow {lone['p50_us']:.1f} us "
          f"(TensorFlow's is {lone['p50_us'] / ol['p50_us']:.1f}x ours)")
  return cmp


def drive(args):
  # TensorFlow is imported only by the child processes (the measurements); here, its version.
  import importlib.metadata
  import importlib.util
  tf_version = None
  if importlib.util.find_spec("tensorflow") is not None:
    for dist in ("tensorflow-cpu", "tensorflow", "tf-nightly-cpu", "tf-nightly"):
      try:
        tf_version = importlib.metadata.version(dist)
        break
      except importlib.metadata.PackageNotFoundError:
        pass
  if tf_version is None:
    print(f"TensorFlow baseline unavailable: tensorflow is not installed for {sys.executable}; "
          f"run bench/tf/setup.sh and use its venv's python", file=sys.stderr)
    return 3
  children = Children()

  def on_signal(signum, _frame):
    raise SystemExit(128 + signum)

  for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, on_signal)

  logdir = tempfile.mkdtemp(prefix="tj-tf-bench-")
  info = machine_info(tf_version)
  info["loadavg_at_start"] = loadavg()
  print(f"TensorFlow ClusterCoordinator dispatch baseline (bench/tf/tf_dispatch_bench.py)"
        f"{'  [--quick: short runs, figures not meaningful]' if args.quick else ''}")
  print(f"machine: {info['nproc']} CPU(s), {info['cpu_model']}; {info['kernel']}; {info['date']}; "
        f"Python {info['python']}; TensorFlow {tf_version}; load avg {info['loadavg_at_start']}")
  rows, lone, ok = [], None, True
  try:
    for n in args.worker_counts:
      row = measure(args, n, children, logdir)
      children.kill_all()
      rows.append(row)
      lone = lone or row.get("lone_closure")
      print(f"  {n} worker(s): median {row['median_closures_per_s']:.0f} closures/s "
            f"(load avg {row['loadavg_at_start']} -> {row['loadavg_at_end']})", flush=True)
  except (RuntimeError, OSError) as e:
    print(f"tf_dispatch_bench: {e}\n(logs kept in {logdir})", file=sys.stderr)
    ok = False
  finally:
    children.kill_all()
  info["loadavg_at_end"] = loadavg()

  if rows:
    print("\nNo-op closures/s (TensorFlow ClusterCoordinator: schedule N no-op tf.function, then "
          "join; 1 PS)")
    print(f"  {'workers':>7} {'median':>9} {'best':>9} {'runs':>5} {'closures/run':>13}"
          f" {'coord CPU/clos':>15} {'worker CPU/clos':>16}  load avg (1/5/15 min) start -> end")
    for r in rows:
      print(f"  {r['workers']:>7} {r['median_closures_per_s']:>9.0f} {r['best_closures_per_s']:>9.0f}"
            f" {len(r['runs']):>5} {statistics.median(x['closures'] for x in r['runs']):>13.0f}"
            f" {r['coordinator_cpu_us_per_closure']:>12.1f} us {r['worker_cpu_us_per_closure']:>13.1f} us"
            f"  {r['loadavg_at_start']} -> {r['loadavg_at_end']}")
    print(f"  (median and best of the runs; first closure of each cluster, tracing included: "
          f"{', '.join('%.2f s' % r['first_closure_seconds'] for r in rows)})")
  if lone:
    print(f"\nLone-closure latency (schedule + fetch, one at a time, {min(args.worker_counts)} "
          f"worker(s), {lone['samples']} samples)")
    print(f"  p50 {lone['p50_us']:.1f} us   p90 {lone['p90_us']:.1f} us   p99 {lone['p99_us']:.1f} us"
          f"   mean {lone['mean_us']:.1f} us")
  comparison = print_ours(args.ours, rows, lone) if args.ours and rows else None

  if args.json:
    out = {"benchmark": "tf_dispatch", "quick": args.quick, "machine": info,
           "config": {"workers": args.worker_counts, "closures": args.closures, "runs": args.runs,
                      "warmup": args.warmup, "seconds_budget_per_run": args.seconds,
                      "latency_iterations": args.latency_iterations, "ps": 1,
                      "function": "tf.function returning tf.constant(0)"},
           "throughput": rows, "lone_closure": lone, "ok": ok}
    if comparison:
      out["vs_ours"] = comparison
    d = os.path.dirname(os.path.abspath(args.json))
    os.makedirs(d, exist_ok=True)
    with open(args.json, "w") as f:
      json.dump(out, f, indent=2)
      f.write("\n")
    print(f"wrote {args.json}")
  if ok:
    import shutil
    shutil.rmtree(logdir, ignore_errors=True)
  return 0 if ok else 1


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
  p.add_argument("--closures", type=int, default=10000, help="no-op closures per measured run")
  p.add_argument("--runs", type=int, default=5, help="measured runs per worker count")
  p.add_argument("--warmup", type=int, default=-1,
                 help="closures scheduled and joined before the measured runs "
                      "(default min(closures/4, 2000))")
  p.add_argument("--seconds", type=float, default=10.0,
                 help="time budget of each measured run: scheduling stops once it has passed")
  p.add_argument("--latency-iterations", type=int, default=200,
                 help="lone-closure samples (on the smallest worker count)")
  p.add_argument("--json", help="also write the figures as JSON to this path")
  p.add_argument("--ours", help="tj-bench-dispatch's JSON, to print ours / TensorFlow's")
  p.add_argument("--quick", action="store_true",
                 help="a short run that checks everything works: 500 closures x 2 runs, "
                      "50 latency samples")
  p.add_argument("--start-timeout", type=float, default=180.0,
                 help="seconds for the servers to start listening")
  p.add_argument("--coordinator-timeout", type=float, default=900.0,
                 help="seconds for one worker count's coordinator to finish")
  # Internal: the roles of the child processes.
  p.add_argument("--role", choices=["driver", "server", "coordinator"], default="driver",
                 help=argparse.SUPPRESS)
  p.add_argument("--cluster", help=argparse.SUPPRESS)
  p.add_argument("--job", help=argparse.SUPPRESS)
  p.add_argument("--task", type=int, default=0, help=argparse.SUPPRESS)
  p.add_argument("--worker-pids", default="", help=argparse.SUPPRESS)
  p.add_argument("--result", help=argparse.SUPPRESS)
  args = p.parse_args()

  if args.role == "server":
    return serve(args)
  if args.role == "coordinator":
    return coordinate(args)
  if args.quick:
    args.closures, args.runs, args.latency_iterations = 500, 2, 50
    args.seconds = min(args.seconds, 3.0)
  if args.warmup < 0:
    args.warmup = min(args.closures // 4, 2000)
  try:
    args.worker_counts = sorted({int(x) for x in args.workers.split(",") if x.strip()})
  except ValueError:
    p.error(f"--workers: not a list of integers: {args.workers}")
  if not args.worker_counts or min(args.worker_counts) < 1:
    p.error("--workers: counts must be >= 1")
  return drive(args)


if __name__ == "__main__":
  sys.exit(main())
