// A KubeClient for unit tests: records each call as "<verb> <resource>[/<subresource>] [name]"
// and answers from a map of objects by "<resource>/<namespace>/<name>" (create: AlreadyExists
// when present; get: NotFound when absent; a merge patch of one present is applied to it), or with `fail` when set, or with `fail_calls` for
// the calls of one verb and resource ("create podgroups").
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
  std::map<std::string, absl::Status> fail_calls;  // by "<verb> <resource>", e.g. "delete pods"
  std::vector<nlohmann::json> bodies;  // what creates, updates and patches sent, in call order

  static std::string Key(const kube::ResourceRef& ref, const std::string& name) {
    return absl::StrCat(ref.resource, "/", ref.namespace_name, "/", name);
  }

  absl::StatusOr<nlohmann::json> Get(const kube::ResourceRef& ref) override {
    if (absl::Status s = Record("get", ref); !s.ok()) return s;
    auto it = objects.find(Key(ref, ref.name));
    if (it == objects.end()) return absl::NotFoundError(ref.Describe() + " not found");
    return it->second;
  }
  absl::StatusOr<nlohmann::json> List(const kube::ResourceRef& ref,
                                      const kube::ListOptions&) override {
    if (absl::Status s = Record("list", ref); !s.ok()) return s;
    return nlohmann::json{{"items", nlohmann::json::array()}};
  }
  absl::StatusOr<nlohmann::json> Create(const kube::ResourceRef& ref,
                                        const nlohmann::json& object) override {
    bodies.push_back(object);
    if (absl::Status s = Record("create", ref); !s.ok()) return s;
    const std::string key = Key(ref, object["metadata"].value("name", ""));
    if (objects.contains(key)) return absl::AlreadyExistsError(key + " exists");
    objects[key] = object;
    return object;
  }
  absl::StatusOr<nlohmann::json> Update(const kube::ResourceRef& ref,
                                        const nlohmann::json& object) override {
    bodies.push_back(object);
    if (absl::Status s = Record("update", ref); !s.ok()) return s;
    return object;
  }
  absl::StatusOr<nlohmann::json> UpdateStatus(const kube::ResourceRef& ref,
                                              const nlohmann::json& object) override {
    kube::ResourceRef status = ref;
    status.subresource = "status";
    bodies.push_back(object);
    if (absl::Status s = Record("update", status); !s.ok()) return s;
    return object;
  }
  absl::StatusOr<nlohmann::json> MergePatch(const kube::ResourceRef& ref,
                                            const nlohmann::json& patch) override {
    bodies.push_back(patch);
    if (absl::Status s = Record("patch", ref); !s.ok()) return s;
    // A stored object is patched and answered whole, as the API server does.
    auto it = objects.find(Key(ref, ref.name));
    if (it == objects.end()) return patch;
    it->second.merge_patch(patch);
    return it->second;
  }
  absl::StatusOr<nlohmann::json> JsonPatch(const kube::ResourceRef& ref,
                                           const nlohmann::json& operations) override {
    if (absl::Status s = Record("patch", ref); !s.ok()) return s;
    return operations;
  }
  absl::StatusOr<nlohmann::json> Delete(const kube::ResourceRef& ref,
                                        const kube::DeleteOptions&) override {
    if (absl::Status s = Record("delete", ref); !s.ok()) return s;
    return nlohmann::json::object();
  }
  absl::Status Watch(const kube::ResourceRef& ref, const std::string&, const kube::WatchOptions&,
                     const kube::WatchHandler&) override {
    return Record("watch", ref);
  }

 private:
  // Records the call; what to answer instead of the object (OK: answer it).
  absl::Status Record(const char* verb, const kube::ResourceRef& ref) {
    calls.push_back(absl::StrCat(verb, " ", ref.resource,
                                 ref.subresource.empty() ? "" : "/", ref.subresource,
                                 ref.name.empty() ? "" : " ", ref.name));
    if (!fail.ok()) return fail;
    auto it = fail_calls.find(absl::StrCat(verb, " ", ref.resource));
    return it == fail_calls.end() ? absl::OkStatus() : it->second;
  }
};

}  // namespace tj::op::testing
