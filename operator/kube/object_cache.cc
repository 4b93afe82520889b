#include "operator/kube/object_cache.h"

#include <utility>
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

const nlohmann::json* Metadata(const nlohmann::json& object) {
  if (!object.is_object()) return nullptr;
  auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) return nullptr;
  return &*it;
}

std::string StringField(const nlohmann::json* metadata, const char* field) {
  if (metadata == nullptr) return "";
  auto it = metadata->find(field);
  if (it == metadata->end() || !it->is_string()) return "";
  return it->get<std::string>();
}

bool HasLabels(const nlohmann::json& object, const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return true;
  const nlohmann::json* metadata = Metadata(object);
  if (metadata == nullptr) return false;
  auto have = metadata->find("labels");
  if (have == metadata->end() || !have->is_object()) return false;
  for (const auto& [key, value] : labels) {
    auto it = have->find(key);
    if (it == have->end() || !it->is_string() || it->get<std::string>() != value) return false;
  }
  return true;
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  const nlohmann::json* metadata = Metadata(object);
  const std::string name = StringField(metadata, "name");
  if (name.empty()) return "";
  const std::string ns = StringField(metadata, "namespace");
  return ns.empty() ? name : ns + "/" + name;
}

std::string ObjectResourceVersion(const nlohmann::json& object) {
  return StringField(Metadata(object), "resourceVersion");
}

ObjectPtr ObjectCache::Get(const std::string& key) const {
  StdMutexLock lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> ObjectCache::List() const {
  StdMutexLock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(objects_.size());
  for (const auto& [key, object] : objects_) out.push_back(object);
  return out;
}

std::vector<ObjectPtr> ObjectCache::ListByLabels(
    const std::string& namespace_name, const std::map<std::string, std::string>& labels) const {
  // Copy the pointers out first: label matching walks JSON, which must not hold the lock the
  // informer needs.
  std::vector<ObjectPtr> all = List();
  std::vector<ObjectPtr> out;
  for (ObjectPtr& object : all) {
    if (!namespace_name.empty() && StringField(Metadata(*object), "namespace") != namespace_name) {
      continue;
    }
    if (HasLabels(*object, labels)) out.push_back(std::move(object));
  }
  return out;
}

std::vector<ObjectPtr> ObjectCache::ByIndex(const std::string& index,
                                            const std::string& value) const {
  StdMutexLock lock(mu_);
  std::vector<ObjectPtr> out;
  auto by_value = index_.find(index);
  if (by_value == index_.end()) return out;
  auto keys = by_value->second.find(value);
  if (keys == by_value->second.end()) return out;
  out.reserve(keys->second.size());
  for (const std::string& key : keys->second) {
    auto it = objects_.find(key);
    if (it != objects_.end()) out.push_back(it->second);
  }
  return out;
}

void ObjectCache::Reindex(const std::string& key, const ObjectPtr& old, const ObjectPtr& object) {
  for (const auto& [name, fn] : indexers_) {
    auto& by_value = index_[name];
    if (old != nullptr) {
      for (const std::string& value : fn(*old)) {
        auto it = by_value.find(value);
        if (it == by_value.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) by_value.erase(it);
      }
    }
    if (object != nullptr) {
      for (const std::string& value : fn(*object)) by_value[value].insert(key);
    }
  }
}

std::size_t ObjectCache::Size() const {
  StdMutexLock lock(mu_);
  return objects_.size();
}

ObjectPtr ObjectCache::Upsert(ObjectPtr object) {
  const std::string key = ObjectKey(*object);
  StdMutexLock lock(mu_);
  ObjectPtr& slot = objects_[key];
  std::swap(slot, object);
  if (!indexers_.empty()) Reindex(key, object, slot);
  return object;
}

ObjectPtr ObjectCache::Erase(const std::string& key) {
  StdMutexLock lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  objects_.erase(it);
  if (!indexers_.empty()) Reindex(key, old, nullptr);
  return old;
}

std::unordered_map<std::string, ObjectPtr> ObjectCache::Replace(
    std::unordered_map<std::string, ObjectPtr> all) {
  StdMutexLock lock(mu_);
  std::swap(objects_, all);
  if (!indexers_.empty()) {
    index_.clear();
    for (const auto& [key, object] : objects_) Reindex(key, nullptr, object);
  }
  return all;
}

}  // namespace tj::kube
