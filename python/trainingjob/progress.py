"""Training progress where tj-train's goes (api/v1alpha1/training_progress.h): the file
TJ_PROGRESS_FILE names (`tjctl run`'s display and status file, atomically replaced), the
Coordination service's "tj/progress" key (the operator's `kubectl get tj` and status), and the
Prometheus gauges of TJ_METRICS_ADDRESS's /metrics, with tj-train's metric names.
"""
import datetime
import http.server
import json
import logging
import os
import threading
import time
from typing import Dict, List, Optional

log = logging.getLogger("trainingjob")

PROGRESS_KEY = "tj/progress"
MAX_EVENTS = 20  # kMaxProgressEvents


def _now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """One job's progress. Thread-safe; writes are throttled to `interval` except flush()."""

    def __init__(self, progress_file: Optional[str], publish=None, interval: float = 1.0):
        self._file = progress_file
        self._publish = publish  # (key, bytes) -> None: the Coordination service's store
        self._interval = interval
        self._mu = threading.Lock()
        self._last_write = 0.0
        self._counters: Dict[str, float] = {}
        self._state = {"state": "starting", "step": 0, "totalSteps": 0, "epoch": 0,
                       "metrics": {}, "message": "", "updated": _now_rfc3339()}
        self._events: List[str] = []
        # A restarted coordinator keeps the job's story: the events of the runs before it.
        if progress_file and os.path.exists(progress_file):
            try:
                with open(progress_file) as previous:
                    events = json.load(previous).get("events", [])
                self._events = [e for e in events if isinstance(e, str)][-MAX_EVENTS:]
            except (OSError, ValueError, AttributeError):
                pass

    def update(self, flush: bool = False, **fields):
        """Sets fields by their JSON names (step, totalSteps, loss, examplesPerSecond, metrics,
        lastCheckpointStep, restoredFromStep, state, message)."""
        with self._mu:
            for name, value in fields.items():
                if value is None:
                    self._state.pop(name, None)
                elif name == "metrics":
                    self._state["metrics"] = {k: float(v) for k, v in value.items()}
                else:
                    self._state[name] = value
            due = flush or time.monotonic() - self._last_write >= self._interval
        if due:
            self.flush()

    def event(self, what: str, counter: Optional[str] = None):
        """A notable event (notice, decision, exit): logged, listed in the status, counted."""
        log.warning("%s", what)
        with self._mu:
            self._events.append(f"{_now_rfc3339()} {what}")
            del self._events[:-MAX_EVENTS]
            self._state["message"] = what
            if counter:
                self._counters[counter] = self._counters.get(counter, 0) + 1
        self.flush()

    def snapshot(self) -> dict:
        with self._mu:
            state = dict(self._state)
            state["metrics"] = dict(state["metrics"])
            if self._events:
                state["events"] = list(self._events)
            return state

    def counters(self) -> Dict[str, float]:
        with self._mu:
            return dict(self._counters)

    def flush(self):
        with self._mu:
            self._state["updated"] = _now_rfc3339()
            self._last_write = time.monotonic()
        data = json.dumps(self.snapshot(), separators=(",", ":")).encode()
        if self._publish is not None:
            self._publish(PROGRESS_KEY, data)
        if self._file:
            tmp = f"{self._file}.tmp.{os.getpid()}"
            try:
                with open(tmp, "wb") as out:
                    out.write(data)
                os.replace(tmp, self._file)
            except OSError as error:
                log.warning("cannot write the progress file %s: %s", self._file, error)

    def prometheus_text(self) -> str:
        p = self.snapshot()
        lines = []

        def gauge(name, help_text, value, labels=""):
            lines.append(f"# HELP {name} {help_text}\n# TYPE {name} gauge")
            lines.append(f"{name}{labels} {float(value)}")

        gauge("tj_training_step", "Training steps completed", p["step"])
        gauge("tj_training_total_steps", "The job's step goal", p["totalSteps"])
        gauge("tj_training_epoch", "Completed passes over the training data", p["epoch"])
        if "loss" in p:
            gauge("tj_training_loss", "Mean training loss, latest steps", p["loss"])
        if "examplesPerSecond" in p:
            gauge("tj_training_examples_per_second", "Training throughput",
                  p["examplesPerSecond"])
        if "lastCheckpointStep" in p:
            gauge("tj_checkpoint_last_step", "Step of the newest checkpoint",
                  p["lastCheckpointStep"])
        if "restoredFromStep" in p:
            gauge("tj_checkpoint_restored_from_step", "Step the run restored from",
                  p["restoredFromStep"])
        for name, value in sorted(p["metrics"].items()):
            gauge("tj_eval_metric", "Latest held-out evaluation", value, f'{{name="{name}"}}')
        for name, value in sorted(self.counters().items()):
            lines.append(f"# TYPE {name} counter\n{name} {value}")
        return "\n".join(lines) + "\n"


def serve_metrics(address: str, progress: Progress) -> http.server.ThreadingHTTPServer:
    """GET /metrics on "host:port" or ":port" (TJ_METRICS_ADDRESS), in a daemon thread."""
    host, _, port = address.rpartition(":")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served here")
                return
            body = progress.prometheus_text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    try:
        server = http.server.ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    except (OSError, ValueError) as error:
        raise RuntimeError(f"cannot serve /metrics on {address} (TJ_METRICS_ADDRESS): {error}")
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tj-metrics", daemon=True).start()
    return server
