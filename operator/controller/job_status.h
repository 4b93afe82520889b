// The job's next status from what a reconcile observed and decided: conditions, replica counts,
// restart counters, times. Pure, so the same observation always yields the same status and an
// unchanged job is not written again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/status.h"
#include "jobcontrol/job_phase.h"
#include "operator/controller/observed_pod.h"

namespace tj::op {

// The reason of a False Created condition: the job's PodGroup could not be made.
inline constexpr char kPodGroupUnavailableReason[] = "PodGroupUnavailable";
// The reason of a False Created condition (and of its Warning Event): the job's checkpoint claim
// cannot serve (checkpoint_volume.h).
inline constexpr char kCheckpointVolumeUnavailableReason[] = "CheckpointVolumeUnavailable";
// The same for the job's checkpoint bucket (checkpoint_storage.h): its credentials Secret is
// missing or lacks a key, or the bucket is missing, refuses the credentials or does not answer.
// Also the reason of a True CheckpointFailing condition (and its Warning Event): a running
// coordinator's save failed on its storage and training went on.
inline constexpr char kCheckpointStorageUnavailableReason[] = "CheckpointStorageUnavailable";
// The reason of a False CheckpointFailing condition: a save succeeded after failed ones.
inline constexpr char kCheckpointSavedReason[] = "CheckpointSaved";
// The reason of a False Created condition: the API server refused to create a replica's object.
inline constexpr char kFailedCreateReason[] = "FailedCreate";

// Sets the condition of `type`: unchanged when status, reason and message already match; a
// changed message alone keeps the transition time; a new status or reason takes `now`. A
// condition becoming True moves to the end of the list, so the last True condition is the job's
// state (the CRD's State printer column reads `.status.conditions[-1:].type`).
void SetJobCondition(std::vector<v1alpha1::JobCondition>& conditions,
                     v1alpha1::ConditionType type, v1alpha1::ConditionStatus status,
                     const std::string& reason, const std::string& message, absl::Time now);

// The condition type that stands for a phase.
v1alpha1::ConditionType ConditionForPhase(JobPhase phase);

// True when the status says the job ended (Succeeded or Failed True).
bool JobFinished(const v1alpha1::TrainingJobStatus& status);

struct StatusUpdate {
  // The pods as observed this reconcile (restarted ones included, as they were).
  const std::vector<ObservedPod>* pods = nullptr;
  const JobDecision* decision = nullptr;
  std::optional<int64_t> generation;
  absl::Time now;
  std::string job_name;     // for status.workerSelector
  int32_t new_preemptions = 0;  // disruption signals first seen this reconcile
  // As the coordinator last reported them; unset: keep what the status has.
  std::optional<int64_t> step;
  std::optional<int64_t> last_checkpoint_step;
  // As the coordinator last reported it (TrainingProgress::checkpoint_error, access keys masked);
  // unset: no report, keep what the status has. Non-empty: CheckpointFailing True with reason
  // CheckpointStorageUnavailable and this message; empty: False (reason CheckpointSaved) when it
  // was True and last_checkpoint_step is past the status's (a save succeeded since), else kept.
  std::optional<std::string> checkpoint_error;
  // The coordinator's own time split, added to status.goodputAccount (MergeRun, jobcontrol/goodput.h).
  std::optional<v1alpha1::RunGoodput> goodput;
  // Non-empty: the job's PodGroup could not be made (its API is not installed, say), so no pod
  // is created; Created turns False with reason PodGroupUnavailable and this message. Empty:
  // Created is True (again, in place, once the PodGroup exists).
  std::string pod_group_problem;
  // Non-empty (and no pod_group_problem): the checkpoint claim cannot serve (missing, not
  // ReadWriteMany, being deleted), so no pod is created; Created turns False with reason
  // CheckpointVolumeUnavailable (checkpoint_volume.h) and this message.
  std::string checkpoint_volume_problem;
  // The same for the checkpoint bucket (spec.checkpoint.s3); reason CheckpointStorageUnavailable.
  std::string checkpoint_storage_problem;
  // Non-empty (and no pod_group_problem): creating the job's objects failed (the API server
  // rejected a pod: a quota, an invalid template); Created turns False with reason FailedCreate
  // and this message until a later create succeeds. The creates are retried.
  std::string create_failure;
  // Set: a pod cannot start on its own; Stuck is True with its reason and message. Unset: Stuck
  // turns False (reason PodsStarted) when it was True.
  const StuckJudgement* stuck = nullptr;
  // Pods whose creates this reconcile requested and the informers have not shown yet: counted
  // as active (client-go's job controller counts its successful creates the same way), so the
  // reconcile that then observes them Pending finds the status unchanged and writes nothing.
  std::vector<ReplicaKey> requested;
};

// previous + this reconcile. Created is True from the first reconcile on, unless the PodGroup
// is unavailable (above); the phase's own condition follows. replicaStatuses count active (pending
// or running), succeeded and failed pods per type, and add the restarts decided now to each type's
// restarts; coordinatorRestarts grows by the coordinator's restart; restartCount is the decision's.
v1alpha1::TrainingJobStatus NextJobStatus(const v1alpha1::TrainingJobStatus& previous,
                                          const StatusUpdate& update);

}  // namespace tj::op
