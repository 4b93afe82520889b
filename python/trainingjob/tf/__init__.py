"""TensorFlow ParameterServerStrategy programs under trainingjob-operator.

    import trainingjob.tf
    handler = trainingjob.tf.PreemptionCheckpointHandler(coordinator, checkpoint, total_steps=N)
    while handler.total_run_calls < N:
        handler.run(coordinator.schedule, train_step, args=(iterator,))

    # PS and workers: TensorFlow's server; an evicted PS serves on until the chief has saved.
    trainingjob.tf.serve(tf.distribute.Server(...), linger=task_type == "ps")
"""
from trainingjob.tf.failures import is_ps_failure
from trainingjob.tf.handler import PreemptionCheckpointHandler
from trainingjob.tf.serving import serve

__all__ = ["PreemptionCheckpointHandler", "is_ps_failure", "serve"]
