#include "operator/kube/informer.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "absl/time/clock.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

ReflectorOptions ToReflectorOptions(const InformerOptions& options) {
  ReflectorOptions out;
  out.ref = options.ref;
  out.label_selector = options.label_selector;
  out.field_selector = options.field_selector;
  out.page_size = options.page_size;
  out.watch_timeout_min = options.watch_timeout_min;
  out.watch_timeout_max = options.watch_timeout_max;
  out.read_idle_timeout = options.read_idle_timeout;
  out.allow_watch_bookmarks = options.allow_watch_bookmarks;
  out.backoff = options.backoff;
  out.healthy_watch = options.healthy_watch;
  return out;
}

}  // namespace

Informer::Informer(std::shared_ptr<KubeClient> client, InformerOptions options,
                   InformerHandlers handlers)
    : options_(std::move(options)),
      handlers_(std::move(handlers)),
      cache_(options_.indexers),
      reflector_(std::move(client), ToReflectorOptions(options_), this) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  StdMutexLock starting(stop_mu_);  // a concurrent Stop() joins what we start
  {
    StdMutexLock lock(mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  dispatcher_thread_ = std::thread([this] { DispatchLoop(); });
  reflector_thread_ = std::thread([this] { reflector_.Run(); });
}

void Informer::Stop() {
  // Serialises Stop() with Start() and with another Stop() (the destructor and an owner thread).
  StdMutexLock stopping(stop_mu_);
  {
    StdMutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  reflector_.Stop();
  if (reflector_thread_.joinable()) reflector_thread_.join();
  if (dispatcher_thread_.joinable()) dispatcher_thread_.join();
}

bool Informer::WaitForSync(absl::Duration timeout) {
  StdMutexLock lock(mu_);
  cv_.wait_for(lock.native(), absl::ToChronoNanoseconds(timeout), [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return synced_ || stopping_; });
  return synced_;
}

bool Informer::HasSynced() const {
  StdMutexLock lock(mu_);
  return synced_;
}

std::int64_t Informer::notifications_dispatched() const {
  StdMutexLock lock(mu_);
  return dispatched_;
}

void Informer::Replace(std::vector<nlohmann::json> items) {
  std::unordered_map<std::string, ObjectPtr> fresh;
  std::vector<std::string> order;  // list order, for the handlers
  fresh.reserve(items.size());
  order.reserve(items.size());
  for (nlohmann::json& item : items) {
    if (options_.transform) options_.transform(item);
    if (options_.keep && !options_.keep(item)) continue;
    std::string key = ObjectKey(item);
    if (key.empty()) continue;
    auto [it, inserted] =
        fresh.insert_or_assign(key, std::make_shared<const nlohmann::json>(std::move(item)));
    if (inserted) order.push_back(std::move(key));
  }
  {
    StdMutexLock lock(mu_);
    std::unordered_map<std::string, ObjectPtr> old = cache_.Replace(fresh);
    for (const std::string& key : order) {
      const ObjectPtr& now = fresh[key];
      auto was = old.find(key);
      if (was == old.end()) {
        queue_.push_back({Notification::Kind::kAdd, nullptr, now});
      } else if (ObjectResourceVersion(*was->second) != ObjectResourceVersion(*now)) {
        queue_.push_back({Notification::Kind::kUpdate, was->second, now});
      }
    }
    // Deletions missed while the watch was down: in the cache, not in the list.
    std::vector<std::pair<std::string, ObjectPtr>> gone;
    for (auto& [key, object] : old) {
      if (fresh.find(key) == fresh.end()) gone.emplace_back(key, object);
    }
    std::sort(gone.begin(), gone.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [key, object] : gone) {
      queue_.push_back({Notification::Kind::kDelete, std::move(object), nullptr});
    }
    if (!listed_) {
      listed_ = true;
      queue_.push_back({Notification::Kind::kSynced, nullptr, nullptr});
    }
  }
  cv_.notify_all();
}

void Informer::Apply(const std::string& type, nlohmann::json object) {
  if (options_.transform) options_.transform(object);
  const bool kept = !options_.keep || options_.keep(object);
  auto now = std::make_shared<const nlohmann::json>(std::move(object));
  const std::string key = ObjectKey(*now);
  if (key.empty()) return;
  {
    StdMutexLock lock(mu_);
    if (type == "DELETED" || !kept) {
      // An object never kept was never reported: its deletion is not either.
      ObjectPtr old = cache_.Erase(key);
      if (kept || old != nullptr) {
        queue_.push_back({Notification::Kind::kDelete, kept ? std::move(now) : std::move(old),
                          nullptr});
      }
    } else if (ObjectPtr old = cache_.Upsert(now)) {
      queue_.push_back({Notification::Kind::kUpdate, std::move(old), std::move(now)});
    } else {
      queue_.push_back({Notification::Kind::kAdd, nullptr, std::move(now)});
    }
  }
  cv_.notify_all();
}

void Informer::DispatchLoop() {
  const bool resync = options_.resync_period > absl::ZeroDuration();
  absl::Time next_resync = absl::InfiniteFuture();
  StdMutexLock lock(mu_);
  for (;;) {
    const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
    if (next_resync == absl::InfiniteFuture()) {
      cv_.wait(lock.native(), ready);
    } else {
      cv_.wait_for(lock.native(), absl::ToChronoNanoseconds(next_resync - absl::Now()), ready);
    }
    if (stopping_) return;
    if (!queue_.empty()) {
      Notification notification = std::move(queue_.front());
      queue_.pop_front();
      if (notification.kind == Notification::Kind::kSynced) {
        synced_ = true;
        if (resync) next_resync = absl::Now() + options_.resync_period;
        cv_.notify_all();
        continue;
      }
      ++dispatched_;
      lock.unlock();
      Dispatch(notification);
      lock.lock();
      continue;
    }
    if (absl::Now() < next_resync) continue;
    // Resync with an empty queue: the cache is then exactly what the handlers have been told, so
    // on_update(obj, obj) never overtakes a pending change of the same object.
    next_resync = absl::Now() + options_.resync_period;
    std::vector<ObjectPtr> all = cache_.List();
    dispatched_ += static_cast<std::int64_t>(all.size());
    lock.unlock();
    for (const ObjectPtr& object : all) {
      Dispatch({Notification::Kind::kUpdate, object, object});
    }
    lock.lock();
  }
}

void Informer::Dispatch(const Notification& notification) {
  switch (notification.kind) {
    case Notification::Kind::kAdd:
      if (handlers_.on_add) handlers_.on_add(notification.new_object);
      break;
    case Notification::Kind::kUpdate:
      if (handlers_.on_update)
        handlers_.on_update(notification.old_object, notification.new_object);
      break;
    case Notification::Kind::kDelete:
      if (handlers_.on_delete) handlers_.on_delete(notification.old_object);
      break;
    case Notification::Kind::kSynced:
      break;
  }
}

}  // namespace tj::kube
