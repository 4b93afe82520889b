#include "coordinator/resolver/tf_config_cluster_resolver.h"

#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/resolver/diagnostics.h"
#include "coordinator/resolver/json_text.h"
#include "nlohmann/json.hpp"

namespace tj {
namespace {

absl::Status Invalid(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(Cat(field, ": ", problem));
}

// The member, or nullptr when missing or null.
const nlohmann::json* Member(const nlohmann::json& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::StatusOr<std::string> OptionalString(const nlohmann::json& doc, std::string_view key) {
  const nlohmann::json* value = Member(doc, key);
  if (value == nullptr) return std::string();
  if (!value->is_string()) {
    return Invalid(key, Cat("must be a string, got ", JsonKindName(*value)));
  }
  return value->get<std::string>();
}

// A URL scheme (RFC 3986), since master() puts it in front of "://".
absl::Status ValidateRpcLayer(std::string_view rpc_layer) {
  bool ok = rpc_layer.empty() || absl::ascii_isalpha(static_cast<unsigned char>(rpc_layer.front()));
  for (char c : rpc_layer) {
    ok = ok &&
         (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.');
  }
  if (ok) return absl::OkStatus();
  return Invalid("rpc_layer",
                 Cat(Quoted(rpc_layer), " is not a protocol name like \"grpc\" (no \"://\")"));
}

// TensorFlow runs int() on the index, so "1" works there; floats and booleans are refused here
// because int() would silently truncate them.
absl::StatusOr<int> ParseTaskIndex(const nlohmann::json& value) {
  constexpr std::string_view kField = "task.index";
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (value.is_number_unsigned()) {
    const uint64_t index = value.get<uint64_t>();
    if (index > static_cast<uint64_t>(kMax)) {
      return Invalid(kField, Cat(index, " is out of range (must be at most ", kMax, ")"));
    }
    return static_cast<int>(index);
  }
  if (value.is_number_integer()) {
    const int64_t index = value.get<int64_t>();
    if (index < 0) return Invalid(kField, Cat("must be >= 0, got ", index));
    if (index > kMax) {
      return Invalid(kField, Cat(index, " is out of range (must be at most ", kMax, ")"));
    }
    return static_cast<int>(index);
  }
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    int64_t index = 0;
    bool ok = !text.empty() && text.size() <= 10;
    for (char c : text) {
      ok = ok && absl::ascii_isdigit(static_cast<unsigned char>(c));
      if (ok) index = index * 10 + (c - '0');
    }
    if (!ok || index > kMax) {
      return Invalid(kField, Cat("must be a non-negative integer, got string ", Quoted(text)));
    }
    return static_cast<int>(index);
  }
  if (value.is_number_float()) {
    return Invalid(kField, Cat("must be an integer, got floating-point number ", value.dump()));
  }
  return Invalid(kField, Cat("must be an integer, got ", JsonKindName(value)));
}

std::string DescribeJobs(const ClusterSpec& spec) {
  constexpr size_t kMaxListed = 10;
  std::vector<std::string> jobs = spec.jobs();
  if (jobs.empty()) return "none";
  const bool cut = jobs.size() > kMaxListed;
  if (cut) jobs.resize(kMaxListed);
  return Cat(absl::StrJoin(jobs, ", "), cut ? ", ..." : "");
}

struct Task {
  std::optional<std::string> type;
  std::optional<int> index;
};

absl::StatusOr<Task> ParseTask(const nlohmann::json& doc, const ClusterSpec& spec) {
  const nlohmann::json* task = Member(doc, "task");
  if (task == nullptr) return Task();
  if (!task->is_object()) {
    return Invalid("task", Cat("must be an object like {\"type\": \"worker\", \"index\": 0}, got ",
                               JsonKindName(*task)));
  }
  const nlohmann::json* type = Member(*task, "type");
  if (type == nullptr) {
    return Invalid("task.type", "missing; \"task\" needs \"type\" and \"index\"");
  }
  if (!type->is_string()) {
    return Invalid("task.type", Cat("must be a string, got ", JsonKindName(*type)));
  }
  const std::string& job = type->get_ref<const std::string&>();
  if (!spec.has_job(job)) {
    return Invalid(
        "task.type",
        Cat(Quoted(job), " is not a job in \"cluster\" (jobs: ", DescribeJobs(spec), ")"));
  }
  const nlohmann::json* index_value = Member(*task, "index");
  if (index_value == nullptr) {
    return Invalid("task.index", "missing; \"task\" needs \"type\" and \"index\"");
  }
  TJ_ASSIGN_OR_RETURN(int index, ParseTaskIndex(*index_value));
  if (absl::StatusOr<std::string> address = spec.task_address(job, index); !address.ok()) {
    return Invalid("task.index", Cat(index, " is out of range: ", address.status().message()));
  }
  return Task{job, index};
}

}  // namespace

TFConfigClusterResolver::TFConfigClusterResolver(ClusterSpec spec,
                                                 std::optional<std::string> task_type,
                                                 std::optional<int> task_id, std::string rpc_layer,
                                                 std::string environment)
    : ClusterResolver(std::move(task_type), task_id, std::move(rpc_layer), std::move(environment)),
      spec_(std::move(spec)) {}

absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>>
TFConfigClusterResolver::FromEnvironment() {
  const std::string name(kEnvironmentVariable);
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    return absl::NotFoundError(
        Cat(name, " is not set; it must hold the cluster and this task as JSON, e.g. ",
            R"({"cluster": {"worker": ["host:2222"]}, "task": {"type": "worker", "index": 0}})"));
  }
  return FromJson(value, name);
}

absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> TFConfigClusterResolver::FromJson(
    std::string_view json, std::string_view source_name) {
  TJ_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJsonText(json, source_name));
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(
        Cat(source_name, ": must be a JSON object with \"cluster\" and \"task\", got ",
            JsonKindName(doc)));
  }
  ClusterSpec spec;
  if (const nlohmann::json* cluster = Member(doc, "cluster"); cluster != nullptr) {
    absl::StatusOr<ClusterSpec> parsed = ClusterSpec::FromJson(*cluster, "cluster");
    if (!parsed.ok()) return WithContext(parsed.status(), source_name);
    spec = *std::move(parsed);
  }
  absl::StatusOr<Task> task = ParseTask(doc, spec);
  if (!task.ok()) return WithContext(task.status(), source_name);
  absl::StatusOr<std::string> rpc_layer = OptionalString(doc, "rpc_layer");
  if (!rpc_layer.ok()) return WithContext(rpc_layer.status(), source_name);
  TJ_RETURN_IF_ERROR(WithContext(ValidateRpcLayer(*rpc_layer), source_name));
  absl::StatusOr<std::string> environment = OptionalString(doc, "environment");
  if (!environment.ok()) return WithContext(environment.status(), source_name);
  return std::unique_ptr<TFConfigClusterResolver>(
      new TFConfigClusterResolver(std::move(spec), std::move(task->type), task->index,
                                  *std::move(rpc_layer), *std::move(environment)));
}

}  // namespace tj
