#include "coordinator/cluster/cluster_coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tj {

ClusterCoordinator::ClusterCoordinator(CoordinatorOptions options)
    : options_(std::move(options)),
      queue_(options_.queue_capacity),
      ps_failures_(options_.transient_ps_failure_threshold) {
  queue_.SetCancelInflightHook([this] {
    // Runs under the queue's lock: only flag the connections. workers_mu_ is never held while
    // calling into the queue, so taking it here cannot deadlock.
    absl::MutexLock lock(&workers_mu_);
    for (auto& worker : workers_) worker->RequestCancelInflight();
  });
}

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> ClusterCoordinator::Create(
    const ClusterResolver& resolver, CoordinatorOptions options) {
  auto spec = resolver.cluster_spec();
  if (!spec.ok()) return spec.status();
  std::vector<std::string> addresses;
  for (int i = 0; i < spec->num_tasks("worker"); ++i) {
    auto address = spec->task_address("worker", i);
    if (!address.ok()) return address.status();
    addresses.push_back(*address);
  }
  if (addresses.empty()) {
    return absl::InvalidArgumentError(
        "the cluster spec has no \"worker\" job: nothing to schedule on");
  }
  return Create(addresses, std::move(options));
}

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> ClusterCoordinator::Create(
    const std::vector<std::string>& worker_addresses, CoordinatorOptions options) {
  if (options.max_inflight_per_worker < 1) {
    return absl::InvalidArgumentError("CoordinatorOptions.max_inflight_per_worker must be >= 1");
  }
  if (options.queue_capacity < 1) {
    return absl::InvalidArgumentError("CoordinatorOptions.queue_capacity must be >= 1");
  }
  std::unique_ptr<ClusterCoordinator> coordinator(new ClusterCoordinator(std::move(options)));
  for (const auto& address : worker_addresses) {
    auto added = coordinator->AddWorker(address);
    if (!added.ok()) return added.status();
  }
  return coordinator;
}

ClusterCoordinator::~ClusterCoordinator() {
  std::vector<WorkerConnection*> workers;
  {
    absl::MutexLock lock(&workers_mu_);
    stopping_ = true;
    for (auto& worker : workers_) workers.push_back(worker.get());
  }
  queue_.Stop();
  for (auto* worker : workers) worker->Stop();
  for (auto* worker : workers) worker->Join();
}

absl::StatusOr<RemoteValue> ClusterCoordinator::Schedule(std::string_view function,
                                                         std::vector<ScheduleArg> args) {
  if (function.empty()) return absl::InvalidArgumentError("Schedule: the function name is empty");
  auto serialized = SerializeArgs(function, args);
  if (!serialized.ok()) return serialized.status();
  auto closure = std::make_shared<Closure>();
  closure->id = next_closure_id_.fetch_add(1);
  closure->function = std::string(function);
  closure->serialized_args = std::move(*serialized);
  RemoteValue result(closure->output);
  absl::Status put =
      options_.direct_dispatch
          ? queue_.PutOrDispatch(std::move(closure),
                                 [this](const ClosurePtr& c) { return DispatchDirect(c); })
          : queue_.Put(std::move(closure));
  if (!put.ok()) return put;
  return result;
}

bool ClusterCoordinator::DispatchDirect(const ClosurePtr& closure) {
  // Connections are never removed from workers_ while the coordinator lives, so the pointers stay
  // valid after the lock is released; the write itself happens without workers_mu_.
  std::vector<WorkerConnection*> workers;
  {
    absl::MutexLock lock(&workers_mu_);
    if (stopping_) return false;
    workers.reserve(workers_.size());
    for (auto& worker : workers_) workers.push_back(worker.get());
  }
  for (auto* worker : workers) {
    if (worker->TryDispatchDirect(closure)) return true;
  }
  return false;
}

absl::Status ClusterCoordinator::Join() { return queue_.Wait(); }

absl::StatusOr<bool> ClusterCoordinator::Done() { return queue_.Done(); }

absl::StatusOr<PerWorkerValues> ClusterCoordinator::CreatePerWorkerResource(
    std::string_view function, std::vector<ScheduleArg> args) {
  if (function.empty()) {
    return absl::InvalidArgumentError("CreatePerWorkerResource: the function name is empty");
  }
  auto serialized = SerializeArgs(function, args);
  if (!serialized.ok()) return serialized.status();
  auto spec = resources_.Add(std::string(function), std::move(*serialized));
  {
    // Every current worker gets a NOT_READY value at once, so Fetch waits for all of them.
    absl::MutexLock lock(&workers_mu_);
    for (auto& worker : workers_) {
      if (worker->alive()) spec->ValueFor(worker->index());
    }
  }
  queue_.Wake();  // idle dispatchers build it now
  return PerWorkerValues(spec);
}

