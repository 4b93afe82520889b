#include "api/v1alpha1/coordination_port.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/labels.h"

namespace tj::v1alpha1 {
namespace {

struct DeclaredPort {
  size_t index;                 // in containers[container].ports
  const nlohmann::json* value;  // its containerPort (null when absent)
};

// The ports named kCoordinationPortName of one container, in order.
std::vector<DeclaredPort> NamedPorts(const nlohmann::json& container) {
  std::vector<DeclaredPort> found;
  if (!container.is_object() || !container.contains("ports") || !container["ports"].is_array()) {
    return found;
  }
  const nlohmann::json& ports = container["ports"];
  for (size_t i = 0; i < ports.size(); ++i) {
    if (!ports[i].is_object() || !ports[i].contains("name") ||
        ports[i]["name"] != kCoordinationPortName) {
      continue;
    }
    auto number = ports[i].find("containerPort");
    found.push_back(DeclaredPort{i, number == ports[i].end() ? nullptr : &*number});
  }
  return found;
}

// The containers of a replica type's pod template (null when the template has none).
const nlohmann::json* Containers(const TrainingJob& job, ReplicaType type) {
  auto spec = job.spec.replica_specs.find(type);
  if (spec == job.spec.replica_specs.end()) return nullptr;
  const nlohmann::json& raw = spec->second.pod_template.raw();
  if (!raw.is_object() || !raw.contains("spec") || !raw["spec"].is_object()) return nullptr;
  const nlohmann::json& pod = raw["spec"];
  if (!pod.contains("containers") || !pod["containers"].is_array()) return nullptr;
  return &pod["containers"];
}

// The first port named kCoordinationPortName on the Coordinator's first container.
std::optional<DeclaredPort> FindDeclaredPort(const TrainingJob& job) {
  const nlohmann::json* containers = Containers(job, ReplicaType::kCoordinator);
  if (containers == nullptr || containers->empty()) return std::nullopt;
  std::vector<DeclaredPort> found = NamedPorts((*containers)[0]);
  if (found.empty()) return std::nullopt;
  return found.front();
}

bool Usable(const nlohmann::json* value) {
  if (value == nullptr || !value->is_number_integer()) return false;
  const int64_t port = value->get<int64_t>();
  return port >= 1 && port <= 65535 && port != kTrainerPort;
}

}  // namespace

std::optional<int32_t> CoordinationPort(const TrainingJob& job) {
  std::optional<DeclaredPort> declared = FindDeclaredPort(job);
  if (!declared || !Usable(declared->value)) return std::nullopt;
  return static_cast<int32_t>(declared->value->get<int64_t>());
}

void ValidateCoordinationPort(const TrainingJob& job, FieldErrors& errors) {
  // Every port of that name, not only the one the operator reads: the CRD's rule is on the port
  // schema every container shares (it cannot tell the Coordinator's first container apart), and
  // the two must agree (tests/crd).
  const std::string detail = absl::StrCat(
      "the port named ", kCoordinationPortName,
      " (the coordinator's Coordination service beside TensorFlow's server) must be a port "
      "number from 1 to 65535 other than the trainer port ",
      kTrainerPort);
  for (ReplicaType type : kReplicaTypes) {
    const nlohmann::json* containers = Containers(job, type);
    if (containers == nullptr) continue;
    for (size_t c = 0; c < containers->size(); ++c) {
      for (const DeclaredPort& declared : NamedPorts((*containers)[c])) {
        if (Usable(declared.value)) continue;
        const std::string path = absl::StrCat(
            "spec.replicaSpecs.", std::string(ReplicaTypeName(type)), ".template.spec.containers[",
            c, "].ports[", declared.index, "].containerPort");
        if (declared.value == nullptr) {
          errors.push_back(RequiredError(path, detail));
        } else {
          errors.push_back(InvalidError(path, *declared.value, detail));
        }
      }
    }
  }
}

}  // namespace tj::v1alpha1
