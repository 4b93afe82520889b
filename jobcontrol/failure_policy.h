// A replica's end judged with the job's spec.failurePolicy and its per-type restartLimit, on top
// of DecideRestart (restartPolicy, restartExitCodes, backoffLimit). DecideJobPhase calls it for
// every ended replica, so the operator and `tjctl run` apply the same rules. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

#include "api/v1alpha1/failure_policy.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"
#include "jobcontrol/restart_decision.h"

namespace tj {

// Counted restarts so far: the job's (against runPolicy.backoffLimit) and each replica type's
// (against replicaSpecs.<T>.restartLimit).
struct RestartCounts {
  int32_t job = 0;
  std::map<ReplicaType, int32_t> by_type;

  int32_t Of(ReplicaType type) const {
    auto it = by_type.find(type);
    return it == by_type.end() ? 0 : it->second;
  }
};

// Whether the replica failed, the only ends the failure policy judges: a non-zero exit (or a
// signal), or a disruption, OOM kill or eviction whatever the exit code. A coordinator that
// exited 0 on its own succeeded; a worker or PS that did is done.
bool ReplicaFailed(const Termination& termination);

struct FailurePolicyMatch {
  size_t index = 0;  // in spec.failurePolicy.rules
  v1alpha1::FailurePolicyAction action = v1alpha1::FailurePolicyAction::kCount;
};

// The first rule of the job's failurePolicy that matches this failure of a replica of `type`, or
// nullopt (also when the replica did not fail, or the job has no failurePolicy). A rule matches
// when its replicaTypes (absent: all) include `type` and either the effective exit code (128+N
// for signal N) is In / NotIn its values, or one of its onPodConditions holds: DisruptionTarget
// for a disrupted replica (evictions included), OOMKilled, Evicted.
std::optional<FailurePolicyMatch> MatchFailurePolicy(const v1alpha1::TrainingJob& job,
                                                     ReplicaType type,
                                                     const Termination& termination);

// What the end of `replica` does, given the counted restarts so far:
//  - A failure a rule matches: FailJob fails the job (reason FailurePolicyFailJob, the message
//    naming spec.failurePolicy.rules[i]); Ignore restarts it, not counted (FailurePolicyIgnore);
//    Count restarts it, counted (FailurePolicyCount); RestartJob restarts it, counted, with
//    restart_job set (FailurePolicyRestartJob). A rule wins over restartPolicy.
//  - Anything else: DecideRestart, exactly as without a failure policy.
// Then a counted restart fails the job at backoffLimit (BackoffLimitExceeded) or, past the
// type's restartLimit, with RestartLimitExceeded naming spec.replicaSpecs.<T>.restartLimit.
RestartDecision DecideReplicaEnd(const v1alpha1::TrainingJob& job, ReplicaKey replica,
                                 const Termination& termination, const RestartCounts& so_far);

}  // namespace tj
