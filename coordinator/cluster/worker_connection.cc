#include "coordinator/cluster/worker_connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/channel.h"
#include "coordinator/base/wire_status.h"
#include "coordinator/ps/ps_error.h"

namespace tj {
namespace {

constexpr double kEwmaWeight = 0.1;
// Closures larger than this are never written from Schedule's thread: a large write may wait for
// HTTP/2 flow control, and Schedule should not.
constexpr size_t kMaxDirectClosureBytes = 64 * 1024;

std::chrono::system_clock::time_point Deadline(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMicroseconds(d);
}

absl::Duration Jittered(absl::Duration d) {
  thread_local std::mt19937 rng{std::random_device{}()};
  return d * std::uniform_real_distribution<double>(0.8, 1.2)(rng);
}

}  // namespace

std::string_view WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kConnecting:
      return "connecting";
    case WorkerState::kHealthy:
      return "healthy";
    case WorkerState::kRecovering:
      return "recovering";
    case WorkerState::kDraining:
      return "draining";
    case WorkerState::kPreempted:
      return "preempted";
    case WorkerState::kLost:
      return "lost";
    case WorkerState::kRemoved:
      return "removed";
    case WorkerState::kStopped:
      return "stopped";
  }
  return "unknown";
}

WorkerConnection::WorkerConnection(int index, std::string address, WorkerConnectionEnv env)
    : index_(index),
      address_(std::move(address)),
      env_(std::move(env)),
      channel_(MakeRuntimeChannel(address_)),
      stub_(v1::Worker::NewStub(channel_)) {}

WorkerConnection::~WorkerConnection() {
  Stop();
  Join();
}

void WorkerConnection::Start() {
  thread_ = std::thread([this] { Run(); });
}

void WorkerConnection::Join() {
  if (thread_.joinable()) thread_.join();
}

void WorkerConnection::RequestCancelInflight() {
  absl::MutexLock lock(&mu_);  // wakes a dispatcher waiting for a window slot
  cancel_requested_.store(true);
}

void WorkerConnection::Drain() {
  {
    absl::MutexLock lock(&mu_);
    drain_.store(true);
    if (state_ == WorkerState::kHealthy) SetStateLocked(WorkerState::kDraining);
  }
  env_.queue->Wake();
}

void WorkerConnection::Preempt(absl::Time deadline, absl::Duration resume_after) {
  {
    absl::MutexLock lock(&mu_);
    if (preempt_.load()) return;  // the first notice leads
    preempt_deadline_ = deadline;
    preempt_resume_at_ = deadline + resume_after;
    preempted_incarnation_ = incarnation_;
    preempt_.store(true);
    if (state_ == WorkerState::kHealthy) SetStateLocked(WorkerState::kPreempted);
  }
  spdlog::info("worker {} ({}): preemption notice; no new closures, {} for those in flight", index_,
               address_,
               absl::FormatDuration(std::max(absl::ZeroDuration(), deadline - absl::Now())));
  env_.queue->Wake();
}

absl::StatusOr<uint64_t> WorkerConnection::ProbeIncarnation() {
  grpc::ClientContext context;
  context.set_deadline(Deadline(env_.options->health_check_timeout));
  v1::HealthRequest request;
  v1::HealthResponse response;
  grpc::Status status = stub_->Health(&context, request, &response);
  if (!status.ok()) return absl::UnavailableError(status.error_message());
  return response.incarnation();
}

void WorkerConnection::WaitOutPreemption() {
  SetState(WorkerState::kPreempted);
  while (!ShouldExit()) {
    absl::Time resume_at;
    uint64_t preempted;
    {
      absl::MutexLock lock(&mu_);
      // A notice that arrived before the first health check concerns the process found then.
      if (preempted_incarnation_ == 0) preempted_incarnation_ = incarnation_;
      resume_at = preempt_resume_at_;
      preempted = preempted_incarnation_;
    }
    auto incarnation = ProbeIncarnation();
    if (!incarnation.ok() || *incarnation != preempted) {
      // Gone (the usual path: Run's recovery waits for the replacement) or already replaced.
      break;
    }
    if (absl::Now() >= resume_at) {
      spdlog::warn(
          "worker {} ({}) was not terminated after its preemption notice; it takes work "
          "again",
          index_, address_);
      break;
    }
    InterruptibleSleep(absl::Milliseconds(200));
  }
  preempt_.store(false);
}

