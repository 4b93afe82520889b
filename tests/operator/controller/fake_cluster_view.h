// A ClusterView for unit tests: the job, its pods, Services and Secret and the nodes are what the
// test put in it; a read can be made to fail. Live (reads see a create at once) unless the test
// says it is a cache.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "operator/controller/cluster_view.h"

namespace tj::op::testing {

class FakeClusterView : public ClusterView {
 public:
  std::map<std::string, nlohmann::json> jobs;      // by "namespace/name"
  std::vector<nlohmann::json> pods;                // any job's; filtered by the job-name label
  std::vector<nlohmann::json> services;
  std::map<std::string, nlohmann::json> secrets;   // by "namespace/name"
  std::map<std::string, nlohmann::json> nodes;     // by name
  std::map<std::string, nlohmann::json> workloads;  // by "namespace/name"
  bool workloads_watched = false;  // else WatchedWorkload says "not watched"
  bool nodes_known = true;
  bool live = true;
  absl::Status fail_pods;  // PodsOf answers it when not OK
  std::vector<nlohmann::json> secrets_written;  // SecretWritten's arguments

  ObjectPtr Job(const std::string& ns, const std::string& name) override {
    auto it = jobs.find(ns + "/" + name);
    return it == jobs.end() ? nullptr : std::make_shared<const nlohmann::json>(it->second);
  }
  absl::StatusOr<std::vector<ObjectPtr>> PodsOf(const std::string& ns,
                                                const std::string& job) override {
    if (!fail_pods.ok()) return fail_pods;
    return Of(pods, ns, job);
  }
  absl::StatusOr<std::vector<ObjectPtr>> ServicesOf(const std::string& ns,
                                                    const std::string& job) override {
    return Of(services, ns, job);
  }
  absl::StatusOr<ObjectPtr> Secret(const std::string& ns, const std::string& name) override {
    auto it = secrets.find(ns + "/" + name);
    return it == secrets.end() ? nullptr : std::make_shared<const nlohmann::json>(it->second);
  }
  void SecretWritten(const nlohmann::json& secret) override { secrets_written.push_back(secret); }
  ObjectPtr Node(const std::string& name, bool* known) override {
    *known = nodes_known;
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : std::make_shared<const nlohmann::json>(it->second);
  }
  std::optional<ObjectPtr> WatchedWorkload(const std::string& ns, const std::string& name) override {
    if (!workloads_watched) return std::nullopt;
    auto it = workloads.find(ns + "/" + name);
    return it == workloads.end() ? nullptr : std::make_shared<const nlohmann::json>(it->second);
  }
  bool Live() const override { return live; }

 private:
  static std::vector<ObjectPtr> Of(const std::vector<nlohmann::json>& objects,
                                   const std::string& ns, const std::string& job) {
    std::vector<ObjectPtr> out;
    for (const nlohmann::json& o : objects) {
      const nlohmann::json& meta = o["metadata"];
      if (meta.value("namespace", "default") != ns) continue;
      if (!meta.contains("labels") || meta["labels"].value("trainingjob.dev/job-name", "") != job) {
        continue;
      }
      out.push_back(std::make_shared<const nlohmann::json>(o));
    }
    return out;
  }
};

}  // namespace tj::op::testing
