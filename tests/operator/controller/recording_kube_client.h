// A KubeClient for unit tests: records each call as "<verb> <resource>[/<subresource>] [name]"
// and answers from a map of objects by "<resource>/<namespace>/<name>" (create: AlreadyExists
// when present; get: NotFound when absent), or with `fail` when set.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "operator/kube/kube_client.h"

namespace tj::op::testing {

class RecordingKubeClient : public kube::KubeClient {
 public:
  std::vector<std::string> calls;
  std::map<std::string, nlohmann::json> objects;
  absl::Status fail;  // answered to every call when not OK

  static std::string Key(const kube::ResourceRef& ref, const std::string& name) {
    return absl::StrCat(ref.resource, "/", ref.namespace_name, "/", name);
  }

  absl::StatusOr<nlohmann::json> Get(const kube::ResourceRef& ref) override {
    Record("get", ref);
    if (!fail.ok()) return fail;
    auto it = objects.find(Key(ref, ref.name));
    if (it == objects.end()) return absl::NotFoundError(ref.Describe() + " not found");
    return it->second;
  }
  absl::StatusOr<nlohmann::json> List(const kube::ResourceRef& ref,
                                      const kube::ListOptions&) override {
    Record("list", ref);
    if (!fail.ok()) return fail;
    return nlohmann::json{{"items", nlohmann::json::array()}};
  }
  absl::StatusOr<nlohmann::json> Create(const kube::ResourceRef& ref,
                                        const nlohmann::json& object) override {
    Record("create", ref);
    if (!fail.ok()) return fail;
    const std::string key = Key(ref, object["metadata"].value("name", ""));
    if (objects.contains(key)) return absl::AlreadyExistsError(key + " exists");
    objects[key] = object;
    return object;
  }
  absl::StatusOr<nlohmann::json> Update(const kube::ResourceRef& ref,
                                        const nlohmann::json& object) override {
    Record("update", ref);
    return fail.ok() ? absl::StatusOr<nlohmann::json>(object) : fail;
  }
  absl::StatusOr<nlohmann::json> UpdateStatus(const kube::ResourceRef& ref,
                                              const nlohmann::json& object) override {
    kube::ResourceRef status = ref;
    status.subresource = "status";
    Record("update", status);
    return fail.ok() ? absl::StatusOr<nlohmann::json>(object) : fail;
  }
  absl::StatusOr<nlohmann::json> MergePatch(const kube::ResourceRef& ref,
                                            const nlohmann::json& patch) override {
    Record("patch", ref);
    return fail.ok() ? absl::StatusOr<nlohmann::json>(patch) : fail;
  }
  absl::StatusOr<nlohmann::json> JsonPatch(const kube::ResourceRef& ref,
                                           const nlohmann::json& operations) override {
    Record("patch", ref);
    return fail.ok() ? absl::StatusOr<nlohmann::json>(operations) : fail;
  }
  absl::StatusOr<nlohmann::json> Delete(const kube::ResourceRef& ref,
                                        const kube::DeleteOptions&) override {
    Record("delete", ref);
    return fail.ok() ? absl::StatusOr<nlohmann::json>(nlohmann::json::object()) : fail;
  }
  absl::Status Watch(const kube::ResourceRef& ref, const std::string&, const kube::WatchOptions&,
                     const kube::WatchHandler&) override {
    Record("watch", ref);
    return fail;
  }

 private:
  void Record(const char* verb, const kube::ResourceRef& ref) {
    calls.push_back(absl::StrCat(verb, " ", ref.resource,
                                 ref.subresource.empty() ? "" : "/", ref.subresource,
                                 ref.name.empty() ? "" : " ", ref.name));
  }
};

}  // namespace tj::op::testing
