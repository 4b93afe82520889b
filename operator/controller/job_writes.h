// The reconciler's asynchronous writes: the creates of a reconcile (and a job's first status
// write) handed to the write executor. Their expectations are recorded first (creation
// expectations: a job whose creates are in flight creates nothing more), one Event lists what was
// created, a refused create is a Warning Event, Created False (create_failure) and a requeue with
// backoff; and a first status write is observed once the job informer shows its resourceVersion.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/expectations.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconciler_options.h"
#include "operator/controller/write_executor.h"

namespace tj::op {

// In the order a reconcile hands them over: the Secret the pods mount, the pods, their
// Services, then a first status write that counts the requested pods.
enum class WriteKind { kSecret, kPod, kService, kStatus };

// "secret", "pod", "service", "status": for Events and logs.
const char* WriteKindName(WriteKind kind);

struct Write {
  // The expectation it meets: "pods/<name>", "services/<name>", "secrets/<name>", "status".
  std::string object;
  WriteKind kind = WriteKind::kPod;
  // Builds the object (on the executor's thread) and writes it.
  std::function<absl::StatusOr<nlohmann::json>()> call;
  // Pods and the Secret they mount go before Services and status writes of every job.
  bool urgent = false;
};

class JobWrites {
 public:
  JobWrites(ClusterView& view, EventSink& events, WriteExecutor& executor,
            ReconcileCounting& counting, const ReconcilerOptions& options);

  // Records the writes' expectations, then hands them to the executor (in kind order, stable).
  void Dispatch(const std::string& key, const nlohmann::json& job_json, std::vector<Write> writes,
                absl::Time now);

  // The last create the API server refused ("" when none, or one succeeded since).
  std::string CreateFailure(const std::string& key) const;

  // Informer observations (Reconciler::ObjectObserved, Reconciler::JobObserved).
  Observation ObjectObserved(const std::string& resource, const nlohmann::json& object);
  void JobObserved(const nlohmann::json& job);

  CreationExpectations& expectations() { return expectations_; }
  const CreationExpectations& expectations() const { return expectations_; }

  // The job is gone.
  void Forget(const std::string& key);

 private:
  struct Memory {
    // The last create the API server refused (Created False, FailedCreate), until one succeeds.
    std::string create_failure;
    // A first status write in flight: the resourceVersion it produced (once answered) and the
    // ones the job informer showed meanwhile.
    bool status_in_flight = false;
    std::string awaited_status_version;
    std::set<std::string> seen_versions;
  };
  struct Batch;
  void Finished(Batch& batch, size_t index, const absl::StatusOr<nlohmann::json>& result);
  void BatchDone(Batch& batch);
  // The first status write answered with `version`: observed once the cache holds it.
  void StatusWritten(const std::string& key, const nlohmann::json& job_json,
                     const std::string& version);
  // An observation made from a write's answer rather than an informer event (the Secret, a
  // status write the cache already showed): when it is the job's last awaited one, the job is
  // brought back (on_writes_done, not failed). No informer event follows it, and a reconcile that
  // ran meanwhile stopped at AwaitCreations until the expectations' TTL (5 minutes): the lost
  // wake-up of an admitted Kueue job (docs/kueue.md).
  void ObservedByAnswer(const std::string& key, const std::string& object);

  ClusterView& view_;
  EventSink& events_;
  WriteExecutor& executor_;
  ReconcileCounting& counting_;
  const ReconcilerOptions& options_;
  CreationExpectations expectations_;
  PerJob<Memory> memory_;
};

}  // namespace tj::op