absl::StatusOr<int> ClusterCoordinator::AddWorker(const std::string& address) {
  return AddWorker(address, -1);
}

absl::StatusOr<int> ClusterCoordinator::AddWorker(const std::string& address, int index) {
  if (address.empty() || address.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker address '", address, "' is not of the form host:port"));
  }
  absl::MutexLock lock(&workers_mu_);
  if (stopping_) return absl::FailedPreconditionError("the coordinator is shutting down");
  int next_index = 0;
  for (const auto& worker : workers_) {
    next_index = std::max(next_index, worker->index() + 1);
    if (!worker->in_pool()) continue;
    if (worker->address() == address) {
      return absl::AlreadyExistsError(absl::StrCat(
          "worker ", address, " is already in the cluster as worker ", worker->index()));
    }
    if (worker->index() == index) {
      return absl::AlreadyExistsError(
          absl::StrCat("the cluster already has a worker ", index, ", at ", worker->address()));
    }
  }
  if (index < 0) index = next_index;
  WorkerConnectionEnv env{&queue_, &resources_, &ps_failures_, &state_changes_, &options_,
                          [this](int i, const absl::Status& e) { OnWorkerLost(i, e); }};
  for (const auto& spec : resources_.specs()) spec->ValueFor(index);
  workers_.push_back(std::make_unique<WorkerConnection>(index, address, std::move(env)));
  workers_.back()->Start();
  spdlog::info("coordinator: worker {} at {} added", index, address);
  return index;
}

absl::Status ClusterCoordinator::RemoveWorker(const std::string& address) {
  WorkerConnection* target = nullptr;
  {
    absl::MutexLock lock(&workers_mu_);
    for (auto& worker : workers_) {
      if (worker->address() == address && worker->alive()) target = worker.get();
    }
  }
  if (target == nullptr) {
    return absl::NotFoundError(absl::StrCat("no live worker at ", address));
  }
  target->Drain();
  target->Join();
  spdlog::info("coordinator: worker {} at {} removed", target->index(), address);
  return absl::OkStatus();
}

absl::Status ClusterCoordinator::PreemptWorker(int index, absl::Time deadline) {
  absl::MutexLock lock(&workers_mu_);
  for (auto& worker : workers_) {
    if (worker->index() == index) {
      worker->Preempt(deadline);
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no worker ", index, " in the cluster (it has ", workers_.size(), " workers)"));
}

void ClusterCoordinator::OnWorkerLost(int index, const absl::Status& last_error) {
  bool any_alive = false;
  {
    absl::MutexLock lock(&workers_mu_);
    for (auto& worker : workers_) {
      if (worker->index() != index && worker->alive()) any_alive = true;
    }
  }
  if (!any_alive) {
    queue_.AbortQueued(absl::UnavailableError(absl::StrCat(
        "no worker is left to run closures: the last one (worker ", index,
        ") did not recover within ", absl::FormatDuration(options_.worker_recovery_timeout), ": ",
        last_error.message())));
  }
}

std::vector<WorkerStats> ClusterCoordinator::Workers() const {
  absl::MutexLock lock(&workers_mu_);
  std::vector<WorkerStats> out;
  for (const auto& worker : workers_) out.push_back(worker->stats());
  return out;
}

CoordinatorCounters ClusterCoordinator::Counters() const {
  CoordinatorCounters out;
  out.closures = queue_.counts();
  out.queued = queue_.queued();
  out.inflight = queue_.inflight();
  for (size_t i = 0; i < kWorkerStateCount; ++i) {
    out.state_changes[i] = state_changes_[i].load(std::memory_order_relaxed);
  }
  out.ps_errors = ps_failures_.totals();
  out.workers = Workers();
  return out;
}

absl::StatusOr<v1::Value> Fetch(const RemoteValue& value) {
  if (!value.valid()) return absl::InvalidArgumentError("Fetch of an empty RemoteValue");
  return value.Fetch();
}

absl::StatusOr<std::vector<v1::Value>> Fetch(const std::vector<RemoteValue>& values) {
  std::vector<v1::Value> out;
  out.reserve(values.size());
  for (const auto& value : values) {
    auto v = Fetch(value);
    if (!v.ok()) return v.status();
    out.push_back(std::move(*v));
  }
  return out;
}

absl::StatusOr<std::map<int, v1::Value>> Fetch(const PerWorkerValues& values) {
  std::map<int, v1::Value> out;
  for (const auto& [index, value] : values.values()) {
    auto v = Fetch(value);
    if (!v.ok()) return v.status();
    out.emplace(index, std::move(*v));
  }
  return out;
}

}  // namespace tj
