// Fencing for a leader-elected operator: LeaderFence says whether this process may still act as
// the leader (open until the last successful Lease renewal's start + the renew deadline, a time
// no other candidate can take the Lease before), and FencedKubeClient refuses every write once it
// is closed, so a reconcile still running when leadership lapses cannot write after it.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "operator/kube/kube_client.h"

namespace tj::kube {

class LeaderFence {
 public:
  // Closed until the elector first acquires the Lease.
  LeaderFence() = default;
  // Acting is allowed until `deadline` (later calls may only move it forward while open).
  void OpenUntil(absl::Time deadline);
  void Close();
  // Now() < the deadline and not closed.
  bool IsOpen() const;
  // OK while open; otherwise FailedPrecondition naming `what` was refused and why.
  absl::Status Check(const std::string& what) const;

 private:
  mutable absl::Mutex mu_;
  absl::Time open_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// Reads and watches pass through; creates, updates, patches, deletes and evictions are refused
// (FailedPrecondition) while the fence is closed.
class FencedKubeClient : public KubeClient {
 public:
  FencedKubeClient(std::shared_ptr<KubeClient> inner, std::shared_ptr<const LeaderFence> fence)
      : inner_(std::move(inner)), fence_(std::move(fence)) {}

  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref) override { return inner_->Get(ref); }
  absl::StatusOr<nlohmann::json> List(const ResourceRef& ref, const ListOptions& options) override {
    return inner_->List(ref, options);
  }
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref,
                                              const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> MergePatch(const ResourceRef& ref,
                                            const nlohmann::json& patch) override;
  absl::StatusOr<nlohmann::json> JsonPatch(const ResourceRef& ref,
                                           const nlohmann::json& operations) override;
  absl::StatusOr<nlohmann::json> Delete(const ResourceRef& ref,
                                        const DeleteOptions& options) override;
  absl::StatusOr<nlohmann::json> Evict(const ResourceRef& pod,
                                       const DeleteOptions& options) override;
  absl::Status Watch(const ResourceRef& ref, const std::string& resource_version,
                     const WatchOptions& options, const WatchHandler& handler) override {
    return inner_->Watch(ref, resource_version, options, handler);
  }

 private:
  std::shared_ptr<KubeClient> inner_;
  std::shared_ptr<const LeaderFence> fence_;
};

}  // namespace tj::kube
