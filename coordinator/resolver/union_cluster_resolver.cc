#include "coordinator/resolver/union_cluster_resolver.h"

#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/resolver/diagnostics.h"

namespace tj {
namespace {

// Jobs to merge by task index (TensorFlow's dict merge) because some resolver gives them sparse
// indices; all other jobs are concatenated (its list merge).
std::map<std::string, bool, std::less<>> SparseJobs(const std::vector<ClusterSpec>& specs) {
  std::map<std::string, bool, std::less<>> sparse;
  for (const ClusterSpec& spec : specs) {
    for (const auto& [job, tasks] : spec.job_tasks()) {
      sparse[job] = sparse[job] || !spec.is_dense(job);
    }
  }
  return sparse;
}

absl::Status MergeInto(ClusterSpec& merged, const ClusterSpec& spec,
                       const std::map<std::string, bool, std::less<>>& sparse) {
  for (const auto& [job, tasks] : spec.job_tasks()) {
    TJ_RETURN_IF_ERROR(merged.AddJob(job));
    if (sparse.at(job)) {
      for (const auto& [index, address] : tasks) {
        if (absl::StatusOr<std::string> earlier = merged.task_address(job, index); earlier.ok()) {
          return absl::InvalidArgumentError(Cat(TaskName(job, index), " (", Quoted(address),
                                                ") is also defined by an earlier resolver (as ",
                                                Quoted(*earlier), ")"));
        }
        TJ_RETURN_IF_ERROR(merged.AddTask(job, index, address));
      }
      continue;
    }
    const int offset = merged.num_tasks(job);
    if (static_cast<int64_t>(offset) + static_cast<int64_t>(tasks.size()) >
        std::numeric_limits<int>::max()) {
      return absl::InvalidArgumentError(Cat("job ", Quoted(job), " has too many tasks"));
    }
    for (const auto& [index, address] : tasks) {
      TJ_RETURN_IF_ERROR(merged.AddTask(job, offset + index, address));
    }
  }
  return absl::OkStatus();
}

}  // namespace

UnionClusterResolver::UnionClusterResolver(std::vector<ClusterResolverPtr> resolvers,
                                           UnionClusterResolverOverrides overrides)
    : ClusterResolver(
          overrides.task_type.has_value() ? std::move(overrides.task_type)
                                          : resolvers.front()->task_type(),
          overrides.task_id.has_value() ? overrides.task_id : resolvers.front()->task_id(),
          overrides.rpc_layer.value_or(resolvers.front()->rpc_layer()),
          overrides.environment.value_or(resolvers.front()->environment())),
      resolvers_(std::move(resolvers)) {}

absl::StatusOr<std::unique_ptr<UnionClusterResolver>> UnionClusterResolver::Create(
    std::vector<ClusterResolverPtr> resolvers, UnionClusterResolverOverrides overrides) {
  if (resolvers.empty()) {
    return absl::InvalidArgumentError("UnionClusterResolver: needs at least one resolver");
  }
  for (size_t i = 0; i < resolvers.size(); ++i) {
    if (resolvers[i] == nullptr) {
      return absl::InvalidArgumentError(Cat("UnionClusterResolver: resolver ", i, " is null"));
    }
  }
  return std::unique_ptr<UnionClusterResolver>(
      new UnionClusterResolver(std::move(resolvers), std::move(overrides)));
}

absl::StatusOr<ClusterSpec> UnionClusterResolver::cluster_spec() const {
  std::vector<ClusterSpec> specs;
  specs.reserve(resolvers_.size());
  for (size_t i = 0; i < resolvers_.size(); ++i) {
    absl::StatusOr<ClusterSpec> spec = resolvers_[i]->cluster_spec();
    if (!spec.ok()) {
      return WithContext(spec.status(), Cat("UnionClusterResolver: resolver ", i));
    }
    specs.push_back(*std::move(spec));
  }
  const auto sparse = SparseJobs(specs);
  ClusterSpec merged;
  for (size_t i = 0; i < specs.size(); ++i) {
    TJ_RETURN_IF_ERROR(WithContext(MergeInto(merged, specs[i], sparse),
                                   Cat("UnionClusterResolver: merging resolver ", i)));
  }
  return merged;
}

absl::StatusOr<std::string> UnionClusterResolver::DoMaster(
    const std::optional<std::string>& task_type, std::optional<int> task_id,
    std::string_view rpc_layer) const {
  const bool task_known = (task_type.has_value() || this->task_type().has_value()) &&
                          (task_id.has_value() || this->task_id().has_value());
  if (!task_known) {
    return resolvers_.front()->master(task_type, task_id, EffectiveRpcLayer(rpc_layer));
  }
  TJ_ASSIGN_OR_RETURN(ClusterSpec spec, cluster_spec());
  return MasterIn(spec, task_type, task_id, rpc_layer);
}

absl::StatusOr<AcceleratorCounts> UnionClusterResolver::DoNumAccelerators(
    const std::optional<std::string>& task_type, std::optional<int> task_id) const {
  return resolvers_.front()->num_accelerators(task_type, task_id);
}

}  // namespace tj
