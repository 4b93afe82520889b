// ClusterSpec: which tasks make up a training cluster and where each listens, keyed by job name
// ("chief", "ps", "worker") and task index. Mirrors tf.train.ClusterSpec, including its JSON form,
// so TF_CONFIG written for TensorFlow describes our clusters unchanged.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tj {

class ClusterSpec {
 public:
  // Task index -> "host:port". Usually indices are 0..n-1, but TensorFlow also allows sparse ones.
  using TaskMap = std::map<int, std::string>;
  using JobMap = std::map<std::string, TaskMap, std::less<>>;

  ClusterSpec() = default;

  // Each job's tasks in index order: jobs["worker"][i] is worker task i.
  static absl::StatusOr<ClusterSpec> FromJobs(
      const std::map<std::string, std::vector<std::string>>& jobs);

  // TensorFlow's cluster dict: {"ps": ["h:1"], "worker": {"0": "h:2", "2": "h:3"}}. A job holds a
  // list (task i at position i) or an object keyed by decimal task index. `field` names `cluster`
  // in error messages ("cluster" -> "cluster.worker[1]: ...").
  static absl::StatusOr<ClusterSpec> FromJson(const nlohmann::json& cluster,
                                              std::string_view field = "cluster");
  // The same, from text; `source_name` starts error messages.
  static absl::StatusOr<ClusterSpec> FromJsonText(std::string_view text,
                                                  std::string_view source_name = "cluster spec");

  // Declares a job, possibly with no tasks yet. Adding an existing job is a no-op. Job names follow
  // TensorFlow's device-name rule [a-zA-Z][_a-zA-Z0-9]* because they end up in "/job:NAME".
  absl::Status AddJob(std::string_view job);
  // Adds one task, creating its job if needed. Rejects a bad address, a taken index, and an address
  // already used by any task: two tasks cannot serve on one port, so that is always a config error.
  absl::Status AddTask(std::string_view job, int index, std::string_view address);

  // Job names, sorted.
  std::vector<std::string> jobs() const;
  bool has_job(std::string_view job) const;
  // 0 for an unknown job.
  int num_tasks(std::string_view job) const;
  // Sorted; empty for an unknown job.
  std::vector<int> task_indices(std::string_view job) const;
  // NotFound, naming what exists, for an unknown job or index.
  absl::StatusOr<std::string> task_address(std::string_view job, int index) const;
  // True when the job's indices are exactly 0..n-1, i.e. it serialises as a list.
  bool is_dense(std::string_view job) const;
  bool empty() const { return jobs_.empty(); }
  const JobMap& job_tasks() const { return jobs_; }

  // Dense jobs as lists, sparse ones as {"index": address} objects (TensorFlow's as_dict()).
  nlohmann::json as_json() const;
  std::string ToJsonText() const;

  friend bool operator==(const ClusterSpec& a, const ClusterSpec& b) { return a.jobs_ == b.jobs_; }

 private:
  struct TaskRef {
    std::string job;
    int index = 0;
  };

  JobMap jobs_;
  // Derived from jobs_ so duplicate addresses are found without a scan.
  std::map<std::string, TaskRef, std::less<>> address_owner_;
};

// "/job:worker/task:1", TensorFlow's spelling, for messages.
std::string TaskName(std::string_view job, int index);

}  // namespace tj
