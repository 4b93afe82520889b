#include "operator/controller/controller.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "operator/controller/kueue_workload.h"
#include "operator/controller/reconcile_guard.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {
namespace {

using nlohmann::json;

// Reconcile durations from 1 ms to 10 s.
const std::vector<double> kDurationBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,  0.5,    1,     2.5,  5,     10};

// "namespace/name" of the TrainingJob that controls `object`, or "".
std::string OwnerJobKey(const json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  const json& meta = object["metadata"];
  if (!meta.contains("ownerReferences") || !meta["ownerReferences"].is_array()) return "";
  for (const json& ref : meta["ownerReferences"]) {
    if (ref.is_object() && ref.value("kind", "") == "TrainingJob" &&
        ref.value("controller", false) &&
        ref.value("apiVersion", "").starts_with("trainingjob.dev/")) {
      return absl::StrCat(meta.value("namespace", "default"), "/", ref.value("name", ""));
    }
  }
  return "";
}

std::string ReadyStatus(const kube::ObjectPtr& node) {
  if (node == nullptr || !node->contains("status")) return "";
  const json& status = (*node)["status"];
  if (!status.contains("conditions") || !status["conditions"].is_array()) return "";
  for (const json& c : status["conditions"]) {
    if (c.value("type", "") == "Ready") return c.value("status", "");
  }
  return "";
}

kube::ResourceRef RefOrDie(const char* resource, const std::string& namespace_name) {
  auto ref = kube::Resource(resource, namespace_name);
  if (!ref.ok()) {
    spdlog::critical("unknown resource {}: {}", resource, ref.status().ToString());
    std::abort();
  }
  return *ref;
}

// Cache indexes: a reconcile's "pods of this job" and a node change's "pods on this node" cost
// what they return; scanning every pod made a 500-job burst quadratic (perf: most of the
// operator's CPU was label matching).
constexpr char kByJob[] = "job";    // "<namespace>/<job-name label>"
constexpr char kByNode[] = "node";  // spec.nodeName

std::vector<std::string> JobIndexValues(const json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return {};
  const auto job = labels->find(v1alpha1::kJobNameLabel);
  if (job == labels->end() || !job->is_string()) return {};
  return {absl::StrCat(metadata->value("namespace", ""), "/", job->get<std::string>())};
}

std::vector<std::string> NodeIndexValues(const json& object) {
  const auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return {};
  const std::string node = spec->value("nodeName", "");
  if (node.empty()) return {};
  return {node};
}

// The type of the job's last True condition, "Created" if none. Reads what it finds without
// throwing: this runs on the controller's own thread, where one job's odd status (a condition's
// status of the wrong type, past a CRD without a schema) once ended the whole process.
std::string LastTrueCondition(const json& job) {
  std::string state = "Created";
  const auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return state;
  const auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return state;
  for (const json& c : *conditions) {
    if (!c.is_object()) continue;
    const auto value = c.find("status");
    const auto type = c.find("type");
    if (value != c.end() && value->is_string() && *value == "True" && type != c.end() &&
        type->is_string()) {
      state = type->get<std::string>();
    }
  }
  return state;
}

ReconcilerOptions WithWrites(ReconcilerOptions options, WriteExecutor* writes,
                             std::function<void(const std::string&, bool)> on_writes_done) {
  options.writes = writes;
  options.on_writes_done = std::move(on_writes_done);
  return options;
}

}  // namespace

// Reads from the informers' caches: no API call per reconcile.
class Controller::CacheView : public ClusterView {
 public:
  explicit CacheView(Controller& controller) : c_(controller) {}

