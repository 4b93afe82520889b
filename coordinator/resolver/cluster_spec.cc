#include "coordinator/resolver/cluster_spec.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/resolver/diagnostics.h"
#include "coordinator/resolver/json_text.h"
#include "coordinator/resolver/task_address.h"
#include "nlohmann/json.hpp"

namespace tj {
namespace {

// Lists in messages stop here; a 10,000-worker job should not produce a 10,000-item error.
constexpr size_t kMaxListedItems = 10;

absl::Status ValidateJobName(std::string_view job) {
  bool ok = !job.empty() && absl::ascii_isalpha(static_cast<unsigned char>(job.front()));
  for (char c : job) ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      Cat("job name ", Quoted(job), " is invalid; want [a-zA-Z][_a-zA-Z0-9]*"));
}

// Object keys in the sparse form are decimal task indices.
absl::StatusOr<int> ParseIndexKey(std::string_view key) {
  int64_t value = 0;
  bool ok = !key.empty() && key.size() <= 10;
  for (char c : key) {
    ok = ok && absl::ascii_isdigit(static_cast<unsigned char>(c));
    if (ok) value = value * 10 + (c - '0');
  }
  if (!ok || value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(Cat(
        "task index key ", Quoted(key), " is not a non-negative decimal integer that fits in int"));
  }
  return static_cast<int>(value);
}

std::string DescribeIndices(const ClusterSpec::TaskMap& tasks, bool dense) {
  if (tasks.empty()) return "it has no tasks";
  if (dense) return Cat("it has tasks 0..", tasks.size() - 1);
  std::vector<int> shown;
  for (const auto& [index, address] : tasks) {
    if (shown.size() == kMaxListedItems) break;
    shown.push_back(index);
  }
  return Cat("it has tasks ", absl::StrJoin(shown, ", "),
             tasks.size() > shown.size() ? ", ..." : "");
}

absl::Status AddListedTasks(ClusterSpec& spec, const std::string& job, const nlohmann::json& tasks,
                            std::string_view job_field) {
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string task_field = Cat(job_field, "[", i, "]");
    if (i > static_cast<size_t>(std::numeric_limits<int>::max())) {
      return absl::InvalidArgumentError(Cat(task_field, ": too many tasks"));
    }
    const nlohmann::json& entry = tasks[i];
    if (!entry.is_string()) {
      return absl::InvalidArgumentError(
          Cat(task_field, ": must be a \"host:port\" string, got ", JsonKindName(entry)));
    }
    TJ_RETURN_IF_ERROR(WithContext(
        spec.AddTask(job, static_cast<int>(i), entry.get_ref<const std::string&>()), task_field));
  }
  return absl::OkStatus();
}

absl::Status AddIndexedTasks(ClusterSpec& spec, const std::string& job, const nlohmann::json& tasks,
                             std::string_view job_field) {
  for (const auto& item : tasks.items()) {
    const std::string task_field = Cat(job_field, "[", Quoted(item.key()), "]");
    absl::StatusOr<int> index = ParseIndexKey(item.key());
    if (!index.ok()) return WithContext(index.status(), task_field);
    if (!item.value().is_string()) {
      return absl::InvalidArgumentError(
          Cat(task_field, ": must be a \"host:port\" string, got ", JsonKindName(item.value())));
    }
    TJ_RETURN_IF_ERROR(WithContext(
        spec.AddTask(job, *index, item.value().get_ref<const std::string&>()), task_field));
  }
  return absl::OkStatus();
}

}  // namespace

std::string TaskName(std::string_view job, int index) { return Cat("/job:", job, "/task:", index); }