void WorkerConnection::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_.store(true);
    if (stream_context_ != nullptr) stream_context_->TryCancel();
  }
  env_.queue->Wake();
}

void WorkerConnection::SetState(WorkerState state) {
  absl::MutexLock lock(&mu_);
  SetStateLocked(state);
}

void WorkerConnection::SetStateLocked(WorkerState state) {
  if (state_ == state) return;
  state_ = state;
  // Away: a worker that was healthy and is not, unless it is leaving on purpose (drain, removal,
  // shutdown). Connecting before it was ever healthy is the job's start, not a loss.
  const bool away = been_healthy_ && (state == WorkerState::kConnecting ||
                                      state == WorkerState::kRecovering ||
                                      state == WorkerState::kPreempted ||
                                      state == WorkerState::kLost);
  if (state == WorkerState::kHealthy) been_healthy_ = true;
  if (away && !away_since_) {
    away_since_ = absl::Now();
  } else if (!away && away_since_) {
    away_ += absl::Now() - *away_since_;
    away_since_.reset();
  }
  if (env_.state_changes != nullptr) {
    (*env_.state_changes)[static_cast<size_t>(state)].fetch_add(1, std::memory_order_relaxed);
  }
}

bool WorkerConnection::alive() const {
  absl::MutexLock lock(&mu_);
  return state_ == WorkerState::kHealthy || state_ == WorkerState::kConnecting ||
         state_ == WorkerState::kRecovering;
}

bool WorkerConnection::in_pool() const {
  absl::MutexLock lock(&mu_);
  return state_ == WorkerState::kHealthy || state_ == WorkerState::kConnecting ||
         state_ == WorkerState::kRecovering || state_ == WorkerState::kPreempted;
}

WorkerStats WorkerConnection::stats() const {
  absl::MutexLock lock(&mu_);
  WorkerStats s;
  s.index = index_;
  s.address = address_;
  s.state = state_;
  s.incarnation = incarnation_;
  s.inflight = static_cast<int64_t>(inflight_.size());
  s.completed = completed_;
  s.errors = errors_;
  s.failures = failures_;
  s.put_back = put_back_;
  s.direct = direct_;
  s.window = WindowLocked();
  s.away = away_ + (away_since_ ? absl::Now() - *away_since_ : absl::ZeroDuration());
  s.rerun = rerun_;
  return s;
}

bool WorkerConnection::InterruptibleSleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  auto exit_requested = [this]() { return ShouldExit(); };
  return !mu_.AwaitWithTimeout(absl::Condition(&exit_requested), d);
}

int WorkerConnection::WindowLocked() const {
  const int max_window = std::max(1, env_.options->max_inflight_per_worker);
  if (!have_timing_) return 1;
  // Enough closures in flight to cover the round-trip overhead with execution, and no more: long
  // closures get a window of about 1, so no worker hoards work that an idle one could run.
  const double ratio = overhead_ewma_us_ / std::max(exec_ewma_us_, 1.0);
  return static_cast<int>(std::clamp(1.0 + std::ceil(ratio), 1.0, static_cast<double>(max_window)));
}

