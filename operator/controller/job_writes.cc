#include "operator/controller/job_writes.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/labels.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconcile_guard.h"
#include "spdlog/spdlog.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string MetadataField(const json& object, const char* field) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  return metadata->value(field, "");
}

// What an Event and the status bookkeeping need of the job: a burst holds thousands of batches
// queued, and whole jobs would be most of the operator's memory.
json InvolvedObject(const json& job) {
  json out = {{"apiVersion", job.value("apiVersion", "")}, {"kind", job.value("kind", "")}};
  json metadata = json::object();
  if (job.contains("metadata") && job["metadata"].is_object()) {
    for (const char* field : {"name", "namespace", "uid", "resourceVersion"}) {
      if (job["metadata"].contains(field)) metadata[field] = job["metadata"][field];
    }
  }
  out["metadata"] = std::move(metadata);
  return out;
}

std::string NameIn(const std::string& object) { return object.substr(object.find('/') + 1); }

// "5 pods (a, b, c, d, e)", "1 service (a)".
std::string Described(const char* kind, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return absl::StrCat(names.size(), " ", kind, names.size() == 1 ? "" : "s", " (",
                      absl::StrJoin(names, ", "), ")");
}

}  // namespace

const char* WriteKindName(WriteKind kind) {
  switch (kind) {
    case WriteKind::kSecret:
      return "secret";
    case WriteKind::kPod:
      return "pod";
    case WriteKind::kService:
      return "service";
    case WriteKind::kStatus:
      return "status";
  }
  return "object";
}

struct JobWrites::Batch {
  std::string key;
  json job_json;  // InvolvedObject: enough for Events and the job's name
  std::vector<Write> writes;
  StdMutex mu;
  size_t remaining ABSL_GUARDED_BY(mu) = 0;
  std::map<WriteKind, std::vector<std::string>> created ABSL_GUARDED_BY(mu);
  std::vector<std::string> failures ABSL_GUARDED_BY(mu);
  bool failed ABSL_GUARDED_BY(mu) = false;
};

JobWrites::JobWrites(ClusterView& view, EventSink& events, WriteExecutor& executor,
                     ReconcileCounting& counting, const ReconcilerOptions& options)
    : view_(view),
      events_(events),
      executor_(executor),
      counting_(counting),
      options_(options),
      expectations_(options.expectations_ttl) {}

std::string JobWrites::CreateFailure(const std::string& key) const {
  return memory_.Get(key).create_failure;
}

void JobWrites::Forget(const std::string& key) {
  memory_.Forget(key);
  expectations_.Forget(key);
}

void JobWrites::Dispatch(const std::string& key, const json& job_json, std::vector<Write> writes,
                         absl::Time now) {
  if (writes.empty()) return;
  std::stable_sort(writes.begin(), writes.end(),
                   [](const Write& a, const Write& b) { return a.kind < b.kind; });
  auto batch = std::make_shared<Batch>();
  batch->key = key;
  batch->job_json = InvolvedObject(job_json);
  batch->writes = std::move(writes);
  {
    StdMutexLock lock(batch->mu);  // not shared yet; the lock keeps the analysis simple
    batch->remaining = batch->writes.size();
  }
  std::vector<std::string> objects;
  bool writes_status = false;
  for (const Write& w : batch->writes) {
    objects.push_back(w.object);
    writes_status |= w.kind == WriteKind::kStatus;
  }
  // Made here even without a status write: the answers record a refused create in it.
  memory_.With(key, [&](Memory& memory) {
    if (!writes_status) return;
    memory.status_in_flight = true;
    memory.awaited_status_version.clear();
    memory.seen_versions.clear();
  });
  // Recorded before the first write goes out: its answer (or informer event) may come at once.
  expectations_.Expect(key, objects, now);
  for (size_t i = 0; i < batch->writes.size(); ++i) {
    executor_.Submit(
        [this, batch, i] {
          // Building the object runs here, on the executor's thread: one job's odd template
          // must fail its write, not end the process.
          bool threw = false;
          absl::StatusOr<json> result = RunWriteGuarded(batch->writes[i].call, &threw);
          if (threw) CountReconcileError(options_.metrics, "exception");
          Finished(*batch, i, result);
        },
        batch->writes[i].urgent);
  }
}

void JobWrites::Finished(Batch& batch, size_t index, const absl::StatusOr<json>& result) {
  const Write& w = batch.writes[index];
  const bool is_status = w.kind == WriteKind::kStatus;
  // A cache shows a created object through its informer (ObjectObserved); a live view at once.
  // Secrets have no informer (they are read by name): the answer is the observation.
  bool observed_now = !result.ok() || view_.Live() || w.kind == WriteKind::kSecret;
  if (result.ok()) {
    if (is_status) {
      if (!view_.Live())
        StatusWritten(batch.key, batch.job_json, MetadataField(*result, "resourceVersion"));
    } else {
      StdMutexLock lock(batch.mu);
      batch.created[w.kind].push_back(NameIn(w.object));
    }
    if (w.kind == WriteKind::kPod) counting_.PodCreated();
  } else if (is_status) {
    // A Conflict (the job changed meanwhile): the retry decides again from a fresh cache.
    spdlog::debug("{}: first status write: {}", batch.key, result.status().ToString());
    memory_.IfPresent(batch.key, [](Memory& memory) {  // none: the job was deleted meanwhile
      memory.status_in_flight = false;
      memory.awaited_status_version.clear();
      memory.seen_versions.clear();
    });
    StdMutexLock lock(batch.mu);
    batch.failed = true;
  } else {
    const bool exists = absl::IsAlreadyExists(result.status());
    // Exists: made by an earlier reconcile whose answer the cache has not shown yet, or the old
    // pod of a restarted replica not gone yet (its deletion brings the job back). Either way no
    // longer awaited.
    std::string failure;
    if (!exists) {
      failure = absl::StrCat("creating ", WriteKindName(w.kind), " ", NameIn(w.object),
                             " failed: ", std::string(result.status().message()));
      // None: the job was deleted meanwhile.
      memory_.IfPresent(batch.key, [&](Memory& memory) { memory.create_failure = failure; });
    }
    if (!failure.empty()) {
      spdlog::warn("{}: {}", batch.key, failure);
      StdMutexLock lock(batch.mu);
      batch.failures.push_back(failure);
      batch.failed = true;
    }
  }
  if (observed_now) {
    // A refused create brings the job back through BatchDone, with the key's backoff.
    if (result.ok() && !view_.Live()) {
      ObservedByAnswer(batch.key, w.object);
    } else {
      expectations_.Observed(batch.key, w.object);
    }
  }
  bool last = false;
  {
    StdMutexLock lock(batch.mu);
    last = --batch.remaining == 0;
  }
  if (last) BatchDone(batch);
}

