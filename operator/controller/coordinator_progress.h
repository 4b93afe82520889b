// What a job's coordinator says about its training (step, newest checkpoint), read from the
// progress it publishes in its Coordination service (api/v1alpha1/training_progress.h,
// kProgressKey). Reading never blocks a reconcile: Refresh queues a read for a background thread;
// Latest returns what the last successful read brought.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "api/v1alpha1/training_progress.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"
#include "operator/controller/coordinator_rpc.h"

namespace tj::op {

class CoordinatorProgress {
 public:
  virtual ~CoordinatorProgress() = default;
  // Asks for a fresh read of the job's progress ("namespace/name") from `address` (podIP:2222)
  // with the job's token, over TLS with `tls` (null: plaintext). A read already queued for the job
  // is not queued twice.
  virtual void Refresh(const std::string& job, const std::string& address,
                       const std::string& token, std::shared_ptr<const CoordinatorTls> tls) = 0;
  virtual std::optional<v1alpha1::TrainingProgress> Latest(const std::string& job) const = 0;
  // The job is gone: forget it.
  virtual void Forget(const std::string& job) = 0;
  // `listener(job)` after a read that brings a job's first progress or changes what its status
  // reports beyond the step (the coordinator's state, a failed save or its clearing), so the job
  // is reconciled at once rather than at its next periodic look. Null removes it; once this
  // returns, no call of the previous listener is running. By default reads notify nobody.
  virtual void OnChange(std::function<void(const std::string& job)> listener) {}
};

class GrpcCoordinatorProgress : public CoordinatorProgress {
 public:
  explicit GrpcCoordinatorProgress(absl::Duration rpc_timeout = absl::Seconds(2));
  ~GrpcCoordinatorProgress() override;
  GrpcCoordinatorProgress(const GrpcCoordinatorProgress&) = delete;
  GrpcCoordinatorProgress& operator=(const GrpcCoordinatorProgress&) = delete;

  void Refresh(const std::string& job, const std::string& address, const std::string& token,
               std::shared_ptr<const CoordinatorTls> tls) override;
  std::optional<v1alpha1::TrainingProgress> Latest(const std::string& job) const override;
  void Forget(const std::string& job) override;
  void OnChange(std::function<void(const std::string& job)> listener) override;

  // Reads attempted so far, successful or not (for tests and metrics).
  int64_t reads() const;

 private:
  struct Request {
    std::string job;
    std::string address;
    std::string token;
    std::shared_ptr<const CoordinatorTls> tls;
  };
  void Loop();

  const absl::Duration rpc_timeout_;
  mutable StdMutex mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> queued_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1alpha1::TrainingProgress> latest_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t reads_ ABSL_GUARDED_BY(mu_) = 0;
  // Held while the listener runs, so that replacing it waits for a call in flight.
  StdMutex listener_mu_;  // never held with mu_
  std::function<void(const std::string& job)> listener_ ABSL_GUARDED_BY(listener_mu_);
  std::thread thread_;
};

}  // namespace tj::op
