#include "operator/controller/cluster_view.h"

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "operator/kube/resource.h"

namespace tj::op {

ObjectPtr DirectClusterView::GetOrNull(const std::string& resource,
                                       const std::string& namespace_name,
                                       const std::string& name, bool* readable) {
  if (readable) *readable = true;
  auto ref = kube::Resource(resource, namespace_name, name);
  if (!ref.ok()) return nullptr;
  auto object = client_.Get(*ref);
  if (!object.ok()) {
    if (readable && !absl::IsNotFound(object.status())) *readable = false;
    return nullptr;
  }
  return std::make_shared<const nlohmann::json>(std::move(*object));
}

absl::StatusOr<std::vector<ObjectPtr>> DirectClusterView::ListOfJob(
    const std::string& resource, const std::string& namespace_name, const std::string& job_name) {
  std::vector<ObjectPtr> out;
  auto ref = kube::Resource(resource, namespace_name);
  if (!ref.ok()) return ref.status();
  kube::ListOptions options;
  options.label_selector = absl::StrCat(v1alpha1::kJobNameLabel, "=", job_name);
  auto list = kube::ListAll(client_, *ref, options);
  if (!list.ok()) return list.status();
  if (!list->contains("items") || !(*list)["items"].is_array()) return out;
  for (nlohmann::json& item : (*list)["items"]) {
    out.push_back(std::make_shared<const nlohmann::json>(std::move(item)));
  }
  return out;
}

ObjectPtr DirectClusterView::Job(const std::string& namespace_name, const std::string& name) {
  return GetOrNull("trainingjobs", namespace_name, name);
}

absl::StatusOr<std::vector<ObjectPtr>> DirectClusterView::PodsOf(
    const std::string& namespace_name, const std::string& job_name) {
  return ListOfJob("pods", namespace_name, job_name);
}

absl::StatusOr<std::vector<ObjectPtr>> DirectClusterView::ServicesOf(
    const std::string& namespace_name, const std::string& job_name) {
  return ListOfJob("services", namespace_name, job_name);
}

absl::StatusOr<ObjectPtr> DirectClusterView::Secret(const std::string& namespace_name,
                                                     const std::string& name) {
  auto ref = kube::Resource("secrets", namespace_name, name);
  if (!ref.ok()) return ref.status();
  auto object = client_.Get(*ref);
  if (absl::IsNotFound(object.status())) return ObjectPtr();
  if (!object.ok()) return object.status();
  return std::make_shared<const nlohmann::json>(std::move(*object));
}

ObjectPtr DirectClusterView::Node(const std::string& name, bool* known) {
  bool readable = true;
  ObjectPtr node = GetOrNull("nodes", "", name, &readable);
  if (known) *known = readable;
  return node;
}

}  // namespace tj::op
