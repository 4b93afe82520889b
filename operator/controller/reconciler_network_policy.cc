#include "operator/controller/reconciler_network_policy.h"

#include "operator/controller/network_policy.h"

namespace tj::op {

StepResult NetworkPolicyStep::Run(JobReconcile& job) {
  if (!options_.enabled || confirmed_.Get(job.key)) return StepResult::Continue();
  if (absl::Status s = EnsureJobNetworkPolicy(client_, *job.job, options_); !s.ok()) {
    return StepResult::Fail(s);
  }
  confirmed_.With(job.key, [](bool& confirmed) { confirmed = true; });
  return StepResult::Continue();
}

}  // namespace tj::op
