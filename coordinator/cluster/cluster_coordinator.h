// ClusterCoordinator: schedules functions on a cluster of workers with TensorFlow's contract.
// Schedule is non-blocking (unless the queue is full) and returns a RemoteValue; Join waits for
// everything; the first error of any closure is raised once by the next Schedule/Join/Done, after
// queued closures are cancelled and in-flight ones drained. Closures whose worker fails run again
// elsewhere (at-least-once); a PS failure surfaces as Unavailable. Workers can join and leave.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/closure/closure_queue.h"
#include "coordinator/closure/remote_value.h"
#include "coordinator/cluster/coordinator_options.h"
#include "coordinator/cluster/per_worker_resources.h"
#include "coordinator/cluster/ps_failure_tracker.h"
#include "coordinator/cluster/schedule_args.h"
#include "coordinator/cluster/worker_connection.h"
#include "coordinator/resolver/cluster_resolver.h"

namespace tj {

// A snapshot of the coordinator's counters for its metrics (coordinator/metrics/
// coordinator_metrics.h renders them); taking one locks the queue and each connection briefly.
struct CoordinatorCounters {
  ClosureCounts closures;
  size_t queued = 0;
  size_t inflight = 0;
  std::array<uint64_t, kWorkerStateCount> state_changes{};  // indexed by WorkerState
  std::map<int, PsFailureTracker::Totals> ps_errors;        // by PS task
  std::vector<WorkerStats> workers;
};

class ClusterCoordinator {
 public:
  // Workers are the "worker" job of the resolver's cluster spec.
  static absl::StatusOr<std::unique_ptr<ClusterCoordinator>> Create(
      const ClusterResolver& resolver, CoordinatorOptions options = {});
  static absl::StatusOr<std::unique_ptr<ClusterCoordinator>> Create(
      const std::vector<std::string>& worker_addresses, CoordinatorOptions options = {});
  // Stops every worker connection and joins every thread it started. Queued closures are cancelled.
  ~ClusterCoordinator();

  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  absl::StatusOr<RemoteValue> Schedule(std::string_view function,
                                       std::vector<ScheduleArg> args = {});
  absl::Status Join();
  absl::StatusOr<bool> Done();

  // Creates a resource on every worker (now and on workers that join later), rebuilt after a worker
  // restarts. Pass the result to Schedule: each worker gets its own instance.
  absl::StatusOr<PerWorkerValues> CreatePerWorkerResource(std::string_view function,
                                                          std::vector<ScheduleArg> args = {});

  // Elastic membership. AddWorker returns the new worker's index (one past the highest so far).
  absl::StatusOr<int> AddWorker(const std::string& address);
  // Adds the worker as task `index` of the cluster (the index its notices name). AlreadyExists
  // when a worker in the pool (alive, or preempted and awaiting its successor) has that address
  // or that index.
  absl::StatusOr<int> AddWorker(const std::string& address, int index);
  // Drains the worker: it takes no new closures; in-flight ones finish (or are put back after the
  // drain timeout). Returns once it has left.
  absl::Status RemoveWorker(const std::string& address);

  // A preemption notice for worker `index` (its task index in the cluster spec): it takes no new
  // closures, those in flight may finish until `deadline` (then they are put back to run
  // elsewhere), and it takes work again when its replacement answers. NotFound for an unknown
  // index. A second notice for the same worker is ignored.
  absl::Status PreemptWorker(int index, absl::Time deadline);

  std::vector<WorkerStats> Workers() const;
  CoordinatorCounters Counters() const;
  const CoordinatorOptions& options() const { return options_; }
  size_t queued() const { return queue_.queued(); }
  size_t inflight() const { return queue_.inflight(); }

 private:
  explicit ClusterCoordinator(CoordinatorOptions options);
  void OnWorkerLost(int index, const absl::Status& last_error);
  // Schedule's idle path: offers the closure to each worker's connection in turn (see
  // WorkerConnection::TryDispatchDirect); false if none took it.
  bool DispatchDirect(const ClosurePtr& closure);

  const CoordinatorOptions options_;
  ClosureQueue queue_;
  ResourceRegistry resources_;
  PsFailureTracker ps_failures_;
  WorkerStateChanges state_changes_{};
  std::atomic<uint64_t> next_closure_id_{1};

  mutable absl::Mutex workers_mu_;
  std::vector<std::unique_ptr<WorkerConnection>> workers_ ABSL_GUARDED_BY(workers_mu_);
  bool stopping_ ABSL_GUARDED_BY(workers_mu_) = false;
};

// Fetch: the values of scheduled functions, blocking until they are ready.
absl::StatusOr<v1::Value> Fetch(const RemoteValue& value);
absl::StatusOr<std::vector<v1::Value>> Fetch(const std::vector<RemoteValue>& values);
// Worker index -> value, for every worker that has an instance.
absl::StatusOr<std::map<int, v1::Value>> Fetch(const PerWorkerValues& values);

}  // namespace tj
