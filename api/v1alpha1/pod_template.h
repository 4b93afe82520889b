// PodTemplate: a replica's Kubernetes PodTemplateSpec, kept verbatim as JSON so every field the
// user wrote (nodeSelector, tolerations, securityContext...) reaches the pods the operator creates,
// with typed read accessors for the parts trainingjob-operator itself uses.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

struct EnvVar {
  std::string name;
  std::optional<std::string> value;
  // Kubernetes' EnvVarSource (secretKeyRef, fieldRef...), passed through untouched.
  std::optional<nlohmann::json> value_from;
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  nlohmann::json resources;      // null when absent
  nlohmann::json volume_mounts;  // null when absent
};

// Accessors read the raw JSON each time, so they never disagree with what is sent to the API
// server. On a template that failed validation they skip what has the wrong type.
class PodTemplate {
 public:
  PodTemplate() = default;
  explicit PodTemplate(nlohmann::json raw) : raw_(std::move(raw)) {}

  const nlohmann::json& raw() const { return raw_; }
  nlohmann::json& mutable_raw() { return raw_; }
  bool empty() const { return raw_.is_null() || raw_.empty(); }

  std::map<std::string, std::string> labels() const;
  std::map<std::string, std::string> annotations() const;
  std::vector<Container> containers() const;
  nlohmann::json volumes() const;  // null when absent
  std::optional<int64_t> termination_grace_period_seconds() const;
  // spec.restartPolicy as written; the operator always creates pods with "Never".
  std::optional<std::string> restart_policy() const;

  friend bool operator==(const PodTemplate& a, const PodTemplate& b) { return a.raw_ == b.raw_; }

 private:
  nlohmann::json raw_ = nlohmann::json::object();
};

}  // namespace tj::v1alpha1
