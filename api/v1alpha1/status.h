// TrainingJobStatus: what the operator reports through the status subresource (conditions,
// per-replica-type counts, progress, restart counts). Plain data; the operator fills it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/goodput.h"

namespace tj::v1alpha1 {

// kStuck is True while a pod of the job cannot start on its own (unschedulable, its image cannot be
// pulled, its container cannot be created); kCheckpointFailing while the coordinator's newest
// checkpoint save failed on its storage and training went on. Both report beside the phase and
// never set `state`.
enum class ConditionType {
  kCreated,
  kRunning,
  kRestarting,
  kSucceeded,
  kFailed,
  kSuspended,
  kStuck,
  kCheckpointFailing,
};
enum class ConditionStatus { kTrue, kFalse, kUnknown };

std::string_view ConditionTypeName(ConditionType type);
// Whether the condition reports beside the phase (Stuck, CheckpointFailing) rather than being one.
inline bool BesideThePhase(ConditionType type) {
  return type == ConditionType::kStuck || type == ConditionType::kCheckpointFailing;
}
std::optional<ConditionType> ParseConditionType(std::string_view name);
std::vector<std::string_view> ConditionTypeNames();
std::string_view ConditionStatusName(ConditionStatus status);
std::optional<ConditionStatus> ParseConditionStatus(std::string_view name);

struct JobCondition {
  ConditionType type = ConditionType::kCreated;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;   // CamelCase, e.g. "BackoffLimitExceeded"
  std::string message;  // for people
  std::optional<absl::Time> last_transition_time;

  friend bool operator==(const JobCondition&, const JobCondition&) = default;
};

struct ReplicaStatus {
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  int32_t restarts = 0;
  // Of those, the ones counted toward backoffLimit and this type's restartLimit. Absent in the
  // statuses of operators before restartLimit: read as 0.
  int32_t counted_restarts = 0;

  friend bool operator==(const ReplicaStatus&, const ReplicaStatus&) = default;
};

struct TrainingJobStatus {
  // The type of the latest True condition ("Running"): what `kubectl get tj` shows as State.
  std::string state;
  std::vector<JobCondition> conditions;
  std::map<ReplicaType, ReplicaStatus> replica_statuses;
  std::optional<int64_t> step;  // last training step the coordinator reported
  std::optional<int64_t> last_checkpoint_step;  // step of the newest checkpoint it reported
  // The label selector of the job's worker pods, for the scale subresource (HPA, kubectl scale).
  std::string worker_selector;
  int32_t preemptions = 0;  // disruptions (notices) the operator handled
  std::optional<absl::Time> start_time;
  std::optional<absl::Time> completion_time;
  int32_t restart_count = 0;         // restarts counted against runPolicy.backoffLimit
  int32_t coordinator_restarts = 0;  // of which the coordinator's (restored from checkpoint)
  std::optional<int64_t> observed_generation;
  // Goodput over the job's coordinators (jobcontrol/goodput.h): the productive share of the wall
  // time (status.goodput, 0 to 1), the totals by cause (status.goodputSeconds) and the account
  // they come from (status.goodputAccount: the runs before the last and the last one's report,
  // what carries the totals across coordinator restarts). Absent until a coordinator reported
  // one, and in a status written by an operator older than session 10.
  std::optional<double> goodput;
  std::optional<TimeSplit> goodput_seconds;
  std::optional<JobGoodput> goodput_account;

  friend bool operator==(const TrainingJobStatus&, const TrainingJobStatus&) = default;
};

}  // namespace tj::v1alpha1