void WorkerConnection::Run() {
  const CoordinatorOptions& options = *env_.options;
  if (options.stagger_delay > absl::ZeroDuration()) {
    absl::Duration delay = options.stagger_delay * index_;
    if (options.stagger_cap > absl::ZeroDuration()) delay = std::min(delay, options.stagger_cap);
    if (delay > absl::ZeroDuration()) {
      spdlog::info("worker {} ({}): staggered start, waiting {}", index_, address_,
                   absl::FormatDuration(delay));
      InterruptibleSleep(delay);
    }
  }
  bool failing = false;
  absl::Time failed_since;
  absl::Duration backoff = options.reconnect_backoff_initial;
  absl::Status last_error;
  while (!ShouldExit()) {
    absl::Status connected = Connect();
    if (!connected.ok()) {
      last_error = connected;
      if (!failing) {
        failing = true;
        failed_since = absl::Now();
        spdlog::warn("worker {} ({}) unavailable, waiting up to {} for it: {}", index_, address_,
                     absl::FormatDuration(options.worker_recovery_timeout), connected.ToString());
        SetState(WorkerState::kRecovering);
      }
      if (absl::Now() - failed_since >= options.worker_recovery_timeout) {
        spdlog::error("worker {} ({}) did not come back within {}; giving it up", index_, address_,
                      absl::FormatDuration(options.worker_recovery_timeout));
        SetState(WorkerState::kLost);
        if (env_.on_lost) env_.on_lost(index_, last_error);
        return;
      }
      InterruptibleSleep(Jittered(backoff));
      backoff = std::min(backoff * 2, options.reconnect_backoff_max);
      continue;
    }
    if (failing) spdlog::info("worker {} ({}) is back", index_, address_);
    failing = false;
    backoff = options.reconnect_backoff_initial;
    SetState(drain_.load() ? WorkerState::kDraining : WorkerState::kHealthy);
    const bool failed = Serve();
    if (!failed && preempt_.load() && !ShouldExit()) {
      WaitOutPreemption();
      continue;
    }
    if (failed) {
      failing = true;
      failed_since = absl::Now();
      {
        absl::MutexLock lock(&mu_);
        ++failures_;
        SetStateLocked(WorkerState::kRecovering);
      }
      spdlog::warn("worker {} ({}) failed; its closures were put back, waiting for it to recover",
                   index_, address_);
      MarkResourcesAborted();
    }
  }
  SetState(stop_.load() ? WorkerState::kStopped : WorkerState::kRemoved);
}

absl::Status WorkerConnection::Connect() {
  grpc::ClientContext context;
  context.set_deadline(Deadline(env_.options->health_check_timeout));
  // Wait for the channel to connect within the deadline instead of failing fast: a fail-fast call
  // on a channel in TRANSIENT_FAILURE does not make gRPC 1.51 try again, and it stayed idle for ~5
  // s after the peer restarted (measured).
  context.set_wait_for_ready(true);
  v1::HealthRequest request;
  v1::HealthResponse response;
  grpc::Status status = stub_->Health(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("worker ", index_, " at ", address_,
                     " did not answer its health check: ", status.error_message()));
  }
  {
    absl::MutexLock lock(&mu_);
    if (response.incarnation() != incarnation_) {
      if (incarnation_ != 0) {
        spdlog::info("worker {} ({}) restarted (incarnation {:x}); rebuilding its resources",
                     index_, address_, response.incarnation());
      }
      incarnation_ = response.incarnation();
      built_resources_.clear();
      built_version_ = 0;
      PublishBuiltVersion();
    }
  }
  return EnsureResources();
}

absl::Status WorkerConnection::EnsureResources() {
  if (need_rebuild_.exchange(false)) {
    built_resources_.clear();
    built_version_ = 0;
    PublishBuiltVersion();
  }
  if (built_version_ == env_.resources->version()) return absl::OkStatus();
  const auto specs = env_.resources->specs();
  for (const auto& spec : specs) {
    if (built_resources_.contains(spec->id)) continue;
    grpc::ClientContext context;
    context.set_deadline(Deadline(env_.options->resource_creation_timeout));
    v1::CreateResourceRequest request;
    request.set_resource_id(spec->id);
    request.set_function(spec->function);
    request.set_args(spec->serialized_args);
    v1::CreateResourceResponse response;
    grpc::Status rpc = stub_->CreateResource(&context, request, &response);
    if (!rpc.ok()) {
      return absl::UnavailableError(absl::StrCat("worker ", index_, " at ", address_,
                                                 " failed while creating resource '",
                                                 spec->function, "': ", rpc.error_message()));
    }
    absl::Status created = FromProto(response.status());
    auto value = spec->ValueFor(index_);
    if (created.ok()) {
      value->SetValue(response.description());
    } else {
      // An application error: retrying on this worker would fail the same way. Closures that use
      // the resource fail with this error (see HandleResult).
      spdlog::error("worker {} ({}): resource '{}' could not be created: {}", index_, address_,
                    spec->function, created.ToString());
      value->SetError(created);
      absl::MutexLock lock(&mu_);
      if (resource_error_.ok()) resource_error_ = created;
    }
    built_resources_.insert(spec->id);
  }
  built_version_ = specs.size();
  PublishBuiltVersion();
  return absl::OkStatus();
}

void WorkerConnection::MarkResourcesAborted() {
  for (const auto& spec : env_.resources->specs()) {
    if (built_resources_.contains(spec->id)) spec->ValueFor(index_)->SetAborted();
  }
}

