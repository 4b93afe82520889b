#include "coordinator/preemption/preemption_handler.h"

#include <spdlog/spdlog.h>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace tj {

absl::Status PreemptedError(int64_t step, const std::string& why) {
  absl::Status status =
      absl::AbortedError(absl::StrCat("preempted: checkpointed at step ", step, " (", why, ")"));
  status.SetPayload(kPreemptedPayloadUrl, absl::Cord(absl::StrCat(step)));
  return status;
}

bool IsPreempted(const absl::Status& status) {
  return status.GetPayload(kPreemptedPayloadUrl).has_value();
}

PreemptionCheckpointHandler::PreemptionCheckpointHandler(TerminationConfig config,
                                                         ClusterCoordinator* coordinator,
                                                         int num_workers, int num_ps)
    : config_(std::move(config)),
      coordinator_(coordinator),
      num_workers_(num_workers),
      num_ps_(num_ps) {
  if (config_.termination_watcher) watcher_ = std::thread([this] { Watch(); });
}

PreemptionCheckpointHandler::~PreemptionCheckpointHandler() {
  stop_.Notify();
  if (watcher_.joinable()) watcher_.join();
}

void PreemptionCheckpointHandler::Watch() {
  while (!stop_.WaitForNotificationWithTimeout(config_.watch_interval)) {
    if (config_.termination_watcher()) {
      Notice("chief", 0, "termination watcher", absl::InfiniteFuture());
      return;
    }
  }
}

void PreemptionCheckpointHandler::Record(const std::string& event) {
  spdlog::warn("preemption: {}", event);
  history_.push_back({absl::Now(), event});
  if (listener_) listener_(event);
}

void PreemptionCheckpointHandler::SetEventListener(
    std::function<void(const std::string&)> listener) {
  absl::MutexLock lock(&mu_);
  listener_ = std::move(listener);
}

void PreemptionCheckpointHandler::Attach(bool attached) { attached_.store(attached); }

v1::PreemptionNoticeResponse PreemptionCheckpointHandler::Notice(const std::string& type, int index,
                                                                 const std::string& reason,
                                                                 absl::Time deadline) {
  v1::PreemptionNoticeResponse response;
  const absl::Time now = absl::Now();
  const std::string task = absl::StrCat(type, ":", index);
  // Workers come and go (scaling): the coordinator's pool decides which exist.
  const bool pool_decides = type == "worker" && coordinator_ != nullptr;
  const int count = type == "worker"  ? num_workers_
                    : type == "ps"    ? num_ps_
                    : type == "chief" ? 1
                                      : 0;
  absl::MutexLock lock(&mu_);
  if (index < 0 || (!pool_decides && index >= count)) {
    response.set_accepted(false);
    response.set_decision(absl::StrCat("no task ", task, " in this job (", num_workers_,
                                       " worker(s), ", num_ps_, " ps, 1 chief)"));
    Record(absl::StrCat("notice for unknown task ", task, " (", reason, ") refused"));
    return response;
  }
  std::string late;
  const bool deadline_given = deadline != absl::InfinitePast() && deadline != absl::InfiniteFuture();
  if (!deadline_given) {
    deadline = now + config_.grace_period;
  } else if (deadline < now) {
    late = absl::StrCat(" (its deadline passed ", absl::FormatDuration(now - deadline), " ago)");
    deadline = now;
  }
  if (type == "worker") {
    absl::Status preempted = coordinator_ == nullptr
                                 ? absl::FailedPreconditionError("no coordinator")
                                 : coordinator_->PreemptWorker(index, deadline);
    response.set_accepted(preempted.ok());
    response.set_decision(
        preempted.ok() ? absl::StrCat("worker ", index,
                                      " takes no new closures; those in flight run until the "
                                      "deadline, then elsewhere")
        : absl::IsNotFound(preempted)
            ? absl::StrCat("no task ", task, " in this job: ", std::string(preempted.message()))
            : std::string(preempted.message()));
    Record(absl::StrCat("notice for ", task, " (", reason, ")", late, ": ", response.decision()));
    return response;
  }
  if (phase_ != Phase::kIdle) {
    response.set_accepted(false);
    response.set_decision(absl::StrCat("ignored: already handling the notice for ", leader_));
    Record(absl::StrCat("notice for ", task, " (", reason, ") ", response.decision()));
    return response;
  }
  leader_ = task;
  deadline_ = deadline;
  deadline_known_ = deadline_given || config_.grace_period > absl::ZeroDuration();
  phase_ = Phase::kFirstRequested;
  requested_.store(true);
  response.set_accepted(true);
  response.set_decision(
      config_.grace_period > absl::ZeroDuration()
          ? absl::StrCat("checkpoint at the next step boundary, train on, checkpoint again before ",
                         absl::FormatTime("%H:%M:%E3S", deadline, absl::UTCTimeZone()),
                         " and exit with ", config_.exit_code)
          : absl::StrCat("checkpoint at the next step boundary and exit with ", config_.exit_code));
  Record(absl::StrCat("notice for ", task, " (", reason, ")", late, ": ", response.decision()));
  return response;
}

