// Whether a replica that ended is started again: the restart policies (Never, OnFailure, Always,
// ExitCode), the job's restart exit codes and backoffLimit, decided the same way by the operator
// (for pods) and by `tjctl run` (for local processes). Pure: no clock, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"

namespace tj {

// How a replica's container or process ended.
struct Termination {
  int exit_code = 0;        // as Kubernetes reports it: 128+N for a container killed by signal N
  int signal = 0;           // a local process killed by signal N; exit_code is then ignored
  bool oom_killed = false;  // the container's termination reason is OOMKilled
  // The platform took the replica away: the pod has the DisruptionTarget condition, was deleted,
  // or its node was lost. Not the program's failure.
  bool disrupted = false;
  // The coordinator exited while a PS replica had not started (pending, unschedulable, not yet
  // created): it gave up waiting for it. With a restart exit code this is waiting, not a failure,
  // and is not counted (the Stuck condition and runPolicy.pendingTimeoutSeconds bound the wait).
  bool waited_for_ps = false;
  // The pod was evicted: the kubelet's eviction (status.reason Evicted) or the Eviction API
  // (DisruptionTarget reason EvictionByEvictionAPI). Also disrupted; only the failure policy's
  // Evicted condition tells the two apart.
  bool evicted = false;
};

// 128+N for a signal, else the exit code.
int EffectiveExitCode(const Termination& termination);

// Under ExitCode, these restart whatever restartExitCodes says: SIGINT, SIGKILL (also what an
// OOM kill and a kubelet's forced stop look like) and SIGTERM (preemption, eviction).
inline constexpr std::array<int, 3> kSignalRestartExitCodes = {130, 137, 143};

struct RestartRules {
  v1alpha1::RestartPolicy policy = v1alpha1::kDefaultRestartPolicy;
  std::vector<int32_t> restart_exit_codes = {v1alpha1::kDefaultRestartExitCode};
  int32_t backoff_limit = v1alpha1::kDefaultBackoffLimit;
};

// The rules for one replica type; unset fields read as their defaults.
RestartRules RestartRulesFor(const v1alpha1::TrainingJob& job, ReplicaType type);

enum class RestartAction {
  kRestart,   // start the replica again
  kComplete,  // it finished and stays finished (for the coordinator: the job succeeded)
  kFail,      // the job fails
};

struct RestartDecision {
  RestartAction action = RestartAction::kFail;
  // True when this restart is one of the job's backoffLimit restarts.
  bool counts_toward_backoff_limit = false;
  // The coordinator exited 0: the training program finished and the job succeeded.
  bool job_succeeded = false;
  // CamelCase, for conditions, events and the restarts-by-reason metric. Restarts: Disrupted,
  // OOMKilled, RestartExitCode, Signal, Error, Exited. Completions: CoordinatorSucceeded,
  // ReplicaSucceeded. Failures: BackoffLimitExceeded, PermanentExitCode, RestartPolicyNever.
  std::string reason;
  std::string message;
  // A failurePolicy rule with action RestartJob matched: every replica restarts with this one
  // (DecideJobPhase carries it out), and the job counts the whole restart once.
  bool restart_job = false;
};

// A coordinator that fails (exits non-zero) within kPsDisruptionWindow after a PS replica was
// disrupted lost that PS to the disruption (it exits with the restart code to restore): its exit
// is part of the same disruption and must not spend the backoff budget. The operator and
// `tjctl run` mark such an exit `disrupted` before calling DecideRestart. `since_ps_disruption` is
// the time from the PS's disrupted exit to the coordinator's exit (InfiniteDuration: none).
inline constexpr absl::Duration kPsDisruptionWindow = absl::Minutes(1);
bool CoordinatorExitFollowsPsDisruption(const Termination& coordinator_exit,
                                        absl::Duration since_ps_disruption);

// `restarts_so_far` is the job's count of restarts that counted toward backoffLimit.
//  - Coordinator exit 0: the job succeeded, whatever the policy (Always included).
//  - Never: nothing restarts; a non-zero exit (or a disruption, or an OOM kill) fails the job.
//  - OnFailure: non-zero exits restart; exit 0 completes the replica.
//  - Always: every exit restarts, exit 0 included (except the coordinator's, above).
//  - ExitCode: restartExitCodes and 130/137/143 restart; every other non-zero code (1..255,
//    including crashes such as 134 SIGABRT and 139 SIGSEGV) is permanent and fails the job.
//  - Disrupted (not OOM-killed): restarts under every policy but Never, and is not counted: the
//    job did nothing wrong, and a job on spot capacity must not run out of restarts to
//    preemptions. It wins over the exit code (a preempted worker exiting 0 is not done).
//  - OOM-killed: restarts under every policy but Never and always counts, so a job that keeps
//    running out of memory fails after backoffLimit restarts, with reason BackoffLimitExceeded
//    and a message naming the OOM kill.
//  - A coordinator that waited for a PS (waited_for_ps) and exited with a restart exit code
//    restarts under every policy but Never, not counted (WaitingForPs).
//  - Every other restart counts; a counted restart with restarts_so_far >= backoffLimit fails
//    the job instead (BackoffLimitExceeded, naming the limit).
RestartDecision DecideRestart(ReplicaKey replica, const RestartRules& rules,
                              const Termination& termination, int32_t restarts_so_far);

// The backoffLimit part of DecideRestart, for a decision taken otherwise (a failurePolicy rule):
// a counted restart with restarts_so_far >= backoffLimit becomes BackoffLimitExceeded.
RestartDecision ApplyBackoffLimit(ReplicaKey replica, const RestartRules& rules,
                                  const Termination& termination, int32_t restarts_so_far,
                                  RestartDecision decision);

// "worker 1 exited with code 3", "ps 0 was OOM-killed (exit code 137)", for messages.
std::string DescribeReplicaEnd(ReplicaKey replica, const Termination& termination);

}  // namespace tj
