"""PS and worker processes of a TensorFlow program: TensorFlow's server, and what SIGTERM means for
them in a TrainingJob.

A PS that dies at its SIGTERM takes the variables with it before the chief has saved them: an
evicted PS pod gets SIGTERM from the kubelet at the moment the operator's notice leaves for the
chief, and the chief's checkpoint then fails (a lost PS: a restart from the previous checkpoint).
tj-train's tasks keep serving until the coordinator is done (coordinator/coordination/
task_lifetime.h); `serve` does the same for TensorFlow's server: after the first SIGTERM or SIGINT
it serves on while the chief's Coordination service (TJ_COORDINATOR_ADDRESS) accepts connections,
at most `max_linger_seconds`, then dies of the signal as it would have. A second signal stops it at
once. The kubelet's SIGKILL at the end of the pod's grace period bounds the wait in any case.

A worker has nothing to lose (TensorFlow's coordinator reruns its closures elsewhere) and stops at
once (linger=False), as does any task outside a TrainingJob (no TJ_COORDINATOR_ADDRESS).
"""
import logging
import os
import signal
import socket
import threading
import time

from trainingjob import job

log = logging.getLogger("trainingjob")


def _split(address: str):
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def coordinator_answers(address: str, timeout: float = 2.0) -> bool:
    """The chief's Coordination service accepts a TCP connection (its process is there). A name
    that no longer resolves (its pod ended and left the job's Service) counts as gone."""
    try:
        with socket.create_connection(_split(address), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def serve(server=None, linger: bool = True, environ=None, max_linger_seconds: float = 300.0,
          poll_seconds: float = 1.0) -> None:
    """Keeps `server` (a started tf.distribute.Server) serving until the process is signalled; see
    the module's documentation. Does not return: the process dies of the signal it got."""
    del server  # TensorFlow's server serves from its own threads; holding it keeps it alive.
    environ = os.environ if environ is None else environ
    coordinator = environ.get(job.COORDINATOR_ADDRESS) or None
    signals = []
    arrived = threading.Event()

    def on_signal(number, _frame):
        signals.append(number)
        arrived.set()

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, on_signal)
    log.info("serving until SIGTERM or SIGINT (the coordinator: %s)", coordinator or "none")
    while not arrived.wait(poll_seconds):
        pass
    arrived.clear()
    first = signals[0]
    name = signal.Signals(first).name
    if not linger:
        log.info("%s: stopping", name)
    elif coordinator is None:
        log.info("%s: not in a TrainingJob (no %s): stopping now", name, job.COORDINATOR_ADDRESS)
    elif not coordinator_answers(coordinator):
        log.info("%s: the coordinator at %s does not answer: stopping now", name, coordinator)
    else:
        log.info("%s: serving until the coordinator at %s is done (at most %.0f s)", name,
                 coordinator, max_linger_seconds)
        give_up = time.monotonic() + max_linger_seconds
        while True:
            arrived.wait(poll_seconds)
            arrived.clear()
            if len(signals) > 1:
                log.info("%s again: stopping now", signal.Signals(signals[-1]).name)
                break
            if not coordinator_answers(coordinator):
                log.info("the coordinator at %s is done: stopping", coordinator)
                break
            if time.monotonic() >= give_up:
                log.warning("the coordinator at %s still answers after %.0f s: stopping anyway",
                            coordinator, max_linger_seconds)
                break
    _die_of(first)


def _die_of(number: int) -> None:
    """Ends the process by the signal's default action, so its exit status is what it would have
    been without `serve` (143 for SIGTERM)."""
    logging.shutdown()
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    os._exit(128 + number)  # not reached: the default action ends the process on delivery