bool WorkerConnection::Serve() {
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stop_.load()) return false;
    stream_context_ = &context;
  }
  stream_broken_.store(false);
  auto stream = stub_->RunStream(&context);
  std::thread reader([this, s = stream.get()] { ReadResults(s); });
  {
    StdMutexLock write_lock(write_mu_);
    direct_stream_ = stream.get();
  }

  // A new per-worker resource also interrupts, so it is built eagerly (its RemoteValue becomes
  // fetchable) instead of when the next closure arrives.
  auto interrupted = [this] {
    return stream_broken_.load() || ShouldExit() || cancel_requested_.load() ||
           need_rebuild_.load() || preempt_.load() || built_version_ != env_.resources->version();
  };
  while (!stream_broken_.load() && !ShouldExit() && !preempt_.load()) {
    if (cancel_requested_.exchange(false)) {
      v1::RunBatch cancel;
      {
        absl::MutexLock lock(&mu_);
        for (const auto& [id, entry] : inflight_) cancel.add_cancel_ids(id);
      }
      if (cancel.cancel_ids_size() > 0 && !WriteLocked(stream.get(), cancel)) break;
      continue;
    }
    if (need_rebuild_.load() || built_version_ != env_.resources->version()) {
      if (!EnsureResources().ok()) {
        stream_broken_.store(true);
        break;
      }
    }
    size_t free_slots;
    {
      absl::MutexLock lock(&mu_);
      auto slot_or_event = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return static_cast<int>(inflight_.size()) < WindowLocked() || stream_broken_.load() ||
               ShouldExit() || cancel_requested_.load() || preempt_.load();
      };
      mu_.Await(absl::Condition(&slot_or_event));
      if (preempt_.load()) break;
      const int window = WindowLocked();
      if (static_cast<int>(inflight_.size()) >= window) continue;
      free_slots = static_cast<size_t>(window) - inflight_.size();
    }
    std::vector<ClosurePtr> closures =
        env_.queue->GetBatch(free_slots, absl::InfiniteFuture(), interrupted);
    if (closures.empty()) continue;
    // The closures may use a resource created while this thread waited: build it before sending.
    if (built_version_ != env_.resources->version() && !EnsureResources().ok()) {
      absl::MutexLock lock(&mu_);
      const absl::Time now = absl::Now();
      for (auto& closure : closures) inflight_.emplace(closure->id, Inflight{closure, now});
      stream_broken_.store(true);
      break;
    }
    v1::RunBatch batch;
    std::vector<ClosurePtr> excess;
    {
      absl::MutexLock lock(&mu_);
      // A closure written from Schedule's thread may have taken a slot while this thread waited:
      // the window stays an upper bound.
      const size_t room =
          static_cast<size_t>(std::max(0, WindowLocked() - static_cast<int>(inflight_.size())));
      if (closures.size() > room) {
        excess.assign(std::make_move_iterator(closures.begin() + static_cast<ptrdiff_t>(room)),
                      std::make_move_iterator(closures.end()));
        closures.resize(room);
      }
      const absl::Time now = absl::Now();
      for (auto& closure : closures) {
        v1::RunRequest* run = batch.add_runs();
        run->set_closure_id(closure->id);
        run->set_function(closure->function);
        run->set_args(closure->serialized_args);
        const uint64_t id = closure->id;
        inflight_.emplace(id, Inflight{std::move(closure), now});
      }
    }
    env_.queue->Return(std::move(excess));
    if (batch.runs_size() == 0) continue;
    if (!WriteLocked(stream.get(), batch))
      break;  // the reader sees the failure too; closures are put back below
  }
  {
    // From here on only this thread touches the stream; waits for a direct write under way.
    StdMutexLock write_lock(write_mu_);
    direct_stream_ = nullptr;
  }

  const bool draining = drain_.load() && !stop_.load();
  const bool preempted = preempt_.load() && !stop_.load();
  if (draining || preempted) {
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return inflight_.empty() || stream_broken_.load() || stop_.load();
    };
    // A preempted worker's closures may finish until the notice's deadline; after that they are
    // put back to run elsewhere.
    const absl::Duration wait =
        draining ? env_.options->drain_timeout
                 : std::max(absl::ZeroDuration(), preempt_deadline_ - absl::Now());
    mu_.AwaitWithTimeout(absl::Condition(&drained), wait);
    if (preempted && !inflight_.empty()) {
      spdlog::info(
          "worker {} ({}): {} closure(s) still running at the preemption deadline are put "
          "back",
          index_, address_, inflight_.size());
    }
  }
  stream->WritesDone();
  {
    absl::MutexLock lock(&mu_);
    // Unanswered closures will be put back; the worker must stop running them.
    if (!inflight_.empty() || stop_.load()) context.TryCancel();
  }
  reader.join();
  stream->Finish();
  {
    absl::MutexLock lock(&mu_);
    stream_context_ = nullptr;
  }
  PutBackAllInflight();
  // After a preemption notice the stream was ended on purpose; WaitOutPreemption tells a worker
  // that is gone from one that is still there.
  return stream_broken_.load() && !ShouldExit() && !preempted;
}

