"""trainingjob: what a program running under trainingjob-operator needs from the job.

`trainingjob.tf` adapts TensorFlow ParameterServerStrategy programs (PreemptionCheckpointHandler);
`trainingjob.job` reads the environment the operator and `tjctl run` render; `trainingjob.coordination`
serves the job's Coordination service (preemption notices, progress) beside TensorFlow's server.
"""

__version__ = "0.1.0"
