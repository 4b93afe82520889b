// What the reconciler reports and sends, recorded for tests: Events ("Normal Reason: message"),
// preemption notices, and a coordinator's progress fixed by the test. Shared by the reconciler's
// unit tests (over fakes) and its integration tests (the real API server).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "operator/controller/coordinator_progress.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/preemption_notifier.h"

namespace tj::op::testing {

class RecordingEvents : public EventSink {
 public:
  void Record(const nlohmann::json& object, EventType type, const std::string& reason,
              const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(absl::StrCat(type == EventType::kWarning ? "Warning " : "Normal ", reason,
                                   ": ", message));
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  bool Has(const std::string& text) const {
    for (const std::string& e : events()) {
      if (e.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

class RecordingNotifier : public PreemptionNotifier {
 public:
  void Send(PreemptionNotice notice) override {
    std::lock_guard<std::mutex> lock(mu_);
    notices_.push_back(std::move(notice));
  }
  std::vector<PreemptionNotice> notices() const {
    std::lock_guard<std::mutex> lock(mu_);
    return notices_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<PreemptionNotice> notices_;
};

// What the coordinator would publish, without a coordinator.
class FixedProgress : public CoordinatorProgress {
 public:
  void Refresh(const std::string& job, const std::string& address, const std::string& token,
               std::shared_ptr<const CoordinatorTls> tls) override {
    std::lock_guard<std::mutex> lock(mu_);
    refreshed_ = job + " " + address + " " + (token.empty() ? "no token" : "token") + " " +
                 (tls ? "tls " + tls->server_name : "plaintext");
  }
  std::optional<v1alpha1::TrainingProgress> Latest(const std::string& job) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return progress_;
  }
  void Forget(const std::string& job) override {}
  void Set(int64_t step, int64_t checkpoint, std::string checkpoint_error = "") {
    std::lock_guard<std::mutex> lock(mu_);
    progress_ = v1alpha1::TrainingProgress{};
    progress_->step = step;
    progress_->last_checkpoint_step = checkpoint;
    progress_->checkpoint_error = std::move(checkpoint_error);
  }
  std::string refreshed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return refreshed_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<v1alpha1::TrainingProgress> progress_;
  std::string refreshed_;
};

}  // namespace tj::op::testing
