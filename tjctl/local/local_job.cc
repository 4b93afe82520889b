#include "tjctl/local/local_job.h"

#include "coordinator/checkpoint/atomic_file.h"
#include "tjctl/local/disruption_marker.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/runtime_env.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/strings.h"
#include "jobcontrol/restart_decision.h"
#include "tjctl/local/progress_file.h"
#include "jobcontrol/goodput.h"
#include "tjctl/local/replica_log.h"

namespace tj::local {
namespace {

namespace env = v1alpha1::env;

std::string DescribeExit(const ProcessExit& exit) {
  if (exit.signal != 0) {
    return Cat("was killed by ", SignalName(exit.signal), " (exit code ", exit.exit_code, ")");
  }
  return Cat("exited with code ", exit.exit_code);
}

std::string FormatDelay(absl::Duration d) {
  return d <= absl::ZeroDuration() ? std::string("0s") : absl::FormatDuration(d);
}

}  // namespace

LocalJob::LocalJob(v1alpha1::TrainingJob job, LaunchPlan plan, LocalJobOptions options,
                   ProgressDisplay& display, TerminationSignals& signals)
    : job_(std::move(job)), options_(std::move(options)), display_(display), signals_(signals) {
  for (ReplicaLaunch& launch : plan.replicas) {
    ReplicaState state;
    state.launch = std::move(launch);
    state.backoff = RestartBackoff(options_.backoff);
    replicas_.push_back(std::move(state));
  }
}

absl::Duration LocalJob::Elapsed() const { return absl::Now() - start_time_; }

void LocalJob::Event(const std::string& text) { display_.Event(Elapsed(), text); }

LocalJob::ReplicaState* LocalJob::Find(const std::string& name) {
  for (ReplicaState& r : replicas_) {
    if (r.launch.name == name) return &r;
  }
  return nullptr;
}

LocalJob::ReplicaState& LocalJob::Find(ReplicaKey key) {
  for (ReplicaState& r : replicas_) {
    if (r.launch.key == key) return r;
  }
  return replicas_.front();  // unreachable: decisions name desired replicas only
}

int LocalJob::Run() {
  start_time_ = absl::Now();
  std::error_code ignored;
  std::filesystem::remove(options_.paths.progress_file, ignored);  // a previous run's report
  phase_ = "Created";
  reason_ = "Created";
  message_ = "starting the replicas";

  // Parameter servers first, then workers, then the coordinator that drives them.
  for (ReplicaType type : {ReplicaType::kPs, ReplicaType::kWorker, ReplicaType::kCoordinator}) {
    for (ReplicaState& r : replicas_) {
      if (r.launch.key.type == type) StartReplica(r);
    }
  }
  WriteStatus();

  std::optional<JobDecision> final_decision;
  std::optional<int> signal;
  while (true) {
    if ((signal = signals_.Poll())) break;
    CollectExits(NextWait());
    if ((signal = signals_.Poll())) break;
    StartDueRestarts();

    const JobObservation observed = Observe();
    JobDecision decision = DecideJobPhase(job_, observed);
    UpdateHeld(decision, observed);
    restart_count_ = decision.restart_count;
    restart_counts_by_type_ = decision.restart_counts_by_type;
    const std::string phase(JobPhaseName(decision.phase));
    if (phase != phase_) {
      Event(Cat("job ", phase, decision.reason == phase ? "" : Cat(" (", decision.reason, ")"), ": ",
                decision.message));
    }
    if (phase != phase_ || decision.reason != reason_ || decision.message != message_) {
      phase_ = phase;
      reason_ = decision.reason;
      message_ = decision.message;
      status_dirty_ = true;
    }
    if (decision.phase == JobPhase::kSucceeded || decision.phase == JobPhase::kFailed) {
      final_decision = std::move(decision);
      break;
    }
    // Act on the decision before deciding again: an ended replica is restarted or waits out its
    // backoff as Pending, so the next decision does not count it a second time.
    if (decision.restart_job) {
      RestartEveryReplica(decision);
      if ((signal = interrupted_)) break;
    } else {
      int32_t counted = observed.restarts_so_far;
      for (const auto& [key, restart] : decision.restarts) {
        if (restart.counts_toward_backoff_limit) ++counted;
        ScheduleRestart(Find(key), restart, restart.counts_toward_backoff_limit ? counted : 0);
        status_dirty_ = true;
      }
    }
    for (ReplicaKey key : decision.to_create) StartReplica(Find(key));
    for (ReplicaKey key : decision.to_stop) StopReplica(Find(key));
    if (status_dirty_) WriteStatus();
    RefreshProgress(/*force=*/false);
  }

  int exit_code = kExitFailed;
  if (signal) {
    exit_code = 128 + *signal;
    phase_ = "Failed";
    reason_ = "Interrupted";
    message_ = Cat("tjctl received ", SignalName(*signal), " and stopped every replica");
    Event(Cat("received ", SignalName(*signal), ": stopping every replica (", SignalName(*signal),
              " again kills them at once)"));
    StopAll("");
  } else {
    exit_code = final_decision->phase == JobPhase::kSucceeded ? kExitSucceeded : kExitFailed;
    const v1alpha1::CleanPodPolicy policy =
        job_.spec.run_policy.clean_pod_policy.value_or(v1alpha1::kDefaultCleanPodPolicy);
    StopAll(policy == v1alpha1::CleanPodPolicy::kNone
                ? " (cleanPodPolicy None: tjctl still stops its processes when it exits)"
                : Cat(" (cleanPodPolicy ", v1alpha1::CleanPodPolicyName(policy), ")"));
  }
  completion_time_ = absl::Now();
  for (ReplicaState& r : replicas_) {
    if (r.state == "BackOff" || r.state == "Waiting") r.state = "Exited";  // not restarted now
  }
  RefreshProgress(/*force=*/true);
  WriteStatus();

  std::string result;
  if (signal) {
    result = Cat("job ", job_.metadata.name, " interrupted by ", SignalName(*signal), " after ",
                 FormatElapsed(Elapsed()), "; every replica was stopped\n");
  } else if (exit_code == kExitSucceeded) {
    result = Cat("job ", job_.metadata.name, " Succeeded in ", FormatElapsed(Elapsed()), ": ",
                 message_, "\n  ", FinalProgressLine(), "\n");
  } else {
    result = FailureReport(*final_decision);
  }
  absl::StrAppend(&result, "  work dir: ", options_.paths.work_dir, "\n");
  display_.Result(result);
  return exit_code;
}

void LocalJob::StartReplica(ReplicaState& r) {
  status_dirty_ = true;
  ++r.starts;
  const absl::Time now = absl::Now();
  AppendStartHeader(r.launch.log_path, now, r.starts, r.launch.command_line);
  ProcessSpec spec;
  spec.binary = r.launch.binary;
  spec.args = r.launch.args;
  for (const auto& [name, value] : r.launch.env) spec.env[name] = value;  // the last one wins
  spec.log_path = r.launch.log_path;
  // Set only from the job (checkpoints when it keeps them, the run's token): never inherited
  // from tjctl's own environment.
  spec.unset_env = {env::kCheckpointDir,
                    env::kCheckpointIntervalSteps,
                    env::kCheckpointKeep,
                    env::kCheckpointFullEvery,
                    kTokenFileEnv,
                    kTokenEnv,
                    kTokenVerifiersFileEnv,
                    kTlsDirEnv,
                    kCoordinatorGenerationEnv};
  if (r.launch.key.type == ReplicaType::kCoordinator) {
    // Each start of the coordinator outranks every earlier one (coordinator_generation.h).
    coordinator_generation_ = NextCoordinatorGeneration(coordinator_generation_);
    spec.env[kCoordinatorGenerationEnv] = Cat(coordinator_generation_);
  }
  r.started_at = now;
  r.stopping = false;
  const absl::Status started = supervisor_.Start(r.launch.name, spec);
  if (started.ok()) {
    r.phase = ReplicaPhase::kRunning;
    r.pid = supervisor_.pid(r.launch.name).value_or(-1);
    r.state = "Running";
    Event(Cat("started ", r.launch.name, " (start #", r.starts, ", pid ", r.pid, ") at ",
              r.launch.address));
    return;
  }
  // Like a container that cannot start: an exit the restart rules judge (127: command not found).
  const std::string error(started.message());
  AppendNote(r.launch.log_path, now, Cat("cannot start: ", error));
  Event(Cat("cannot start ", r.launch.name, ": ", error));
  r.phase = ReplicaPhase::kTerminated;
  r.termination = Termination{};
  r.termination.exit_code = 127;
  r.last_exit_code = 127;
  r.last_signal.reset();
  r.ended_at = now;
  r.state = "Exited";
}

void LocalJob::RecordExit(const NamedExit& exit) {
  ReplicaState* r = Find(exit.name);
  if (r == nullptr) return;
  status_dirty_ = true;
  // A container ends with its main process: whatever it left in its process group goes too.
  if (r->pid > 0) kill(-r->pid, SIGKILL);
  r->pid = -1;
  r->ended_at = absl::Now();
  r->phase = ReplicaPhase::kTerminated;
  // `tjctl preempt` announced this exit: a disruption, as a pod's DisruptionTarget is.
  bool disrupted = ConsumeDisruptionMarker(options_.paths.work_dir, r->launch.name);
  // A coordinator that lost a PS to a disruption is part of that disruption (jobcontrol's rule).
  Termination ended;
  ended.exit_code = exit.exit.exit_code;
  ended.signal = exit.exit.signal;
  if (!disrupted && r->launch.key.type == ReplicaType::kCoordinator) {
    disrupted = CoordinatorExitFollowsPsDisruption(ended, r->ended_at - last_ps_disruption_);
  }
  if (disrupted && r->launch.key.type == ReplicaType::kPs) last_ps_disruption_ = r->ended_at;
  ended.disrupted = disrupted;
  r->termination = ended;
  r->last_exit_code = exit.exit.exit_code;
  r->last_signal = exit.exit.signal != 0 ? std::optional<int>(exit.exit.signal) : std::nullopt;
  r->state = r->stopping ? "Stopped" : "Exited";
  const std::string what = Cat(DescribeExit(exit.exit), r->stopping ? " (stopped by tjctl)" : "",
                               disrupted ? " (preempted)" : "");
  AppendNote(r->launch.log_path, r->ended_at, what);
  Event(Cat(r->launch.name, " ", what));
}

void LocalJob::ScheduleRestart(ReplicaState& r, const RestartDecision& decision,
                               int32_t restart_number) {
  const absl::Duration delay = r.backoff.Next(r.ended_at - r.started_at);
  r.phase = ReplicaPhase::kPending;
  r.restart_at = absl::Now() + delay;
  r.state = "BackOff";
  const std::string counted =
      restart_number > 0
          ? Cat("restart ", restart_number, " of backoffLimit ",
                RestartRulesFor(job_, r.launch.key.type).backoff_limit)
          : std::string("not counted toward backoffLimit");
  const bool held = held_.contains(r.launch.key);
  Event(Cat("restarting ", r.launch.name,
            held ? " once its replacement may start" : Cat(" in ", FormatDelay(delay)), " (",
            decision.reason, ", ", counted, "): ", decision.message));
  if (held) r.state = "Waiting";
  if (delay <= absl::ZeroDuration() && !held) StartReplica(r);
}

void LocalJob::UpdateHeld(JobDecision& decision, const JobObservation& observed) {
  // A restart decided earlier and not started yet (backoff, or held) is still a replacement
  // about to start: the decision does not list it again, so ask the same rule here.
  std::vector<ReplicaKey> waiting;
  for (const ReplicaState& r : replicas_) {
    if (r.phase == ReplicaPhase::kPending && r.starts > 0) waiting.push_back(r.launch.key);
  }
  std::vector<ReplacementHold> holds = HeldReplacements(job_, observed.terminating, waiting);
  holds.insert(holds.end(), decision.held.begin(), decision.held.end());
  std::set<ReplicaKey> held;
  for (const ReplacementHold& hold : holds) {
    if (!held.insert(hold.replica).second) continue;
    if (!held_.contains(hold.replica)) Event(hold.message);
    // As the operator reports a coordinator whose new pod waits (DecideJobPhase sees it missing
    // there; here it is a restart scheduled earlier, so the decision does not know it is held).
    if (hold.replica.type == ReplicaType::kCoordinator && decision.phase == JobPhase::kCreated) {
      decision.phase = JobPhase::kRestarting;
      decision.reason = "WaitingForReplacement";
      decision.message = hold.message;
    }
  }
  held_ = std::move(held);
}

void LocalJob::RestartEveryReplica(const JobDecision& decision) {
  // Stopped by tjctl, so their exits are not failures; then started again in the order of Run.
  StopAll(Cat(" to restart the job (", decision.reason, ")"));
  if (interrupted_) return;
  status_dirty_ = true;
  for (ReplicaType type : {ReplicaType::kPs, ReplicaType::kWorker, ReplicaType::kCoordinator}) {
    for (const auto& [key, restart] : decision.restarts) {
      if (key.type != type) continue;
      ScheduleRestart(Find(key), restart,
                      restart.counts_toward_backoff_limit ? decision.restart_count : 0);
    }
  }
}

void LocalJob::StartDueRestarts() {
  const absl::Time now = absl::Now();
  for (ReplicaState& r : replicas_) {
    if (r.phase == ReplicaPhase::kPending && r.starts > 0 && r.restart_at <= now &&
        !held_.contains(r.launch.key)) {
      StartReplica(r);
    }
  }
}

void LocalJob::CollectExits(absl::Duration wait) {
  if (supervisor_.num_running() == 0) {
    // Nothing to wait on: wait for a signal instead, for as long.
    pollfd p{signals_.fd(), POLLIN, 0};
    poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(wait)));
    return;
  }
  std::optional<NamedExit> exit = supervisor_.WaitForAnyExit(wait);
  while (exit) {
    RecordExit(*exit);
    exit = supervisor_.WaitForAnyExit(absl::ZeroDuration());
  }
}

