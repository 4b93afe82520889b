// WorkerConnection: where one worker is tracked. It owns the gRPC channel to the worker, pipelines
// closures to it over a RunStream (a bounded, adaptive window of closures in flight), turns results
// into RemoteValues, puts closures back when the worker fails, waits for the worker to recover,
// rebuilds its per-worker resources, and drains it when it is removed.
//
// Threads: one dispatch thread for the connection's life, one reader thread per stream; and, on the
// idle path, the user's thread in Schedule (TryDispatchDirect). Lock order: the ClosureQueue's lock
// may be held when calling RequestCancelInflight (which takes mu_); mu_ is never held while calling
// into the queue; write_mu_ is taken before mu_.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/closure/closure_queue.h"
#include "coordinator/cluster/coordinator_options.h"
#include "coordinator/cluster/per_worker_resources.h"
#include "coordinator/cluster/ps_failure_tracker.h"
#include "tj/v1/worker.grpc.pb.h"

namespace tj {

enum class WorkerState {
  kConnecting,
  kHealthy,
  kRecovering,
  kDraining,
  kPreempted,  // told it will be terminated: takes no closures until its successor is up
  kLost,
  kRemoved,
  kStopped
};
std::string_view WorkerStateName(WorkerState state);
inline constexpr size_t kWorkerStateCount = static_cast<size_t>(WorkerState::kStopped) + 1;
// Changes into each state (indexed by WorkerState) over all of a coordinator's connections.
using WorkerStateChanges = std::array<std::atomic<uint64_t>, kWorkerStateCount>;

struct WorkerStats {
  int index = 0;
  std::string address;
  WorkerState state = WorkerState::kConnecting;
  uint64_t incarnation = 0;
  int64_t inflight = 0;
  int64_t completed = 0;
  int64_t errors = 0;    // closures that ran and failed (application or PS errors)
  int64_t failures = 0;  // times the worker was seen failing
  int64_t put_back = 0;  // closures put back for another run
  int64_t direct = 0;    // closures written to the worker from Schedule's thread (idle path)
  int window = 1;
  // Goodput (jobcontrol/goodput.h): time away (recovering, preempted, lost) after it was first
  // healthy, and time it had spent on closures it never answered because it failed (from the
  // later of its last answer and the oldest such closure's dispatch until the failure was seen).
  absl::Duration away;
  absl::Duration rerun;
};

// What a connection shares with the coordinator.
struct WorkerConnectionEnv {
  ClosureQueue* queue;
  ResourceRegistry* resources;
  PsFailureTracker* ps_failures;
  WorkerStateChanges* state_changes;
  const CoordinatorOptions* options;
  // Called from the connection's thread when the worker is given up after the recovery timeout.
  std::function<void(int index, const absl::Status& last_error)> on_lost;
};

class WorkerConnection {
 public:
  WorkerConnection(int index, std::string address, WorkerConnectionEnv env);
  ~WorkerConnection();
  WorkerConnection(const WorkerConnection&) = delete;
  WorkerConnection& operator=(const WorkerConnection&) = delete;

  void Start();
  // The idle path of Schedule: if this worker's stream is up, nothing is in flight on it and no
  // other write is under way, writes `closure` to it from the calling thread and counts it in
  // flight (as if the dispatch thread had sent it), saving the dispatch thread's wake-up. Returns
  // false, having done nothing, otherwise. Called with the closure already counted in flight by the
  // queue (ClosureQueue::PutOrDispatch), never with the queue's lock held.
  bool TryDispatchDirect(const ClosurePtr& closure) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the worker to cancel every closure in flight. Non-blocking; safe under the queue's lock.
  void RequestCancelInflight() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops taking new closures; in-flight ones may finish for options.drain_timeout, then are put
  // back. Returns at once; Join() waits for the drain to end.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);
  // The worker is about to be terminated (a preemption notice): it takes no new closures; the ones
  // in flight may finish until `deadline`, then are put back. It takes work again once a new
  // incarnation answers (the replacement process), or, if it is never terminated, after
  // `deadline + resume_after`.
  void Preempt(absl::Time deadline, absl::Duration resume_after = absl::Seconds(60))
      ABSL_LOCKS_EXCLUDED(mu_);
  // Stops now: the stream is cancelled and whatever was in flight is put back (or cancelled).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  void Join();