void JobWrites::BatchDone(Batch& batch) {
  // Every write has finished (the last one calls this): the lock only orders their results.
  std::map<WriteKind, std::vector<std::string>> created;
  std::vector<std::string> failures;
  bool failed = false;
  {
    StdMutexLock lock(batch.mu);
    created = std::move(batch.created);
    failures = std::move(batch.failures);
    failed = batch.failed;
  }
  // One Event for what this reconcile created ("created the token secret, 5 pods (...) and 5
  // services (...)"): a burst of new jobs posts one Event per job, not one per object.
  std::vector<std::string> parts;
  if (created.contains(WriteKind::kSecret)) {
    parts.push_back(absl::StrCat("the token secret ", created[WriteKind::kSecret].front()));
  }
  for (WriteKind kind : {WriteKind::kPod, WriteKind::kService}) {
    if (created.contains(kind)) parts.push_back(Described(WriteKindName(kind), created[kind]));
  }
  if (!parts.empty()) {
    std::string message = "created ";
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) absl::StrAppend(&message, i + 1 == parts.size() ? " and " : ", ");
      absl::StrAppend(&message, parts[i]);
    }
    events_.Record(batch.job_json, EventType::kNormal, "Created", message);
  }
  if (!failures.empty()) {
    events_.Record(batch.job_json, EventType::kWarning, kFailedCreateReason,
                   absl::StrCat(absl::StrJoin(failures, "; "), "; retrying"));
  }
  bool cleared = false;
  if (!failed) {
    memory_.IfPresent(batch.key, [&](Memory& memory) {
      cleared = !memory.create_failure.empty();
      memory.create_failure.clear();
    });
  }
  if (options_.on_writes_done && (failed || cleared)) {
    options_.on_writes_done(batch.key, failed);
  }
}

void JobWrites::StatusWritten(const std::string& key, const json& job_json,
                               const std::string& version) {
  // Read before memory_'s lock is taken: the informer updates its cache, then calls JobObserved.
  // Either JobObserved runs after the version is recorded below and matches it, or it ran
  // before, and then the cache (read here after it) or seen_versions holds the version.
  ObjectPtr cached =
      view_.Job(MetadataField(job_json, "namespace").empty() ? std::string("default")
                                                             : MetadataField(job_json, "namespace"),
                MetadataField(job_json, "name"));
  const std::string cached_version = cached ? MetadataField(*cached, "resourceVersion") : "";
  bool observed = false;
  memory_.IfPresent(key, [&](Memory& memory) {
    if (!memory.status_in_flight) return;
    if (version.empty() || cached_version == version || memory.seen_versions.contains(version)) {
      memory.status_in_flight = false;
      memory.awaited_status_version.clear();
      memory.seen_versions.clear();
      observed = true;
    } else {
      memory.awaited_status_version = version;
    }
  });
  if (observed) ObservedByAnswer(key, "status");
}

void JobWrites::ObservedByAnswer(const std::string& key, const std::string& object) {
  if (expectations_.Observed(key, object) == Observation::kSatisfied && options_.on_writes_done) {
    options_.on_writes_done(key, /*failed=*/false);
  }
}

void JobWrites::JobObserved(const json& job) {
  std::string ns = MetadataField(job, "namespace");
  if (ns.empty()) ns = "default";
  const std::string key = absl::StrCat(ns, "/", MetadataField(job, "name"));
  const std::string version = MetadataField(job, "resourceVersion");
  bool observed = false;
  memory_.IfPresent(key, [&](Memory& memory) {
    if (!memory.status_in_flight) return;
    if (!memory.awaited_status_version.empty()) {
      if (memory.awaited_status_version != version) return;
      memory.status_in_flight = false;
      memory.awaited_status_version.clear();
      memory.seen_versions.clear();
      observed = true;
    } else if (memory.seen_versions.size() < 64) {
      memory.seen_versions.insert(version);
    }
  });
  if (observed) expectations_.Observed(key, "status");
}

Observation JobWrites::ObjectObserved(const std::string& resource, const json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return Observation::kNotAwaited;
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return Observation::kNotAwaited;
  const std::string job = labels->value(v1alpha1::kJobNameLabel, "");
  if (job.empty()) return Observation::kNotAwaited;
  std::string ns = metadata->value("namespace", "");
  if (ns.empty()) ns = "default";
  return expectations_.Observed(absl::StrCat(ns, "/", job),
                                absl::StrCat(resource, "/", metadata->value("name", "")));
}

}  // namespace tj::op