  ObjectPtr Job(const std::string& namespace_name, const std::string& name) override {
    return c_.jobs_->cache().Get(absl::StrCat(namespace_name, "/", name));
  }
  absl::StatusOr<std::vector<ObjectPtr>> PodsOf(const std::string& namespace_name,
                                                const std::string& job_name) override {
    return c_.pods_->cache().ByIndex(kByJob, absl::StrCat(namespace_name, "/", job_name));
  }
  absl::StatusOr<std::vector<ObjectPtr>> ServicesOf(const std::string& namespace_name,
                                                    const std::string& job_name) override {
    return c_.services_->cache().ByIndex(kByJob, absl::StrCat(namespace_name, "/", job_name));
  }
  absl::StatusOr<ObjectPtr> Secret(const std::string& namespace_name,
                                   const std::string& name) override {
    return c_.secrets_.Get(namespace_name, name);
  }
  void SecretWritten(const json& secret) override { c_.secrets_.Written(secret); }
  ObjectPtr Node(const std::string& name, bool* known) override {
    const bool synced = c_.nodes_ != nullptr && c_.nodes_->HasSynced();
    if (known) *known = synced;
    return synced ? c_.nodes_->cache().Get(name) : nullptr;
  }
  std::optional<ObjectPtr> WatchedWorkload(const std::string& namespace_name,
                                           const std::string& name) override {
    if (c_.workloads_ == nullptr || !c_.workloads_->HasSynced()) return std::nullopt;
    return c_.workloads_->cache().Get(absl::StrCat(namespace_name, "/", name));
  }

 private:
  Controller& c_;
};

