// The jobs' credentials Secrets, read by name: no Secret informer, so the operator never lists,
// watches or caches any other Secret (a tenant's Secret carrying the job-name label included),
// and its RBAC needs get, create and patch on Secrets, not list or watch. A Secret read (GET) or
// written (the answer to a create or patch) is remembered until its job is deleted or it is
// older than `refresh` (then read again: a Secret edited or deleted by hand is seen within that
// long). Only Secrets of existing jobs are held: memory grows with the jobs, not with the
// Secrets in the cluster.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "coordinator/base/std_mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/kube/kube_client.h"

namespace tj::op {

class JobSecrets {
 public:
  using ObjectPtr = std::shared_ptr<const nlohmann::json>;

  JobSecrets(kube::KubeClient& client, absl::Duration refresh = absl::Minutes(10))
      : client_(client), refresh_(refresh) {}

  // The Secret from memory, else by GET. Null when it does not exist; an error when it cannot
  // be read (the caller must not take that for "absent" and make another).
  absl::StatusOr<ObjectPtr> Get(const std::string& namespace_name, const std::string& name);
  // The API server's answer to a create or patch of a Secret: remembered as read.
  void Written(const nlohmann::json& secret);
  // The job that owns it was deleted (its Secret goes with it, by the garbage collector).
  void Forget(const std::string& namespace_name, const std::string& name);
  size_t Size() const;

  // For tests: the clock.
  void set_clock(std::function<absl::Time()> clock) { clock_ = std::move(clock); }

 private:
  struct Entry {
    ObjectPtr object;
    absl::Time read_at;
  };

  kube::KubeClient& client_;
  const absl::Duration refresh_;
  std::function<absl::Time()> clock_ = [] { return absl::Now(); };
  mutable StdMutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by "namespace/name"
};

}  // namespace tj::op
