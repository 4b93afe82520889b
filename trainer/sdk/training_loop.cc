#include "trainer/sdk/training_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/base/values.h"
#include "coordinator/checkpoint/checkpoint_storage_error.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/preemption/preemption_handler.h"
#include "trainer/sdk/placement_record.h"

namespace tj::sdk {

bool IsFinalCheckpointNotSaved(const absl::Status& status) {
  return status.GetPayload(AbslView(kFinalCheckpointNotSavedPayloadUrl)).has_value();
}

absl::StatusOr<StepResult> StepProgram::ReadStepResult(const v1::Value& value) {
  if (value.kind_case() != v1::Value::kMap) {
    return absl::InvalidArgumentError(
        Cat("a step returned ", KindName(value), "; the default reader expects a map with "
            "\"loss\" and \"examples\""));
  }
  const auto& entries = value.map().entries();
  StepResult result;
  if (auto it = entries.find("loss"); it != entries.end()) {
    result.loss = it->second.kind_case() == v1::Value::kIntValue
                      ? static_cast<double>(it->second.int_value())
                      : it->second.double_value();
  }
  if (auto it = entries.find("examples"); it != entries.end()) {
    result.examples = it->second.int_value();
  }
  return result;
}

absl::StatusOr<std::map<std::string, double>> StepProgram::Evaluate(int64_t) {
  return std::map<std::string, double>();
}

namespace {

// Accumulates step results between two log lines.
struct Window {
  double loss_sum = 0;
  int64_t steps = 0;
  int64_t examples = 0;
  absl::Time since = absl::Now();

  void Reset() { *this = Window(); }
};

constexpr char kCheckpointFailuresName[] = "tj_checkpoint_failures_total";
constexpr char kCheckpointFailuresHelp[] =
    "Checkpoint save attempts, and attempts to claim the location at start, that the storage "
    "refused or did not answer (no manifest written)";

// Which save SaveWithRetries makes: how often it is tried, and what a refusal leads to.
enum class SaveKind { kPeriodic, kFinal, kPreemptionFirst, kPreemptionFinal };

class Loop {
 public:
  Loop(ChiefContext& context, StepProgram& program, const TrainingLoopOptions& options)
      : context_(context), program_(program), options_(options) {}

