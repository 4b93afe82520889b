#include "tjctl/local/container_env.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "coordinator/base/strings.h"
#include "nlohmann/json.hpp"

namespace tj::local {
namespace {

using v1alpha1::ChildPath;
using v1alpha1::FieldError;
using v1alpha1::IndexPath;

constexpr std::string_view kLocalValueFrom =
    "tjctl run resolves only fieldRef metadata.name, metadata.namespace, status.podIP and "
    "spec.nodeName locally";

std::optional<std::string> FieldValue(std::string_view field_path, const LocalFieldValues& v) {
  if (field_path == "metadata.name") return v.pod_name;
  if (field_path == "metadata.namespace") return v.pod_namespace;
  if (field_path == "status.podIP") return v.pod_ip;
  if (field_path == "spec.nodeName") return v.node_name;
  return std::nullopt;
}

// The value of a valueFrom, or an error naming the part that has no local meaning.
std::optional<std::string> ResolveValueFrom(const nlohmann::json& value_from,
                                            const LocalFieldValues& values,
                                            const std::string& path,
                                            v1alpha1::FieldErrors& errors) {
  if (!value_from.is_object()) {
    errors.push_back(v1alpha1::InvalidError(path, value_from, "must be an object"));
    return std::nullopt;
  }
  for (const auto& [source, spec] : value_from.items()) {
    if (source != "fieldRef") {
      errors.push_back(v1alpha1::ForbiddenError(
          ChildPath(path, source), Cat(source, " is not available locally; ", kLocalValueFrom)));
      return std::nullopt;
    }
  }
  const std::string ref_path = ChildPath(path, "fieldRef");
  const nlohmann::json* field_path =
      value_from.contains("fieldRef") && value_from["fieldRef"].is_object() &&
              value_from["fieldRef"].contains("fieldPath")
          ? &value_from["fieldRef"]["fieldPath"]
          : nullptr;
  if (field_path == nullptr || !field_path->is_string()) {
    errors.push_back(v1alpha1::RequiredError(ChildPath(ref_path, "fieldPath"), kLocalValueFrom));
    return std::nullopt;
  }
  std::optional<std::string> resolved = FieldValue(field_path->get<std::string>(), values);
  if (!resolved) {
    errors.push_back(v1alpha1::NotSupportedError(
        ChildPath(ref_path, "fieldPath"), *field_path, SupportedLocalFieldPaths()));
  }
  return resolved;
}

}  // namespace

std::vector<std::string_view> SupportedLocalFieldPaths() {
  return {"metadata.name", "metadata.namespace", "status.podIP", "spec.nodeName"};
}

EnvList ResolveContainerEnv(const std::vector<v1alpha1::EnvVar>& env,
                            const LocalFieldValues& values, const EnvList& injected,
                            const std::string& container_path, v1alpha1::FieldErrors& errors) {
  EnvList out;
  for (size_t j = 0; j < env.size(); ++j) {
    const v1alpha1::EnvVar& var = env[j];
    const std::string path = IndexPath(ChildPath(container_path, "env"), j);
    if (var.value_from.has_value() && !var.value.value_or("").empty()) {
      // Validation already refuses this; kept so the function is safe on its own.
      errors.push_back(v1alpha1::ForbiddenError(ChildPath(path, "valueFrom"),
                                                "may not be specified when `value` is not empty"));
      continue;
    }
    if (var.value_from.has_value()) {
      if (auto v = ResolveValueFrom(*var.value_from, values, ChildPath(path, "valueFrom"), errors)) {
        out.emplace_back(var.name, *v);
      }
      continue;
    }
    EnvList scope = out;
    scope.insert(scope.end(), injected.begin(), injected.end());
    out.emplace_back(var.name, ExpandVariables(var.value.value_or(""), scope));
  }
  return out;
}

std::string ExpandVariables(std::string_view input, const EnvList& vars) {
  std::map<std::string, std::string, std::less<>> lookup;
  for (const auto& [name, value] : vars) lookup[name] = value;
  std::string out;
  size_t i = 0;
  while (i < input.size()) {
    if (input[i] != '$' || i + 1 >= input.size()) {
      out.push_back(input[i++]);
      continue;
    }
    const char next = input[i + 1];
    if (next == '$') {  // escaped: "$$(X)" is the literal "$(X)"
      out.push_back('$');
      i += 2;
      continue;
    }
    if (next != '(') {
      out.append(input.substr(i, 2));
      i += 2;
      continue;
    }
    const size_t close = input.find(')', i + 2);
    if (close == std::string_view::npos) {  // incomplete: kept as written
      out.append(input.substr(i));
      break;
    }
    const std::string_view name = input.substr(i + 2, close - i - 2);
    auto it = lookup.find(name);
    if (it != lookup.end()) {
      out.append(it->second);
    } else {
      out.append(input.substr(i, close - i + 1));
    }
    i = close + 1;
  }
  return out;
}

}  // namespace tj::local
