// Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection package
// (LeaseLock): candidates try to write their identity into the Lease with optimistic concurrency
// (resourceVersion); the holder renews it every retry period; a Lease not seen to change for its
// leaseDurationSeconds (measured on our own clock, never by comparing clocks) may be taken over.
// The leader stops acting once renew_deadline has passed since the start of its last successful
// renewal, even while a Lease call hangs: every call has its own deadline, shorter than the renew
// deadline, and an optional LeaderFence (leader_fence.h) closes for the operator's writes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/kube/cancellation.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/leader_fence.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // e.g. pod name + random suffix
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  bool release_on_cancel = true;  // on stop, clear holderIdentity so a successor takes over at once
  // How long one Lease call (get, create, update) may take; zero: renew_deadline / 2. Must be
  // shorter than renew_deadline. A call still unanswered then is abandoned.
  absl::Duration call_timeout = absl::ZeroDuration();
  // Optional: opened until (last successful renewal's start + renew_deadline) while leading,
  // closed when leadership ends; give the operator's client a FencedKubeClient over it.
  std::shared_ptr<LeaderFence> fence;
};

// The deadline of one Lease call under `config` (call_timeout, or renew_deadline / 2).
absl::Duration LeaseCallTimeout(const LeaderElectionConfig& config);

struct LeaderCallbacks {
  // Runs on its own thread when leadership is acquired; must return once `leading` is cancelled
  // (leadership lost or Run stopped). Run waits for it before it releases the Lease or competes
  // again, so two of these never run at once in one process.
  std::function<void(std::shared_ptr<Cancellation> leading)> on_started_leading;
  // After on_started_leading returned; only if leadership had been acquired.
  std::function<void()> on_stopped_leading;
  // Optional; on Run's thread (keep it short) whenever the observed holder changes, us included.
  std::function<void(const std::string& identity)> on_new_leader;
};

// "2006-01-02T15:04:05.000000Z": Kubernetes' MicroTime, used by Lease acquireTime/renewTime.
std::string FormatMicroTime(absl::Time time);

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<KubeClient> client, LeaderElectionConfig config,
                LeaderCallbacks callbacks);

  ~LeaderElector();

  // Blocks: tries to acquire the Lease every retry_period (+ up to 20% jitter), leads while
  // renewals succeed (stops leading once renew_deadline has passed since the start of the last
  // successful renewal, whatever a call in flight is doing, or at once when another holder is
  // seen), competes again after losing, and returns OK when `stop` is cancelled (after
  // on_stopped_leading ran and the Lease was released if configured). InvalidArgument names the
  // field of a bad config (client-go's rule: lease_duration > renew_deadline > 1.2 * retry_period
  // > 0; and call_timeout < renew_deadline).
  absl::Status Run(const std::shared_ptr<Cancellation>& stop);
  bool IsLeader() const;
  std::string CurrentLeader() const;          // the holder last observed ("" if none)
  std::int64_t transitions_observed() const;  // the Lease's leaseTransitions as last seen

 private:
  enum class Attempt { kHolding, kHeldByOther, kFailed };
  class LeaseCalls;  // runs each call with a deadline (leader_election.cc)
  // client-go's tryAcquireOrRenew: one read and at most one write, both done by `deadline`.
  Attempt TryAcquireOrRenew(absl::Time deadline);
  // Hands the Lease back (holderIdentity "", leaseDurationSeconds 1) if we still hold it.
  void Release();
  // Leads until leadership is lost or `stop` is cancelled; `valid_until` is the first
  // acquisition's start + renew_deadline.
  void Lead(const std::shared_ptr<Cancellation>& stop, absl::Time valid_until);
  // Waits unless `stop` is cancelled first; false when cancelled.
  static bool WaitUnlessStopped(const std::shared_ptr<Cancellation>& stop, absl::Duration delay);
  void Observe(const nlohmann::json& spec, absl::Time now);
  absl::Duration Jittered(absl::Duration d);

  std::shared_ptr<KubeClient> client_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;

  // Run's thread only.
  nlohmann::json observed_spec_;
  absl::Time observed_time_ = absl::InfinitePast();
  std::string reported_leader_;
  std::uint64_t rng_state_;
  std::unique_ptr<LeaseCalls> calls_;

  mutable StdMutex mu_;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  std::string current_leader_ ABSL_GUARDED_BY(mu_);
  std::int64_t transitions_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj::kube
