#include "api/v1alpha1/pod_template.h"

namespace tj::v1alpha1 {
namespace {

const nlohmann::json& Null() {
  static const nlohmann::json null;
  return null;
}

// obj[key] when obj is an object holding key, else null: never throws, never inserts.
const nlohmann::json& At(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return Null();
  auto it = obj.find(key);
  return it == obj.end() ? Null() : *it;
}

std::map<std::string, std::string> StringMap(const nlohmann::json& obj) {
  std::map<std::string, std::string> out;
  if (!obj.is_object()) return out;
  for (const auto& [k, v] : obj.items()) {
    if (v.is_string()) out.emplace(k, v.get<std::string>());
  }
  return out;
}

std::string String(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : ""; }

std::vector<std::string> Strings(const nlohmann::json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const auto& v : list) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

EnvVar ToEnvVar(const nlohmann::json& e) {
  EnvVar var;
  var.name = String(At(e, "name"));
  if (const auto& value = At(e, "value"); value.is_string()) var.value = value.get<std::string>();
  if (const auto& from = At(e, "valueFrom"); !from.is_null()) var.value_from = from;
  return var;
}

Container ToContainer(const nlohmann::json& c) {
  Container container;
  container.name = String(At(c, "name"));
  container.image = String(At(c, "image"));
  container.command = Strings(At(c, "command"));
  container.args = Strings(At(c, "args"));
  if (const auto& env = At(c, "env"); env.is_array()) {
    for (const auto& e : env) {
      if (e.is_object()) container.env.push_back(ToEnvVar(e));
    }
  }
  container.resources = At(c, "resources");
  container.volume_mounts = At(c, "volumeMounts");
  return container;
}

}  // namespace

std::map<std::string, std::string> PodTemplate::labels() const {
  return StringMap(At(At(raw_, "metadata"), "labels"));
}

std::map<std::string, std::string> PodTemplate::annotations() const {
  return StringMap(At(At(raw_, "metadata"), "annotations"));
}

std::vector<Container> PodTemplate::containers() const {
  std::vector<Container> out;
  const auto& list = At(At(raw_, "spec"), "containers");
  if (!list.is_array()) return out;
  for (const auto& c : list) {
    if (c.is_object()) out.push_back(ToContainer(c));
  }
  return out;
}

nlohmann::json PodTemplate::volumes() const { return At(At(raw_, "spec"), "volumes"); }

std::optional<int64_t> PodTemplate::termination_grace_period_seconds() const {
  const auto& v = At(At(raw_, "spec"), "terminationGracePeriodSeconds");
  if (!v.is_number_integer()) return std::nullopt;
  return v.get<int64_t>();
}

std::optional<std::string> PodTemplate::restart_policy() const {
  const auto& v = At(At(raw_, "spec"), "restartPolicy");
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

}  // namespace tj::v1alpha1
