"""Which TensorFlow errors mean a lost parameter server, and turning them into the restart exit.

TensorFlow's ClusterCoordinator reruns closures of a lost worker itself but raises a lost PS's
error from schedule/join/fetch: UnavailableError naming /job:ps, and, once the PS is back
empty, errors about its missing variables (NotFound, FailedPrecondition) naming /job:ps. The
variables live only on the PS, so the only way on is a restart from the last checkpoint.
"""
import logging
import os
import sys
import threading

log = logging.getLogger("trainingjob")

_PS_MARKERS = ("/job:ps", "job:ps/")


def is_ps_failure(error: BaseException) -> bool:
    import tensorflow as tf

    if isinstance(error, tf.errors.UnavailableError):
        return True
    if isinstance(error, tf.errors.OpError):
        return any(marker in str(error) for marker in _PS_MARKERS)
    return False


def exit_now(code: int, why: str, flush=None):
    """Leaves the process with `code` at once: TensorFlow's threads must not hold it back."""
    log.error("exiting with code %d: %s", code, why)
    if flush is not None:
        try:
            flush()
        except Exception:  # noqa: BLE001 (the exit must happen)
            log.exception("flushing the progress before the exit failed")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def install_excepthook(code: int, flush=None):
    """An uncaught PS failure anywhere (the program's own join() or fetch()) becomes the restart
    exit code rather than exit 1, which the operator takes for a permanent failure."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        if value is not None and is_ps_failure(value):
            previous(kind, value, traceback)
            exit_now(code, f"a parameter server was lost ({kind.__name__})", flush)
        previous(kind, value, traceback)

    sys.excepthook = hook
    previous_thread_hook = threading.excepthook

    def thread_hook(args):
        previous_thread_hook(args)
        if args.exc_value is not None and is_ps_failure(args.exc_value):
            exit_now(code, f"a parameter server was lost ({args.exc_type.__name__}) in thread "
                           f"{args.thread.name if args.thread else '?'}", flush)

    threading.excepthook = thread_hook
