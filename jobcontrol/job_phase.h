// The job-level decision: from what is observed of each replica (missing, pending, running, or
// ended and how), the job's phase and what to do next (create, restart, stop). The operator's
// Reconcile and `tjctl run`'s supervisor both call it, so a job ends the same way in both.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replacement.h"
#include "jobcontrol/replicas.h"
#include "jobcontrol/restart_decision.h"

namespace tj {

enum class ReplicaPhase {
  kMissing,  // no pod / process (never created, or deleted)
  kPending,  // created, not running yet
  kRunning,
  kTerminated,  // ended; see termination
};

struct ReplicaObservation {
  ReplicaKey key;
  ReplicaPhase phase = ReplicaPhase::kMissing;
  Termination termination;  // meaningful for kTerminated only
};

struct JobObservation {
  // Replicas not listed are missing. Replicas beyond the spec's counts (after a scale-down) are
  // stopped.
  std::vector<ReplicaObservation> replicas;
  // Restarts already counted toward backoffLimit (status.restartCount).
  int32_t restarts_so_far = 0;
  // Time since the job started, for activeDeadlineSeconds; unset before it starts.
  std::optional<absl::Duration> active_for;
  // Of restarts_so_far, each replica type's (status.replicaStatuses.<T>.countedRestarts), for
  // replicaSpecs.<T>.restartLimit.
  std::map<ReplicaType, int32_t> restarts_by_type;
  // Replicas being taken away that are still there: a pod with a deletion timestamp, or given a
  // preemption notice and not ended (the operator); a process `tjctl preempt` announced that is
  // still running (`tjctl run`). Their replacements may wait (jobcontrol/replacement.h).
  std::set<ReplicaKey> terminating;
};

// Named like the status conditions.
enum class JobPhase { kCreated, kRunning, kRestarting, kSucceeded, kFailed, kSuspended };
std::string_view JobPhaseName(JobPhase phase);

struct JobDecision {
  JobPhase phase = JobPhase::kCreated;
  std::string reason;  // CamelCase
  std::string message;
  std::vector<ReplicaKey> to_create;   // desired replicas that are missing
  std::vector<ReplicaKey> to_restart;  // ended replicas to start again
  // Replicas to stop (and whose pods to delete): after the job ends, as cleanPodPolicy says;
  // every replica when suspended; replicas beyond the desired counts always.
  std::vector<ReplicaKey> to_stop;
  // The restart decisions taken, for events and metrics.
  std::vector<std::pair<ReplicaKey, RestartDecision>> restarts;
  // restarts_so_far plus the counted restarts decided here (the new status.restartCount).
  int32_t restart_count = 0;
  // restarts_by_type likewise (the new status.replicaStatuses.<T>.countedRestarts).
  std::map<ReplicaType, int32_t> restart_counts_by_type;
  // A failurePolicy RestartJob rule matched: every replica restarts (restarts and to_restart name
  // every one that exists), the running ones included. The operator deletes every pod, `tjctl
  // run` stops every process (neither is a failure) before they start again.
  bool restart_job = false;
  // Replacements that must not start yet (HeldReplacements over to_restart and to_create): held
  // ones are left out of to_create; a held restart stays in to_restart and restarts (its
  // predecessor is deleted, its restart counted) but its new pod or process is not started.
  std::vector<ReplacementHold> held;
  bool Held(ReplicaKey key) const {
    for (const ReplacementHold& h : held) {
      if (h.replica == key) return true;
    }
    return false;
  }
};

// For a job that has not finished yet; once Succeeded or Failed the caller keeps that phase and
// only cleans up (ReplicasToClean). Rules, in order:
//  1. runPolicy.suspend: Suspended; every replica is stopped (resuming restores the checkpoint).
//  2. The coordinator ended with exit 0: Succeeded, whatever else happened.
//  3. activeDeadlineSeconds passed: Failed (DeadlineExceeded).
//  4. Ended replicas, coordinator first then PS then workers by index, through DecideReplicaEnd
//     (failure policy, then DecideRestart, then restartLimit) with the restart counts running:
//     the first that fails the job makes it Failed (with that decision's reason:
//     BackoffLimitExceeded, RestartLimitExceeded, PermanentExitCode, RestartPolicyNever,
//     FailurePolicyFailJob). A permanent failure of any replica fails the job; the coordinator's
//     tolerance of lost workers is for replicas that come back.
//     When a RestartJob rule matched (and nothing failed the job), every replica that exists
//     restarts and the counts grow by that one restart: the other restarts decided in the same
//     pass are part of it.
//  5. Replacements that must wait (HeldReplacements: replacementPolicy Failed, a coordinator while
//     a PS is terminating) go to `held`, and held replicas leave to_create.
//  6. Otherwise Restarting if anything restarts, Running if the coordinator runs, Restarting
//     (WaitingForReplacement) while the coordinator's replacement is held, else Created. Hold
//     messages are appended to the message.
// On Succeeded and Failed, to_stop follows cleanPodPolicy: nothing is restarted or created.
// A decision is level-based: the caller must act on a restart (new pod or process) before
// deciding again, or the same ended replica is counted twice.
JobDecision DecideJobPhase(const v1alpha1::TrainingJob& job, const JobObservation& observed);

// The replicas to stop once the job has ended: Running (default) stops those still pending or
// running and keeps ended ones for their logs; All stops and deletes every replica; None leaves
// everything as it is (running PS included: the user asked for it).
std::vector<ReplicaKey> ReplicasToClean(v1alpha1::CleanPodPolicy policy,
                                        const std::vector<ReplicaObservation>& replicas);

}  // namespace tj
