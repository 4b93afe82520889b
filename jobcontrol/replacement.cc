#include "jobcontrol/replacement.h"

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/defaults.h"

namespace tj {

using v1alpha1::ReplacementPolicy;

ReplacementPolicy ReplacementPolicyFor(const v1alpha1::TrainingJob& job, ReplicaType type) {
  auto it = job.spec.replica_specs.find(type);
  if (it != job.spec.replica_specs.end() && it->second.replacement_policy) {
    return *it->second.replacement_policy;
  }
  return v1alpha1::DefaultReplacementPolicy(type);
}

std::vector<ReplacementHold> HeldReplacements(const v1alpha1::TrainingJob& job,
                                              const std::set<ReplicaKey>& terminating,
                                              const std::vector<ReplicaKey>& starting) {
  std::vector<ReplacementHold> holds;
  if (terminating.empty()) return holds;
  std::set<ReplicaKey> held;
  for (ReplicaKey replica : starting) {
    if (held.contains(replica)) continue;
    if (ReplacementPolicyFor(job, replica.type) != ReplacementPolicy::kFailed) continue;
    if (terminating.contains(replica)) {
      holds.push_back({replica, replica,
                       absl::StrCat(DescribeReplica(replica),
                                    " waits for its predecessor, which is terminating, to be gone "
                                    "(replacementPolicy Failed)")});
      held.insert(replica);
      continue;
    }
    if (replica.type != ReplicaType::kCoordinator) continue;
    for (ReplicaKey other : terminating) {
      if (other.type != ReplicaType::kPs) continue;
      holds.push_back({replica, other,
                       absl::StrCat(DescribeReplica(replica), " waits for ", DescribeReplica(other),
                                    ", which is terminating, to be replaced before it restores "
                                    "the checkpoint (replacementPolicy Failed)")});
      held.insert(replica);
      break;
    }
  }
  return holds;
}

}  // namespace tj
