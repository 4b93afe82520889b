// Records core/v1 Events about objects (what `kubectl describe` shows), like client-go's
// record.EventRecorder: repeats of the same event (same object, type, reason and message) become
// one Event whose count and lastTimestamp are patched, not a new Event each time. Recording never
// blocks the caller: events go to a bounded queue served by one background thread, and when the
// queue is full (the API server is slow or down) new events are dropped and counted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/kube/credential_provider.h"  // Clock
#include "operator/kube/kube_client.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

enum class EventType { kNormal, kWarning };

struct EventRecorderOptions {
  std::string component = "trainingjob-operator";  // source.component and reportingComponent
  std::string instance;                            // source.host and reportingInstance
  std::size_t queue_capacity = 1024;               // events waiting to be sent; more are dropped
  std::size_t aggregation_cache_size = 4096;       // distinct events remembered (LRU), as client-go
  Clock clock = RealClock();
};

struct EventRecorderStats {
  std::uint64_t recorded = 0;  // accepted by Record
  std::uint64_t created = 0;   // new Event objects
  std::uint64_t patched = 0;   // repeats folded into an existing Event
  std::uint64_t dropped = 0;   // refused because the queue was full
  std::uint64_t failed = 0;    // the API server refused or could not be reached
};

class EventRecorder {
 public:
  // `client` must outlive the recorder.
  explicit EventRecorder(KubeClient& client, EventRecorderOptions options = {});
  // Shutdown(5 s).
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Queues an event about `object` (a whole object as read from the API: apiVersion, kind and
  // metadata name/namespace/uid/resourceVersion are used). Returns false when the event was dropped
  // (queue full, object without kind or name, or shut down). Never waits for the API server.
  bool Record(const nlohmann::json& object, EventType type, std::string_view reason,
              std::string_view message);
  bool Normal(const nlohmann::json& object, std::string_view reason, std::string_view message) {
    return Record(object, EventType::kNormal, reason, message);
  }
  bool Warning(const nlohmann::json& object, std::string_view reason, std::string_view message) {
    return Record(object, EventType::kWarning, reason, message);
  }

  // Waits until everything queued so far has been sent (or has failed); false on timeout.
  bool Flush(absl::Duration timeout);
  // Stops accepting events, sends what is queued for up to `drain_timeout`, drops the rest, and
  // joins the thread (which may finish one request in flight first).
  void Shutdown(absl::Duration drain_timeout);

  EventRecorderStats stats() const;

 private:
  struct Pending {
    nlohmann::json involved;  // involvedObject
    std::string type;
    std::string reason;
    std::string message;
    absl::Time at;
  };
  struct Aggregate {
    std::string name;  // the Event object's name
    std::string namespace_name;
    std::int64_t count = 0;
    std::list<std::string>::iterator lru;
  };

  void Run();
  void Send(const Pending& event);
  nlohmann::json NewEvent(const Pending& event, const std::string& name,
                          const std::string& namespace_name) const;
  void Remember(const std::string& key, Aggregate aggregate);

  KubeClient& client_;
  const EventRecorderOptions options_;

  mutable StdMutex mu_;
  std::condition_variable wake_;  // the worker: an event queued, or shutting down
  std::condition_variable idle_;  // Flush: the queue drained
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // the worker is sending one event
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool drop_all_ ABSL_GUARDED_BY(mu_) = false;  // the drain timed out: abandon the queue
  EventRecorderStats stats_ ABSL_GUARDED_BY(mu_);
  std::uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;  // makes names unique even within one clock tick

  // Touched by the worker thread only.
  std::unordered_map<std::string, Aggregate> aggregates_;
  std::list<std::string> lru_;  // most recent first

  std::thread worker_;
};

std::string_view EventTypeName(EventType type);  // "Normal", "Warning"

}  // namespace tj::kube
