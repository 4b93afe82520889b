"""PreemptionCheckpointHandler for TensorFlow ParameterServerStrategy programs (TensorFlow's own
refuses PS clusters), with the API of tf.distribute.experimental.PreemptionCheckpointHandler:
run(fn, *args, **kwargs), total_run_calls, watch_preemption_scope(), save_checkpoint_if_preempted().

On the chief it restores the newest checkpoint (total_run_calls continues exactly), serves the
job's Coordination service on TJ_COORDINATION_ADDRESS (notices from the operator and `tjctl
preempt`; progress for `kubectl get tj`), writes progress where tj-train does, checkpoints at the
next run boundary after a chief/PS notice or SIGTERM and exits with the job's restart code, and
turns a lost PS into that exit code too. Rules of the notices: trainingjob/notices.py.
"""
import contextlib
import logging
import signal
import threading
import time
from typing import Dict, Optional

from trainingjob import job
from trainingjob.notices import Action, NoticePolicy
from trainingjob.progress import Progress, serve_metrics
from trainingjob.tf.failures import exit_now, install_excepthook, is_ps_failure

log = logging.getLogger("trainingjob")

COUNTER_NAME = "tj_total_run_calls"  # the checkpoint's key of the run counter


def _coordinator_of(strategy_or_coordinator):
    import tensorflow as tf

    coordinator_type = tf.distribute.experimental.coordinator.ClusterCoordinator
    if isinstance(strategy_or_coordinator, coordinator_type):
        return strategy_or_coordinator
    if isinstance(strategy_or_coordinator, tf.distribute.experimental.ParameterServerStrategy):
        # ClusterCoordinator(strategy) hands back the strategy's coordinator when it has one.
        return coordinator_type(strategy_or_coordinator)
    raise TypeError(
        "trainingjob.tf.PreemptionCheckpointHandler is for ParameterServerStrategy programs: give "
        "it the tf.distribute.experimental.ParameterServerStrategy or its ClusterCoordinator, not "
        f"{type(strategy_or_coordinator).__name__} (other strategies: use "
        "tf.distribute.experimental.PreemptionCheckpointHandler)")


