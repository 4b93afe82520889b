#include "operator/controller/stuck_pods.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/controller/observed_pod.h"

namespace tj::op {
namespace {

using nlohmann::json;

// Waiting reasons the kubelet keeps a container in until someone changes the pod or the registry:
// retrying does not help, so the job says so instead of waiting in silence.
constexpr std::array<std::string_view, 5> kStuckWaitingReasons = {
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerError",
    "CreateContainerConfigError"};

std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json* ArrayAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_array() ? &*it : nullptr;
}

std::optional<PodStuck> Unschedulable(const json& status) {
  const json* conditions = ArrayAt(status, "conditions");
  if (conditions == nullptr) return std::nullopt;
  for (const json& c : *conditions) {
    if (!c.is_object() || StringAt(c, "type") != "PodScheduled") continue;
    if (StringAt(c, "status") == "False" && StringAt(c, "reason") == "Unschedulable") {
      return PodStuck{"Unschedulable", StringAt(c, "message")};
    }
  }
  return std::nullopt;
}

std::optional<PodStuck> ContainerCannotStart(const json& status) {
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const json* statuses = ArrayAt(status, list);
    if (statuses == nullptr) continue;
    for (const json& s : *statuses) {
      if (!s.is_object()) continue;
      auto state = s.find("state");
      if (state == s.end() || !state->is_object()) continue;
      auto waiting = state->find("waiting");
      if (waiting == state->end() || !waiting->is_object()) continue;
      const std::string reason = StringAt(*waiting, "reason");
      if (std::find(kStuckWaitingReasons.begin(), kStuckWaitingReasons.end(), reason) !=
          kStuckWaitingReasons.end()) {
        return PodStuck{reason, absl::StrCat("container ", StringAt(s, "name"), ": ",
                                             StringAt(*waiting, "message"))};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PodStuck> PodStuckReason(const json& pod) {
  if (!pod.is_object()) return std::nullopt;
  auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return std::nullopt;
  const std::string phase = StringAt(*status, "phase");
  if (!phase.empty() && phase != "Pending") return std::nullopt;
  if (auto unschedulable = Unschedulable(*status)) return unschedulable;
  return ContainerCannotStart(*status);
}

std::optional<StuckJudgement> JudgeStuckPods(const std::vector<ObservedPod>& pods, absl::Time now,
                                             std::optional<absl::Duration> pending_timeout) {
  std::vector<const ObservedPod*> stuck;
  for (const ObservedPod& pod : pods) {
    if (pod.phase == ReplicaPhase::kPending && pod.stuck && !pod.deletion_deadline) {
      stuck.push_back(&pod);
    }
  }
  if (stuck.empty()) return std::nullopt;
  std::sort(stuck.begin(), stuck.end(),
            [](const ObservedPod* a, const ObservedPod* b) { return a->key < b->key; });
  StuckJudgement out;
  out.reason = stuck.front()->stuck->reason;
  std::vector<std::string> parts;
  absl::Time oldest = absl::InfiniteFuture();
  for (const ObservedPod* pod : stuck) {
    // A pod without a creation time (not written by an API server) counts from now.
    oldest = std::min(oldest, pod->created_at.value_or(now));
    if (parts.size() == kStuckPodsNamed) continue;
    std::string part = absl::StrCat(pod->name, ": ", pod->stuck->reason);
    if (!pod->stuck->message.empty()) absl::StrAppend(&part, " (", pod->stuck->message, ")");
    parts.push_back(std::move(part));
  }
  out.message = absl::StrCat(stuck.size() == 1 ? "a pod cannot start: " : "pods cannot start: ",
                             absl::StrJoin(parts, "; "));
  if (stuck.size() > parts.size()) {
    absl::StrAppend(&out.message, "; and ", stuck.size() - parts.size(), " more");
  }
  if (pending_timeout) {
    const absl::Duration waited = std::max(now - oldest, absl::ZeroDuration());
    out.timed_out = waited >= *pending_timeout;
    if (!out.timed_out) out.time_left = *pending_timeout - waited;
  }
  return out;
}

}  // namespace tj::op