Controller::Controller(std::shared_ptr<kube::KubeClient> client, ControllerOptions options,
                       MetricsRegistry* metrics, EventSink& events, PreemptionNotifier& notifier)
    : client_(std::move(client)),
      options_(std::move(options)),
      metrics_(metrics),
      job_metrics_(metrics != nullptr ? std::make_unique<JobMetrics>(*metrics) : nullptr),
      events_(events),
      secrets_(*client_, options_.secret_refresh),
      view_(std::make_unique<CacheView>(*this)),
      writes_(std::make_unique<ThreadPoolWriteExecutor>(options_.write_concurrency,
                                                        options_.write_queue_capacity)),
      reconciler_(*view_, *client_, notifier, events,
                  WithWrites(options_.reconciler, writes_.get(),
                             [this](const std::string& key, bool failed) {
                               // A refused create is retried with the key's backoff.
                               if (failed) {
                                 queue_.AddRateLimited(key);
                               } else {
                                 queue_.Add(key);
                               }
                             })),
      queue_(kube::WorkQueueOptions{.name = "trainingjobs"}) {
  // A read that changes a job's reported state or checkpoint failure reconciles it now: its
  // condition and Event need not wait for the next progress_interval.
  if (options_.reconciler.progress != nullptr) {
    options_.reconciler.progress->OnChange([this](const std::string& key) { queue_.Add(key); });
  }
  const std::string owned = v1alpha1::kJobNameLabel;  // "has the label" selector
  auto make_of = [&](kube::ResourceRef ref, std::string selector, bool owned,
                     kube::InformerHandlers handlers, absl::Duration resync,
                     kube::Indexers indexers = {}) {
    kube::InformerOptions o;
    o.ref = std::move(ref);
    // Owned objects: only those a TrainingJob controls are cached. Anyone who may create pods can
    // put the label on one; without the ownerReference it costs nothing beyond its passage
    // through the watch.
    if (owned) o.keep = [](const json& object) { return !OwnerJobKey(object).empty(); };
    o.label_selector = std::move(selector);
    o.resync_period = resync;
    o.indexers = std::move(indexers);
    o.transform = [](json& object) {
      // Nothing here reads them; at 500 jobs they were most of the operator's memory.
      if (object.contains("metadata") && object["metadata"].is_object()) {
        object["metadata"].erase("managedFields");
        if (object["metadata"].contains("annotations") &&
            object["metadata"]["annotations"].is_object()) {
          object["metadata"]["annotations"].erase(
              "kubectl.kubernetes.io/last-applied-configuration");
        }
      }
      // A pod's env holds its TF_CONFIG, which lists every replica: kept, a job's pods would cost
      // the cache O(replicas²) bytes (75 MB for one job of 1000). Nothing here reads pod env.
      if (object.contains("spec") && object["spec"].is_object()) {
        for (const char* list : {"containers", "initContainers"}) {
          auto containers = object["spec"].find(list);
          if (containers == object["spec"].end() || !containers->is_array()) continue;
          for (json& container : *containers) {
            if (container.is_object()) container.erase("env");
          }
        }
      }
    };
    return std::make_unique<kube::Informer>(client_, o, std::move(handlers));
  };
  auto make = [&](const char* resource, const std::string& ns, std::string selector,
                  kube::InformerHandlers handlers, absl::Duration resync,
                  kube::Indexers indexers = {}) {
    const bool owned = !selector.empty();
    return make_of(RefOrDie(resource, ns), std::move(selector), owned, std::move(handlers), resync,
                   std::move(indexers));
  };
  const std::string& ns = options_.namespace_name;
  jobs_ = make("trainingjobs", ns, "",
               {[this](const kube::ObjectPtr& job) {
                  reconciler_.JobObserved(*job);
                  EnqueueJob(job);
                },
                [this](const kube::ObjectPtr&, const kube::ObjectPtr& job) {
                  reconciler_.JobObserved(*job);
                  EnqueueJob(job);
                },
                [this](const kube::ObjectPtr& job) {
                  // Its Secret goes with it (garbage collector): no longer remembered.
                  if (job->contains("metadata") && (*job)["metadata"].is_object()) {
                    const json& meta = (*job)["metadata"];
                    secrets_.Forget(meta.value("namespace", ""),
                                    v1alpha1::JobTokenSecretName(meta.value("name", "")));
                  }
                  EnqueueJob(job);
                }},
               options_.resync_period);
  // An added object satisfies its job's expectation before the job is enqueued.
  auto owned_handlers = [this](const char* resource) {
    return kube::InformerHandlers{
        [this, resource](const kube::ObjectPtr& o) {
          // While the job awaits more of its creates its reconcile would do nothing: the last
          // one's event enqueues it (a new job's 11 objects cost one reconcile, not 11).
          if (reconciler_.ObjectObserved(resource, *o) != Observation::kAwaiting) EnqueueOwner(o);
        },
        [this](const kube::ObjectPtr&, const kube::ObjectPtr& o) { EnqueueOwner(o); },
        [this](const kube::ObjectPtr& o) { EnqueueOwner(o); }};
  };
  kube::InformerHandlers pod_handlers = owned_handlers("pods");
  pod_handlers.on_delete = [this](const kube::ObjectPtr& pod) {
    if (pod->contains("metadata")) reconciler_.PodDeleted((*pod)["metadata"].value("uid", ""));
    EnqueueOwner(pod);
  };
  pods_ = make("pods", ns, owned, pod_handlers, absl::ZeroDuration(),
               {{kByJob, JobIndexValues}, {kByNode, NodeIndexValues}});
  services_ = make("services", ns, owned, owned_handlers("services"), absl::ZeroDuration(),
                   {{kByJob, JobIndexValues}});
  if (options_.watch_nodes) {
    nodes_ = make("nodes", "", "",
                  {nullptr,
                   [this](const kube::ObjectPtr& old_node, const kube::ObjectPtr& node) {
                     OnNodeChange(old_node, node);
                   },
                   [this](const kube::ObjectPtr& node) { OnNodeChange(node, nullptr); }},
                  absl::ZeroDuration());
  }
  if (options_.reconciler.kueue.enabled) {
    // Kueue's admission and eviction of a job's Workload bring the job back at once. Workloads
    // are not labelled: every one is listed and those no TrainingJob controls are dropped.
    auto enqueue = [this](const kube::ObjectPtr& w) { EnqueueOwner(w); };
    workloads_ = make_of(KueueResource("workloads", ns), "", /*owned=*/true,
                         {enqueue, [enqueue](const kube::ObjectPtr&,
                                             const kube::ObjectPtr& w) { enqueue(w); },
                          enqueue},
                         absl::ZeroDuration());
  }
  // The per-job figures are worked out when scraped, not on a timer: at 10,000 jobs they are
  // 230,000 series, and refreshing them every second cost more than a CPU (tj-bench-job-metrics).
  if (metrics_ != nullptr) collector_ = metrics_->AddCollector([this] { CollectJobGauges(); });
}