void LocalJob::StopReplica(ReplicaState& r) {
  if (!supervisor_.running(r.launch.name)) return;
  r.stopping = true;
  Event(Cat("stopping ", r.launch.name));
  if (auto exit = supervisor_.Stop(r.launch.name, r.launch.grace_period)) {
    RecordExit(NamedExit{r.launch.name, *exit});
  }
}

void LocalJob::StopAll(const std::string& why) {
  std::map<std::string, absl::Time> deadlines;
  std::vector<std::string> names;
  const absl::Time now = absl::Now();
  for (ReplicaState& r : replicas_) {
    if (!supervisor_.running(r.launch.name)) continue;
    r.stopping = true;
    kill(-r.pid, SIGTERM);  // all at once, so they shut down in parallel
    deadlines[r.launch.name] = now + r.launch.grace_period;
    names.push_back(r.launch.name);
  }
  if (names.empty()) return;
  Event(Cat("stopping ", absl::StrJoin(names, ", "), why));
  auto kill_now = [&](const std::string& name) {
    if (auto exit = supervisor_.Stop(name, absl::ZeroDuration())) {
      RecordExit(NamedExit{name, *exit});
    }
  };
  while (supervisor_.num_running() > 0) {
    if (auto again = signals_.Poll()) {
      interrupted_ = *again;  // stopping for a job restart: the run ends instead
      Event(Cat("received ", SignalName(*again), ": killing every replica now"));
      for (const auto& [name, deadline] : deadlines) kill_now(name);
      break;
    }
    absl::Time earliest = absl::InfiniteFuture();
    for (const auto& [name, deadline] : deadlines) {
      if (!supervisor_.running(name)) continue;
      if (deadline <= absl::Now()) {
        Event(Cat(name, " did not exit within its grace period: SIGKILL"));
        kill_now(name);
        continue;
      }
      earliest = std::min(earliest, deadline);
    }
    const absl::Duration wait =
        std::clamp(earliest - absl::Now(), absl::ZeroDuration(), absl::Milliseconds(100));
    if (auto exit = supervisor_.WaitForAnyExit(wait)) RecordExit(*exit);
  }
}

