"""Driven by handler_bad_input_test.py: the handler misused, and used outside a TrainingJob.

    python handler_bad_input_program.py errors      # prints one line per refused use
    python handler_bad_input_program.py fallback DIR  # in-process PS cluster, no TF_CONFIG/token:
                                                    # trains, SIGTERMs itself, must exit 42
"""
import os
import signal
import socket
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
for name in list(os.environ):
    if name == "TF_CONFIG" or name.startswith("TJ_"):
        del os.environ[name]

import tensorflow as tf  # noqa: E402

import trainingjob.tf  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process_cluster():
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{free_port()}"],
                                 "ps": [f"127.0.0.1:{free_port()}"]})
    servers = [tf.distribute.Server(spec, job_name=job, task_index=0, protocol="grpc")
               for job in ("worker", "ps")]
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    return servers, strategy


def errors():
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    for what, call in [
        ("default strategy", lambda: trainingjob.tf.PreemptionCheckpointHandler(
            tf.distribute.get_strategy(), checkpoint, checkpoint_dir="/tmp/unused")),
        ("mirrored strategy", lambda: trainingjob.tf.PreemptionCheckpointHandler(
            tf.distribute.MirroredStrategy(), checkpoint, checkpoint_dir="/tmp/unused")),
    ]:
        try:
            call()
            print(f"{what}: ACCEPTED")
        except TypeError as error:
            print(f"{what}: TypeError: {error}")
    servers, strategy = in_process_cluster()
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    for what, call in [
        ("no checkpoint", lambda: trainingjob.tf.PreemptionCheckpointHandler(
            coordinator, None, checkpoint_dir="/tmp/unused")),
        ("no directory", lambda: trainingjob.tf.PreemptionCheckpointHandler(
            coordinator, checkpoint)),
    ]:
        try:
            call()
            print(f"{what}: ACCEPTED")
        except (TypeError, ValueError) as error:
            print(f"{what}: {type(error).__name__}: {error}")
    sys.stdout.flush()
    os._exit(0)  # the in-process servers never stop on their own


def fallback(directory):
    servers, strategy = in_process_cluster()
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        v = tf.Variable(0.0)

    @tf.function
    def step():
        v.assign_add(1.0)

    handler = trainingjob.tf.PreemptionCheckpointHandler(
        coordinator, tf.train.Checkpoint(v=v), checkpoint_dir=directory)
    print(f"restored total_run_calls {handler.total_run_calls}", flush=True)
    for _ in range(5):
        handler.run(coordinator.schedule, step)
    os.kill(os.getpid(), signal.SIGTERM)  # handled: saves at the next boundary, exits 42
    for _ in range(100):
        handler.run(coordinator.schedule, step)
    print("SIGTERM did not stop training", flush=True)
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1] == "errors":
        errors()
    else:
        fallback(sys.argv[2])
