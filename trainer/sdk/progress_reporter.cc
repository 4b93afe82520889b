#include "trainer/sdk/progress_reporter.h"

#include <spdlog/spdlog.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint/atomic_file.h"

namespace tj::sdk {

void ProgressReporter::WriteLocked() {
  progress_.updated = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  if (metrics_ != nullptr) {
    const v1alpha1::TrainingProgress& p = progress_;
    metrics_->SetGauge("tj_training_step", "Training steps completed", static_cast<double>(p.step));
    metrics_->SetGauge("tj_training_total_steps", "The job's step goal",
                       static_cast<double>(p.total_steps));
    metrics_->SetGauge("tj_training_epoch", "Completed passes over the training data",
                       static_cast<double>(p.epoch));
    if (p.loss) metrics_->SetGauge("tj_training_loss", "Mean training loss, latest steps", *p.loss);
    if (p.examples_per_second) {
      metrics_->SetGauge("tj_training_examples_per_second", "Training throughput",
                         *p.examples_per_second);
    }
    if (p.last_checkpoint_step) {
      metrics_->SetGauge("tj_checkpoint_last_step", "Step of the newest checkpoint",
                         static_cast<double>(*p.last_checkpoint_step));
    }
    if (p.restored_from_step) {
      metrics_->SetGauge("tj_checkpoint_restored_from_step",
                         "Step of the checkpoint this coordinator resumed from",
                         static_cast<double>(*p.restored_from_step));
    }
    for (const auto& [name, value] : p.metrics) {
      metrics_->SetGauge("tj_eval_metric", "Latest held-out evaluation", value, {{"name", name}});
    }
  }
  if (path_.empty() && !publish_) return;
  // The file is for a display polling twice a second, and each write is an fsync on the training
  // loop's thread: routine updates are written at most every kMinWriteInterval; a change of state
  // (checkpointing, preempted, succeeded...) and every event are written at once.
  const absl::Time now = absl::Now();
  if (progress_.state == written_state_ && progress_.events.size() == written_events_ &&
      now - written_at_ < kMinWriteInterval) {
    return;
  }
  written_state_ = progress_.state;
  written_events_ = progress_.events.size();
  written_at_ = now;
  if (goodput_) progress_.goodput = goodput_();
  const std::string text = v1alpha1::ToJson(progress_).dump();
  if (publish_) publish_(text);
  if (path_.empty()) return;
  absl::Status status = WriteFileAtomically(path_, text + "\n");
  if (!status.ok() && !write_failed_) {
    spdlog::warn("cannot write the progress file {}: {} (training goes on)", path_,
                 status.ToString());
    write_failed_ = true;
  }
}

}  // namespace tj::sdk