JobObservation LocalJob::Observe() const {
  JobObservation observed;
  for (const ReplicaState& r : replicas_) {
    observed.replicas.push_back(ReplicaObservation{r.launch.key, r.phase, r.termination});
    // Given notice by `tjctl preempt` and still running: its pod would be terminating.
    if (r.phase == ReplicaPhase::kRunning &&
        HasDisruptionMarker(options_.paths.work_dir, r.launch.name)) {
      observed.terminating.insert(r.launch.key);
    }
  }
  observed.restarts_so_far = restart_count_;
  observed.restarts_by_type = restart_counts_by_type_;
  observed.active_for = Elapsed();
  return observed;
}

absl::Duration LocalJob::NextWait() const {
  const absl::Time now = absl::Now();
  absl::Duration wait = options_.poll_interval;
  wait = std::min(wait, last_progress_read_ + options_.progress_interval - now);
  for (const ReplicaState& r : replicas_) {
    // A held replacement starts after an exit (the one it waits for), not at a time.
    if (r.phase == ReplicaPhase::kPending && r.starts > 0 && !held_.contains(r.launch.key)) {
      wait = std::min(wait, r.restart_at - now);
    }
  }
  return std::max(wait, absl::ZeroDuration());
}

void LocalJob::RefreshProgress(bool force) {
  const absl::Time now = absl::Now();
  if (!force && now - last_progress_read_ < options_.progress_interval) return;
  last_progress_read_ = now;
  if (auto progress = ReadProgressFile(options_.paths.progress_file)) progress_ = std::move(progress);
  if (progress_ && progress_->goodput) goodput_ = MergeRun(goodput_, *progress_->goodput);
  if (!completion_time_) {
    display_.Update(DisplaySnapshot{phase_, progress_, restart_count_, Elapsed()});
  }
}

