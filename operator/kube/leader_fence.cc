#include "operator/kube/leader_fence.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tj::kube {

void LeaderFence::OpenUntil(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  open_until_ = std::max(open_until_, deadline);
}

void LeaderFence::Close() {
  absl::MutexLock lock(&mu_);
  open_until_ = absl::InfinitePast();
}

bool LeaderFence::IsOpen() const {
  absl::MutexLock lock(&mu_);
  return absl::Now() < open_until_;
}

absl::Status LeaderFence::Check(const std::string& what) const {
  if (IsOpen()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(what,
                   ": refused: this replica is not the leader (its Lease was not renewed "
                   "within the renew deadline, or it never held it)"));
}

absl::StatusOr<nlohmann::json> FencedKubeClient::Create(const ResourceRef& ref,
                                                        const nlohmann::json& object) {
  if (absl::Status s = fence_->Check("create " + ref.Describe()); !s.ok()) return s;
  return inner_->Create(ref, object);
}

absl::StatusOr<nlohmann::json> FencedKubeClient::Update(const ResourceRef& ref,
                                                        const nlohmann::json& object) {
  if (absl::Status s = fence_->Check("update " + ref.Describe()); !s.ok()) return s;
  return inner_->Update(ref, object);
}

absl::StatusOr<nlohmann::json> FencedKubeClient::UpdateStatus(const ResourceRef& ref,
                                                              const nlohmann::json& object) {
  if (absl::Status s = fence_->Check("update status of " + ref.Describe()); !s.ok()) return s;
  return inner_->UpdateStatus(ref, object);
}

absl::StatusOr<nlohmann::json> FencedKubeClient::MergePatch(const ResourceRef& ref,
                                                            const nlohmann::json& patch) {
  if (absl::Status s = fence_->Check("patch " + ref.Describe()); !s.ok()) return s;
  return inner_->MergePatch(ref, patch);
}

absl::StatusOr<nlohmann::json> FencedKubeClient::JsonPatch(const ResourceRef& ref,
                                                           const nlohmann::json& operations) {
  if (absl::Status s = fence_->Check("patch " + ref.Describe()); !s.ok()) return s;
  return inner_->JsonPatch(ref, operations);
}

absl::StatusOr<nlohmann::json> FencedKubeClient::Delete(const ResourceRef& ref,
                                                        const DeleteOptions& options) {
  if (absl::Status s = fence_->Check("delete " + ref.Describe()); !s.ok()) return s;
  return inner_->Delete(ref, options);
}

absl::StatusOr<nlohmann::json> FencedKubeClient::Evict(const ResourceRef& pod,
                                                       const DeleteOptions& options) {
  if (absl::Status s = fence_->Check("evict " + pod.Describe()); !s.ok()) return s;
  return inner_->Evict(pod, options);
}

}  // namespace tj::kube