  int index() const { return index_; }
  const std::string& address() const { return address_; }
  WorkerStats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  bool alive() const;  // healthy, connecting or recovering
  // Alive, or preempted and waiting for its successor: the worker's slot in the pool is taken
  // (its replacement registering is not a new worker).
  bool in_pool() const;

 private:
  struct Inflight {
    ClosurePtr closure;
    absl::Time sent;
  };

  void Run();
  // Health check (a new incarnation means its resources are gone), then resources built.
  absl::Status Connect();
  absl::Status EnsureResources();
  // Serves one stream; returns true if it ended because the worker failed.
  bool Serve();
  void ReadResults(grpc::ClientReaderWriter<v1::RunBatch, v1::ResultBatch>* stream);
  void HandleResult(v1::RunResult& result) ABSL_LOCKS_EXCLUDED(mu_);
  void PutBackAllInflight() ABSL_LOCKS_EXCLUDED(mu_);
  void MarkResourcesAborted();
  // Publishes built_version_ for TryDispatchDirect (built_version_ is the dispatch thread's).
  void PublishBuiltVersion() { ready_resource_version_.store(built_version_); }
  // What TryDispatchDirect did with a closure.
  enum class DirectWrite { kNotSent, kSent, kStreamBroke };
  DirectWrite WriteDirectLocked(const ClosurePtr& closure)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes to the stream from the dispatch thread, serialized with TryDispatchDirect's writes.
  bool WriteLocked(grpc::ClientReaderWriter<v1::RunBatch, v1::ResultBatch>* stream,
                   const v1::RunBatch& batch);
  int WindowLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sleeps for `d` unless stopped or drained first; false if interrupted.
  bool InterruptibleSleep(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  void SetState(WorkerState state) ABSL_LOCKS_EXCLUDED(mu_);
  void SetStateLocked(WorkerState state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ShouldExit() const { return stop_.load() || drain_.load(); }
  // After a preemption notice: waits until the preempted incarnation is gone (or the notice
  // expires), without dispatching.
  void WaitOutPreemption() ABSL_LOCKS_EXCLUDED(mu_);
  // The incarnation a health check reports, without touching resources.
  absl::StatusOr<uint64_t> ProbeIncarnation();

  const int index_;
  const std::string address_;
  const WorkerConnectionEnv env_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
  std::thread thread_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> drain_{false};
  std::atomic<bool> cancel_requested_{false};
  std::atomic<bool> stream_broken_{false};
  std::atomic<bool> need_rebuild_{false};
  std::atomic<bool> preempt_{false};

  mutable absl::Mutex mu_;
  WorkerState state_ ABSL_GUARDED_BY(mu_) = WorkerState::kConnecting;
  std::unordered_map<uint64_t, Inflight> inflight_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* stream_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  double exec_ewma_us_ ABSL_GUARDED_BY(mu_) = 0;
  double overhead_ewma_us_ ABSL_GUARDED_BY(mu_) = 0;
  bool have_timing_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time preempt_deadline_ ABSL_GUARDED_BY(mu_);
  absl::Time preempt_resume_at_ ABSL_GUARDED_BY(mu_);
  uint64_t preempted_incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status resource_error_ ABSL_GUARDED_BY(mu_);
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t put_back_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t direct_ ABSL_GUARDED_BY(mu_) = 0;
  // Goodput: see WorkerStats::away and rerun. away_since_ is set while the worker is away.
  bool been_healthy_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Time> away_since_ ABSL_GUARDED_BY(mu_);
  absl::Duration away_ ABSL_GUARDED_BY(mu_);
  absl::Duration rerun_ ABSL_GUARDED_BY(mu_);
  absl::Time last_answer_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  // gRPC allows one writer at a time on a stream: the dispatch thread and TryDispatchDirect write
  // under write_mu_ (TryDispatchDirect only try-locks it). direct_stream_ is the stream Serve is
  // serving, or null when TryDispatchDirect must not write (no stream, or it is being closed).
  StdMutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  grpc::ClientReaderWriter<v1::RunBatch, v1::ResultBatch>* direct_stream_
      ABSL_GUARDED_BY(write_mu_) = nullptr;
  // The resources built on the worker (built_version_), readable from Schedule's thread.
  std::atomic<uint64_t> ready_resource_version_{0};

  // Touched by the dispatch thread only.
  std::set<uint64_t> built_resources_;
  uint64_t built_version_ = 0;
};

}  // namespace tj