void LocalJob::WriteStatus() {
  status_dirty_ = false;
  RunStatus status;
  status.job = job_.metadata.name;
  status.phase = phase_;
  status.reason = reason_;
  status.message = message_;
  status.restart_count = restart_count_;
  status.start_time = start_time_;
  status.completion_time = completion_time_;
  status.work_dir = options_.paths.work_dir;
  status.checkpoint_dir = options_.paths.checkpoint_dir;
  status.progress = progress_;
  for (const ReplicaState& r : replicas_) {
    ReplicaRunStatus s;
    s.name = r.launch.name;
    s.type = std::string(v1alpha1::ReplicaTypeName(r.launch.key.type));
    s.index = r.launch.key.index;
    s.address = r.launch.address;
    s.coordination_address = r.launch.coordination_address;
    s.state = r.state;
    s.starts = r.starts;
    s.last_exit_code = r.last_exit_code;
    s.last_signal = r.last_signal;
    if (r.pid > 0) s.pid = r.pid;
    s.log = r.launch.log_path;
    status.replicas.push_back(std::move(s));
  }
  const absl::Status written =
      WriteFileAtomically(options_.status_file, ToJson(status).dump(2) + "\n");
  if (!written.ok() && !status_write_failed_) {
    status_write_failed_ = true;  // said once; the run goes on
    Event(Cat("warning: ", std::string(written.message())));
  }
}

