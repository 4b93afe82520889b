// What the reconciler reads: the job and the objects it owns, from the informers' caches in the
// operator (InformerClusterView), or straight from the API server (DirectClusterView: tests and
// tools). Reads only; every write goes through KubeClient.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "operator/kube/kube_client.h"

namespace tj::op {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  // Null when the job does not exist (deleted).
  virtual ObjectPtr Job(const std::string& namespace_name, const std::string& name) = 0;
  // Pods and Services labelled trainingjob.dev/job-name=<job>; the caller checks ownership. An
  // error when they cannot be read (never an empty list that would make the reconciler recreate
  // what exists).
  virtual absl::StatusOr<std::vector<ObjectPtr>> PodsOf(const std::string& namespace_name,
                                                        const std::string& job_name) = 0;
  virtual absl::StatusOr<std::vector<ObjectPtr>> ServicesOf(const std::string& namespace_name,
                                                            const std::string& job_name) = 0;
  // The Secret by name: null when it does not exist, an error when it cannot be read.
  virtual absl::StatusOr<ObjectPtr> Secret(const std::string& namespace_name,
                                           const std::string& name) = 0;
  // The API server's answer to a create or patch of a Secret. Secrets are read by name, not
  // watched (job_secrets.h): a view that remembers them learns of the write here.
  virtual void SecretWritten(const nlohmann::json& /*secret*/) {}
  // The Node, or null. `known` is false when nodes cannot be read (not watched, no permission):
  // then a missing node proves nothing.
  virtual ObjectPtr Node(const std::string& name, bool* known) = 0;
  // Kueue's Workload (kueue.x-k8s.io) by name from a watch of the Workloads TrainingJobs control:
  // null when there is none. nullopt when Workloads are not watched (no --kueue, Kueue not
  // installed, the watch not synced yet): the caller then GETs it and looks again later.
  virtual std::optional<ObjectPtr> WatchedWorkload(const std::string& /*namespace_name*/,
                                                   const std::string& /*name*/) {
    return std::nullopt;
  }
  // True when reads go to the API server itself, so an object whose create succeeded is seen by
  // the next read (no informer will report it); false for a cache.
  virtual bool Live() const { return false; }
};

// Reads through KubeClient on every call: always fresh, never stale, one request per read.
class DirectClusterView : public ClusterView {
 public:
  explicit DirectClusterView(kube::KubeClient& client) : client_(client) {}

  ObjectPtr Job(const std::string& namespace_name, const std::string& name) override;
  absl::StatusOr<std::vector<ObjectPtr>> PodsOf(const std::string& namespace_name,
                                                const std::string& job_name) override;
  absl::StatusOr<std::vector<ObjectPtr>> ServicesOf(const std::string& namespace_name,
                                                    const std::string& job_name) override;
  absl::StatusOr<ObjectPtr> Secret(const std::string& namespace_name,
                                   const std::string& name) override;
  ObjectPtr Node(const std::string& name, bool* known) override;
  bool Live() const override { return true; }

 private:
  ObjectPtr GetOrNull(const std::string& resource, const std::string& namespace_name,
                      const std::string& name, bool* readable = nullptr);
  absl::StatusOr<std::vector<ObjectPtr>> ListOfJob(const std::string& resource, const std::string& namespace_name,
                                   const std::string& job_name);

  kube::KubeClient& client_;
};

}  // namespace tj::op
