// Sends PreemptionNotice RPCs to a job's coordinator (proto/tj/v1/coordination.proto) without
// blocking reconciliation: Send queues the notice; a background thread delivers it with a short
// deadline. A coordinator that cannot be reached costs one failed RPC, counted, never a stuck
// reconcile.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"
#include "operator/controller/coordinator_rpc.h"

namespace tj::op {

struct PreemptionNotice {
  std::string job;                  // "namespace/name", for logs and events
  std::string coordinator_address;  // "podIP:2222"
  std::string token;                // the job's RPC token (empty: the job runs open)
  std::shared_ptr<const CoordinatorTls> tls;  // null: the coordinator serves plaintext
  std::string task_type;            // TF task type: "chief", "ps", "worker"
  int task_index = 0;
  std::string reason;         // e.g. "DisruptionTarget/EvictionByEvictionAPI", "Deleted"
  absl::Time deadline;        // when the pod will be killed; InfinitePast: unknown
};

class PreemptionNotifier {
 public:
  virtual ~PreemptionNotifier() = default;
  // Never blocks on the network.
  virtual void Send(PreemptionNotice notice) = 0;
};

struct NoticeOutcome {
  PreemptionNotice notice;
  absl::Status status;  // OK: delivered
  bool accepted = false;
  std::string decision;  // the coordinator's answer
};

struct GrpcPreemptionNotifierOptions {
  absl::Duration rpc_timeout = absl::Seconds(3);
  size_t max_queued = 1024;  // beyond: dropped and reported as ResourceExhausted
  // Called on the sender thread after each attempt (metrics, events, tests).
  std::function<void(const NoticeOutcome&)> on_outcome;
};

class GrpcPreemptionNotifier : public PreemptionNotifier {
 public:
  explicit GrpcPreemptionNotifier(GrpcPreemptionNotifierOptions options);
  ~GrpcPreemptionNotifier() override;  // delivers nothing more; joins
  GrpcPreemptionNotifier(const GrpcPreemptionNotifier&) = delete;
  GrpcPreemptionNotifier& operator=(const GrpcPreemptionNotifier&) = delete;

  void Send(PreemptionNotice notice) override;

 private:
  void Loop();
  NoticeOutcome Deliver(const PreemptionNotice& notice) const;

  GrpcPreemptionNotifierOptions options_;
  StdMutex mu_;
  std::condition_variable cv_;
  std::deque<PreemptionNotice> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tj::op
