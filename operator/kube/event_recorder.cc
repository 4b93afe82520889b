#include "operator/kube/event_recorder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "operator/kube/resource.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

std::string Field(const nlohmann::json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

std::string Timestamp(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// client-go's getEventKey: everything that makes two events "the same".
std::string AggregationKey(const nlohmann::json& involved, const std::string& type,
                           const std::string& reason, const std::string& message) {
  std::string key;
  for (const char* f : {"apiVersion", "kind", "namespace", "name", "uid", "fieldPath"}) {
    absl::StrAppend(&key, Field(involved, f), "\x1f");
  }
  absl::StrAppend(&key, type, "\x1f", reason, "\x1f", message);
  return key;
}

}  // namespace

std::string_view EventTypeName(EventType type) {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

EventRecorder::EventRecorder(KubeClient& client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)) {
  worker_ = std::thread([this] { Run(); });
}

EventRecorder::~EventRecorder() { Shutdown(absl::Seconds(5)); }

bool EventRecorder::Record(const nlohmann::json& object, EventType type, std::string_view reason,
                           std::string_view message) {
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& meta =
      object.contains("metadata") && object["metadata"].is_object() ? object["metadata"] : empty;
  Pending event;
  event.involved = {
      {"kind", Field(object, "kind")}, {"apiVersion", Field(object, "apiVersion")},
      {"name", Field(meta, "name")},   {"namespace", Field(meta, "namespace")},
      {"uid", Field(meta, "uid")},     {"resourceVersion", Field(meta, "resourceVersion")}};
  event.type = std::string(EventTypeName(type));
  event.reason = std::string(reason);
  event.message = std::string(message);
  event.at = options_.clock();
  StdMutexLock lock(mu_);
  if (stopping_ || queue_.size() >= options_.queue_capacity ||
      event.involved["kind"].get_ref<const std::string&>().empty() ||
      event.involved["name"].get_ref<const std::string&>().empty()) {
    ++stats_.dropped;
    return false;
  }
  queue_.push_back(std::move(event));
  ++stats_.recorded;
  wake_.notify_one();
  return true;
}

bool EventRecorder::Flush(absl::Duration timeout) {
  StdMutexLock lock(mu_);
  return idle_.wait_for(lock.native(), absl::ToChronoNanoseconds(timeout),
                        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !busy_; });
}

void EventRecorder::Shutdown(absl::Duration drain_timeout) {
  {
    StdMutexLock lock(mu_);
    if (!worker_.joinable()) return;
    stopping_ = true;
    wake_.notify_one();
  }
  if (!Flush(drain_timeout)) {
    StdMutexLock lock(mu_);
    drop_all_ = true;
    stats_.dropped += queue_.size();
    queue_.clear();
  }
  worker_.join();
}

EventRecorderStats EventRecorder::stats() const {
  StdMutexLock lock(mu_);
  return stats_;
}

void EventRecorder::Run() {
  StdMutexLock lock(mu_);
  while (true) {
    wake_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !queue_.empty() || stopping_; });
    if (queue_.empty() || drop_all_) break;  // stopping, and nothing (more) to send
    Pending event = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Send(event);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  busy_ = false;
  idle_.notify_all();
}

nlohmann::json EventRecorder::NewEvent(const Pending& event, const std::string& name,
                                       const std::string& namespace_name) const {
  nlohmann::json involved = event.involved;
  for (const char* f : {"namespace", "uid", "resourceVersion", "apiVersion"}) {
    if (involved[f].get_ref<const std::string&>().empty()) involved.erase(f);
  }
  nlohmann::json source = {{"component", options_.component}};
  if (!options_.instance.empty()) source["host"] = options_.instance;
  nlohmann::json out = {{"apiVersion", "v1"},
                        {"kind", "Event"},
                        {"metadata", {{"name", name}, {"namespace", namespace_name}}},
                        {"involvedObject", std::move(involved)},
                        {"reason", event.reason},
                        {"message", event.message},
                        {"type", event.type},
                        {"source", std::move(source)},
                        {"firstTimestamp", Timestamp(event.at)},
                        {"lastTimestamp", Timestamp(event.at)},
                        {"count", 1},
                        {"reportingComponent", options_.component},
                        {"reportingInstance", options_.instance}};
  return out;
}

void EventRecorder::Remember(const std::string& key, Aggregate aggregate) {
  auto it = aggregates_.find(key);
  if (it != aggregates_.end()) {
    lru_.erase(it->second.lru);
    aggregates_.erase(it);
  }
  lru_.push_front(key);
  aggregate.lru = lru_.begin();
  aggregates_.emplace(key, std::move(aggregate));
  while (aggregates_.size() > options_.aggregation_cache_size) {
    aggregates_.erase(lru_.back());
    lru_.pop_back();
  }
}

void EventRecorder::Send(const Pending& event) {
  const std::string key = AggregationKey(event.involved, event.type, event.reason, event.message);
  auto it = aggregates_.find(key);
  if (it != aggregates_.end()) {
    Aggregate seen = it->second;
    const std::int64_t count = seen.count + 1;
    auto patched = client_.MergePatch(
        *Resource("events", seen.namespace_name, seen.name),
        nlohmann::json{{"count", count}, {"lastTimestamp", Timestamp(event.at)}});
    if (patched.ok()) {
      seen.count = count;
      Remember(key, seen);
      StdMutexLock lock(mu_);
      ++stats_.patched;
      return;
    }
    if (patched.status().code() != absl::StatusCode::kNotFound) {
      StdMutexLock lock(mu_);
      ++stats_.failed;
      return;
    }
    // The Event expired (the API server keeps them for an hour) or was deleted: start a new one.
  }
  std::string namespace_name = event.involved["namespace"].get<std::string>();
  if (namespace_name.empty()) namespace_name = "default";  // cluster-scoped objects
  std::uint64_t sequence;
  {
    StdMutexLock lock(mu_);
    sequence = ++sequence_;
  }
  // client-go names events "<object>.<unix nanos in hex>"; the sequence keeps names unique even
  // when two events share a clock reading.
  const std::string name = absl::StrFormat("%s.%x%04x", event.involved["name"].get<std::string>(),
                                           absl::ToUnixNanos(event.at), sequence & 0xffff);
  auto created =
      client_.Create(*Resource("events", namespace_name), NewEvent(event, name, namespace_name));
  StdMutexLock lock(mu_);
  if (!created.ok()) {
    ++stats_.failed;
    return;
  }
  ++stats_.created;
  Remember(key, Aggregate{name, namespace_name, 1, {}});
}

}  // namespace tj::kube
