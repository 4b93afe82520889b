#include "coordinator/worker/function_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj {

absl::Status FunctionRegistry::Register(std::string name, WorkerFunction fn) {
  if (resource_functions_.contains(name) || !functions_.emplace(name, std::move(fn)).second) {
    return absl::AlreadyExistsError(absl::StrCat("function '", name, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::Status FunctionRegistry::RegisterResource(std::string name, ResourceFunction fn) {
  if (functions_.contains(name) || !resource_functions_.emplace(name, std::move(fn)).second) {
    return absl::AlreadyExistsError(absl::StrCat("function '", name, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<const WorkerFunction*> FunctionRegistry::Find(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    std::string hint = resource_functions_.contains(name)
                           ? " (it is a resource function: use CreatePerWorkerResource)"
                           : "";
    return absl::NotFoundError(absl::StrCat("function '", name, "' is not registered on this worker",
                                            hint, "; registered: ",
                                            absl::StrJoin(function_names(), ", ")));
  }
  return &it->second;
}

absl::StatusOr<const ResourceFunction*> FunctionRegistry::FindResource(
    const std::string& name) const {
  auto it = resource_functions_.find(name);
  if (it == resource_functions_.end()) {
    return absl::NotFoundError(absl::StrCat("resource function '", name,
                                            "' is not registered on this worker; registered: ",
                                            absl::StrJoin(resource_function_names(), ", ")));
  }
  return &it->second;
}

std::vector<std::string> FunctionRegistry::function_names() const {
  std::vector<std::string> names;
  for (const auto& [name, fn] : functions_) names.push_back(name);
  return names;
}

std::vector<std::string> FunctionRegistry::resource_function_names() const {
  std::vector<std::string> names;
  for (const auto& [name, fn] : resource_functions_) names.push_back(name);
  return names;
}

}  // namespace tj
