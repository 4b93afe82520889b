#include "jobcontrol/tf_config.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "api/v1alpha1/limits.h"
#include "api/v1alpha1/pod_template_validation.h"
#include "nlohmann/json.hpp"

namespace tj {
namespace {

std::string JobKey(const v1alpha1::TrainingJob& job) {
  return absl::StrCat(
      job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name,
      "/", job.metadata.name);
}

// What follows the cluster, as nlohmann::json::dump orders an object's keys.
constexpr std::string_view kBeforeCluster = "{\"cluster\":";
constexpr std::string_view kBeforeIndex = ",\"environment\":\"cloud\",\"task\":{\"index\":";
constexpr std::string_view kBeforeType = ",\"type\":\"";
constexpr std::string_view kEnd = "\"}}";

size_t Digits(int value) { return std::to_string(value).size(); }

}  // namespace

std::string_view TfTaskType(ReplicaType type) {
  switch (type) {
    case ReplicaType::kCoordinator:
      return "chief";
    case ReplicaType::kPs:
      return "ps";
    case ReplicaType::kWorker:
      return "worker";
  }
  return "worker";
}

absl::StatusOr<TfConfigRenderer> TfConfigRenderer::Create(const v1alpha1::TrainingJob& job,
                                                          const ReplicaAddresses& addresses) {
  TfConfigRenderer renderer;
  renderer.job_ = JobKey(job);
  nlohmann::json cluster = nlohmann::json::object();
  for (ReplicaType type : v1alpha1::kReplicaTypes) {
    const int count = ReplicaCount(job.spec, type);
    renderer.counts_[type] = count;
    if (count == 0) continue;
    nlohmann::json& tasks = cluster[std::string(TfTaskType(type))];
    for (int i = 0; i < count; ++i) {
      auto it = addresses.find(ReplicaKey{type, i});
      if (it == addresses.end() || it->second.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG of job ", renderer.job_,
                                                       ": no address for ",
                                                       ReplicaName(job, ReplicaKey{type, i})));
      }
      // Task i at position i.
      tasks.push_back(it->second);
    }
  }
  renderer.cluster_ = cluster.dump();
  return renderer;
}

size_t TfConfigRenderer::RenderedSize(ReplicaType type, int index) const {
  return kBeforeCluster.size() + cluster_.size() + kBeforeIndex.size() + Digits(index) +
         kBeforeType.size() + TfTaskType(type).size() + kEnd.size();
}

absl::Status TfConfigRenderer::TooLarge(ReplicaType type, int index) const {
  const size_t bytes = RenderedSize(type, index);
  const size_t limit = v1alpha1::kMaxEnvironmentStringBytes - v1alpha1::kTfConfigEnv.size() - 2;
  if (bytes <= limit) return absl::OkStatus();
  int total = 0;
  for (const auto& [t, count] : counts_) total += count;
  return absl::InvalidArgumentError(absl::StrCat(
      "TF_CONFIG of job ", job_, " for ", DescribeReplica(ReplicaKey{type, index}), " would be ",
      bytes, " bytes, over the ", limit,
      " that fit in one environment variable (Linux's MAX_ARG_STRLEN, 128 KiB with the name): "
      "it lists the addresses of all ",
      total, " replicas; use fewer replicas, or a shorter job name or namespace"));
}

absl::StatusOr<std::string> TfConfigRenderer::Render(ReplicaType type, int index) const {
  auto count = counts_.find(type);
  if (index < 0 || count == counts_.end() || index >= count->second) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG for ", DescribeReplica(ReplicaKey{type, index}), ": job ", job_,
                     " has ", count == counts_.end() ? 0 : count->second, " ",
                     std::string(v1alpha1::ReplicaTypeName(type)), " replicas"));
  }
  if (absl::Status s = TooLarge(type, index); !s.ok()) return s;
  std::string out;
  out.reserve(RenderedSize(type, index));
  out.append(kBeforeCluster).append(cluster_).append(kBeforeIndex).append(std::to_string(index));
  out.append(kBeforeType).append(TfTaskType(type)).append(kEnd);
  return out;
}

absl::Status TfConfigRenderer::CheckAllFit() const {
  // Replicas differ only in the task's type name and index: the longest is among each type's last.
  std::optional<ReplicaKey> longest;
  for (const auto& [type, count] : counts_) {
    if (count == 0) continue;
    if (!longest || RenderedSize(type, count - 1) > RenderedSize(longest->type, longest->index)) {
      longest = ReplicaKey{type, count - 1};
    }
  }
  return longest ? TooLarge(longest->type, longest->index) : absl::OkStatus();
}

absl::StatusOr<std::string> RenderTfConfig(const v1alpha1::TrainingJob& job,
                                           const ReplicaAddresses& addresses, ReplicaType type,
                                           int index) {
  absl::StatusOr<TfConfigRenderer> renderer = TfConfigRenderer::Create(job, addresses);
  if (!renderer.ok()) return renderer.status();
  return renderer->Render(type, index);
}

v1alpha1::FieldErrors CheckClusterTfConfigSize(const v1alpha1::TrainingJob& job) {
  absl::StatusOr<TfConfigRenderer> renderer =
      TfConfigRenderer::Create(job, ClusterServiceAddresses(job, v1alpha1::kTrainerPort));
  absl::Status fits = renderer.ok() ? renderer->CheckAllFit() : renderer.status();
  if (fits.ok()) return {};
  return {v1alpha1::FieldError{"spec.replicaSpecs", std::string(fits.message())}};
}

}  // namespace tj