Controller::~Controller() {
  // First: a scrape running the collector is waited for, and none starts after; likewise a
  // progress read's call into the queue.
  if (collector_) metrics_->RemoveCollector(*collector_);
  if (options_.reconciler.progress != nullptr) options_.reconciler.progress->OnChange(nullptr);
  queue_.ShutDown();
  writes_->Stop();  // its callbacks reach the reconciler and the queue
  for (auto* informer : {&jobs_, &pods_, &services_, &nodes_, &workloads_}) {
    if (*informer) (*informer)->Stop();
  }
}

void Controller::EnqueueJob(const kube::ObjectPtr& job) {
  const std::string key = kube::ObjectKey(*job);
  if (!key.empty()) queue_.Add(key);
}

void Controller::EnqueueOwner(const kube::ObjectPtr& object) {
  const std::string key = OwnerJobKey(*object);
  if (!key.empty()) queue_.Add(key);
}

void Controller::OnNodeChange(const kube::ObjectPtr& old_node, const kube::ObjectPtr& new_node) {
  // Heartbeats update nodes every few seconds; only a change of readiness (or removal) matters.
  if (new_node != nullptr && ReadyStatus(old_node) == ReadyStatus(new_node)) return;
  const kube::ObjectPtr& node = new_node != nullptr ? new_node : old_node;
  const std::string name = (*node)["metadata"].value("name", "");
  for (const kube::ObjectPtr& pod : pods_->cache().ByIndex(kByNode, name)) EnqueueOwner(pod);
}

