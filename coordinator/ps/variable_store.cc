#include "coordinator/ps/variable_store.h"

#include <mutex>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/base/status_macros.h"

namespace tj {
namespace {

// Re-issues `status` with the same code, its message prefixed by what was being done to which
// variable.
absl::Status Naming(absl::string_view what, absl::string_view name, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(what, " variable '", name, "': ", status.message()));
}

}  // namespace

absl::Status VariableStore::Create(const v1::CreateVariablesRequest& request) {
  // Everything that can be checked without the map is checked before taking its exclusive lock.
  for (const v1::VariableSpec& spec : request.variables()) {
    if (spec.name().empty()) {
      return absl::InvalidArgumentError("cannot create a variable without a name");
    }
    TJ_RETURN_IF_ERROR(Naming("create", spec.name(), CheckWellFormed(spec.initial_value())));
  }

  std::unique_lock lock(mu_);
  // Specs this request introduces, so that a name repeated within one request is checked like a
  // name that already exists.
  absl::flat_hash_map<std::string_view, const v1::Tensor*> introduced;
  for (const v1::VariableSpec& spec : request.variables()) {
    const v1::Tensor& value = spec.initial_value();
    std::optional<std::string> existing_spec;
    if (auto it = variables_.find(spec.name()); it != variables_.end()) {
      if (it->second->spec().Matches(value)) continue;
      existing_spec = it->second->spec().ToString();
    } else if (auto it = introduced.find(spec.name()); it != introduced.end()) {
      if (TensorSpec::Of(*it->second).Matches(value)) continue;
      existing_spec = TensorSpec::Of(*it->second).ToString();
    }
    if (existing_spec.has_value()) {
      return absl::AlreadyExistsError(
          absl::StrCat("variable '", spec.name(), "' already exists as ", *existing_spec,
                       "; cannot create it as ", TensorSpec::Of(value).ToString()));
    }
    if (value.dtype() != v1::DTYPE_FLOAT32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "create variable '", spec.name(), "': only float32 variables are supported, got ",
          TensorSpec::Of(value).ToString()));
    }
    introduced.emplace(spec.name(), &value);
  }
  // Creation is rare (start of training, restarted workers re-creating), so the initial values are
  // copied under the exclusive lock rather than with a second, racing check.
  for (const auto& [name, value] : introduced) {
    variables_.emplace(std::string(name), std::make_shared<DenseVariable>(*value));
  }
  return absl::OkStatus();
}

absl::Status VariableStore::Pull(const v1::PullRequest& request, v1::PullResponse& response) const {
  TJ_ASSIGN_OR_RETURN(std::vector<VariablePtr> variables, Find(request.names()));
  response.mutable_values()->Reserve(static_cast<int>(variables.size()));
  for (const VariablePtr& variable : variables) variable->CopyTo(*response.add_values());
  return absl::OkStatus();
}

absl::Status VariableStore::Push(const v1::PushRequest& request) {
  if (request.names_size() != request.deltas_size()) {
    return absl::InvalidArgumentError(absl::StrCat("push has ", request.names_size(), " names but ",
                                                   request.deltas_size(), " deltas"));
  }
  TJ_ASSIGN_OR_RETURN(std::vector<VariablePtr> variables, Find(request.names()));
  // Validate every delta before applying any, so that a malformed push leaves the model untouched.
  for (int i = 0; i < request.deltas_size(); ++i) {
    const v1::Tensor& delta = request.deltas(i);
    TJ_RETURN_IF_ERROR(Naming("push to", request.names(i), CheckWellFormed(delta)));
    const TensorSpec& spec = variables[static_cast<size_t>(i)]->spec();
    if (!spec.Matches(delta)) {
      return absl::InvalidArgumentError(
          absl::StrCat("push to variable '", request.names(i), "': delta is ",
                       TensorSpec::Of(delta).ToString(), " but the variable is ", spec.ToString()));
    }
  }
  for (int i = 0; i < request.deltas_size(); ++i) {
    variables[static_cast<size_t>(i)]->Add(request.deltas(i));
  }
  return absl::OkStatus();
}

int64_t VariableStore::num_variables() const {
  std::shared_lock lock(mu_);
  return static_cast<int64_t>(variables_.size());
}

absl::StatusOr<std::vector<VariableStore::VariablePtr>> VariableStore::Find(
    const google::protobuf::RepeatedPtrField<std::string>& names) const {
  std::vector<VariablePtr> found;
  found.reserve(static_cast<size_t>(names.size()));
  std::shared_lock lock(mu_);
  for (const std::string& name : names) {
    auto it = variables_.find(name);
    if (it == variables_.end()) {
      return absl::NotFoundError(
          absl::StrCat("variable '", name, "' does not exist on this parameter server"));
    }
    found.push_back(it->second);
  }
  return found;
}

}  // namespace tj
