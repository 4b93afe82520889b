// The list-and-watch loop under an informer, after client-go's Reflector: list (paged), then
// watch from the list's resourceVersion with bookmarks on, resuming from the last resourceVersion
// seen whenever the watch ends, and relisting when the server says that version is gone (410).
// Nothing ends the loop but Stop(): failed lists and watches are retried with jittered backoff.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/kube/backoff.h"
#include "operator/kube/cancellation.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/resource.h"
#include "operator/kube/watch_event.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

struct ReflectorOptions {
  ResourceRef ref;  // resource + namespace ("" = all namespaces); name empty
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;
  // Each watch asks the server to end it after a random time in [min, max] (client-go: 5-10 min),
  // so that watches of many clients do not all reconnect at once.
  absl::Duration watch_timeout_min = absl::Minutes(5);
  absl::Duration watch_timeout_max = absl::Minutes(10);
  // No byte for this long ends a watch (then resumed). Zero: the watch's timeout plus 30 s, so a
  // quiet but healthy watch is never cut and a dead connection is noticed within ~10.5 min.
  absl::Duration read_idle_timeout = absl::ZeroDuration();
  bool allow_watch_bookmarks = true;
  BackoffOptions backoff;  // between failed lists and failed or short watches
  // A watch that lived this long was healthy: the backoff starts again from its initial delay,
  // and a clean end (server timeout) is resumed at once.
  absl::Duration healthy_watch = absl::Seconds(10);
};

// Where the reflector delivers what it learns. Called from the reflector's thread only.
class ReflectorStore {
 public:
  virtual ~ReflectorStore() = default;
  // A complete list (the first one or a relist): the store's content is now exactly `items`.
  virtual void Replace(std::vector<nlohmann::json> items) = 0;
  // One ADDED, MODIFIED or DELETED event (bookmarks only move the resourceVersion).
  virtual void Apply(const std::string& type, nlohmann::json object) = 0;
};

// Counters for metrics and tests; a consistent snapshot.
struct ReflectorStats {
  std::int64_t lists = 0;    // complete lists (the first one included)
  std::int64_t relists = 0;  // complete lists after the first
  std::int64_t list_failures = 0;
  std::int64_t watches_started = 0;
  std::int64_t watch_events = 0;  // ADDED, MODIFIED, DELETED
  std::int64_t bookmarks = 0;
  std::int64_t gone = 0;  // 410s that forced a relist
  std::string last_error;
  std::string resource_version;  // where the next watch starts
};

class Reflector {
 public:
  Reflector(std::shared_ptr<KubeClient> client, ReflectorOptions options, ReflectorStore* store);

  // Blocks until Stop(). Call from one thread at a time.
  void Run();
  // Ends Run promptly: aborts a watch in progress and wakes a backoff wait. Idempotent.
  void Stop();

  ReflectorStats stats() const;

 private:
  absl::Status ListIntoStore();
  absl::Status WatchIntoStore();
  // Waits `delay` unless stopped first; false when stopped.
  bool WaitUnlessStopped(absl::Duration delay);
  bool stopped() const;
  void RecordError(const absl::Status& status);
  int RandomWatchTimeoutSeconds();

  std::shared_ptr<KubeClient> client_;
  const ReflectorOptions options_;
  ReflectorStore* const store_;
  const std::shared_ptr<Cancellation> cancel_ = std::make_shared<Cancellation>();

  mutable StdMutex mu_;
  std::condition_variable stop_cv_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  ReflectorStats stats_ ABSL_GUARDED_BY(mu_);
  std::uint64_t seed_;
};

}  // namespace tj::kube