class PreemptionCheckpointHandler:
    def __init__(self, strategy_or_coordinator, checkpoint, checkpoint_dir: Optional[str] = None,
                 termination_config=None, total_steps: Optional[int] = None,
                 examples_per_step: Optional[int] = None, environ=None):
        import tensorflow as tf

        self._tf = tf
        self._coordinator = _coordinator_of(strategy_or_coordinator)
        if checkpoint is None or not isinstance(checkpoint, tf.train.Checkpoint):
            raise TypeError("PreemptionCheckpointHandler needs the program's tf.train.Checkpoint "
                            f"(got {type(checkpoint).__name__}): what it saves and restores")
        try:
            self._env = job.load(environ)
            self._in_job = True
        except job.NotInTrainingJob as why:
            # Documented fallback: outside a TrainingJob only SIGTERM is handled.
            log.warning("%s: not in a TrainingJob; only SIGTERM triggers a preemption checkpoint "
                        "(no notices, no progress reporting)", why)
            self._env = None
            self._in_job = False
        if self._in_job and self._env.task_type != "chief":
            raise RuntimeError(
                f"PreemptionCheckpointHandler runs on the chief (the coordinator); this process is "
                f"TF_CONFIG's {self._env.task_type}:{self._env.task_index}")
        directory = checkpoint_dir or (self._env.checkpoint_dir if self._env else None)
        if not directory:
            raise ValueError(
                "PreemptionCheckpointHandler has nowhere to checkpoint: the TrainingJob has no "
                "spec.checkpoint.dir (TJ_CHECKPOINT_DIR is unset) and no checkpoint_dir was given")
        if termination_config is not None and getattr(termination_config, "grace_period", None):
            grace = float(termination_config.grace_period)
        else:
            grace = self._env.grace_period_seconds if self._env else 0.0
        self._restart_code = (self._env.restart_exit_code if self._env
                              else job.DEFAULT_RESTART_EXIT_CODE)
        self._total_steps = total_steps
        self._examples_per_step = examples_per_step
        self._interval_steps = 0
        if self._in_job:
            self._interval_steps = self._env.checkpoint_interval_steps

        self._server = None
        publish = None
        if self._in_job and self._env.coordination_address:
            from trainingjob.coordination import CoordinationServer
            from trainingjob.credentials import Authenticator

            auth = Authenticator.from_files(self._env.token_file, self._env.verifiers_file)
            self._server = CoordinationServer(self._env.coordination_address, auth, self._notice,
                                              self._env.tls_dir)
            publish = self._server.publish
        elif self._in_job:
            log.warning(
                "TJ_COORDINATION_ADDRESS is unset: the Coordinator's container declares no port "
                "named tj-coordination, so notices from the operator and `tjctl preempt` reach "
                "TensorFlow's server and fail; only SIGTERM triggers a preemption checkpoint")
        self._progress = Progress(self._env.progress_file if self._env else None, publish)
        if self._in_job and self._env.metrics_address:
            serve_metrics(self._env.metrics_address, self._progress)
        num_workers = self._env.num_workers if self._env else 0
        num_ps = self._env.num_ps if self._env else 0
        self._policy = NoticePolicy(num_workers, num_ps, grace, self._restart_code,
                                    self._progress.event)

        # On the chief, never on a PS: the counter must be readable while a PS is gone.
        placement = (tf.device("/job:chief/replica:0/task:0/device:CPU:0") if self._in_job
                     else contextlib.nullcontext())
        with placement:
            self._counter = tf.Variable(0, dtype=tf.int64, trainable=False, name=COUNTER_NAME)
        self._checkpoint = tf.train.Checkpoint(program=checkpoint, **{COUNTER_NAME: self._counter})
        keep = self._env.checkpoint_keep if self._env else 3
        self._manager = tf.train.CheckpointManager(self._checkpoint, directory, max_to_keep=keep)
        self._total = 0
        self._restore()
        self._rate_mark = (time.monotonic(), self._total)
        install_excepthook(self._restart_code, self._progress.flush)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
        self._progress.update(flush=True, state="training", step=self._total,
                              totalSteps=total_steps or 0)

    # --- TensorFlow's API -------------------------------------------------------------------
    @property
    def total_run_calls(self) -> int:
        """run() calls so far, across restarts (restored from the checkpoint)."""
        return self._total

    def run(self, distributed_train_function, *args, **kwargs):
        """Calls the function (which schedules the step's closures), counts the call, and at this
        boundary saves and exits when a notice asks for it."""
        with self.watch_preemption_scope():
            result = distributed_train_function(*args, **kwargs)
        self._total += 1
        self._after_step()
        return result

    @contextlib.contextmanager
    def watch_preemption_scope(self):
        """PS-loss errors raised inside become the restart exit (TensorFlow's handler turns its
        preemption errors into an exit the same way)."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 (re-raised unless a PS failure)
            if is_ps_failure(error):
                self._ps_lost(error)
            raise

    def save_checkpoint_if_preempted(self, *args, **kwargs):
        """For loops that count steps themselves: the boundary check of run() without counting."""
        del args, kwargs
        self._maybe_preempt()

    # --- Progress ---------------------------------------------------------------------------
    def report(self, loss: Optional[float] = None, metrics: Optional[Dict[str, float]] = None,
               epoch: Optional[int] = None):
        """The program's own numbers for the status, `tjctl run`'s display and /metrics."""
        fields = {}
        if loss is not None:
            fields["loss"] = float(loss)
        if metrics is not None:
            fields["metrics"] = metrics
        if epoch is not None:
            fields["epoch"] = int(epoch)
        self._progress.update(flush=metrics is not None, **fields)

    def progress(self) -> dict:
        return self._progress.snapshot()

    # --- Internals --------------------------------------------------------------------------
    def _notice(self, task_type, index, reason, deadline):
        return self._policy.notice(task_type, index, reason, deadline)

    def _on_sigterm(self, signum, frame):
        del signum, frame
        self._policy.notice("chief", 0, "SIGTERM", None)

    def _restore(self):
        latest = self._manager.latest_checkpoint
        if latest is None:
            log.info("no checkpoint in %s: training starts at step 0", self._manager.directory)
            return
        self._progress.update(flush=True, state="restoring")
        with self.watch_preemption_scope():
            self._checkpoint.restore(latest)
        self._total = int(self._counter.numpy())
        log.info("restored %s: total_run_calls %d", latest, self._total)
        self._progress.update(flush=True, restoredFromStep=self._total, lastCheckpointStep=self._total)

    def _after_step(self):
        now = time.monotonic()
        fields = {"step": self._total}
        mark_time, mark_step = self._rate_mark
        if self._examples_per_step and now - mark_time >= 1.0:
            fields["examplesPerSecond"] = ((self._total - mark_step) * self._examples_per_step /
                                           (now - mark_time))
            self._rate_mark = (now, self._total)
        self._progress.update(**fields)
        if self._policy.requested.is_set():
            self._maybe_preempt()
        if self._total_steps is not None and self._total == self._total_steps:
            self._save("final")
            self._progress.update(flush=True, state="succeeded", message="training finished")
        elif self._interval_steps > 0 and self._total % self._interval_steps == 0:
            self._save("periodic")

    def _maybe_preempt(self):
        if not self._policy.requested.is_set() or self._policy.at_boundary() != Action.SAVE:
            return
        took = self._save(f"preemption ({self._policy.leader})")
        if self._policy.checkpoint_done(took):
            self._progress.event(f"exit {self._restart_code} for a restart after the checkpoint "
                                 f"of step {self._total}", "tj_preemption_events_total")
            exit_now(self._restart_code, f"preempted ({self._policy.leader})",
                     self._progress.flush)
        self._progress.event(f"training on until the final checkpoint before the deadline "
                             f"(a checkpoint takes {took:.2f} s)")

    def _save(self, why: str) -> float:
        start = time.monotonic()
        self._progress.update(flush=True, state="checkpointing")
        with self.watch_preemption_scope():
            self._coordinator.join()  # every scheduled step done: the counter is exact
            self._counter.assign(self._total)
            path = self._manager.save(checkpoint_number=self._total)
        took = time.monotonic() - start
        log.info("checkpoint %s at step %d (%s, %.2f s)", path, self._total, why, took)
        self._progress.update(flush=True, state="training", lastCheckpointStep=self._total)
        return took

    def _ps_lost(self, error):
        self._progress.event(f"a parameter server was lost ({type(error).__name__}): exit "
                             f"{self._restart_code} to restart from the last checkpoint",
                             "tj_coordinator_ps_failures_total")
        exit_now(self._restart_code, f"a parameter server was lost: {error}".splitlines()[0],
                 self._progress.flush)
