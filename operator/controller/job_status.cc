#include "operator/controller/job_status.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/labels.h"
#include "jobcontrol/goodput.h"

namespace tj::op {

using v1alpha1::ConditionStatus;
using v1alpha1::ConditionType;
using v1alpha1::JobCondition;

void SetJobCondition(std::vector<JobCondition>& conditions, ConditionType type,
                     ConditionStatus status, const std::string& reason, const std::string& message,
                     absl::Time now) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const JobCondition& c) { return c.type == type; });
  // Stuck and CheckpointFailing report beside the phase and are never the state: they go first and
  // stay in place, so the last condition (the State column) is still the phase's.
  const bool beside_the_phase = v1alpha1::BesideThePhase(type);
  if (it == conditions.end()) {
    if (beside_the_phase) {
      conditions.insert(conditions.begin(), {type, status, reason, message, now});
    } else {
      conditions.push_back({type, status, reason, message, now});
    }
    return;
  }
  if (it->status == status && it->reason == reason) {
    it->message = message;
    return;
  }
  JobCondition updated{type, status, reason, message, now};
  if (status == ConditionStatus::kTrue && !beside_the_phase) {
    conditions.erase(it);
    conditions.push_back(std::move(updated));
  } else {
    *it = std::move(updated);
  }
}

ConditionType ConditionForPhase(JobPhase phase) {
  switch (phase) {
    case JobPhase::kCreated:
      return ConditionType::kCreated;
    case JobPhase::kRunning:
      return ConditionType::kRunning;
    case JobPhase::kRestarting:
      return ConditionType::kRestarting;
    case JobPhase::kSucceeded:
      return ConditionType::kSucceeded;
    case JobPhase::kFailed:
      return ConditionType::kFailed;
    case JobPhase::kSuspended:
      return ConditionType::kSuspended;
  }
  return ConditionType::kCreated;
}

bool JobFinished(const v1alpha1::TrainingJobStatus& status) {
  for (const JobCondition& c : status.conditions) {
    if ((c.type == ConditionType::kSucceeded || c.type == ConditionType::kFailed) &&
        c.status == ConditionStatus::kTrue) {
      return true;
    }
  }
  return false;
}

namespace {

// Sets `type` False (keeping its reason) when it exists and is not already False.
void Clear(std::vector<JobCondition>& conditions, ConditionType type, const std::string& reason,
           const std::string& message, absl::Time now) {
  for (const JobCondition& c : conditions) {
    if (c.type == type && c.status != ConditionStatus::kFalse) {
      SetJobCondition(conditions, type, ConditionStatus::kFalse, reason, message, now);
      return;
    }
  }
}

}  // namespace

