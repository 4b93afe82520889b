// ChiefContext: what the SDK hands a program's coordinator ("chief") role: the ClusterCoordinator
// over the job's workers, clients for its parameter servers, the job's settings, a checkpointer,
// a progress reporter and a TensorBoard writer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/metrics/checkpoint_metrics.h"
#include "coordinator/metrics/coordinator_metrics.h"
#include "coordinator/preemption/preemption_handler.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/summary/event_file_writer.h"
#include "trainer/sdk/goodput_clock.h"
#include "trainer/sdk/job_settings.h"
#include "trainer/sdk/progress_reporter.h"
#include "trainer/sdk/ps_checkpointer.h"

namespace tj::sdk {

class ChiefContext {
 public:
  ChiefContext(JobSettings settings, std::unique_ptr<ClusterCoordinator> coordinator,
               std::vector<std::string> ps_addresses,
               std::vector<std::shared_ptr<PsClient>> ps_clients, absl::Time started = absl::Now())
      : settings_(std::move(settings)),
        coordinator_(std::move(coordinator)),
        ps_addresses_(std::move(ps_addresses)),
        ps_clients_(std::move(ps_clients)),
        progress_(settings_.progress_file),
        checkpoint_metrics_(&metrics_),
        goodput_(started, [this] { return coordinator_->Workers(); }) {
    progress_.set_metrics(&metrics_);
    progress_.set_goodput_source([this] { return goodput_.Read(); });
    CollectCoordinatorMetrics(*coordinator_, metrics_);
    metrics_.AddCollector([this] { goodput_.Export(metrics_); });
  }
  // The collectors read the coordinator, checkpoint_metrics_ and goodput_: gone before they are.
  ~ChiefContext() {
    metrics_.RemoveCollectors();
    progress_.set_goodput_source(nullptr);
  }
  ChiefContext(const ChiefContext&) = delete;
  ChiefContext& operator=(const ChiefContext&) = delete;

  const JobSettings& settings() const { return settings_; }
  ClusterCoordinator& coordinator() { return *coordinator_; }
  const std::vector<std::string>& ps_addresses() const { return ps_addresses_; }
  const std::vector<std::shared_ptr<PsClient>>& ps_clients() const { return ps_clients_; }
  ProgressReporter& progress() { return progress_; }
  MetricsRegistry& metrics() { return metrics_; }
  CheckpointMetrics& checkpoint_metrics() { return checkpoint_metrics_; }
  // This coordinator's time split (goodput), published in the progress and as metrics.
  GoodputClock& goodput() { return goodput_; }

  // nullptr when the job keeps no checkpoints (no TJ_CHECKPOINT_DIR).
  PsCheckpointer* checkpointer() {
    if (checkpointer_ == nullptr && !settings_.checkpoint_dir.empty()) {
      checkpointer_ = std::make_unique<PsCheckpointer>(
          settings_.checkpoint_dir, settings_.checkpoint_keep, ps_clients_,
          settings_.checkpoint_full_every);
    }
    return checkpointer_.get();
  }

  // TensorBoard events go to `log_dir` from now on (empty: none). Errors creating it are returned.
  absl::Status OpenSummaryWriter(const std::string& log_dir) {
    if (log_dir.empty()) return absl::OkStatus();
    auto writer = EventFileWriter::Create(log_dir);
    if (!writer.ok()) return writer.status();
    summaries_ = *std::move(writer);
    return absl::OkStatus();
  }
  EventFileWriter* summaries() { return summaries_.get(); }

  // The preemption handler the training loop consults; nullptr when there is none.
  PreemptionCheckpointHandler* preemption() { return preemption_; }
  void set_preemption(PreemptionCheckpointHandler* handler) { preemption_ = handler; }

 private:
  JobSettings settings_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
  std::vector<std::string> ps_addresses_;
  std::vector<std::shared_ptr<PsClient>> ps_clients_;
  MetricsRegistry metrics_;  // before progress_, which reports into it
  ProgressReporter progress_;
  CheckpointMetrics checkpoint_metrics_;  // after metrics_, which it reports into
  GoodputClock goodput_;                  // reads coordinator_
  std::unique_ptr<PsCheckpointer> checkpointer_;
  std::unique_ptr<EventFileWriter> summaries_;
  PreemptionCheckpointHandler* preemption_ = nullptr;
};

}  // namespace tj::sdk
