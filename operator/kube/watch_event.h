// One event of a watch stream ({"type": ..., "object": ...}) and the options of a watch call.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/kube/cancellation.h"

namespace tj::kube {

struct WatchEvent {
  std::string type;       // ADDED, MODIFIED, DELETED, BOOKMARK (ERROR is returned as a status)
  nlohmann::json object;  // the whole object, unknown fields kept
};

struct WatchOptions {
  bool allow_watch_bookmarks = false;
  int timeout_seconds = 0;  // server-side timeoutSeconds; 0 = server default
  std::string label_selector;
  std::string field_selector;
  // One event larger than this ends the watch with ResourceExhausted (a runaway or hostile stream
  // must not eat memory). Kubernetes objects are at most ~1.5 MiB in etcd; 16 MiB leaves room.
  std::size_t max_event_bytes = 16u << 20;
  absl::Duration read_idle_timeout = absl::Minutes(5);
  std::shared_ptr<Cancellation> cancel;  // optional
};

// Return false to stop watching (Watch then returns OK).
using WatchHandler = std::function<bool(const WatchEvent& event)>;

}  // namespace tj::kube