v1alpha1::TrainingJobStatus NextJobStatus(const v1alpha1::TrainingJobStatus& previous,
                                          const StatusUpdate& update) {
  v1alpha1::TrainingJobStatus next = previous;
  const JobDecision& decision = *update.decision;
  const absl::Time now = update.now;

  // Created is True from the first reconcile on (False while the PodGroup is unavailable); the
  // phase's own condition follows.
  auto created =
      std::find_if(next.conditions.begin(), next.conditions.end(),
                   [](const JobCondition& c) { return c.type == ConditionType::kCreated; });
  if (!update.pod_group_problem.empty()) {
    SetJobCondition(next.conditions, ConditionType::kCreated, ConditionStatus::kFalse,
                    kPodGroupUnavailableReason, update.pod_group_problem, now);
  } else if (!update.checkpoint_volume_problem.empty()) {
    SetJobCondition(next.conditions, ConditionType::kCreated, ConditionStatus::kFalse,
                    kCheckpointVolumeUnavailableReason, update.checkpoint_volume_problem, now);
  } else if (!update.checkpoint_storage_problem.empty()) {
    SetJobCondition(next.conditions, ConditionType::kCreated, ConditionStatus::kFalse,
                    kCheckpointStorageUnavailableReason, update.checkpoint_storage_problem, now);
  } else if (!update.create_failure.empty()) {
    SetJobCondition(next.conditions, ConditionType::kCreated, ConditionStatus::kFalse,
                    kFailedCreateReason, update.create_failure, now);
  } else if (created == next.conditions.end()) {
    SetJobCondition(next.conditions, ConditionType::kCreated, ConditionStatus::kTrue, "Created",
                    "the operator created the job's replicas", now);
  } else if (created->status != ConditionStatus::kTrue) {
    // In place: moving it last would make a running job's state read "Created".
    *created = JobCondition{ConditionType::kCreated, ConditionStatus::kTrue, "Created",
                            "the operator created the job's replicas", now};
  }
  const ConditionType phase_type = ConditionForPhase(decision.phase);
  if (phase_type != ConditionType::kCreated) {
    SetJobCondition(next.conditions, phase_type, ConditionStatus::kTrue, decision.reason,
                    decision.message, now);
  }
  if (update.stuck != nullptr) {
    SetJobCondition(next.conditions, ConditionType::kStuck, ConditionStatus::kTrue,
                    update.stuck->reason, update.stuck->message, now);
  } else {
    Clear(next.conditions, ConditionType::kStuck, "PodsStarted",
          "every pod started or is on its way", now);
  }
  if (update.checkpoint_error && !update.checkpoint_error->empty()) {
    SetJobCondition(next.conditions, ConditionType::kCheckpointFailing, ConditionStatus::kTrue,
                    kCheckpointStorageUnavailableReason, *update.checkpoint_error, now);
  } else if (update.checkpoint_error && update.last_checkpoint_step.value_or(-1) >
                                            previous.last_checkpoint_step.value_or(-1)) {
    // Only a save cleared it: a new coordinator reports no error before its first save (it
    // restored the checkpoint that was already the newest, or is still starting), which says
    // nothing about the storage that refused the old one.
    Clear(next.conditions, ConditionType::kCheckpointFailing, kCheckpointSavedReason,
          update.last_checkpoint_step
              ? absl::StrCat("the coordinator reports no failed save; the newest checkpoint is "
                             "step ", *update.last_checkpoint_step)
              : std::string("the coordinator reports no failed save"),
          now);
  }
  switch (decision.phase) {
    case JobPhase::kRunning:
      Clear(next.conditions, ConditionType::kRestarting, "Running", decision.message, now);
      Clear(next.conditions, ConditionType::kSuspended, "Resumed", "the job was resumed", now);
      break;
    case JobPhase::kRestarting:
      Clear(next.conditions, ConditionType::kRunning, decision.reason, decision.message, now);
      break;
    case JobPhase::kSucceeded:
    case JobPhase::kFailed:
    case JobPhase::kSuspended:
      Clear(next.conditions, ConditionType::kRunning, decision.reason, decision.message, now);
      Clear(next.conditions, ConditionType::kRestarting, decision.reason, decision.message, now);
      break;
    case JobPhase::kCreated:
      Clear(next.conditions, ConditionType::kSuspended, "Resumed", "the job was resumed", now);
      break;
  }

  // Replica counts from the pods as they are; restarts accumulate.
  std::map<ReplicaType, v1alpha1::ReplicaStatus> counts;
  for (const auto& [type, status] : previous.replica_statuses) {
    counts[type].restarts = status.restarts;
    counts[type].counted_restarts = status.counted_restarts;
  }
  for (const auto& [type, counted] : decision.restart_counts_by_type) {
    if (counted > 0) counts[type].counted_restarts = counted;
  }
  if (update.pods != nullptr) {
    for (const ObservedPod& pod : *update.pods) {
      v1alpha1::ReplicaStatus& s = counts[pod.key.type];
      if (pod.phase == ReplicaPhase::kPending || pod.phase == ReplicaPhase::kRunning) {
        ++s.active;
      } else if (pod.phase == ReplicaPhase::kTerminated) {
        if (EffectiveExitCode(pod.termination) == 0 && !pod.termination.disrupted) {
          ++s.succeeded;
        } else {
          ++s.failed;
        }
      }
    }
  }
  for (ReplicaKey key : update.requested) ++counts[key.type].active;
  for (const auto& [key, restart] : decision.restarts) {
    ++counts[key.type].restarts;
    if (key.type == ReplicaType::kCoordinator) ++next.coordinator_restarts;
  }
  next.replica_statuses = std::move(counts);
  next.restart_count = decision.restart_count;

  if (!next.start_time && decision.phase != JobPhase::kSuspended) next.start_time = now;
  if ((decision.phase == JobPhase::kSucceeded || decision.phase == JobPhase::kFailed) &&
      !next.completion_time) {
    next.completion_time = now;
  }
  if (update.generation) next.observed_generation = update.generation;
  next.preemptions += update.new_preemptions;
  if (update.step) next.step = update.step;
  if (update.last_checkpoint_step) next.last_checkpoint_step = update.last_checkpoint_step;
  if (update.goodput) {
    next.goodput_account =
        MergeRun(next.goodput_account.value_or(v1alpha1::JobGoodput{}), *update.goodput);
    const v1alpha1::TimeSplit total = JobTotal(*next.goodput_account);
    next.goodput_seconds = total;
    // Three decimals: what the GOODPUT column shows, without a status write per rounding digit.
    if (std::optional<double> ratio = GoodputRatio(total)) {
      next.goodput = std::round(*ratio * 1000) / 1000;
    }
  }
  next.state.clear();
  for (const JobCondition& c : next.conditions) {
    if (c.status == ConditionStatus::kTrue && !v1alpha1::BesideThePhase(c.type)) {
      next.state = std::string(v1alpha1::ConditionTypeName(c.type));
    }
  }
  if (!update.job_name.empty()) {
    next.worker_selector = absl::StrCat(v1alpha1::kJobNameLabel, "=", update.job_name, ",",
                                        v1alpha1::kReplicaTypeLabel, "=",
                                        std::string(v1alpha1::ReplicaTypeLowerName(ReplicaType::kWorker)));
  }
  return next;
}

}  // namespace tj::op