bool WorkerConnection::WriteLocked(grpc::ClientReaderWriter<v1::RunBatch, v1::ResultBatch>* stream,
                                   const v1::RunBatch& batch) {
  StdMutexLock write_lock(write_mu_);
  return stream->Write(batch);
}

bool WorkerConnection::TryDispatchDirect(const ClosurePtr& closure) {
  if (closure->function.size() + closure->serialized_args.size() > kMaxDirectClosureBytes) {
    return false;
  }
  // Busy writing means busy: the closure goes through the queue instead of waiting here.
  if (!write_mu_.try_lock()) return false;
  const DirectWrite outcome = WriteDirectLocked(closure);
  write_mu_.unlock();
  // The stream broke: the closure stays in flight here, and Serve puts it back with the others
  // once the reader has seen the failure too.
  if (outcome == DirectWrite::kStreamBroke) env_.queue->Wake();
  return outcome != DirectWrite::kNotSent;
}

WorkerConnection::DirectWrite WorkerConnection::WriteDirectLocked(const ClosurePtr& closure) {
  if (direct_stream_ == nullptr) return DirectWrite::kNotSent;
  // Everything that makes the dispatch thread stop sending, or build resources first, sends the
  // closure the usual way.
  if (stream_broken_.load() || ShouldExit() || preempt_.load() || cancel_requested_.load() ||
      need_rebuild_.load() || ready_resource_version_.load() != env_.resources->version()) {
    return DirectWrite::kNotSent;
  }
  v1::RunBatch batch;
  {
    absl::MutexLock lock(&mu_);
    if (state_ != WorkerState::kHealthy || !inflight_.empty()) return DirectWrite::kNotSent;
    v1::RunRequest* run = batch.add_runs();
    run->set_closure_id(closure->id);
    run->set_function(closure->function);
    run->set_args(closure->serialized_args);
    inflight_.emplace(closure->id, Inflight{closure, absl::Now()});
    ++direct_;
  }
  if (direct_stream_->Write(batch)) return DirectWrite::kSent;
  stream_broken_.store(true);
  return DirectWrite::kStreamBroke;
}

void WorkerConnection::ReadResults(
    grpc::ClientReaderWriter<v1::RunBatch, v1::ResultBatch>* stream) {
  v1::ResultBatch batch;
  while (stream->Read(&batch)) {
    for (auto& result : *batch.mutable_results()) HandleResult(result);
  }
  {
    absl::MutexLock lock(&mu_);
    stream_broken_.store(true);
  }
  env_.queue->Wake();
}

