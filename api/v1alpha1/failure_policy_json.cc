#include "api/v1alpha1/failure_policy_json.h"

#include <set>

#include "api/v1alpha1/json_fields.h"

namespace tj::v1alpha1 {
namespace {

constexpr char kRulesPath[] = "spec.failurePolicy.rules";
constexpr char kValuesWhat[] = "the exit codes the rule matches (1 to 255)";
constexpr char kTypesWhat[] =
    "at least one of Coordinator, PS and Worker (leave it out for all three)";
constexpr char kConditionsWhat[] = "at least one of DisruptionTarget, OOMKilled and Evicted";

// Presence and emptiness are judged here, on what was written: a list whose only entry is
// misspelt is reported once, for the spelling.
void RequireNotEmpty(const nlohmann::json& list, const std::string& path, std::string_view what,
                     FieldErrors& errors) {
  if (list.is_array() && list.empty()) errors.push_back(RequiredError(path, what));
}

// A list of enum names; each unknown name is reported at its index and left out.
template <typename E, typename ParseFn, typename NamesFn>
std::optional<std::vector<E>> DecodeEnumList(const nlohmann::json& value, const std::string& path,
                                             std::string_view what, FieldErrors& errors,
                                             ParseFn parse, NamesFn names) {
  std::optional<std::vector<std::string>> texts = ReadStringList(value, path, errors);
  if (!texts) return std::nullopt;
  RequireNotEmpty(value, path, what, errors);
  std::vector<E> out;
  for (size_t i = 0; i < texts->size(); ++i) {
    if (std::optional<E> parsed = parse((*texts)[i])) {
      out.push_back(*parsed);
    } else {
      errors.push_back(NotSupportedError(IndexPath(path, i), (*texts)[i], names()));
    }
  }
  return out;
}

ExitCodeRequirement DecodeExitCodes(const nlohmann::json& value, const std::string& path,
                                    FieldErrors& errors) {
  ExitCodeRequirement out;
  ObjectReader r(value, path, errors);
  if (std::optional<std::string> op = r.String("operator")) {
    out.op = ParseExitCodeOperator(*op);
    if (!out.op) {
      errors.push_back(NotSupportedError(r.Path("operator"), *op, ExitCodeOperatorNames()));
    }
  } else if (r.is_object() && r.Field("operator") == nullptr) {
    errors.push_back(RequiredError(r.Path("operator"), "In or NotIn"));
  }
  const nlohmann::json* values = r.Field("values");
  if (values == nullptr && r.is_object()) {
    errors.push_back(RequiredError(r.Path("values"), kValuesWhat));
  } else if (values != nullptr) {
    const std::string values_path = r.Path("values");
    RequireNotEmpty(*values, values_path, kValuesWhat, errors);
    if (ExpectArray(*values, values_path, errors)) {
      for (size_t i = 0; i < values->size(); ++i) {
        if (auto code = ReadInt32((*values)[i], IndexPath(values_path, i), errors)) {
          out.values.push_back(*code);
        }
      }
    }
  }
  r.RejectUnknown();
  return out;
}

FailurePolicyRule DecodeRule(const nlohmann::json& value, const std::string& path,
                             FieldErrors& errors) {
  FailurePolicyRule rule;
  ObjectReader r(value, path, errors);
  if (std::optional<std::string> action = r.String("action")) {
    rule.action = ParseFailurePolicyAction(*action);
    if (!rule.action) {
      errors.push_back(NotSupportedError(r.Path("action"), *action, FailurePolicyActionNames()));
    }
  } else if (r.is_object() && r.Field("action") == nullptr) {
    errors.push_back(RequiredError(r.Path("action"), "Ignore, Count, RestartJob or FailJob"));
  }
  if (const nlohmann::json* types = r.Field("replicaTypes")) {
    rule.replica_types = DecodeEnumList<ReplicaType>(*types, r.Path("replicaTypes"), kTypesWhat,
                                                     errors, ParseReplicaType, ReplicaTypeNames);
  }
  if (const nlohmann::json* codes = r.Field("onExitCodes")) {
    rule.on_exit_codes = DecodeExitCodes(*codes, r.Path("onExitCodes"), errors);
  }
  if (const nlohmann::json* conditions = r.Field("onPodConditions")) {
    rule.on_pod_conditions =
        DecodeEnumList<FailureCondition>(*conditions, r.Path("onPodConditions"), kConditionsWhat,
                                         errors, ParseFailureCondition, FailureConditionNames);
  }
  r.RejectUnknown();
  return rule;
}

template <typename E, typename NameFn>
nlohmann::json EnumList(const std::vector<E>& values, NameFn name) {
  nlohmann::json out = nlohmann::json::array();
  for (E v : values) out.push_back(std::string(name(v)));
  return out;
}

// Lists the rules treat as sets: a duplicate is an error (the API server's list-type set says so
// too). An empty one is the decoder's (it knows whether the list was written empty).
template <typename T, typename ToJson>
void CheckSet(const std::vector<T>& values, const std::string& path, FieldErrors& errors,
              ToJson to_json) {
  std::set<T> seen;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!seen.insert(values[i]).second) {
      errors.push_back(DuplicateError(IndexPath(path, i), to_json(values[i])));
    }
  }
}

