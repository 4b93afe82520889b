#include "operator/controller/coordinator_progress.h"

#include <utility>

#include "operator/controller/coordinator_rpc.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tj/v1/coordination.grpc.pb.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

GrpcCoordinatorProgress::GrpcCoordinatorProgress(absl::Duration rpc_timeout)
    : rpc_timeout_(rpc_timeout), thread_([this] { Loop(); }) {}

GrpcCoordinatorProgress::~GrpcCoordinatorProgress() {
  {
    StdMutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GrpcCoordinatorProgress::Refresh(const std::string& job, const std::string& address,
                                      const std::string& token,
                                      std::shared_ptr<const CoordinatorTls> tls) {
  {
    StdMutexLock lock(mu_);
    if (!queued_.insert(job).second) return;
    queue_.push_back({job, address, token, std::move(tls)});
  }
  cv_.notify_one();
}

std::optional<v1alpha1::TrainingProgress> GrpcCoordinatorProgress::Latest(
    const std::string& job) const {
  StdMutexLock lock(mu_);
  auto it = latest_.find(job);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

void GrpcCoordinatorProgress::Forget(const std::string& job) {
  StdMutexLock lock(mu_);
  latest_.erase(job);
}

void GrpcCoordinatorProgress::OnChange(std::function<void(const std::string& job)> listener) {
  StdMutexLock lock(listener_mu_);
  listener_ = std::move(listener);
}

int64_t GrpcCoordinatorProgress::reads() const {
  StdMutexLock lock(mu_);
  return reads_;
}

void GrpcCoordinatorProgress::Loop() {
  while (true) {
    Request request;
    {
      StdMutexLock lock(mu_);
      cv_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      request = std::move(queue_.front());
      queue_.pop_front();
      queued_.erase(request.job);
    }
    auto stub = CoordinatorStub(request.address, request.tls.get());
    grpc::ClientContext context;
    PrepareCoordinatorCall(context, request.token, rpc_timeout_);
    v1::KeyValueGetRequest get;
    get.set_key(v1alpha1::kProgressKey);
    get.set_timeout_ms(0);  // what is there now; nothing yet is NotFound
    v1::KeyValueGetResponse response;
    const grpc::Status status = stub->KeyValueGet(&context, get, &response);
    {
      StdMutexLock lock(mu_);
      ++reads_;
    }
    if (!status.ok()) {
      spdlog::debug("{}: progress from {}: {}", request.job, request.address,
                    status.error_message());
      continue;
    }
    const nlohmann::json parsed = nlohmann::json::parse(response.value(), nullptr, false);
    absl::StatusOr<v1alpha1::TrainingProgress> progress =
        parsed.is_discarded() ? absl::InvalidArgumentError("not JSON")
                              : v1alpha1::TrainingProgressFromJson(parsed);
    if (!progress.ok()) {
      spdlog::warn("{}: the coordinator's progress at {} is unreadable: {}", request.job,
                   request.address, progress.status().ToString());
      continue;
    }
    bool changed = false;
    {
      StdMutexLock lock(mu_);
      auto [known, first] = latest_.try_emplace(request.job);
      changed = first || known->second.state != progress->state ||
                known->second.checkpoint_error != progress->checkpoint_error;
      known->second = *std::move(progress);
    }
    if (changed) {
      StdMutexLock lock(listener_mu_);
      if (listener_) listener_(request.job);
    }
  }
}

}  // namespace tj::op
