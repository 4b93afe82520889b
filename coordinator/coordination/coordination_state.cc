#include "coordinator/coordination/coordination_state.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj {

TaskKey MakeTaskKey(const std::string& type, int index) { return absl::StrCat(type, ":", index); }

absl::Status CoordinationState::Set(const std::string& key, std::string value,
                                    bool allow_overwrite) {
  if (key.empty()) return absl::InvalidArgumentError("coordination key-value set: empty key");
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = kv_.try_emplace(key, value);
  if (!inserted) {
    if (!allow_overwrite) {
      return absl::AlreadyExistsError(
          absl::StrCat("coordination key '", key, "' is already set (pass allow_overwrite)"));
    }
    it->second = std::move(value);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CoordinationState::Get(const std::string& key, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto present = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return kv_.contains(key); };
  if (!mu_.AwaitWithTimeout(absl::Condition(&present), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "coordination key '", key, "' was not set within ", absl::FormatDuration(timeout)));
  }
  return kv_.at(key);
}

void CoordinationState::Delete(const std::string& key) {
  absl::MutexLock lock(&mu_);
  kv_.erase(key);
  const std::string dir = key + "/";
  for (auto it = kv_.lower_bound(dir); it != kv_.end() && absl::StartsWith(it->first, dir);) {
    it = kv_.erase(it);
  }
}

std::vector<std::pair<std::string, std::string>> CoordinationState::List(
    const std::string& prefix) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && absl::StartsWith(it->first, prefix);
       ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

absl::Status CoordinationState::Barrier(const std::string& barrier_id, const TaskKey& task,
                                        const std::set<TaskKey>& participants,
                                        absl::Duration timeout) {
  if (!participants.contains(task)) {
    return absl::InvalidArgumentError(
        absl::StrCat("barrier '", barrier_id, "': task ", task, " is not one of its participants"));
  }
  absl::MutexLock lock(&mu_);
  auto [it, created] = barriers_.try_emplace(barrier_id);
  BarrierState& barrier = it->second;
  if (created) barrier.participants = participants;
  if (barrier.participants != participants) {
    return absl::InvalidArgumentError(
        absl::StrCat("barrier '", barrier_id, "': task ", task,
                     " names other participants than the first caller"));
  }
  if (barrier.done) return barrier.outcome;
  barrier.arrived.insert(task);
  if (barrier.arrived == barrier.participants) {
    barrier.done = true;
    return barrier.outcome;
  }
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return barrier.done; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    std::vector<TaskKey> missing;
    for (const TaskKey& p : barrier.participants) {
      if (!barrier.arrived.contains(p)) missing.push_back(p);
    }
    barrier.done = true;
    barrier.outcome = absl::DeadlineExceededError(
        absl::StrCat("barrier '", barrier_id, "' timed out after ", absl::FormatDuration(timeout),
                     " waiting for ", absl::StrJoin(missing, ", ")));
  }
  return barrier.outcome;
}

bool CoordinationState::RegisterTask(const TaskKey& task, uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  auto it = tasks_.find(task);
  const bool is_new = it == tasks_.end() || it->second.incarnation != incarnation;
  tasks_[task] = TaskRecord{incarnation, absl::Now()};
  return is_new;
}

absl::Status CoordinationState::Heartbeat(const TaskKey& task, uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) {
    return absl::NotFoundError(absl::StrCat("task ", task, " is not registered"));
  }
  if (it->second.incarnation != incarnation) {
    return absl::AbortedError(absl::StrCat("task ", task, " is registered with incarnation ",
                                           it->second.incarnation, ", not ", incarnation));
  }
  it->second.last_heartbeat = absl::Now();
  return absl::OkStatus();
}

std::vector<TaskStateView> CoordinationState::TaskStates(const std::vector<TaskKey>& tasks) const {
  absl::MutexLock lock(&mu_);
  std::vector<TaskKey> wanted = tasks;
  if (wanted.empty()) {
    for (const auto& [name, record] : tasks_) wanted.push_back(name);
  }
  const absl::Time now = absl::Now();
  std::vector<TaskStateView> out;
  for (const TaskKey& name : wanted) {
    TaskStateView view{name, false, absl::OkStatus()};
    auto it = tasks_.find(name);
    if (it == tasks_.end()) {
      view.error = absl::UnavailableError(absl::StrCat("task ", name, " never registered"));
    } else if (now - it->second.last_heartbeat > heartbeat_timeout_) {
      view.error = absl::UnavailableError(
          absl::StrCat("task ", name, " sent no heartbeat for ",
                       absl::FormatDuration(
                           absl::Trunc(now - it->second.last_heartbeat, absl::Milliseconds(1)))));
    } else {
      view.healthy = true;
    }
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace tj
