// LocalJob: runs a whole TrainingJob on this machine as local processes, with the semantics the
// operator gives it on Kubernetes: the decisions (restart or fail, the job's phase, what to stop)
// are jobcontrol's DecideJobPhase, called in a loop over what the Supervisor observes. LocalJob
// only carries them out: it starts processes, waits restarts out (crash-loop backoff), stops
// processes with their grace period, and reports (display, status file).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/goodput.h"
#include "api/v1alpha1/training_progress.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/job_phase.h"
#include "tjctl/local/launch_plan.h"
#include "tjctl/local/progress_display.h"
#include "tjctl/local/restart_backoff.h"
#include "tjctl/local/status_file.h"
#include "tjctl/local/supervisor.h"
#include "tjctl/local/termination_signals.h"

namespace tj::local {

struct LocalJobOptions {
  RunPaths paths;
  std::string status_file;
  // How long one wait for a process exit lasts: the latency of deadlines and signals.
  absl::Duration poll_interval = absl::Milliseconds(200);
  absl::Duration progress_interval = absl::Milliseconds(500);
  RestartBackoffPolicy backoff;
  size_t failure_log_lines = 10;
};

// Exit codes of `tjctl run`.
inline constexpr int kExitSucceeded = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitInvalid = 2;  // bad manifest or a local problem, before any process starts

class LocalJob {
 public:
  // `plan` is a LaunchPlan without errors; `signals` must outlive the job.
  LocalJob(v1alpha1::TrainingJob job, LaunchPlan plan, LocalJobOptions options,
           ProgressDisplay& display, TerminationSignals& signals);
  LocalJob(const LocalJob&) = delete;
  LocalJob& operator=(const LocalJob&) = delete;

  // Runs the job to its end and stops every process. Returns the exit code: 0 Succeeded, 1 Failed,
  // 128+N after signal N.
  int Run();

 private:
  struct ReplicaState {
    ReplicaLaunch launch;
    ReplicaPhase phase = ReplicaPhase::kMissing;
    Termination termination;  // the last exit, for kTerminated
    RestartBackoff backoff;
    absl::Time started_at;
    absl::Time ended_at;
    absl::Time restart_at;  // for a replica waiting out its backoff (kPending)
    int starts = 0;
    std::optional<int> last_exit_code;
    std::optional<int> last_signal;
    pid_t pid = -1;
    bool stopping = false;  // tjctl is stopping it: its exit is not a failure
    std::string state = "Pending";
  };

  absl::Duration Elapsed() const;
  void Event(const std::string& text);
  ReplicaState* Find(const std::string& name);
  ReplicaState& Find(ReplicaKey key);

  // When a PS last ended in a disruption (tjctl preempt).
  absl::Time last_ps_disruption_ = absl::InfinitePast();

  void StartReplica(ReplicaState& replica);
  void RecordExit(const NamedExit& exit);
  // `restart_number`: its place among the restarts counted toward backoffLimit, 0 if not counted.
  void ScheduleRestart(ReplicaState& replica, const RestartDecision& decision,
                       int32_t restart_number);
  // A failurePolicy RestartJob: stops every running replica (not failures: tjctl stops them),
  // then starts every one the decision restarts, PS first and the coordinator last.
  void RestartEveryReplica(const JobDecision& decision);
  // held_: the decision's held replacements and those of replicas waiting to start again, each
  // new one said once.
  // A held coordinator turns a decision of Created into Restarting (WaitingForReplacement).
  void UpdateHeld(JobDecision& decision, const JobObservation& observed);
  // Starts the replicas whose backoff is over, unless their replacement is held (held_).
  void StartDueRestarts();
  void CollectExits(absl::Duration wait);
  // SIGTERM to every running replica, each given its grace period, then SIGKILL; a second signal
  // kills at once.
  void StopAll(const std::string& why);
  // The replicas to stop after a decision that is not final (beyond the desired counts: none
  // locally, but the decision is carried out as made).
  void StopReplica(ReplicaState& replica);

  JobObservation Observe() const;
  absl::Duration NextWait() const;
  void RefreshProgress(bool force);
  void WriteStatus();
  std::string FailureReport(const JobDecision& decision) const;
  std::string FinalProgressLine() const;

  v1alpha1::TrainingJob job_;
  LocalJobOptions options_;
  ProgressDisplay& display_;
  TerminationSignals& signals_;
  Supervisor supervisor_;
  std::vector<ReplicaState> replicas_;   // DesiredReplicas order
  uint64_t coordinator_generation_ = 0;  // the last one handed to a coordinator
  absl::Time start_time_;
  std::optional<absl::Time> completion_time_;
  int32_t restart_count_ = 0;
  std::map<ReplicaType, int32_t> restart_counts_by_type_;  // for replicaSpecs.<T>.restartLimit
  // A signal StopAll received (it kills every replica at once): the run ends with it.
  std::optional<int> interrupted_;
  std::string phase_;
  std::string reason_;
  std::string message_;
  std::optional<v1alpha1::TrainingProgress> progress_;
  // Goodput over the job's coordinators (each restart's report merged in, jobcontrol/goodput.h).
  v1alpha1::JobGoodput goodput_;
  absl::Time last_progress_read_ = absl::InfinitePast();
  bool status_dirty_ = false;  // a replica started or ended, or the phase changed
  // The last decision's held replacements (a coordinator waiting for a PS `tjctl preempt`
  // announced): not started while they are here.
  std::set<ReplicaKey> held_;
  bool status_write_failed_ = false;
};

}  // namespace tj::local
