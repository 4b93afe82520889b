"""A TensorFlow ParameterServerStrategy job (examples/tf-ctr/ctr_pss.py, tiny) run by the real
`tjctl run`, for the tests of the `trainingjob` package: manifest, waits on the run's own files,
and the checkpointed run counter."""
import json
import os
import pathlib
import signal
import subprocess
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAM = REPO / "examples" / "tf-ctr" / "ctr_pss.py"
JOB = "tf-ctr"


def tjctl() -> str:
    path = os.environ.get("TJCTL", str(REPO / "build" / "bin" / "tjctl"))
    if not os.path.exists(path):
        raise RuntimeError(f"tjctl not found at {path} (set TJCTL or build it)")
    return path


def manifest(python: str, steps: int, interval_steps: int, grace_seconds: int = 0,
             step_sleep_ms: int = 0) -> str:
    args = [f"--steps={steps}", f"--step-sleep-ms={step_sleep_ms}", "--batch=64", "--vocab=100", "--id-space=4096", "--dim=4",
            "--examples=20000", "--report-every=5", "--eval-examples=512"]
    command = json.dumps([python, str(PROGRAM)])
    return f"""
apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata: {{name: {JOB}}}
spec:
  replicaSpecs:
    Coordinator:
      replicas: 1
      template:
        spec:
          containers:
            - name: trainer
              command: {command}
              args: {json.dumps(args)}
              ports: [{{name: tj-coordination, containerPort: 2223}}]
    PS:
      replicas: 1
      template: {{spec: {{containers: [{{name: trainer, command: {command}}}]}}}}
    Worker:
      replicas: 2
      template: {{spec: {{containers: [{{name: trainer, command: {command}}}]}}}}
  runPolicy: {{backoffLimit: 6, activeDeadlineSeconds: 900}}
  preemption: {{gracePeriodSeconds: {grace_seconds}}}
  checkpoint: {{dir: /unused-locally, intervalSteps: {interval_steps}}}
"""


def read_json(path: pathlib.Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class Run:
    """`tjctl run` of the job in `work_dir`, started at construction."""

    def __init__(self, work_dir: pathlib.Path, python: str, steps: int, interval_steps: int,
                 grace_seconds: int = 0, step_sleep_ms: int = 0):
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        path = work_dir.parent / f"{work_dir.name}.yaml"
        path.write_text(manifest(python, steps, interval_steps, grace_seconds, step_sleep_ms))
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.process = subprocess.Popen(
            [tjctl(), "run", "-q", "--work-dir", str(work_dir), str(path)], cwd=REPO, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def status(self):
        return read_json(self.work_dir / "status.json")

    def progress(self):
        return read_json(self.work_dir / "progress.json")

    def wait_for(self, what: str, condition, timeout: float = 600):
        """Polls the run's files until `condition()` holds; fails naming `what` and the logs."""
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            if condition():
                return
            if self.process.poll() is not None:
                raise AssertionError(f"tjctl run exited ({self.process.returncode}) before {what}: "
                                     f"{self.process.stdout.read()}\n{self.logs()}")
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")

    def wait_for_step(self, step: int):
        def reached():
            progress = self.progress()
            return progress is not None and progress.get("step", 0) >= step
        self.wait_for(f"step {step}", reached)

    def replica(self, name: str) -> dict:
        return self.status()["replicas"][f"{JOB}-{name}"]

    def preempt(self, replica: str) -> str:
        done = subprocess.run([tjctl(), "preempt", JOB, replica, "--work-dir", str(self.work_dir)],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"tjctl preempt {replica}: {done.returncode}\n{done.stdout}"
                                 f"{done.stderr}")
        return done.stdout

    def kill(self, replica: str):
        pid = self.replica(replica)["pid"]
        os.kill(pid, signal.SIGKILL)

    def finish(self, timeout: float = 900) -> int:
        try:
            output, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGINT)
            output, _ = self.process.communicate(timeout=60)
            raise AssertionError(f"tjctl run did not finish in {timeout} s\n{output}\n{self.logs()}")
        self.output = output
        return self.process.returncode

    def logs(self) -> str:
        out = []
        for path in sorted((self.work_dir / "logs").glob("*.log")):
            lines = path.read_text(errors="replace").splitlines()
            out.append(f"--- {path.name} (last 40 lines)\n" + "\n".join(lines[-40:]))
        return "\n".join(out)

    def checkpointed_run_calls(self) -> int:
        """tj_total_run_calls in the newest checkpoint, read with TensorFlow."""
        import tensorflow as tf

        latest = tf.train.latest_checkpoint(str(self.work_dir / "checkpoints"))
        if latest is None:
            raise AssertionError(f"no checkpoint in {self.work_dir / 'checkpoints'}")
        return int(tf.train.load_variable(latest, "tj_total_run_calls/.ATTRIBUTES/VARIABLE_VALUE"))
