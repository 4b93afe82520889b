#include "trainer/sdk/training_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/base/values.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/preemption/preemption_handler.h"
#include "trainer/sdk/placement_record.h"

namespace tj::sdk {

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
    context_.goodput().TrainingStarted(restored_from_.has_value());
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
          case PreemptionCheckpointHandler::Action::kSaveAndContinue:
            TJ_RETURN_IF_ERROR(SavePreemptionCheckpoint());
            continue;
          case PreemptionCheckpointHandler::Action::kSaveAndExit: {
            absl::Status saved = SavePreemptionCheckpoint();
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
        if (interval > 0 && step_ % interval == 0) TJ_RETURN_IF_ERROR(SaveCheckpoint());
        if (options_.eval_every_steps > 0 && step_ % options_.eval_every_steps == 0) {
          TJ_RETURN_IF_ERROR(Evaluate());
        }
      }
    }
    if (window_.steps > 0) LogWindow();
    if (last_checkpoint_step_ != step_) TJ_RETURN_IF_ERROR(SaveCheckpoint());
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
    TJ_ASSIGN_OR_RETURN(
        std::optional<RestoredCheckpoint> restored,
        checkpointer->RestoreLatest([this](const nlohmann::json& state, const std::string& dir) {
          if (options_.ps_placement.is_null()) return absl::OkStatus();
          return CheckPlacementRecord(state.value("ps_placement", nlohmann::json()),
                                      options_.ps_placement, dir);
        }));
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
  // regular checkpoint. Its time feeds the countdown estimate.
  absl::Status SavePreemptionCheckpoint() {
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
    preemption_->RecordCheckpointTime(absl::Now() - start);
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
      p.message = Cat("checkpoint at step ", step_, " saved in ", absl::FormatDuration(saved.took));
    });
    return absl::OkStatus();
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