void ValidateExitCodes(const ExitCodeRequirement& codes, const std::string& path,
                       FieldErrors& errors) {
  const std::string values_path = ChildPath(path, "values");
  CheckSet(codes.values, values_path, errors, [](int32_t v) { return nlohmann::json(v); });
  for (size_t i = 0; i < codes.values.size(); ++i) {
    const int32_t code = codes.values[i];
    if (code < 0 || code > 255) {
      errors.push_back(
          InvalidError(IndexPath(values_path, i), code, "must be an exit code from 0 to 255"));
    } else if (code == 0 && codes.op == ExitCodeOperator::kIn) {
      errors.push_back(InvalidError(IndexPath(values_path, i), code,
                                    "exit code 0 means success and never matches a failure with "
                                    "operator In (a disrupted replica is matched by "
                                    "onPodConditions)"));
    }
  }
}

}  // namespace

std::string FailurePolicyRulePath(size_t index) { return IndexPath(kRulesPath, index); }

FailurePolicy DecodeFailurePolicy(const nlohmann::json& value, const std::string& path,
                                  FieldErrors& errors) {
  FailurePolicy policy;
  ObjectReader r(value, path, errors);
  if (const nlohmann::json* rules = r.Field("rules")) {
    const std::string rules_path = r.Path("rules");
    if (ExpectArray(*rules, rules_path, errors)) {
      for (size_t i = 0; i < rules->size(); ++i) {
        policy.rules.push_back(DecodeRule((*rules)[i], IndexPath(rules_path, i), errors));
      }
    }
  }
  r.RejectUnknown();
  return policy;
}

nlohmann::json FailurePolicyToJson(const FailurePolicy& policy) {
  nlohmann::json rules = nlohmann::json::array();
  for (const FailurePolicyRule& rule : policy.rules) {
    nlohmann::json out = nlohmann::json::object();
    if (rule.action) out["action"] = std::string(FailurePolicyActionName(*rule.action));
    if (rule.replica_types) out["replicaTypes"] = EnumList(*rule.replica_types, ReplicaTypeName);
    if (rule.on_exit_codes) {
      nlohmann::json codes = {{"values", rule.on_exit_codes->values}};
      if (rule.on_exit_codes->op) {
        codes["operator"] = std::string(ExitCodeOperatorName(*rule.on_exit_codes->op));
      }
      out["onExitCodes"] = std::move(codes);
    }
    if (rule.on_pod_conditions) {
      out["onPodConditions"] = EnumList(*rule.on_pod_conditions, FailureConditionName);
    }
    rules.push_back(std::move(out));
  }
  return {{"rules", std::move(rules)}};
}

void ValidateFailurePolicy(const FailurePolicy& policy, FieldErrors& errors) {
  if (policy.rules.size() > kMaxFailurePolicyRules) {
    errors.push_back(TooManyError(kRulesPath, policy.rules.size(), kMaxFailurePolicyRules));
  }
  for (size_t i = 0; i < policy.rules.size(); ++i) {
    const FailurePolicyRule& rule = policy.rules[i];
    const std::string path = FailurePolicyRulePath(i);
    if (rule.replica_types) {
      CheckSet(*rule.replica_types, ChildPath(path, "replicaTypes"), errors,
               [](ReplicaType t) { return nlohmann::json(std::string(ReplicaTypeName(t))); });
    }
    if (rule.on_exit_codes && rule.on_pod_conditions) {
      errors.push_back(ForbiddenError(ChildPath(path, "onPodConditions"),
                                      "may not be set together with onExitCodes: a rule matches "
                                      "either exit codes or pod conditions"));
    } else if (!rule.on_exit_codes && !rule.on_pod_conditions) {
      errors.push_back(RequiredError(ChildPath(path, "onExitCodes"),
                                     "or onPodConditions: the failures the rule matches"));
    }
    if (rule.on_exit_codes) {
      ValidateExitCodes(*rule.on_exit_codes, ChildPath(path, "onExitCodes"), errors);
    }
    if (rule.on_pod_conditions) {
      CheckSet(
          *rule.on_pod_conditions, ChildPath(path, "onPodConditions"), errors,
          [](FailureCondition c) { return nlohmann::json(std::string(FailureConditionName(c))); });
    }
  }
}

}  // namespace tj::v1alpha1
