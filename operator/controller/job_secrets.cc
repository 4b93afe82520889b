#include "operator/controller/job_secrets.h"

#include "absl/strings/str_cat.h"
#include "operator/kube/resource.h"

namespace tj::op {
namespace {

std::string Key(const std::string& namespace_name, const std::string& name) {
  return absl::StrCat(namespace_name, "/", name);
}

}  // namespace

absl::StatusOr<JobSecrets::ObjectPtr> JobSecrets::Get(const std::string& namespace_name,
                                                       const std::string& name) {
  const std::string key = Key(namespace_name, name);
  const absl::Time now = clock_();
  {
    StdMutexLock lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && now - it->second.read_at < refresh_) return it->second.object;
  }
  auto ref = kube::Resource("secrets", namespace_name, name);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<nlohmann::json> object = client_.Get(*ref);
  if (absl::IsNotFound(object.status())) {
    StdMutexLock lock(mu_);
    entries_.erase(key);  // absence is not remembered: the job's next reconcile creates it
    return ObjectPtr();
  }
  if (!object.ok()) return object.status();
  auto shared = std::make_shared<const nlohmann::json>(std::move(*object));
  StdMutexLock lock(mu_);
  entries_[key] = Entry{shared, now};
  return shared;
}

void JobSecrets::Written(const nlohmann::json& secret) {
  if (!secret.is_object() || !secret.contains("metadata") || !secret["metadata"].is_object()) {
    return;
  }
  const nlohmann::json& meta = secret["metadata"];
  const std::string key = Key(meta.value("namespace", ""), meta.value("name", ""));
  auto shared = std::make_shared<const nlohmann::json>(secret);
  StdMutexLock lock(mu_);
  entries_[key] = Entry{std::move(shared), clock_()};
}

void JobSecrets::Forget(const std::string& namespace_name, const std::string& name) {
  StdMutexLock lock(mu_);
  entries_.erase(Key(namespace_name, name));
}

size_t JobSecrets::Size() const {
  StdMutexLock lock(mu_);
  return entries_.size();
}

}  // namespace tj::op
