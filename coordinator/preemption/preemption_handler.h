// PreemptionCheckpointHandler for parameter-server training (TensorFlow's refuses PS clusters).
// Notices come from SIGTERM to the coordinator, from the TerminationConfig's watcher, and from
// PreemptionNotice RPCs that the operator and `tjctl` send for a pod or process about to go:
//   - a worker: it takes no new closures, its running ones finish before the deadline or run
//     elsewhere; no checkpoint; training goes on and the worker rejoins when replaced;
//   - a PS or the coordinator: training pauses at the next step boundary, a checkpoint is saved and
//     the coordinator exits with the restart code. With a grace period: checkpoint at once, keep
//     training, and checkpoint again right before the deadline, estimated from the measured drain
//     and checkpoint times (TensorFlow's two-checkpoint behaviour).
// Only the first PS/coordinator notice leads; later ones are logged and ignored.
//
// The training loop (trainer/sdk/training_loop.h) drives it: it asks CheckpointRequested() before
// scheduling each step, and AtBoundary() once every scheduled step is back.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/preemption/termination_config.h"
#include "tj/v1/coordination.pb.h"

namespace tj {

// The status the training loop returns after the final preemption checkpoint: Aborted, carrying
// this payload, which the program turns into the restart exit code.
inline constexpr char kPreemptedPayloadUrl[] = "tj.dev/preempted";
absl::Status PreemptedError(int64_t step, const std::string& why);
bool IsPreempted(const absl::Status& status);

struct PreemptionRecord {
  absl::Time time;
  std::string event;  // for logs, status and metrics
};

class PreemptionCheckpointHandler {
 public:
  // `coordinator` receives worker notices (its pool decides which workers exist: the job may have
  // been scaled); the counts bound which tasks exist otherwise.
  PreemptionCheckpointHandler(TerminationConfig config, ClusterCoordinator* coordinator,
                              int num_workers, int num_ps);
  ~PreemptionCheckpointHandler();
  PreemptionCheckpointHandler(const PreemptionCheckpointHandler&) = delete;
  PreemptionCheckpointHandler& operator=(const PreemptionCheckpointHandler&) = delete;

  const TerminationConfig& config() const { return config_; }

  // A notice for task (type, index) that will be terminated at `deadline` (InfinitePast or
  // InfiniteFuture: unknown, taken as now + grace period). Never blocks.
  v1::PreemptionNoticeResponse Notice(const std::string& type, int index,
                                      const std::string& reason, absl::Time deadline);

  // Whether a training loop consumes notices. A coordinator notice that arrives while no loop is
  // attached (starting up, or done) has nothing to checkpoint: NoticeWhileDetached() tells.
  void Attach(bool attached);
  bool attached() const { return attached_.load(); }

  // Cheap; true when the loop must stop scheduling and pause at the next step boundary.
  bool CheckpointRequested();

  enum class Action { kContinue, kSaveAndContinue, kSaveAndExit };
  // Training is paused with every step up to `step` done and `drain` spent waiting for the last
  // ones. What to do now.
  Action AtBoundary(int64_t step, absl::Duration drain);
  // How long the last preemption checkpoint took (for the countdown estimate).
  void RecordCheckpointTime(absl::Duration took);

  // Called with every notice, decision and exit as it happens (for status and metrics). Set
  // before notices can arrive.
  void SetEventListener(std::function<void(const std::string&)> listener);

  // Whether a coordinator/PS notice is being handled, and what happened so far.
  bool preempting() const;
  // When the task of the notice being handled goes: the deadline the notice gave, or its arrival
  // plus the grace period. Nullopt while idle, and when the notice gave no deadline and the grace
  // period is 0 (a SIGTERM: the pod's own termination grace period is not known here).
  std::optional<absl::Time> deadline() const;
  std::vector<PreemptionRecord> history() const;

 private:
  enum class Phase { kIdle, kFirstRequested, kCountdown, kFinalRequested };
  void Record(const std::string& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleFinalCallLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Watch();

  const TerminationConfig config_;
  ClusterCoordinator* const coordinator_;
  const int num_workers_;
  const int num_ps_;
  std::atomic<bool> requested_{false};
  std::atomic<bool> attached_{false};

  mutable absl::Mutex mu_;
  Phase phase_ ABSL_GUARDED_BY(mu_) = Phase::kIdle;
  std::string leader_ ABSL_GUARDED_BY(mu_);
  absl::Time deadline_ ABSL_GUARDED_BY(mu_);
  bool deadline_known_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time final_call_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Duration drain_ ABSL_GUARDED_BY(mu_);
  absl::Duration checkpoint_time_ ABSL_GUARDED_BY(mu_);
  std::vector<PreemptionRecord> history_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&)> listener_ ABSL_GUARDED_BY(mu_);

  absl::Notification stop_;
  std::thread watcher_;
};

}  // namespace tj
