// The environment contract between whoever starts a job's processes (the operator for pods,
// `tjctl run` for local processes) and the runtime inside them (tj-train and programs built on the
// SDK). jobcontrol/replica_env.h renders it from a TrainingJob; trainer/sdk/job_settings.h reads it.
// Names are part of the API: renaming one breaks running jobs.
#pragma once

namespace tj::v1alpha1::env {

// TensorFlow's cluster description: the coordinator is "chief".
inline constexpr char kTfConfig[] = "TF_CONFIG";

// Who this process is.
inline constexpr char kJobName[] = "TJ_JOB_NAME";
inline constexpr char kJobNamespace[] = "TJ_JOB_NAMESPACE";
inline constexpr char kReplicaType[] = "TJ_REPLICA_TYPE";  // Coordinator, PS, Worker
inline constexpr char kReplicaIndex[] = "TJ_REPLICA_INDEX";
inline constexpr char kReplicaName[] = "TJ_REPLICA_NAME";  // <job>-<type>-<index>

// spec.checkpoint; TJ_CHECKPOINT_DIR is absent when the job keeps no checkpoints.
inline constexpr char kCheckpointDir[] = "TJ_CHECKPOINT_DIR";
inline constexpr char kCheckpointIntervalSteps[] = "TJ_CHECKPOINT_INTERVAL_STEPS";
inline constexpr char kCheckpointKeep[] = "TJ_CHECKPOINT_KEEP";
// Incremental checkpoints: every this many checkpoints is full, the others hold only the embedding
// rows changed since the checkpoint before (1: every checkpoint full).
inline constexpr char kCheckpointFullEvery[] = "TJ_CHECKPOINT_FULL_EVERY";
// With an s3://bucket/prefix TJ_CHECKPOINT_DIR (spec.checkpoint.s3; the operator sets them on the
// coordinator and every PS, which write the bucket): the endpoint (http(s)://host[:port]), the
// region SigV4 signs with, the credentials Secret ("<namespace>/<name>", named in errors about
// refused credentials) and the access key pair, from that Secret by secretKeyRef (AWS's names).
// coordinator/checkpoint/s3_location.h (S3OptionsFromEnv) reads them.
inline constexpr char kS3Endpoint[] = "TJ_S3_ENDPOINT";
inline constexpr char kS3Region[] = "TJ_S3_REGION";
inline constexpr char kS3CredentialsSecret[] = "TJ_S3_CREDENTIALS_SECRET";
inline constexpr char kAwsAccessKeyId[] = "AWS_ACCESS_KEY_ID";
inline constexpr char kAwsSecretAccessKey[] = "AWS_SECRET_ACCESS_KEY";
// How long the coordinator waits for a parameter server saving or restoring its checkpoint shard
// to report progress before it takes the PS for lost (default 60). A save has no total deadline.
// Not rendered by the operator: set it in the coordinator's pod template when needed.
inline constexpr char kCheckpointStallTimeoutSeconds[] = "TJ_CHECKPOINT_STALL_TIMEOUT_SECONDS";

// spec.faultTolerance: the exit code a coordinator uses to ask for a restart (the first of
// restartExitCodes), and the ClusterCoordinator's tolerances.
inline constexpr char kRestartExitCode[] = "TJ_RESTART_EXIT_CODE";
inline constexpr char kWorkerRecoveryTimeoutSeconds[] = "TJ_WORKER_RECOVERY_TIMEOUT_SECONDS";
inline constexpr char kTransientPsFailureThreshold[] = "TJ_TRANSIENT_PS_FAILURE_THRESHOLD";

// spec.preemption.
inline constexpr char kPreemptionGracePeriodSeconds[] = "TJ_PREEMPTION_GRACE_PERIOD_SECONDS";

// Where the coordinator serves Prometheus metrics (GET /metrics), "host:port" or ":port"; unset:
// no metrics endpoint.
inline constexpr char kMetricsAddress[] = "TJ_METRICS_ADDRESS";

// Local runs only (`tjctl run`): where the coordinator writes its progress JSON for the terminal
// display and the status file (trainer/sdk/progress.h has the format).
inline constexpr char kProgressFile[] = "TJ_PROGRESS_FILE";

// On a cluster (set by the operator): the coordinator's Coordination service, "host:port" (the
// chief's address in TF_CONFIG), where preemption notices go, e.g. from a preStop hook.
inline constexpr char kCoordinatorAddress[] = "TJ_COORDINATOR_ADDRESS";
// The coordinator only, when its Coordination service is not on the trainer port
// (coordination_port.h: a TensorFlow chief's): where it listens, ":<port>" on a cluster,
// "127.0.0.1:<port>" under `tjctl run`. Unset: on the trainer port.
inline constexpr char kCoordinationAddress[] = "TJ_COORDINATION_ADDRESS";
// On a cluster (set by the operator from the downward API, status.podIP): the pod's own IP. A
// replica whose TF_CONFIG address is a DNS name listens on it rather than on every address, so
// pods that share a network (a test node agent, hostNetwork) do not collide on the port.
inline constexpr char kPodIp[] = "TJ_POD_IP";
// The process's role credential file and the verifiers of every role's credential (the mounted
// Secret's keys); coordinator/base/job_token.h reads them.
inline constexpr char kTokenFile[] = "TJ_TOKEN_FILE";
inline constexpr char kTokenVerifiersFile[] = "TJ_TOKEN_VERIFIERS_FILE";
// The directory of the process's TLS material (ca.crt, tls.crt, tls.key), coordinator/base/job_tls.h:
// every server then requires TLS with a client certificate of the job's CA.
inline constexpr char kTlsDir[] = "TJ_TLS_DIR";
// The coordinator only: its generation, above every earlier coordinator's of the job, which
// parameter servers, workers and the checkpoint store use to refuse an older coordinator
// (coordinator/base/coordinator_generation.h).
inline constexpr char kCoordinatorGeneration[] = "TJ_COORDINATOR_GENERATION";

}  // namespace tj::v1alpha1::env