void Controller::Work() {
  while (std::optional<std::string> key = queue_.Get()) {
    if (stopping_.load()) {  // keys still queued at a stop wait for the next leader
      queue_.Done(*key);
      continue;
    }
    const absl::Time start = absl::Now();
    // One job's odd JSON must not take the worker (and the process) down with it.
    const GuardedReconcile guarded =
        RunReconcileGuarded([&] { return reconciler_.Reconcile(*key); });
    const ReconcileResult& result = guarded.result;
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (metrics_ != nullptr) {
      metrics_->ObserveHistogram(
          "tj_operator_reconcile_duration_seconds",
          "Time one Reconcile of a TrainingJob took to decide and dispatch: it includes deletes "
          "and status writes after the first, not the creates (and first status write) it hands "
          "to the write executor; see tj_operator_api_write_duration_seconds",
          seconds, kDurationBuckets, {{"result", result.status.ok() ? "success" : "error"}});
    }
    if (result.status.ok()) {
      queue_.Forget(*key);
      if (result.requeue_after) queue_.AddAfter(*key, *result.requeue_after);
    } else {
      ReportFailure(*key, guarded);
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

void Controller::ReportFailure(const std::string& key, const GuardedReconcile& guarded) {
  const absl::Status& status = guarded.result.status;
  CountReconcileError(metrics_, ReconcileErrorReason(guarded));
  // Conflicts are the cache lagging our own writes: retried at once-ish by the backoff, and no
  // news to whoever reads the job's events.
  const bool conflict = !guarded.threw && absl::IsAborted(status);
  spdlog::log(
      conflict ? spdlog::level::debug : (guarded.threw ? spdlog::level::err : spdlog::level::warn),
      "reconcile {}: {} (retry {})", key, status.ToString(), queue_.NumRequeues(key) + 1);
  if (conflict) return;
  // The message stays the same across retries, so the recorder folds repeats into one Event.
  if (const kube::ObjectPtr job = jobs_->cache().Get(key); job != nullptr) {
    events_.Record(*job, EventType::kWarning, "ReconcileError",
                   absl::StrCat(std::string(status.message()),
                                "; retried with backoff, other jobs are not affected"));
  }
}

void Controller::RefreshGauges() {
  if (metrics_ == nullptr) return;
  metrics_->SetGauge("tj_operator_workqueue_depth", "Job keys waiting in the work queue",
                     static_cast<double>(queue_.Depth()));
  metrics_->SetGauge("tj_operator_write_queue_depth",
                     "API writes (creates, first status writes) waiting for the write executor",
                     static_cast<double>(writes_->Queued()));
}

void Controller::CollectJobGauges() {
  constexpr char kJobs[] = "tj_operator_jobs";
  constexpr char kJobsHelp[] = "TrainingJobs by state (the last True condition)";
  static constexpr const char* kStates[] = {"Created",   "Running", "Restarting",
                                            "Succeeded", "Failed",  "Suspended"};
  // A standby, or a leader that stopped, exports no figures of jobs: only the one acting does,
  // so sums over the operator's replicas stay right.
  if (!synced_.load() || stopping_.load()) {
    job_metrics_->Refresh({}, absl::Now());
    for (const char* state : kStates) metrics_->RemoveGauge(kJobs, {{"state", state}});
    return;
  }
  std::map<std::string, double> by_state;
  for (const char* state : kStates) by_state[state] = 0;
  const std::vector<kube::ObjectPtr> jobs = jobs_->cache().List();
  job_metrics_->Refresh(jobs, absl::Now());
  for (const kube::ObjectPtr& job : jobs) {
    // Only the known states: the label must not take whatever a status writer put there.
    if (auto it = by_state.find(LastTrueCondition(*job)); it != by_state.end()) it->second += 1;
  }
  for (const auto& [state, count] : by_state) {
    metrics_->SetGauge(kJobs, kJobsHelp, count, {{"state", state}});
  }
}

absl::Status Controller::Run(const std::shared_ptr<kube::Cancellation>& stop) {
  for (auto* informer : {&jobs_, &pods_, &services_, &nodes_, &workloads_}) {
    if (*informer) (*informer)->Start();
  }
  // Reconciling before the caches hold the world would recreate what exists.
  while (!stop->cancelled()) {
    if (jobs_->WaitForSync(absl::Milliseconds(200)) && pods_->WaitForSync(absl::ZeroDuration()) &&
        services_->WaitForSync(absl::ZeroDuration())) {
      break;
    }
  }
  if (!stop->cancelled()) {
    synced_ = true;
    spdlog::info("caches synced: {} jobs, {} pods; starting {} workers", jobs_->cache().Size(),
                 pods_->cache().Size(), options_.workers);
  }
  std::vector<std::thread> workers;
  if (!stop->cancelled()) {
    for (int i = 0; i < options_.workers; ++i) workers.emplace_back([this] { Work(); });
  }
  // The metrics refresher doubles as the wait for `stop`.
  StdMutex mu;
  std::condition_variable cv;
  stop->SetHook([&] {
    StdMutexLock lock(mu);
    cv.notify_all();
  });
  {
    StdMutexLock lock(mu);
    while (!stop->cancelled()) {
      lock.unlock();
      RefreshGauges();
      lock.lock();
      cv.wait_for(lock.native(), std::chrono::seconds(1), [&] { return stop->cancelled(); });
    }
  }
  stop->SetHook(nullptr);
  // The executor first: a reconcile waiting for room in a full write queue is released at once
  // (what it hands over is dropped); waiting for it instead held a stop for as long as the API
  // server took to make every write of a huge job. What is dropped or still queued is redone by
  // the next leader's reconciles; only reconciles already running are waited for.
  stopping_ = true;
  writes_->Stop();
  queue_.ShutDownWithDrain();
  for (std::thread& t : workers) t.join();
  for (auto* informer : {&jobs_, &pods_, &services_, &nodes_, &workloads_}) {
    if (*informer) (*informer)->Stop();
  }
  synced_ = false;
  return absl::OkStatus();
}

}  // namespace tj::op
