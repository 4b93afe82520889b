// LaunchPlan: how `tjctl run` starts each replica of a job as a local process: the first
// container's command and args (with $(VAR) expanded), its env merged with the replica
// environment (TF_CONFIG, TJ_*: ours win), its log file and its stop grace period. Everything is
// checked here, before any process starts: every problem is a FieldError with its field path.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replica_env.h"
#include "jobcontrol/replicas.h"

namespace tj::local {

// A local stop waits at most this long for a replica to exit after SIGTERM, whatever the
// template's terminationGracePeriodSeconds (Kubernetes' default is also 30 s).
inline constexpr absl::Duration kMaxLocalGracePeriod = absl::Seconds(30);

// Where a local run keeps its files (absolute paths; nothing is created by planning).
struct RunPaths {
  std::string work_dir;
  std::string logs_dir;         // <work-dir>/logs
  std::string progress_file;    // <work-dir>/progress.json, TJ_PROGRESS_FILE
  std::string checkpoint_dir;   // <work-dir>/checkpoints or --checkpoint-dir; empty without
                                // spec.checkpoint
  std::string token_file;       // <work-dir>/job-token, the job's secret (for tjctl only); empty:
                                // the job runs open
  std::string credentials_dir;  // <work-dir>/credentials: one credential per role (job_roles.h)
                                // and the verifiers; each replica's TJ_TOKEN_FILE names its role's
  std::string tls_dir;          // <work-dir>/tls with --tls, TJ_TLS_DIR; empty: plaintext
};

// The job token variables (coordinator/base/job_token.h): TJ_TOKEN_FILE and
// TJ_TOKEN_VERIFIERS_FILE are set from RunPaths::credentials_dir; none is inherited from tjctl's
// own environment, nor is the coordinator's generation (set at each start of the coordinator).
inline constexpr char kTokenFileEnv[] = "TJ_TOKEN_FILE";
inline constexpr char kTokenEnv[] = "TJ_TOKEN";
inline constexpr char kTokenVerifiersFileEnv[] = "TJ_TOKEN_VERIFIERS_FILE";
inline constexpr char kCoordinatorGenerationEnv[] = "TJ_COORDINATOR_GENERATION";
inline constexpr char kTlsDirEnv[] = "TJ_TLS_DIR";

struct ReplicaLaunch {
  ReplicaKey key;
  std::string name;     // "<job>-<type>-<index>"
  std::string address;  // 127.0.0.1:<port>, the same for the whole run
  // The coordinator's Coordination service when the job declares a port for it
  // (v1alpha1::CoordinationPort: a TensorFlow chief), 127.0.0.1:<another port>; else empty and the
  // service is at `address`.
  std::string coordination_address;
  std::string binary;   // command[0], resolved to an absolute path
  std::vector<std::string> args;  // command[1:] then args
  EnvList env;                    // the container's env, then the replica environment
  std::string log_path;           // <logs_dir>/<name>.log
  absl::Duration grace_period = kMaxLocalGracePeriod;
  std::string command_line;  // binary and args, shell-quoted, for the log header
};

struct LaunchPlan {
  std::vector<ReplicaLaunch> replicas;  // in DesiredReplicas order (coordinator, PS, workers)
  std::vector<std::string> warnings;    // parts of the manifest that have no local meaning
  v1alpha1::FieldErrors errors;

  bool ok() const { return errors.empty(); }
};

// 127.0.0.1:<free port> for every replica, each port distinct and none in `taken`: a port just
// closed may be handed out again, and two replicas once got the same one.
ReplicaAddresses PickLocalAddresses(const v1alpha1::TrainingJob& job,
                                    const ReplicaAddresses& taken = {});

// `job` is defaulted and valid under the local rules (LoadTrainingJobFile with kLocal). A replica
// named in `metrics_addresses` gets it as TJ_METRICS_ADDRESS (over the template's own).
LaunchPlan PlanLocalLaunch(const v1alpha1::TrainingJob& job, const ReplicaAddresses& addresses,
                           const RunPaths& paths, const ReplicaAddresses& metrics_addresses = {});

// "a 'b c'": arguments quoted for a POSIX shell when they need it.
std::string ShellQuoteCommand(const std::string& binary, const std::vector<std::string>& args);

}  // namespace tj::local
