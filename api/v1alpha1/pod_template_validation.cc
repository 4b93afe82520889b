#include "api/v1alpha1/pod_template_validation.h"

#include <set>

#include "api/v1alpha1/dns_names.h"
#include "api/v1alpha1/json_fields.h"
#include "api/v1alpha1/limits.h"

namespace tj::v1alpha1 {
namespace {

// The value at obj[key], or nullptr when absent or null (null counts as absent, as in the API).
const nlohmann::json* Find(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void ValidateEnv(const nlohmann::json& env, const std::string& path, FieldErrors& errors) {
  if (!ExpectArray(env, path, errors)) return;
  if (env.size() > kMaxEnvVars) {
    errors.push_back(TooManyError(path, env.size(), kMaxEnvVars));
    return;
  }
  for (size_t i = 0; i < env.size(); ++i) {
    const std::string var_path = IndexPath(path, i);
    const nlohmann::json& var = env[i];
    if (!ExpectObject(var, var_path, errors)) continue;
    const nlohmann::json* name = Find(var, "name");
    if (name == nullptr) {
      errors.push_back(RequiredError(ChildPath(var_path, "name")));
    } else if (auto n = ReadString(*name, ChildPath(var_path, "name"), errors)) {
      if (n->empty()) {
        errors.push_back(RequiredError(ChildPath(var_path, "name")));
      } else if (n->size() > kMaxEnvNameLength) {
        errors.push_back(TooLongError(ChildPath(var_path, "name"), n->size(), kMaxEnvNameLength));
      } else if (n->find('=') != std::string::npos) {
        errors.push_back(InvalidError(ChildPath(var_path, "name"), *n, "must not contain '='"));
      } else if (*n == kTfConfigEnv) {
        errors.push_back(
            ForbiddenError(ChildPath(var_path, "name"),
                           "TF_CONFIG is set for every replica by the operator and by tjctl run"));
      }
    }
    const nlohmann::json* value = Find(var, "value");
    if (value != nullptr) ReadString(*value, ChildPath(var_path, "value"), errors);
    const nlohmann::json* value_from = Find(var, "valueFrom");
    if (value_from != nullptr &&
        ExpectObject(*value_from, ChildPath(var_path, "valueFrom"), errors) && value != nullptr &&
        value->is_string() && !value->get<std::string>().empty()) {
      errors.push_back(InvalidError(ChildPath(var_path, "valueFrom"), "",
                                    "may not be specified when `value` is not empty"));
    }
  }
}

void ValidateContainer(const nlohmann::json& c, const std::string& path, ValidationTarget target,
                       std::set<std::string>& names, FieldErrors& errors) {
  if (!ExpectObject(c, path, errors)) return;
  const std::string name_path = ChildPath(path, "name");
  const nlohmann::json* name = Find(c, "name");
  if (name == nullptr) {
    errors.push_back(RequiredError(name_path));
  } else if (auto n = ReadString(*name, name_path, errors)) {
    if (n->empty()) {
      errors.push_back(RequiredError(name_path));
    } else if (!IsDns1123Label(*n)) {
      errors.push_back(InvalidError(
          name_path, *n,
          "a container name must be a lowercase RFC 1123 label (a-z, 0-9 and '-', at most 63)"));
    } else if (!names.insert(*n).second) {
      errors.push_back(DuplicateError(name_path, *n));
    }
  }

  const std::string image_path = ChildPath(path, "image");
  const nlohmann::json* image = Find(c, "image");
  std::optional<std::string> image_text;
  if (image != nullptr) image_text = ReadString(*image, image_path, errors);
  if (target == ValidationTarget::kCluster &&
      (image == nullptr || (image_text && image_text->empty()))) {
    errors.push_back(RequiredError(image_path, "the operator needs an image to create the pod"));
  }

  const std::string command_path = ChildPath(path, "command");
  std::optional<std::vector<std::string>> command;
  if (const nlohmann::json* v = Find(c, "command"))
    command = ReadStringList(*v, command_path, errors);
  if (target == ValidationTarget::kLocal &&
      (Find(c, "command") == nullptr || (command && command->empty()))) {
    errors.push_back(RequiredError(command_path,
                                   "tjctl run starts each container's command as a local process"));
  }
  if (const nlohmann::json* v = Find(c, "args"))
    ReadStringList(*v, ChildPath(path, "args"), errors);
  if (const nlohmann::json* v = Find(c, "env")) ValidateEnv(*v, ChildPath(path, "env"), errors);
  if (const nlohmann::json* v = Find(c, "resources")) {
    ExpectObject(*v, ChildPath(path, "resources"), errors);
  }
  if (const nlohmann::json* v = Find(c, "volumeMounts")) {
    ExpectArray(*v, ChildPath(path, "volumeMounts"), errors);
  }
}

void ValidatePodSpec(const nlohmann::json& spec, const std::string& path, ValidationTarget target,
                     FieldErrors& errors) {
  if (!ExpectObject(spec, path, errors)) return;
  const std::string containers_path = ChildPath(path, "containers");
  const nlohmann::json* containers = Find(spec, "containers");
  if (containers == nullptr || (containers->is_array() && containers->empty())) {
    errors.push_back(RequiredError(containers_path, "at least one container"));
  } else if (containers->is_array() && containers->size() > kMaxContainers) {
    errors.push_back(TooManyError(containers_path, containers->size(), kMaxContainers));
  } else if (ExpectArray(*containers, containers_path, errors)) {
    std::set<std::string> names;
    for (size_t i = 0; i < containers->size(); ++i) {
      ValidateContainer((*containers)[i], IndexPath(containers_path, i), target, names, errors);
    }
  }
  if (const nlohmann::json* v = Find(spec, "volumes")) {
    ExpectArray(*v, ChildPath(path, "volumes"), errors);
  }
  // Typed in the CRD as well: the scheduler matches node labels, which are strings.
  if (const nlohmann::json* v = Find(spec, "nodeSelector")) {
    ReadStringMap(*v, ChildPath(path, "nodeSelector"), errors);
  }
  if (const nlohmann::json* v = Find(spec, "terminationGracePeriodSeconds")) {
    const std::string grace_path = ChildPath(path, "terminationGracePeriodSeconds");
    if (auto grace = ReadInt64(*v, grace_path, errors); grace && *grace < 0) {
      errors.push_back(InvalidError(grace_path, *grace, "must be greater than or equal to 0"));
    }
  }
  // Pods run with restartPolicy Never: a kubelet restarting containers in place would hide
  // restarts from backoffLimit and from the coordinator, which must see a new incarnation.
  if (const nlohmann::json* v = Find(spec, "restartPolicy")) {
    const std::string policy_path = ChildPath(path, "restartPolicy");
    if (auto policy = ReadString(*v, policy_path, errors); policy && *policy != "Never") {
      errors.push_back(InvalidError(
          policy_path, *policy,
          "must be Never or unset: replicas are restarted by the operator according to the "
          "replica spec's restartPolicy, and each restart counts against backoffLimit"));
    }
  }
}

}  // namespace

void ValidatePodTemplate(const PodTemplate& pod_template, const std::string& path,
                         ValidationTarget target, FieldErrors& errors) {
  const nlohmann::json& raw = pod_template.raw();
  if (pod_template.empty()) {
    errors.push_back(RequiredError(path, "a pod template with at least one container"));
    return;
  }
  if (!ExpectObject(raw, path, errors)) return;
  // Before anything else: the operator copies the template into each of the type's pods. Invalid
  // UTF-8 in a string (a manifest read by tjctl) is measured as replacement characters, not thrown.
  if (const size_t bytes =
          raw.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
      bytes > kMaxPodTemplateBytes) {
    errors.push_back(TooLongError(
        path, bytes, kMaxPodTemplateBytes,
        "the template (as JSON) is copied into every pod of its replica type; keep large data "
        "in a ConfigMap, Secret or volume"));
    return;
  }
  if (const nlohmann::json* meta = Find(raw, "metadata")) {
    const std::string meta_path = ChildPath(path, "metadata");
    if (ExpectObject(*meta, meta_path, errors)) {
      if (const nlohmann::json* v = Find(*meta, "labels")) {
        ReadStringMap(*v, ChildPath(meta_path, "labels"), errors);
      }
      if (const nlohmann::json* v = Find(*meta, "annotations")) {
        ReadStringMap(*v, ChildPath(meta_path, "annotations"), errors);
      }
    }
  }
  const nlohmann::json* spec = Find(raw, "spec");
  if (spec == nullptr) {
    errors.push_back(
        RequiredError(ChildPath(path, "spec"), "a pod spec with at least one container"));
    return;
  }
  ValidatePodSpec(*spec, ChildPath(path, "spec"), target, errors);
}

}  // namespace tj::v1alpha1
