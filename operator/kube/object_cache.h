// The informer's store: the latest known state of every object it lists and watches, keyed like
// client-go's MetaNamespaceKeyFunc. Thread-safe; objects are immutable shared_ptrs, so a reader
// copies pointers out under a short lock and never blocks the informer for long.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "nlohmann/json.hpp"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// "namespace/name" for namespaced objects, "name" for cluster-scoped ones (client-go's
// MetaNamespaceKeyFunc). Empty when the object has no metadata.name.
std::string ObjectKey(const nlohmann::json& object);

// metadata.resourceVersion, or "" when absent.
std::string ObjectResourceVersion(const nlohmann::json& object);

// The values an object is filed under in one index (client-go's IndexFunc), e.g. its job's
// "namespace/name" from a label. No values: not in that index.
using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json& object)>;
using Indexers = std::map<std::string, IndexFunc>;

class ObjectCache {
 public:
  // Indexes are kept up to date by every write, so a lookup costs what it returns, not a scan of
  // every object (a controller's per-job queries over thousands of pods).
  explicit ObjectCache(Indexers indexers = {}) : indexers_(std::move(indexers)) {}

  ObjectPtr Get(const std::string& key) const;  // null when absent
  std::vector<ObjectPtr> List() const;
  // Objects in `namespace_name` ("" = all) whose metadata.labels contain every pair in `labels`.
  // A scan of every object: prefer an index.
  std::vector<ObjectPtr> ListByLabels(const std::string& namespace_name,
                                      const std::map<std::string, std::string>& labels) const;
  // Objects filed under `value` in the index `index` (none for an unknown index), in key order.
  std::vector<ObjectPtr> ByIndex(const std::string& index, const std::string& value) const;
  std::size_t Size() const;

  // Writers: the informer, or a test that fills a cache by hand (a controller test without an
  // API server). Each returns the object previously stored under the key (null if none).
  ObjectPtr Upsert(ObjectPtr object);
  ObjectPtr Erase(const std::string& key);
  // Swaps in a whole new content (a relist) and returns the previous one.
  std::unordered_map<std::string, ObjectPtr> Replace(
      std::unordered_map<std::string, ObjectPtr> all);

 private:
  // Files `object` under `key` in every index (and takes `old`, the previous object, out).
  void Reindex(const std::string& key, const ObjectPtr& old, const ObjectPtr& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Indexers indexers_;
  mutable StdMutex mu_;
  std::unordered_map<std::string, ObjectPtr> objects_ ABSL_GUARDED_BY(mu_);
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj::kube