  absl::StatusOr<TrainingSummary> Run() {
    if (options_.total_steps < 0) {
      return absl::InvalidArgumentError(Cat("total steps must be >= 0, got ",
                                            options_.total_steps));
    }
    preemption_ = context_.preemption();
    look_ahead_ = std::max<int64_t>(1, options_.max_steps_ahead);
    TJ_RETURN_IF_ERROR(Restore());
    if (options_.create_variables) TJ_RETURN_IF_ERROR(options_.create_variables());
    // From here on a coordinator notice has a loop to checkpoint it.
    struct Attachment {
      PreemptionCheckpointHandler* handler;
      explicit Attachment(PreemptionCheckpointHandler* h) : handler(h) {
        if (handler != nullptr) handler->Attach(true);
      }
      ~Attachment() {
        if (handler != nullptr) handler->Attach(false);
      }
    } attachment(preemption_);
    const int64_t interval = context_.settings().checkpoint_interval_steps;
    int64_t next_to_schedule = step_;
    std::deque<RemoteValue> pending;  // steps [step_, next_to_schedule), in order
    Report("training", Cat("training from step ", step_, " to ", options_.total_steps));
    UpdateLookAhead();
    while (step_ < options_.total_steps) {
      int64_t segment_end = SegmentEnd(interval);
      bool paused_for_preemption = false;
      absl::Time pause_started;
      while (step_ < segment_end) {
        if (!paused_for_preemption && preemption_ != nullptr &&
            preemption_->CheckpointRequested()) {
          // The next step boundary: what is scheduled finishes, nothing more is.
          paused_for_preemption = true;
          pause_started = absl::Now();
          segment_end = next_to_schedule;
          if (step_ >= segment_end) break;
        }
        if (step_ >= look_ahead_updated_at_ + 64) UpdateLookAhead();
        while (next_to_schedule < segment_end && next_to_schedule - step_ < look_ahead_) {
          TJ_ASSIGN_OR_RETURN(RemoteValue value, program_.ScheduleStep(next_to_schedule));
          pending.push_back(std::move(value));
          ++next_to_schedule;
        }
        absl::StatusOr<v1::Value> fetched = Fetch(pending.front());
        if (absl::IsCancelled(fetched.status())) {
          // This step was cancelled because another one failed (TensorFlow's semantics): that
          // failure is the job's error (a lost PS means a restart), and Join raises it.
          TJ_RETURN_IF_ERROR(context_.coordinator().Join());
        }
        TJ_ASSIGN_OR_RETURN(v1::Value value, std::move(fetched));
        pending.pop_front();
        TJ_ASSIGN_OR_RETURN(StepResult result, program_.ReadStepResult(value));
        ++step_;
        ++steps_this_run_;
        if (steps_this_run_ == 1) MarkTrainingAtSpeed();
        window_.loss_sum += result.loss;
        window_.examples += result.examples;
        ++window_.steps;
        if (step_ % std::max<int64_t>(1, options_.log_every_steps) == 0 ||
            step_ == options_.total_steps) {
          LogWindow();
        }
      }
      // Every step of the segment is back; Join raises an error nobody fetched (none expected).
      TJ_RETURN_IF_ERROR(context_.coordinator().Join());
      if (preemption_ != nullptr && (paused_for_preemption || preemption_->CheckpointRequested())) {
        const absl::Duration drain =
            paused_for_preemption ? absl::Now() - pause_started : absl::ZeroDuration();
        switch (preemption_->AtBoundary(step_, drain)) {
          case PreemptionCheckpointHandler::Action::kContinue:
            break;
          case PreemptionCheckpointHandler::Action::kSaveAndContinue: {
            // Refused by its storage: reported, and training goes on to the final save before
            // the deadline, which is tried again while time allows.
            absl::Status saved = SavePreemptionCheckpoint(SaveKind::kPreemptionFirst);
            if (!saved.ok() && !IsCheckpointStorageError(saved)) return saved;
            continue;
          }
          case PreemptionCheckpointHandler::Action::kSaveAndExit: {
            absl::Status saved = SavePreemptionCheckpoint(SaveKind::kPreemptionFinal);
            if (!saved.ok()) {
              spdlog::error("preemption checkpoint at step {} failed: {}; exiting anyway, the job "
                            "resumes from the previous checkpoint",
                            step_, saved.ToString());
            }
            Report("preempted", Cat("preempted at step ", step_, saved.ok() ? ", checkpointed" : ", checkpoint failed"));
            return PreemptedError(step_, saved.ok() ? "checkpoint saved" : "checkpoint failed");
          }
        }
      }
      if (step_ < options_.total_steps) {
        if (interval > 0 && step_ % interval == 0) TJ_RETURN_IF_ERROR(PeriodicCheckpoint());
        if (options_.eval_every_steps > 0 && step_ % options_.eval_every_steps == 0) {
          TJ_RETURN_IF_ERROR(Evaluate());
        }
      }
    }
    if (window_.steps > 0) LogWindow();
    // Nothing was left to train (restored at the last step): the final save and evaluation are
    // the run's work.
    if (steps_this_run_ == 0) MarkTrainingAtSpeed();
    if (last_checkpoint_step_ != step_) TJ_RETURN_IF_ERROR(FinalCheckpoint());
    TJ_RETURN_IF_ERROR(Evaluate());
    Report("succeeded", Cat("trained ", options_.total_steps, " steps (", steps_this_run_,
                            " in this run)"));
    if (context_.summaries() != nullptr) {
      if (auto status = context_.summaries()->Flush(); !status.ok()) {
        spdlog::warn("TensorBoard events: {}", status.ToString());
      }
    }
    TrainingSummary summary;
    summary.steps = step_;
    summary.steps_this_run = steps_this_run_;
    summary.restored_from_step = restored_from_;
    summary.last_loss = last_loss_;
    summary.metrics = metrics_;
    return summary;
  }

