// The coordination service's state, without gRPC: a key-value store with blocking reads, barriers,
// and the registered tasks with their heartbeats, after TensorFlow's coordination service (the
// get_task_states of its PreemptionCheckpointHandler). Thread-safe; every wait has a deadline.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tj {

// "worker:3"; task types are TF_CONFIG's ("chief", "ps", "worker").
using TaskKey = std::string;
TaskKey MakeTaskKey(const std::string& type, int index);

struct TaskStateView {
  TaskKey task;
  bool healthy = false;
  absl::Status error;  // why it is not healthy
};

class CoordinationState {
 public:
  // A task that sends no heartbeat for this long is reported unavailable.
  explicit CoordinationState(absl::Duration heartbeat_timeout = absl::Seconds(10))
      : heartbeat_timeout_(heartbeat_timeout) {}

  // AlreadyExists naming the key unless `allow_overwrite`.
  absl::Status Set(const std::string& key, std::string value, bool allow_overwrite);
  // Blocks until the key exists or `timeout` passes (DeadlineExceeded naming the key).
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout);
  // Deletes the key and every key under "<key>/". Deleting nothing is fine.
  void Delete(const std::string& key);
  // Entries whose key starts with `prefix`, in key order.
  std::vector<std::pair<std::string, std::string>> List(const std::string& prefix) const;

  // Blocks until every participant has arrived at `barrier_id` (OK for all of them) or `timeout`
  // passes for this caller (DeadlineExceeded naming the missing tasks; the barrier then fails for
  // everyone, as in TensorFlow). InvalidArgument when `task` is not a participant or the
  // participant lists disagree. A barrier id can be passed once.
  absl::Status Barrier(const std::string& barrier_id, const TaskKey& task,
                       const std::set<TaskKey>& participants, absl::Duration timeout);

  // Registration starts the heartbeats of an incarnation. A new incarnation replaces the old one
  // (the task restarted). True when the incarnation is new to this state (a task registering again
  // after losing its heartbeats is not).
  bool RegisterTask(const TaskKey& task, uint64_t incarnation);
  // NotFound for a task never registered; Aborted when `incarnation` is not the registered one
  // (the sender is an old process, or the task restarted without registering).
  absl::Status Heartbeat(const TaskKey& task, uint64_t incarnation);
  // One state per task asked for (every registered task when `tasks` is empty).
  std::vector<TaskStateView> TaskStates(const std::vector<TaskKey>& tasks) const;

 private:
  struct BarrierState {
    std::set<TaskKey> participants;
    std::set<TaskKey> arrived;
    absl::Status outcome;  // set once the barrier completes or fails
    bool done = false;
  };
  struct TaskRecord {
    uint64_t incarnation = 0;
    absl::Time last_heartbeat;
  };

  const absl::Duration heartbeat_timeout_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> kv_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, BarrierState> barriers_ ABSL_GUARDED_BY(mu_);
  std::map<TaskKey, TaskRecord> tasks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj
