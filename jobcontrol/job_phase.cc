#include "jobcontrol/job_phase.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/defaults.h"
#include "jobcontrol/failure_policy.h"

namespace tj {
namespace {

using v1alpha1::CleanPodPolicy;

ReplicaObservation MissingReplica(ReplicaKey key) {
  ReplicaObservation r;
  r.key = key;
  return r;
}

bool IsActive(ReplicaPhase phase) {
  return phase == ReplicaPhase::kPending || phase == ReplicaPhase::kRunning;
}

// The job has ended: stop what cleanPodPolicy says, and whatever lies beyond the desired counts.
JobDecision Finished(JobPhase phase, std::string reason, std::string message,
                     const v1alpha1::TrainingJob& job,
                     const std::vector<ReplicaObservation>& desired,
                     const std::vector<ReplicaKey>& extra, const RestartCounts& counts) {
  JobDecision decision;
  decision.phase = phase;
  decision.reason = std::move(reason);
  decision.message = std::move(message);
  decision.to_stop = ReplicasToClean(
      job.spec.run_policy.clean_pod_policy.value_or(v1alpha1::kDefaultCleanPodPolicy), desired);
  decision.to_stop.insert(decision.to_stop.end(), extra.begin(), extra.end());
  decision.restart_count = counts.job;
  decision.restart_counts_by_type = counts.by_type;
  return decision;
}

// A RestartJob rule matched `trigger`: every replica that exists restarts with it. The trigger's
// restart is the one counted.
void RestartEveryReplica(const std::vector<ReplicaObservation>& desired, ReplicaKey trigger,
                         RestartDecision trigger_decision, const JobObservation& observed,
                         JobDecision& decision) {
  decision.restart_job = true;
  decision.restart_count = observed.restarts_so_far + 1;
  decision.restart_counts_by_type = observed.restarts_by_type;
  ++decision.restart_counts_by_type[trigger.type];
  const std::string because =
      absl::StrCat("restarting it with the job: ", trigger_decision.message);
  decision.to_restart.clear();
  decision.restarts.clear();
  for (const ReplicaObservation& r : desired) {
    if (r.phase == ReplicaPhase::kMissing) continue;
    decision.to_restart.push_back(r.key);
    if (r.key == trigger) {
      decision.restarts.emplace_back(r.key, trigger_decision);
      continue;
    }
    RestartDecision d;
    d.action = RestartAction::kRestart;
    d.reason = "FailurePolicyRestartJob";
    d.message = absl::StrCat(DescribeReplica(r.key), ": ", because);
    decision.restarts.emplace_back(r.key, std::move(d));
  }
}

}  // namespace

std::string_view JobPhaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::kCreated:
      return "Created";
    case JobPhase::kRunning:
      return "Running";
    case JobPhase::kRestarting:
      return "Restarting";
    case JobPhase::kSucceeded:
      return "Succeeded";
    case JobPhase::kFailed:
      return "Failed";
    case JobPhase::kSuspended:
      return "Suspended";
  }
  return "?";
}

std::vector<ReplicaKey> ReplicasToClean(CleanPodPolicy policy,
                                        const std::vector<ReplicaObservation>& replicas) {
  std::vector<ReplicaKey> out;
  for (const ReplicaObservation& r : replicas) {
    const bool stop = (policy == CleanPodPolicy::kRunning && IsActive(r.phase)) ||
                      (policy == CleanPodPolicy::kAll && r.phase != ReplicaPhase::kMissing);
    if (stop) out.push_back(r.key);
  }
  return out;
}