 private:
  absl::Status Restore() {
    PsCheckpointer* checkpointer = context_.checkpointer();
    if (checkpointer == nullptr) return absl::OkStatus();
    Report("restoring", Cat("looking for checkpoints in ", checkpointer->dir()));
    const absl::Time restore_started = absl::Now();
    TJ_ASSIGN_OR_RETURN(std::optional<RestoredCheckpoint> restored, RestoreWhenStorageTakesIt());
    if (!restored.has_value()) {
      context_.checkpoint_metrics().Restored(absl::Now() - restore_started, false,
                                             absl::InfinitePast(), absl::Now());
      spdlog::info("no checkpoint in {}: training starts at step 0", checkpointer->dir());
      return absl::OkStatus();
    }
    const nlohmann::json& state = restored->state;
    if (!options_.program_fingerprint.is_null() && state.contains("program") &&
        state["program"] != options_.program_fingerprint) {
      return absl::FailedPreconditionError(Cat(
          "checkpoint ", restored->dir, " was written by a program with another configuration (",
          state["program"].dump(), "); this one is ", options_.program_fingerprint.dump(),
          ". Use a new checkpoint directory or the same configuration"));
    }
    // saved_at: written since session 9; older checkpoints leave the age unknown.
    const int64_t saved_at = state.value("saved_at_unix_seconds", int64_t{0});
    context_.checkpoint_metrics().Restored(
        absl::Now() - restore_started, true,
        saved_at > 0 ? absl::FromUnixSeconds(saved_at) : absl::InfinitePast(), absl::Now());
    step_ = restored->step;
    restored_from_ = step_;
    context_.goodput().Restored();
    last_checkpoint_step_ = step_;
    spdlog::info("restored checkpoint {} (step {}): training resumes at step {}", restored->dir,
                 restored->step, step_);
    context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
      p.restored_from_step = step_;
      p.last_checkpoint_step = step_;
      p.step = step_;
    });
    return absl::OkStatus();
  }

