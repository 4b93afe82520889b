#include "api/v1alpha1/checkpoint_volume_json.h"

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/dns_names.h"
#include "api/v1alpha1/json_fields.h"

namespace tj::v1alpha1 {
namespace {

std::string DecodeStorageRequest(const nlohmann::json& value, const std::string& path,
                                 FieldErrors& errors) {
  ObjectReader resources(value, path, errors);
  std::string storage;
  if (const nlohmann::json* requests = resources.Field("requests")) {
    ObjectReader r(*requests, resources.Path("requests"), errors);
    storage = r.String("storage").value_or("");
    r.RejectUnknown();
  }
  resources.RejectUnknown();
  return storage;
}

CheckpointClaimTemplate DecodeClaimTemplate(const nlohmann::json& value, const std::string& path,
                                            FieldErrors& errors) {
  CheckpointClaimTemplate out;
  ObjectReader r(value, path, errors);
  out.storage_class_name = r.String("storageClassName");
  if (const nlohmann::json* modes = r.Field("accessModes")) {
    const std::string modes_path = r.Path("accessModes");
    if (std::optional<std::vector<std::string>> names = ReadStringList(*modes, modes_path, errors)) {
      out.access_modes.emplace();
      for (size_t i = 0; i < names->size(); ++i) {
        if (std::optional<VolumeAccessMode> mode = ParseVolumeAccessMode((*names)[i])) {
          out.access_modes->push_back(*mode);
        } else {
          errors.push_back(
              NotSupportedError(IndexPath(modes_path, i), (*names)[i], VolumeAccessModeNames()));
        }
      }
    }
  }
  if (const nlohmann::json* resources = r.Field("resources")) {
    out.storage = DecodeStorageRequest(*resources, r.Path("resources"), errors);
  }
  r.RejectUnknown();
  return out;
}

bool Contains(const std::vector<VolumeAccessMode>& modes, VolumeAccessMode mode) {
  for (VolumeAccessMode m : modes) {
    if (m == mode) return true;
  }
  return false;
}

}  // namespace

CheckpointVolume DecodeCheckpointVolume(const nlohmann::json& value, const std::string& path,
                                        FieldErrors& errors) {
  CheckpointVolume volume;
  ObjectReader r(value, path, errors);
  volume.claim_name = r.String("claimName");
  if (const nlohmann::json* tmpl = r.Field("claimTemplate")) {
    volume.claim_template = DecodeClaimTemplate(*tmpl, r.Path("claimTemplate"), errors);
  }
  if (std::optional<std::string> policy = r.String("reclaimPolicy")) {
    volume.reclaim_policy = ParseClaimReclaimPolicy(*policy);
    if (!volume.reclaim_policy) {
      errors.push_back(
          NotSupportedError(r.Path("reclaimPolicy"), *policy, ClaimReclaimPolicyNames()));
    }
  }
  volume.mount_path = r.String("mountPath");
  r.RejectUnknown();
  return volume;
}

nlohmann::json CheckpointVolumeToJson(const CheckpointVolume& volume) {
  nlohmann::json out = nlohmann::json::object();
  if (volume.claim_name) out["claimName"] = *volume.claim_name;
  if (volume.claim_template) {
    const CheckpointClaimTemplate& t = *volume.claim_template;
    nlohmann::json tmpl = nlohmann::json::object();
    if (t.storage_class_name) tmpl["storageClassName"] = *t.storage_class_name;
    if (t.access_modes) {
      tmpl["accessModes"] = nlohmann::json::array();
      for (VolumeAccessMode mode : *t.access_modes) {
        tmpl["accessModes"].push_back(std::string(VolumeAccessModeName(mode)));
      }
    }
    if (!t.storage.empty()) tmpl["resources"] = {{"requests", {{"storage", t.storage}}}};
    out["claimTemplate"] = std::move(tmpl);
  }
  if (volume.reclaim_policy) {
    out["reclaimPolicy"] = std::string(ClaimReclaimPolicyName(*volume.reclaim_policy));
  }
  if (volume.mount_path) out["mountPath"] = *volume.mount_path;
  return out;
}

void DefaultCheckpointVolume(CheckpointVolume& volume) {
  if (!volume.reclaim_policy) volume.reclaim_policy = kDefaultClaimReclaimPolicy;
  if (volume.claim_template && !volume.claim_template->access_modes) {
    volume.claim_template->access_modes =
        std::vector<VolumeAccessMode>{VolumeAccessMode::kReadWriteMany};
  }
}

void ValidateCheckpointVolume(const CheckpointVolume& volume, std::string_view dir_view,
                              FieldErrors& errors) {
  const std::string dir(dir_view);
  const std::string path = "spec.checkpoint.volume";
  if (volume.claim_name.has_value() == volume.claim_template.has_value()) {
    errors.push_back(
        volume.claim_name
            ? ForbiddenError(ChildPath(path, "claimTemplate"),
                             "may not be set together with claimName: name an existing claim "
                             "or give a template for the operator to create one, not both")
            : RequiredError(ChildPath(path, "claimName"),
                            "or claimTemplate: the claim to mount at the checkpoint directory"));
  }
  if (volume.claim_name && !IsDns1123Subdomain(*volume.claim_name)) {
    errors.push_back(InvalidError(ChildPath(path, "claimName"), *volume.claim_name,
                                  "a PersistentVolumeClaim name must be a lowercase RFC 1123 "
                                  "subdomain of at most 253 characters"));
  }
  if (volume.claim_template) {
    const std::string tmpl = ChildPath(path, "claimTemplate");
    const CheckpointClaimTemplate& t = *volume.claim_template;
    const std::string storage = absl::StrCat(tmpl, ".resources.requests.storage");
    if (t.storage.empty()) {
      errors.push_back(RequiredError(storage, "the size of the claim, such as 10Gi"));
    } else if (!IsPositiveQuantity(t.storage)) {
      errors.push_back(InvalidError(storage, t.storage,
                                    "must be a Kubernetes quantity greater than zero, such as "
                                    "10Gi or 500M"));
    }
    if (t.storage_class_name && !t.storage_class_name->empty() &&
        !IsDns1123Subdomain(*t.storage_class_name)) {
      errors.push_back(InvalidError(ChildPath(tmpl, "storageClassName"), *t.storage_class_name,
                                    "a StorageClass name must be a lowercase RFC 1123 subdomain"));
    }
    if (t.access_modes && !Contains(*t.access_modes, VolumeAccessMode::kReadWriteMany)) {
      errors.push_back(InvalidError(
          ChildPath(tmpl, "accessModes"), CheckpointVolumeToJson(volume)["claimTemplate"]
                                              .value("accessModes", nlohmann::json::array()),
          "must include ReadWriteMany: the coordinator and every PS write the checkpoint "
          "directory, from pods on different nodes"));
    }
  }
  const std::string mount = volume.mount_path.value_or(dir);
  if (volume.mount_path && !absl::StartsWith(*volume.mount_path, "/")) {
    errors.push_back(InvalidError(ChildPath(path, "mountPath"), *volume.mount_path,
                                  "must be an absolute path"));
  } else if (!dir.empty() && !absl::StartsWith(dir, "/")) {
    errors.push_back(InvalidError("spec.checkpoint.dir", dir,
                                  "must be an absolute path when spec.checkpoint.volume is set: "
                                  "the claim is mounted there"));
  } else if (volume.mount_path && !dir.empty() && dir != mount &&
             !absl::StartsWith(dir, absl::EndsWith(mount, "/") ? mount : mount + "/")) {
    errors.push_back(InvalidError(
        ChildPath(path, "mountPath"), mount,
        absl::StrCat("must be spec.checkpoint.dir (", dir,
                     ") or a directory above it: checkpoints are written on the volume")));
  }
}

bool IsPositiveQuantity(std::string_view text) {
  // resource.Quantity's grammar (k8s.io/apimachinery/pkg/api/resource), unsigned: a positive
  // quantity has no sign but "+".
  static const std::regex kQuantity(
      R"(^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$)");
  if (!std::regex_match(text.begin(), text.end(), kQuantity)) return false;
  // Greater than zero: some digit of the number (before any suffix or exponent) is not 0.
  for (char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) break;
    if (c >= '1' && c <= '9') return true;
  }
  return false;
}

}  // namespace tj::v1alpha1