bool PreemptionCheckpointHandler::CheckpointRequested() {
  if (requested_.load(std::memory_order_acquire)) return true;
  absl::MutexLock lock(&mu_);
  if (phase_ == Phase::kCountdown && absl::Now() >= final_call_at_) {
    phase_ = Phase::kFinalRequested;
    requested_.store(true);
    Record("grace period almost over: final checkpoint at the next step boundary");
    return true;
  }
  return false;
}

PreemptionCheckpointHandler::Action PreemptionCheckpointHandler::AtBoundary(int64_t step,
                                                                            absl::Duration drain) {
  absl::MutexLock lock(&mu_);
  drain_ = std::max(drain_, drain);
  switch (phase_) {
    case Phase::kIdle:
    case Phase::kCountdown:
      return Action::kContinue;
    case Phase::kFinalRequested:
      requested_.store(false);
      return Action::kSaveAndExit;
    case Phase::kFirstRequested:
      break;
  }
  requested_.store(false);
  if (config_.grace_period <= absl::ZeroDuration()) return Action::kSaveAndExit;
  phase_ = Phase::kCountdown;
  ScheduleFinalCallLocked();
  Record(absl::StrCat("step ", step, ": first checkpoint now, then training on until ",
                      absl::FormatTime("%H:%M:%E3S", final_call_at_, absl::UTCTimeZone())));
  return Action::kSaveAndContinue;
}

void PreemptionCheckpointHandler::ScheduleFinalCallLocked() {
  // Stop for the final checkpoint early enough for the slowest drain and checkpoint seen, with
  // TensorFlow's buffer (3x), plus the 200 ms an exit takes. Refined once the first checkpoint's
  // time is known; if that leaves no time, the final call is at once.
  final_call_at_ = deadline_ - 3 * (2 * drain_ + checkpoint_time_) - absl::Milliseconds(200);
}

void PreemptionCheckpointHandler::RecordCheckpointTime(absl::Duration took) {
  absl::MutexLock lock(&mu_);
  checkpoint_time_ = std::max(checkpoint_time_, took);
  if (phase_ == Phase::kCountdown) ScheduleFinalCallLocked();
}

bool PreemptionCheckpointHandler::preempting() const {
  absl::MutexLock lock(&mu_);
  return phase_ != Phase::kIdle;
}

std::optional<absl::Time> PreemptionCheckpointHandler::deadline() const {
  absl::MutexLock lock(&mu_);
  if (phase_ == Phase::kIdle || !deadline_known_) return std::nullopt;
  return deadline_;
}

std::vector<PreemptionRecord> PreemptionCheckpointHandler::history() const {
  absl::MutexLock lock(&mu_);
  return history_;
}

}  // namespace tj
