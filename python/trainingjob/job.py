"""The environment contract of api/v1alpha1/runtime_env.h, as the operator and `tjctl run` render it.

Names are part of the API; they must match runtime_env.h.
"""
import dataclasses
import json
import os
from typing import Optional

TF_CONFIG = "TF_CONFIG"
REPLICA_TYPE = "TJ_REPLICA_TYPE"
REPLICA_INDEX = "TJ_REPLICA_INDEX"
JOB_NAME = "TJ_JOB_NAME"
CHECKPOINT_DIR = "TJ_CHECKPOINT_DIR"
CHECKPOINT_KEEP = "TJ_CHECKPOINT_KEEP"
CHECKPOINT_INTERVAL_STEPS = "TJ_CHECKPOINT_INTERVAL_STEPS"
RESTART_EXIT_CODE = "TJ_RESTART_EXIT_CODE"
PREEMPTION_GRACE_PERIOD_SECONDS = "TJ_PREEMPTION_GRACE_PERIOD_SECONDS"
METRICS_ADDRESS = "TJ_METRICS_ADDRESS"
PROGRESS_FILE = "TJ_PROGRESS_FILE"
COORDINATION_ADDRESS = "TJ_COORDINATION_ADDRESS"
COORDINATOR_ADDRESS = "TJ_COORDINATOR_ADDRESS"  # the others' way to the coordinator's
TOKEN_FILE = "TJ_TOKEN_FILE"
TOKEN = "TJ_TOKEN"
TOKEN_VERIFIERS_FILE = "TJ_TOKEN_VERIFIERS_FILE"
TLS_DIR = "TJ_TLS_DIR"
POD_IP = "TJ_POD_IP"

# The restart exit code when the job renders none (spec.faultTolerance.restartExitCodes' default).
DEFAULT_RESTART_EXIT_CODE = 42


class NotInTrainingJob(RuntimeError):
    """The process was not started by the operator or `tjctl run` (no TF_CONFIG or no job token)."""


@dataclasses.dataclass(frozen=True)
class JobEnvironment:
    job_name: str
    task_type: str  # TF_CONFIG's: "chief", "ps", "worker"
    task_index: int
    num_ps: int
    num_workers: int
    restart_exit_code: int
    checkpoint_dir: Optional[str]
    checkpoint_keep: int
    checkpoint_interval_steps: int  # 0: no periodic checkpoints
    grace_period_seconds: float
    coordination_address: Optional[str]  # where this chief serves the Coordination service
    progress_file: Optional[str]
    metrics_address: Optional[str]
    token_file: Optional[str]
    verifiers_file: Optional[str]
    tls_dir: Optional[str]


def _int(environ, name, default):
    text = environ.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer") from None


def load(environ=None) -> JobEnvironment:
    """Reads the job's environment; NotInTrainingJob naming what is missing outside a job."""
    environ = os.environ if environ is None else environ
    text = environ.get(TF_CONFIG)
    if not text:
        raise NotInTrainingJob(f"{TF_CONFIG} is not set: not a replica of a TrainingJob")
    try:
        config = json.loads(text)
        cluster = config["cluster"]
        task = config["task"]
        task_type, task_index = str(task["type"]), int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{TF_CONFIG} is not a TensorFlow cluster description: {error}") from None
    if not (environ.get(TOKEN_FILE) or environ.get(TOKEN)):
        raise NotInTrainingJob(
            f"neither {TOKEN_FILE} nor {TOKEN} is set: the job's credentials are missing "
            "(the operator and `tjctl run` set them)")
    return JobEnvironment(
        job_name=environ.get(JOB_NAME, ""),
        task_type=task_type,
        task_index=task_index,
        num_ps=len(cluster.get("ps", [])),
        num_workers=len(cluster.get("worker", [])),
        restart_exit_code=_int(environ, RESTART_EXIT_CODE, DEFAULT_RESTART_EXIT_CODE),
        checkpoint_dir=environ.get(CHECKPOINT_DIR) or None,
        checkpoint_keep=_int(environ, CHECKPOINT_KEEP, 3),
        checkpoint_interval_steps=_int(environ, CHECKPOINT_INTERVAL_STEPS, 0),
        grace_period_seconds=float(_int(environ, PREEMPTION_GRACE_PERIOD_SECONDS, 0)),
        coordination_address=environ.get(COORDINATION_ADDRESS) or None,
        progress_file=environ.get(PROGRESS_FILE) or None,
        metrics_address=environ.get(METRICS_ADDRESS) or None,
        token_file=environ.get(TOKEN_FILE) or None,
        verifiers_file=environ.get(TOKEN_VERIFIERS_FILE) or None,
        tls_dir=environ.get(TLS_DIR) or None,
    )