JobDecision DecideJobPhase(const v1alpha1::TrainingJob& job, const JobObservation& observed) {
  // Desired replicas in order, each with what was observed of it (missing when not observed).
  std::map<ReplicaKey, ReplicaObservation> seen;
  for (const ReplicaObservation& r : observed.replicas) seen[r.key] = r;
  std::vector<ReplicaObservation> desired;
  std::set<ReplicaKey> desired_keys;
  for (const Replica& replica : DesiredReplicas(job)) {
    auto it = seen.find(replica.key);
    desired.push_back(it != seen.end() ? it->second : MissingReplica(replica.key));
    desired_keys.insert(replica.key);
  }
  std::vector<ReplicaKey> extra;
  for (const auto& [key, r] : seen) {
    if (!desired_keys.contains(key) && r.phase != ReplicaPhase::kMissing) extra.push_back(key);
  }

  if (job.spec.run_policy.suspend.value_or(false)) {
    JobDecision decision;
    decision.phase = JobPhase::kSuspended;
    decision.reason = "Suspended";
    decision.message = "runPolicy.suspend is true: every replica is stopped";
    for (const ReplicaObservation& r : desired) {
      if (r.phase != ReplicaPhase::kMissing) decision.to_stop.push_back(r.key);
    }
    decision.to_stop.insert(decision.to_stop.end(), extra.begin(), extra.end());
    decision.restart_count = observed.restarts_so_far;
    decision.restart_counts_by_type = observed.restarts_by_type;
    return decision;
  }
  const RestartCounts observed_counts{observed.restarts_so_far, observed.restarts_by_type};

  for (const ReplicaObservation& r : desired) {
    if (r.key.type != ReplicaType::kCoordinator || r.phase != ReplicaPhase::kTerminated) continue;
    RestartDecision d = DecideRestart(r.key, RestartRulesFor(job, r.key.type), r.termination,
                                      observed.restarts_so_far);
    if (d.job_succeeded) {
      return Finished(JobPhase::kSucceeded, "Succeeded", "the coordinator exited with code 0", job,
                      desired, extra, observed_counts);
    }
  }

  const std::optional<int64_t> deadline = job.spec.run_policy.active_deadline_seconds;
  if (deadline && observed.active_for && *observed.active_for >= absl::Seconds(*deadline)) {
    return Finished(
        JobPhase::kFailed, "DeadlineExceeded",
        absl::StrCat("the job has been active for ", absl::FormatDuration(*observed.active_for),
                     ", past activeDeadlineSeconds ", *deadline),
        job, desired, extra, observed_counts);
  }

  JobDecision decision;
  RestartCounts counts = observed_counts;
  std::optional<std::pair<ReplicaKey, RestartDecision>> job_restart;
  for (const ReplicaObservation& r : desired) {
    if (r.phase != ReplicaPhase::kTerminated) continue;
    RestartDecision d = DecideReplicaEnd(job, r.key, r.termination, counts);
    if (d.action == RestartAction::kFail) {
      return Finished(JobPhase::kFailed, d.reason, d.message, job, desired, extra, counts);
    }
    if (d.action == RestartAction::kRestart) {
      if (d.counts_toward_backoff_limit) {
        ++counts.job;
        ++counts.by_type[r.key.type];
      }
      if (d.restart_job && !job_restart) job_restart.emplace(r.key, d);
      decision.to_restart.push_back(r.key);
      decision.restarts.emplace_back(r.key, std::move(d));
    }
  }
  decision.restart_count = counts.job;
  decision.restart_counts_by_type = counts.by_type;
  if (job_restart) {
    RestartEveryReplica(desired, job_restart->first, std::move(job_restart->second), observed,
                        decision);
  }
  decision.to_stop = std::move(extra);
  std::vector<ReplicaKey> starting;
  for (const ReplicaObservation& r : desired) {
    const bool restarts = std::find(decision.to_restart.begin(), decision.to_restart.end(),
                                    r.key) != decision.to_restart.end();
    if (restarts || r.phase == ReplicaPhase::kMissing) starting.push_back(r.key);
  }
  decision.held = HeldReplacements(job, observed.terminating, starting);
  for (const ReplicaObservation& r : desired) {
    if (r.phase == ReplicaPhase::kMissing && !decision.Held(r.key)) {
      decision.to_create.push_back(r.key);
    }
  }

  const bool coordinator_running = !desired.empty() &&
                                   desired.front().key.type == ReplicaType::kCoordinator &&
                                   desired.front().phase == ReplicaPhase::kRunning;
  if (!decision.to_restart.empty()) {
    decision.phase = JobPhase::kRestarting;
    std::vector<std::string> messages;
    for (const auto& [key, d] : decision.restarts) {
      // A job restart is said once, by the replica that caused it.
      if (!decision.restart_job || d.restart_job) messages.push_back(d.message);
    }
    decision.reason = decision.restart_job ? std::string("FailurePolicyRestartJob")
                                           : decision.restarts.front().second.reason;
    decision.message = absl::StrJoin(messages, "; ");
  } else if (coordinator_running) {
    decision.phase = JobPhase::kRunning;
    decision.reason = "Running";
    decision.message = "the coordinator is running";
  } else if (decision.Held(ReplicaKey{ReplicaType::kCoordinator, 0})) {
    decision.phase = JobPhase::kRestarting;
    decision.reason = "WaitingForReplacement";
  } else {
    decision.phase = JobPhase::kCreated;
    decision.reason = "Created";
    decision.message = "waiting for the coordinator to run";
  }
  for (const ReplacementHold& hold : decision.held) {
    absl::StrAppend(&decision.message, decision.message.empty() ? "" : "; ", hold.message);
  }
  return decision;
}

}  // namespace tj
