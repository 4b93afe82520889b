#include "coordinator/worker/run_stream_session.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tj {
namespace {
// Results are flushed when the backlog empties or the batch reaches this size.
constexpr int kMaxResultsPerBatch = 256;
}  // namespace

void RunStreamSession::CancelLocked(uint64_t id) {
  if (running_flag_ != nullptr && running_id_ == id) {
    running_flag_->Cancel();
    return;
  }
  for (const auto& pending : pending_) {
    if (pending.request.closure_id() == id) {
      cancelled_pending_.insert(id);
      return;
    }
  }
}

grpc::Status RunStreamSession::Serve() {
  std::thread executor([this] { ExecutorLoop(); });
  v1::RunBatch batch;
  grpc::Status ended = grpc::Status::OK;
  while (stream_->Read(&batch)) {
    if (fence_ != nullptr && fence_->newest() > generation_) {
      ended = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                           absl::StrCat("RunStream refused: it comes from coordinator generation ",
                                        generation_, ", older than generation ", fence_->newest(),
                                        ", which this worker has seen: a newer coordinator took "
                                        "over"));
      break;
    }
    const auto received = std::chrono::steady_clock::now();
    absl::MutexLock lock(&mu_);
    for (auto& run : *batch.mutable_runs()) pending_.push_back(Pending{std::move(run), received});
    for (uint64_t id : batch.cancel_ids()) CancelLocked(id);
  }
  {
    // The coordinator is gone or done: whatever it has not been answered for is its to re-run.
    absl::MutexLock lock(&mu_);
    closing_ = true;
    pending_.clear();
    if (running_flag_ != nullptr) running_flag_->Cancel();
  }
  executor.join();
  return ended;
}

void RunStreamSession::ExecutorLoop() {
  v1::ResultBatch out;
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !pending_.empty() || closing_;
  };
  bool stream_broken = false;
  while (true) {
    v1::RunRequest request;
    std::chrono::steady_clock::time_point received;
    bool cancelled = false;
    CancellationFlag flag;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&has_work));
      if (closing_) break;
      request = std::move(pending_.front().request);
      received = pending_.front().received;
      pending_.pop_front();
      cancelled = cancelled_pending_.erase(request.closure_id()) > 0;
      if (!cancelled) {
        running_id_ = request.closure_id();
        running_flag_ = &flag;
      }
    }
    if (cancelled) flag.Cancel();
    v1::RunResult* result = out.add_results();
    // Time queued here behind earlier closures: the coordinator subtracts it from the round trip, or
    // it would read as network overhead and grow the window for long closures.
    result->set_wait_micros(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                              received)
            .count()));
    runner_->Run(request, &flag, result);
    bool flush;
    {
      absl::MutexLock lock(&mu_);
      running_flag_ = nullptr;
      flush = pending_.empty() || out.results_size() >= kMaxResultsPerBatch;
    }
    if (flush && !stream_broken) {
      if (!stream_->Write(out)) {
        spdlog::warn("worker: result stream to the coordinator broke; dropping its results");
        stream_broken = true;
      }
      out.Clear();
    }
  }
}

}  // namespace tj