void WorkerConnection::HandleResult(v1::RunResult& result) {
  ClosurePtr closure;
  {
    absl::MutexLock lock(&mu_);
    auto it = inflight_.find(result.closure_id());
    if (it == inflight_.end()) return;  // already put back (e.g. during a drain timeout)
    closure = std::move(it->second.closure);
    const absl::Time now = absl::Now();
    last_answer_ = now;
    const double round_trip_us = absl::ToDoubleMicroseconds(now - it->second.sent);
    inflight_.erase(it);
    const double exec_us = static_cast<double>(result.exec_micros());
    const double overhead_us =
        std::max(0.0, round_trip_us - exec_us - static_cast<double>(result.wait_micros()));
    if (!have_timing_) {
      exec_ewma_us_ = exec_us;
      overhead_ewma_us_ = overhead_us;
      have_timing_ = true;
    } else {
      exec_ewma_us_ += kEwmaWeight * (exec_us - exec_ewma_us_);
      overhead_ewma_us_ += kEwmaWeight * (overhead_us - overhead_ewma_us_);
    }
    if (result.failure() == v1::FAILURE_KIND_NONE) {
      ++completed_;
    } else if (result.failure() != v1::FAILURE_KIND_CANCELLED &&
               result.failure() != v1::FAILURE_KIND_RESOURCE_MISSING) {
      ++errors_;
    }
  }
  const absl::Status status = FromProto(result.status());
  // On failure the queue learns of the error before the RemoteValue shows it: a caller who fetched
  // the error and then calls Schedule must see it raised.
  switch (result.failure()) {
    case v1::FAILURE_KIND_NONE:
      closure->output->SetValue(std::move(*result.mutable_output()));
      env_.queue->MarkFinished();
      return;
    case v1::FAILURE_KIND_CANCELLED: {
      // The worker stopped it because we asked: for an error being raised (PutBack then cancels
      // it, as the error is pending), or because this connection ended its stream to drain or
      // preempt the worker (PutBack runs it again elsewhere: it must not fail the user's step).
      {
        absl::MutexLock lock(&mu_);
        ++put_back_;
      }
      env_.queue->PutBack(std::move(closure));
      return;
    }
    case v1::FAILURE_KIND_APPLICATION:
      env_.queue->MarkFailed(status);
      closure->output->SetError(status);
      return;
    case v1::FAILURE_KIND_PS_UNAVAILABLE: {
      if (env_.ps_failures->RecordAndIgnore(result.ps_task())) {
        spdlog::warn("worker {}: transient error from ps task {} ({}); running the closure again",
                     index_, result.ps_task(), std::string(status.message()));
        {
          absl::MutexLock lock(&mu_);
          ++put_back_;
        }
        env_.queue->PutBack(std::move(closure));
        return;
      }
      // Carries the PS task like the worker's own error, so the caller can tell a lost PS (restart
      // from the checkpoint) from any other failure with PsTaskOf.
      absl::Status failure =
          PsUnavailableError(result.ps_task(), "",
                             absl::StrCat("failed (", env_.ps_failures->count(result.ps_task()),
                                          " errors reached the threshold): ", status.message()));
      env_.queue->MarkFailed(failure);
      closure->output->SetError(failure);
      return;
    }
    case v1::FAILURE_KIND_RESOURCE_MISSING: {
      absl::Status resource_error;
      {
        absl::MutexLock lock(&mu_);
        resource_error = resource_error_;
        if (resource_error.ok()) ++put_back_;
      }
      if (!resource_error.ok()) {
        env_.queue->MarkFailed(resource_error);
        closure->output->SetError(resource_error);
        return;
      }
      need_rebuild_.store(true);
      env_.queue->PutBack(std::move(closure));
      env_.queue->Wake();
      return;
    }
    default: {
      const absl::Status unknown = absl::InternalError(absl::StrCat(
          "worker ", index_, " sent an unknown failure kind ", static_cast<int>(result.failure())));
      env_.queue->MarkFailed(unknown);
      closure->output->SetError(unknown);
      return;
    }
  }
}

void WorkerConnection::PutBackAllInflight() {
  std::vector<ClosurePtr> unanswered;
  {
    absl::MutexLock lock(&mu_);
    absl::Time oldest = absl::InfiniteFuture();
    for (auto& [id, entry] : inflight_) {
      oldest = std::min(oldest, entry.sent);
      unanswered.push_back(std::move(entry.closure));
    }
    // The worker ran these one after another since its last answer (or since the first was sent):
    // that work is lost and runs again elsewhere.
    if (!unanswered.empty()) rerun_ += absl::Now() - std::max(oldest, last_answer_);
    inflight_.clear();
    put_back_ += static_cast<int64_t>(unanswered.size());
  }
  if (!unanswered.empty()) {
    spdlog::info("worker {} ({}): putting back {} unanswered closure(s)", index_, address_,
                 unanswered.size());
  }
  // Oldest first at the front of the queue: put back in reverse id order.
  std::sort(unanswered.begin(), unanswered.end(),
            [](const ClosurePtr& a, const ClosurePtr& b) { return a->id > b->id; });
  for (auto& closure : unanswered) env_.queue->PutBack(std::move(closure));
}

}  // namespace tj