std::string LocalJob::FinalProgressLine() const {
  DisplaySnapshot snapshot{phase_, progress_, restart_count_, Elapsed()};
  if (!goodput_.last_run.run.empty()) snapshot.goodput = JobTotal(goodput_);
  return FormatStatusLine(snapshot, /*with_elapsed=*/false);
}

std::string LocalJob::FailureReport(const JobDecision& decision) const {
  std::string out = Cat("job ", job_.metadata.name, " Failed (", decision.reason, ") after ",
                        FormatElapsed(Elapsed()), ": ", decision.message, "\n  ",
                        FinalProgressLine(), "\n");
  // The replica the decision names (its message starts with "worker 2 ..."); for a deadline, the
  // coordinator; otherwise the last replica that ended with an error.
  const ReplicaState* culprit = nullptr;
  for (const ReplicaState& r : replicas_) {
    const bool named = decision.reason == "DeadlineExceeded"
                           ? r.launch.key.type == ReplicaType::kCoordinator
                           : decision.message.rfind(DescribeReplica(r.launch.key) + " ", 0) == 0;
    if (named) culprit = &r;
  }
  if (culprit == nullptr) {
    for (const ReplicaState& r : replicas_) {
      if (r.last_exit_code.value_or(0) != 0 && r.state == "Exited" &&
          (culprit == nullptr || r.ended_at > culprit->ended_at)) {
        culprit = &r;
      }
    }
  }
  if (culprit != nullptr) {
    const std::vector<std::string> lines =
        LastLines(culprit->launch.log_path, options_.failure_log_lines);
    absl::StrAppend(&out, "--- last ", lines.size(), " lines of ", culprit->launch.log_path,
                    " ---\n");
    for (const std::string& line : lines) absl::StrAppend(&out, line, "\n");
    absl::StrAppend(&out, "---\n");
  }
  return out;
}

}  // namespace tj::local