absl::StatusOr<ClusterSpec> ClusterSpec::FromJobs(
    const std::map<std::string, std::vector<std::string>>& jobs) {
  ClusterSpec spec;
  for (const auto& [job, addresses] : jobs) {
    TJ_RETURN_IF_ERROR(spec.AddJob(job));
    for (size_t i = 0; i < addresses.size(); ++i) {
      TJ_RETURN_IF_ERROR(spec.AddTask(job, static_cast<int>(i), addresses[i]));
    }
  }
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJson(const nlohmann::json& cluster,
                                                  std::string_view field) {
  if (!cluster.is_object()) {
    return WithContext(
        absl::InvalidArgumentError(
            Cat("must be an object mapping job name to tasks, got ", JsonKindName(cluster))),
        field);
  }
  ClusterSpec spec;
  for (const auto& item : cluster.items()) {
    const std::string& job = item.key();
    const nlohmann::json& tasks = item.value();
    TJ_RETURN_IF_ERROR(WithContext(spec.AddJob(job), field));
    const std::string job_field = FieldPath(field, job);
    if (tasks.is_array()) {
      TJ_RETURN_IF_ERROR(AddListedTasks(spec, job, tasks, job_field));
    } else if (tasks.is_object()) {
      TJ_RETURN_IF_ERROR(AddIndexedTasks(spec, job, tasks, job_field));
    } else {
      return absl::InvalidArgumentError(Cat(
          job_field,
          ": must be a list of \"host:port\" strings or an object of task index to address, got ",
          JsonKindName(tasks)));
    }
  }
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJsonText(std::string_view text,
                                                      std::string_view source_name) {
  TJ_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJsonText(text, source_name));
  absl::StatusOr<ClusterSpec> spec = FromJson(doc, "");
  if (!spec.ok()) return WithContext(spec.status(), source_name);
  return spec;
}

absl::Status ClusterSpec::AddJob(std::string_view job) {
  TJ_RETURN_IF_ERROR(ValidateJobName(job));
  if (jobs_.find(job) == jobs_.end()) jobs_.emplace(std::string(job), TaskMap());
  return absl::OkStatus();
}

absl::Status ClusterSpec::AddTask(std::string_view job, int index, std::string_view address) {
  TJ_RETURN_IF_ERROR(ValidateJobName(job));
  if (index < 0) {
    return absl::InvalidArgumentError(
        Cat("task index ", index, " of job ", Quoted(job), " is negative"));
  }
  TJ_RETURN_IF_ERROR(ValidateTaskAddress(address));
  auto job_it = jobs_.find(job);
  if (job_it != jobs_.end()) {
    auto task_it = job_it->second.find(index);
    if (task_it != job_it->second.end()) {
      return absl::InvalidArgumentError(
          Cat(TaskName(job, index), " is already defined (as ", Quoted(task_it->second), ")"));
    }
  }
  if (auto owner = address_owner_.find(address); owner != address_owner_.end()) {
    return absl::InvalidArgumentError(Cat(
        "address ", Quoted(address), " of ", TaskName(job, index), " is already used by ",
        TaskName(owner->second.job, owner->second.index), "; each task needs its own host:port"));
  }
  if (job_it == jobs_.end()) job_it = jobs_.emplace(std::string(job), TaskMap()).first;
  job_it->second.emplace(index, std::string(address));
  address_owner_.emplace(std::string(address), TaskRef{std::string(job), index});
  return absl::OkStatus();
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  names.reserve(jobs_.size());
  for (const auto& [job, tasks] : jobs_) names.push_back(job);
  return names;
}

bool ClusterSpec::has_job(std::string_view job) const { return jobs_.find(job) != jobs_.end(); }

int ClusterSpec::num_tasks(std::string_view job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<int> ClusterSpec::task_indices(std::string_view job) const {
  std::vector<int> indices;
  if (auto it = jobs_.find(job); it != jobs_.end()) {
    for (const auto& [index, address] : it->second) indices.push_back(index);
  }
  return indices;
}

absl::StatusOr<std::string> ClusterSpec::task_address(std::string_view job, int index) const {
  auto job_it = jobs_.find(job);
  if (job_it == jobs_.end()) {
    std::vector<std::string> names = jobs();
    if (names.size() > kMaxListedItems) names.resize(kMaxListedItems);
    return absl::NotFoundError(Cat("job ", Quoted(job), " is not in the cluster spec (jobs: ",
                                   names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
  }
  auto task_it = job_it->second.find(index);
  if (task_it == job_it->second.end()) {
    return absl::NotFoundError(Cat("job ", Quoted(job), " has no task ", index, "; ",
                                   DescribeIndices(job_it->second, is_dense(job))));
  }
  return task_it->second;
}

bool ClusterSpec::is_dense(std::string_view job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.empty()) return true;
  // Indices are unique and non-negative, so the largest being n-1 means they are exactly 0..n-1.
  return it->second.rbegin()->first == static_cast<int>(it->second.size()) - 1;
}

nlohmann::json ClusterSpec::as_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [job, tasks] : jobs_) {
    nlohmann::json& entry = out[job];
    if (is_dense(job)) {
      entry = nlohmann::json::array();
      for (const auto& [index, address] : tasks) entry.push_back(address);
    } else {
      entry = nlohmann::json::object();
      for (const auto& [index, address] : tasks) entry[std::to_string(index)] = address;
    }
  }
  return out;
}

std::string ClusterSpec::ToJsonText() const { return as_json().dump(); }

}  // namespace tj
