// An informer after client-go's SharedIndexInformer (one consumer): a Reflector lists and watches
// one resource into an ObjectCache, and a dispatcher thread calls the add/update/delete handlers
// in event order. Relists (after 410 Gone) are diffed against the cache, so deletions missed
// while the watch was down still reach on_delete.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "operator/kube/backoff.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/object_cache.h"
#include "operator/kube/reflector.h"
#include "operator/kube/resource.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

// Each optional; called from the informer's dispatcher thread, one at a time, in event order.
// The cache may already be ahead of the event being handled (as in client-go): read it for the
// latest state, use the arguments for what changed.
struct InformerHandlers {
  std::function<void(const ObjectPtr& object)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& new_object)> on_update;
  // The object's final state from a DELETED event, or its last cached state when the deletion
  // was detected by a relist.
  std::function<void(const ObjectPtr& last_known)> on_delete;
};

struct InformerOptions {
  ResourceRef ref;  // resource + namespace ("" = all namespaces); name empty
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;
  // > 0: on_update(obj, obj) for every cached object each period (a level-triggered safety net).
  absl::Duration resync_period = absl::ZeroDuration();
  // Server-side watch timeout, random in [min, max] per watch (client-go: 5-10 min).
  absl::Duration watch_timeout_min = absl::Minutes(5);
  absl::Duration watch_timeout_max = absl::Minutes(10);
  // No byte for this long ends a watch, which is then resumed. Zero: the watch's timeout + 30 s.
  absl::Duration read_idle_timeout = absl::ZeroDuration();
  bool allow_watch_bookmarks = true;
  BackoffOptions backoff;                            // 800 ms doubling to 30 s, jittered
  absl::Duration healthy_watch = absl::Seconds(10);  // a watch this long resets the backoff
  // Optional: applied to every object before it is cached and handed to handlers (client-go's
  // TransformFunc), e.g. to drop metadata.managedFields, which no controller reads and which is
  // often most of a small object's bytes.
  std::function<void(nlohmann::json& object)> transform;
  // Optional, after transform: objects it refuses are neither cached nor handed to handlers (one
  // that stops being kept is reported deleted). For what a label selector cannot say, e.g. "only
  // objects a TrainingJob controls": anyone may put a label on their objects.
  std::function<bool(const nlohmann::json& object)> keep;
  // Indexes of the cache (ObjectCache::ByIndex), e.g. pods by the job they belong to.
  Indexers indexers;
};

using InformerStats = ReflectorStats;

class Informer : private ReflectorStore {
 public:
  Informer(std::shared_ptr<KubeClient> client, InformerOptions options, InformerHandlers handlers);
  ~Informer() override;  // Stop()

  // Starts the reflector thread (list, then watch, reconnecting forever) and the dispatcher
  // thread (handlers, resync). A second call does nothing.
  void Start();
  // Aborts the watch, wakes any backoff wait, joins both threads; notifications not yet handled
  // are dropped. Idempotent. Must not be called from a handler.
  void Stop();
  // True once the first full list is in the cache and its handlers ran; false on timeout or Stop.
  bool WaitForSync(absl::Duration timeout);
  bool HasSynced() const;
  const ObjectCache& cache() const { return cache_; }

  // lists/relists, watches started, events, bookmarks, 410s, last error, resourceVersion.
  InformerStats stats() const { return reflector_.stats(); }
  // Handler calls made so far (adds + updates + deletes, resyncs included).
  std::int64_t notifications_dispatched() const;

 private:
  struct Notification {
    enum class Kind { kAdd, kUpdate, kDelete, kSynced } kind = Kind::kAdd;
    ObjectPtr old_object;
    ObjectPtr new_object;
  };

  // ReflectorStore, on the reflector thread: update the cache and queue the handler calls under
  // one lock, so the queue always describes how the cache got to where it is.
  void Replace(std::vector<nlohmann::json> items) override;
  void Apply(const std::string& type, nlohmann::json object) override;

  void DispatchLoop();
  void Dispatch(const Notification& notification);

  const InformerOptions options_;
  const InformerHandlers handlers_;
  ObjectCache cache_;
  Reflector reflector_;

  mutable StdMutex mu_;
  std::condition_variable cv_;  // queue, stop, sync
  std::deque<Notification> queue_ ABSL_GUARDED_BY(mu_);
  bool listed_ ABSL_GUARDED_BY(mu_) = false;  // the first list reached the cache
  bool synced_ ABSL_GUARDED_BY(mu_) = false;  // ... and its handlers ran
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::int64_t dispatched_ ABSL_GUARDED_BY(mu_) = 0;
  StdMutex stop_mu_;  // held by Start() while it starts the threads, Stop() while it joins
  std::thread reflector_thread_ ABSL_GUARDED_BY(stop_mu_);
  std::thread dispatcher_thread_ ABSL_GUARDED_BY(stop_mu_);
};

}  // namespace tj::kube