  // Claims the checkpoint location and restores its newest checkpoint. While its storage refuses
  // (IsCheckpointStorageError: keys that may read the bucket but no longer write it, a bucket
  // deleted, an endpoint down) the coordinator is held: the refusal is reported like a refused
  // save (checkpointError naming the location and the storage's answer, which the operator turns
  // into CheckpointFailing and an Event; tj_checkpoint_failures_total) and the claim is tried
  // again (StartAttemptIn: 1 s doubling to 60 s), without training, until it is taken. Exiting
  // instead was a permanent failure (exit 1) of a job that only needs its keys fixed; the restart
  // code would crash-loop into the same answer. Nothing is written but the claim, which is whole
  // or absent. A preemption notice while held ends it (Preempted: nothing to save); a SIGTERM ends
  // the process with the restart code, as before the loop. Other errors end the run as before.
  absl::StatusOr<std::optional<RestoredCheckpoint>> RestoreWhenStorageTakesIt() {
    PsCheckpointer* checkpointer = context_.checkpointer();
    for (int attempt = 1;; ++attempt) {
      absl::StatusOr<std::optional<RestoredCheckpoint>> restored =
          checkpointer->RestoreLatest([this](const nlohmann::json& state, const std::string& dir) {
            if (options_.ps_placement.is_null()) return absl::OkStatus();
            return CheckPlacementRecord(state.value("ps_placement", nlohmann::json()),
                                        options_.ps_placement, dir);
          });
      if (restored.ok() && attempt > 1) {
        spdlog::info("checkpoint location {} taken at attempt {}: training starts",
                     checkpointer->dir(), attempt);
        context_.progress().Report(
            [](v1alpha1::TrainingProgress& p) { p.checkpoint_error.clear(); });
      }
      if (restored.ok() || !IsCheckpointStorageError(restored.status())) return restored;
      const absl::Duration wait = StartAttemptIn(options_.checkpoint_retry, attempt);
      context_.metrics().AddCounter(kCheckpointFailuresName, kCheckpointFailuresHelp);
      const std::string summary =
          Cat("checkpoint location ", checkpointer->dir(), " not taken at start (attempt ", attempt,
              "): its storage refused or did not answer; held without training, trying again in ",
              absl::FormatDuration(wait));
      spdlog::warn("{}: {}", summary, restored.status().ToString());
      context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
        p.state = "held";
        p.checkpoint_error = std::string(restored.status().message());
        p.message = summary;
      });
      if (WaitUnlessPreempted(wait)) {
        return PreemptedError(step_,
                              "held while the checkpoint storage refused it; nothing to save");
      }
    }
  }

  // Sleeps `wait`, or less when a coordinator or PS notice arrives: true then.
  bool WaitUnlessPreempted(absl::Duration wait) {
    const absl::Time until = absl::Now() + wait;
    while (true) {
      if (preemption_ != nullptr && preemption_->CheckpointRequested()) return true;
      const absl::Duration left = until - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      // Notices are polled: the handler offers nothing to wait on.
      absl::SleepFor(std::min(left, absl::Milliseconds(100)));
    }
  }

  // Goodput counts training as productive from the first step this run completes, not from the
  // loop's start: until a step is back, the job is still being brought up (per-worker resources
  // such as datasets built on every worker, streams opened, the first closures' warm-up), which
  // is start-up for the first coordinator and restart for a later one (docs/decisions.md,
  // "Session 13: goodput"). The first step's own time goes with it: one step per run.
  void MarkTrainingAtSpeed() { context_.goodput().TrainingStarted(); }

  // At most about what the workers hold in flight plus one per worker is scheduled ahead: enough
  // to keep every window full, and little enough that pausing at a step boundary (for a checkpoint
  // or a preemption) waits for about one step, not for thousands queued.
  void UpdateLookAhead() {
    int64_t in_flight_capacity = 0;
    int64_t workers = 0;
    for (const WorkerStats& worker : context_.coordinator().Workers()) {
      in_flight_capacity += worker.window;
      ++workers;
    }
    look_ahead_ = std::clamp<int64_t>(in_flight_capacity + workers, 2,
                                      std::max<int64_t>(2, options_.max_steps_ahead));
    look_ahead_updated_at_ = step_;
  }

  // The save a preemption asks for: the TerminationConfig's save_fn if it has one, else the
  // regular checkpoint; the final one tried again while the notice's deadline allows. The time of
  // its last attempt feeds the countdown estimate.
  absl::Status SavePreemptionCheckpoint(SaveKind kind) {
    absl::Duration took;
    auto save = [&]() -> absl::Status {
      const absl::Time start = absl::Now();
      absl::Status saved;
      if (preemption_->config().save_fn) {
        Report("checkpointing", Cat("preemption: save_fn at step ", step_));
        saved = preemption_->config().save_fn(step_);
        if (saved.ok()) context_.goodput().CheckpointSaved(absl::Now() - start);
      } else if (context_.checkpointer() == nullptr) {
        spdlog::warn("preemption at step {}: the job keeps no checkpoints (no checkpoint dir); "
                     "nothing to save",
                     step_);
      } else if (last_checkpoint_step_ != step_) {
        saved = SaveCheckpoint();
      }
      took = absl::Now() - start;
      return saved;
    };
    absl::Status saved = SaveWithRetries(kind, save);
    preemption_->RecordCheckpointTime(took);
    return saved;
  }

  int64_t SegmentEnd(int64_t interval) const {
    int64_t end = options_.total_steps;
    if (interval > 0) end = std::min(end, (step_ / interval + 1) * interval);
    if (options_.eval_every_steps > 0) {
      end = std::min(end, (step_ / options_.eval_every_steps + 1) * options_.eval_every_steps);
    }
    return end;
  }

  absl::Status SaveCheckpoint() {
    PsCheckpointer* checkpointer = context_.checkpointer();
    if (checkpointer == nullptr) return absl::OkStatus();
    const absl::Time pause_started = absl::Now();
    Report("checkpointing", Cat("saving checkpoint at step ", step_));
    // total_run_calls: TensorFlow's name for the handler's run count, which survives restarts
    // through the checkpoint; here every step is one run.
    nlohmann::json state = {{"step", step_},
                            {"total_run_calls", step_},
                            {"total_steps", options_.total_steps},
                            {"saved_at_unix_seconds", absl::ToUnixSeconds(absl::Now())}};
    if (!options_.program_fingerprint.is_null()) state["program"] = options_.program_fingerprint;
    if (!options_.ps_placement.is_null()) state["ps_placement"] = options_.ps_placement;
    TJ_ASSIGN_OR_RETURN(SavedCheckpoint saved, checkpointer->Save(step_, state));
    last_checkpoint_step_ = step_;
    context_.goodput().CheckpointSaved(absl::Now() - pause_started);
    context_.metrics().AddCounter("tj_checkpoints_total", "Checkpoints saved by this coordinator");
    context_.metrics().SetGauge("tj_checkpoint_last_duration_seconds",
                                "How long the newest checkpoint took to save",
                                absl::ToDoubleSeconds(saved.took));
    context_.checkpoint_metrics().Saved(saved.took, saved.bytes, absl::Now());
    spdlog::info(
        "checkpoint {} saved: step {}, {} bytes in {} ({} PS wrote deltas; embedding tables {} "
        "bytes in {} on the slowest PS)",
        saved.dir, saved.step, saved.bytes, absl::FormatDuration(saved.took), saved.deltas,
        saved.table_bytes, absl::FormatDuration(saved.table_took));
    context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
      p.state = "training";
      p.last_checkpoint_step = step_;
      p.checkpoint_error.clear();
      p.message = Cat("checkpoint at step ", step_, " saved in ", absl::FormatDuration(saved.took));
    });
    return absl::OkStatus();
  }

  // A periodic save its storage refused or did not answer (credentials revoked, bucket deleted,
  // endpoint down) leaves no manifest, so the previous checkpoint stays the newest valid one, and
  // the PS state is untouched: training goes on and the next interval saves again. Ending the
  // coordinator instead would restart the job into the same refusal and throw away every step
  // since that checkpoint. Reported in the progress (checkpointError, which the operator turns
  // into a condition and an Event) and counted; any other failure ends the run as before.
  absl::Status PeriodicCheckpoint() {
    absl::Status saved = SaveWithRetries(SaveKind::kPeriodic, [this] { return SaveCheckpoint(); });
    if (saved.ok() || !IsCheckpointStorageError(saved)) return saved;
    return absl::OkStatus();
  }

  // The save at the end of training: nothing after it would save the trained state, so a refusal
  // is tried again (CheckpointRetryPolicy::final_attempts). When every attempt is refused the run
  // has not succeeded: IsFinalCheckpointNotSaved, the restart exit code.
  absl::Status FinalCheckpoint() {
    absl::Status saved = SaveWithRetries(SaveKind::kFinal, [this] { return SaveCheckpoint(); });
    if (saved.ok() || !IsCheckpointStorageError(saved)) return saved;
    absl::Status lost(saved.code(), Cat("final checkpoint at step ", step_, " not saved after ",
                                        options_.checkpoint_retry.final_attempts,
                                        " attempts (the newest checkpoint is ", NewestCheckpoint(),
                                        "): ", saved.message()));
    lost.SetPayload(AbslView(kFinalCheckpointNotSavedPayloadUrl), absl::Cord(Cat(step_)));
    return lost;
  }

  std::string NewestCheckpoint() const {
    return last_checkpoint_step_ ? Cat("step ", *last_checkpoint_step_) : std::string("none");
  }

  // Calls `save` until it succeeds, fails otherwise than on its storage, or no attempt may follow
  // (CheckpointRetryPolicy, NextSaveAttemptIn): once for a periodic save and the first of a grace
  // period, final_attempts times for the final one, until the notice's deadline for the last
  // preemption save (final_attempts times when the notice gave none). Each refused attempt is
  // reported (progress checkpointError, tj_checkpoint_failures_total, a warning); the last
  // status is returned. A checkpoint is reported saved only by SaveCheckpoint, once written.
  absl::Status SaveWithRetries(SaveKind kind, const std::function<absl::Status()>& save) {
    const CheckpointRetryPolicy& policy = options_.checkpoint_retry;
    int max_attempts = 1;
    absl::Time deadline = absl::InfiniteFuture();
    if (kind == SaveKind::kFinal) max_attempts = policy.final_attempts;
    if (kind == SaveKind::kPreemptionFinal) {
      const std::optional<absl::Time> notice_deadline = preemption_->deadline();
      max_attempts = notice_deadline ? std::numeric_limits<int>::max() : policy.final_attempts;
      deadline = notice_deadline.value_or(absl::InfiniteFuture());
    }
    for (int attempt = 1;; ++attempt) {
      const absl::Time started = absl::Now();
      absl::Status saved = save();
      if (saved.ok()) {
        context_.progress().Report(
            [](v1alpha1::TrainingProgress& p) { p.checkpoint_error.clear(); });
      }
      if (saved.ok() || !IsCheckpointStorageError(saved)) return saved;
      const absl::Time failed = absl::Now();
      const std::optional<absl::Duration> retry_in = NextSaveAttemptIn(
          policy, attempt, max_attempts, deadline, failed - started, failed);
      ReportRefusedSave(kind, attempt, max_attempts, saved, retry_in);
      if (!retry_in.has_value()) return saved;
      absl::SleepFor(*retry_in);
    }
  }

  void ReportRefusedSave(SaveKind kind, int attempt, int max_attempts, const absl::Status& saved,
                         std::optional<absl::Duration> retry_in) {
    context_.metrics().AddCounter(kCheckpointFailuresName, kCheckpointFailuresHelp);
    const char* what = kind == SaveKind::kFinal             ? "final checkpoint"
                       : kind == SaveKind::kPeriodic        ? "checkpoint"
                       : kind == SaveKind::kPreemptionFirst ? "first preemption checkpoint"
                                                            : "preemption checkpoint";
    const std::string attempts =
        max_attempts == std::numeric_limits<int>::max()
            ? Cat("attempt ", attempt, " before the notice's deadline")
            : Cat("attempt ", attempt, " of ", max_attempts);
    std::string then;
    if (retry_in.has_value()) {
      then = Cat("trying again in ", absl::FormatDuration(*retry_in));
    } else if (kind == SaveKind::kPeriodic) {
      then = Cat("training goes on; the next save is at step ",
                 step_ + context_.settings().checkpoint_interval_steps);
    } else if (kind == SaveKind::kPreemptionFirst) {
      then = "training goes on until the final preemption checkpoint";
    } else {
      then = "giving up";
    }
    const std::string summary = Cat(what, " at step ", step_, " not saved (", attempts, "); ", then,
                                    "; the newest checkpoint is ", NewestCheckpoint());
    spdlog::warn("{}: {}", summary, saved.ToString());
    const bool goes_on =
        !retry_in.has_value() && (kind == SaveKind::kPeriodic || kind == SaveKind::kPreemptionFirst);
    context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
      if (goes_on) p.state = "training";
      p.checkpoint_error = std::string(saved.message());
      p.message = summary;
    });
  }

  absl::Status Evaluate() {
    Report("evaluating", Cat("evaluating at step ", step_));
    TJ_ASSIGN_OR_RETURN(metrics_, program_.Evaluate(step_));
    std::string line;
    for (const auto& [name, value] : metrics_) line += Cat(" ", name, "=", value);
    if (!metrics_.empty()) spdlog::info("evaluation at step {}:{}", step_, line);
    if (context_.summaries() != nullptr) {
      for (const auto& [name, value] : metrics_) {
        WriteScalar(Cat("eval/", name), static_cast<float>(value));
      }
    }
    context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
      p.state = "training";
      p.metrics = metrics_;
    });
    return absl::OkStatus();
  }

  void LogWindow() {
    const double seconds = std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - window_.since));
    const double loss = window_.loss_sum / static_cast<double>(std::max<int64_t>(1, window_.steps));
    const double examples_per_second = static_cast<double>(window_.examples) / seconds;
    last_loss_ = loss;
    const int64_t epoch = options_.steps_per_epoch > 0 ? step_ / options_.steps_per_epoch : 0;
    spdlog::info("step {}/{} epoch {} loss {:.4f} examples/s {:.0f}", step_, options_.total_steps,
                 epoch, loss, examples_per_second);
    WriteScalar("loss", static_cast<float>(loss));
    WriteScalar("examples_per_second", static_cast<float>(examples_per_second));
    context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
      p.state = "training";
      p.step = step_;
      p.total_steps = options_.total_steps;
      p.epoch = epoch;
      p.loss = loss;
      p.examples_per_second = examples_per_second;
    });
    window_.Reset();
  }

  void WriteScalar(const std::string& tag, float value) {
    if (context_.summaries() == nullptr) return;
    if (auto status = context_.summaries()->WriteScalar(tag, step_, value); !status.ok()) {
      spdlog::warn("TensorBoard events: {}", status.ToString());
    }
  }

  void Report(const char* state, const std::string& message) {
    spdlog::info("{}", message);
    context_.progress().Report([&](v1alpha1::TrainingProgress& p) {
      p.state = state;
      p.step = step_;
      p.total_steps = options_.total_steps;
      p.message = message;
    });
  }

  ChiefContext& context_;
  PreemptionCheckpointHandler* preemption_ = nullptr;
  int64_t look_ahead_ = 1;
  int64_t look_ahead_updated_at_ = 0;
  StepProgram& program_;
  const TrainingLoopOptions& options_;
  int64_t step_ = 0;
  int64_t steps_this_run_ = 0;
  std::optional<int64_t> restored_from_;
  std::optional<int64_t> last_checkpoint_step_;
  std::optional<double> last_loss_;
  std::map<std::string, double> metrics_;
  Window window_;
};

}  // namespace

absl::StatusOr<TrainingSummary> RunTrainingLoop(ChiefContext& context, StepProgram& program,
                                                const TrainingLoopOptions& options) {
  return Loop(context, program, options).Run();
}

}  // namespace tj::sdk
