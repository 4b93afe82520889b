#include "operator/kube/reflector.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "operator/kube/api_error.h"
#include "spdlog/spdlog.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

std::string MetadataString(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  auto it = metadata->find(field);
  return it != metadata->end() && it->is_string() ? it->get<std::string>() : "";
}

// List items come without apiVersion and kind (only the list has them, as "ConfigMapList");
// watch events carry them. Filling them in makes both paths deliver the same shape.
void FillTypeMeta(const nlohmann::json& list, nlohmann::json& item) {
  if (!item.is_object()) return;
  if (!item.contains("apiVersion") && list.contains("apiVersion")) {
    item["apiVersion"] = list["apiVersion"];
  }
  if (!item.contains("kind") && list.contains("kind") && list["kind"].is_string()) {
    std::string kind = list["kind"].get<std::string>();
    if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) {
      item["kind"] = kind.substr(0, kind.size() - 4);
    }
  }
}

}  // namespace

Reflector::Reflector(std::shared_ptr<KubeClient> client, ReflectorOptions options,
                     ReflectorStore* store)
    : client_(std::move(client)),
      options_(std::move(options)),
      store_(store),
      seed_(std::random_device{}()) {}

bool Reflector::stopped() const {
  StdMutexLock lock(mu_);
  return stopped_;
}

void Reflector::Stop() {
  {
    StdMutexLock lock(mu_);
    stopped_ = true;
  }
  stop_cv_.notify_all();
  cancel_->Cancel();
}

bool Reflector::WaitUnlessStopped(absl::Duration delay) {
  StdMutexLock lock(mu_);
  if (delay > absl::ZeroDuration()) {
    stop_cv_.wait_for(lock.native(), absl::ToChronoNanoseconds(delay), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_; });
  }
  return !stopped_;
}

ReflectorStats Reflector::stats() const {
  StdMutexLock lock(mu_);
  return stats_;
}

void Reflector::RecordError(const absl::Status& status) {
  StdMutexLock lock(mu_);
  stats_.last_error = status.ToString();
}

int Reflector::RandomWatchTimeoutSeconds() {
  const std::int64_t low =
      std::max<std::int64_t>(1, absl::ToInt64Seconds(options_.watch_timeout_min));
  const std::int64_t high = std::max(low, absl::ToInt64Seconds(options_.watch_timeout_max));
  StdMutexLock lock(mu_);
  std::mt19937_64 rng(seed_++);
  return static_cast<int>(std::uniform_int_distribution<std::int64_t>(low, high)(rng));
}

void Reflector::Run() {
  Backoff backoff(options_.backoff, seed_);
  bool need_list = true;
  while (!stopped()) {
    if (need_list) {
      absl::Status listed = ListIntoStore();
      if (stopped()) return;
      if (!listed.ok()) {
        RecordError(listed);
        {
          StdMutexLock lock(mu_);
          ++stats_.list_failures;
        }
        const absl::Duration delay = backoff.Next();
        spdlog::warn("informer: {} (retrying in {})", std::string(listed.message()),
                     absl::FormatDuration(delay));
        if (!WaitUnlessStopped(delay)) return;
        continue;
      }
      need_list = false;
    }

    const absl::Time started = absl::Now();
    absl::Status watched = WatchIntoStore();
    if (stopped()) return;
    const bool healthy = absl::Now() - started >= options_.healthy_watch;
    if (healthy) backoff.Reset();
    if (IsGone(watched)) {
      // The resourceVersion we hold is older than what the server (or etcd, after compaction)
      // still has: only a new list can tell what changed meanwhile, deletions included.
      need_list = true;
      RecordError(watched);
      StdMutexLock lock(mu_);
      ++stats_.gone;
      stats_.resource_version.clear();
    } else if (!watched.ok()) {
      RecordError(watched);
    }
    absl::Duration delay = absl::ZeroDuration();
    if (!healthy || !(watched.ok() || IsGone(watched))) delay = backoff.Next();
    if (!watched.ok()) {
      spdlog::info("informer: {}; {} in {}", std::string(watched.message()),
                   need_list ? "relisting" : "resuming the watch", absl::FormatDuration(delay));
    }
    if (!WaitUnlessStopped(delay)) return;
  }
}

absl::Status Reflector::ListIntoStore() {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  std::vector<nlohmann::json> items;
  std::string resource_version;
  // Pages are read one by one (not with ListAll) so that Stop() is honoured between pages.
  for (;;) {
    if (stopped()) return absl::CancelledError("list: stopped");
    absl::StatusOr<nlohmann::json> page = client_->List(options_.ref, list_options);
    if (!page.ok()) return page.status();
    if (page->contains("items") && (*page)["items"].is_array()) {
      for (nlohmann::json& item : (*page)["items"]) {
        FillTypeMeta(*page, item);
        items.push_back(std::move(item));
      }
    }
    resource_version = MetadataString(*page, "resourceVersion");
    const std::string next = MetadataString(*page, "continue");
    if (next.empty()) break;
    list_options.continue_token = next;
  }
  if (resource_version.empty()) {
    return absl::DataLossError(absl::StrCat("list ", options_.ref.Describe(),
                                            ": the list has no metadata.resourceVersion"));
  }
  {
    // Recorded before the store is replaced: replacing it marks the informer synced (on the
    // dispatch thread), and a caller woken by that reads these stats.
    StdMutexLock lock(mu_);
    if (stats_.lists > 0) ++stats_.relists;
    ++stats_.lists;
    stats_.resource_version = resource_version;
  }
  store_->Replace(std::move(items));
  return absl::OkStatus();
}

absl::Status Reflector::WatchIntoStore() {
  WatchOptions watch_options;
  watch_options.allow_watch_bookmarks = options_.allow_watch_bookmarks;
  watch_options.timeout_seconds = RandomWatchTimeoutSeconds();
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.read_idle_timeout = options_.read_idle_timeout > absl::ZeroDuration()
                                        ? options_.read_idle_timeout
                                        : absl::Seconds(watch_options.timeout_seconds + 30);
  watch_options.cancel = cancel_;
  std::string from;
  {
    StdMutexLock lock(mu_);
    ++stats_.watches_started;
    from = stats_.resource_version;
  }
  return client_->Watch(options_.ref, from, watch_options, [this](const WatchEvent& event) {
    const std::string rv = MetadataString(event.object, "resourceVersion");
    if (event.type == "BOOKMARK") {
      StdMutexLock lock(mu_);
      ++stats_.bookmarks;
      if (!rv.empty()) stats_.resource_version = rv;
      return !stopped_;
    }
    if (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED") {
      store_->Apply(event.type, event.object);
      StdMutexLock lock(mu_);
      ++stats_.watch_events;
      if (!rv.empty()) stats_.resource_version = rv;
      return !stopped_;
    }
    spdlog::warn("informer: watch {}: ignoring an event of unknown type \"{}\"",
                 options_.ref.Describe(), event.type);
    return !stopped();
  });
}

}  // namespace tj::kube
