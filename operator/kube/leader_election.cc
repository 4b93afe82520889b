#include "operator/kube/leader_election.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "operator/kube/api_error.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

// Cancellation has a single hook slot, which a transport takes while the same token aborts a
// stream; so waits here check the flag on a short tick rather than install a hook.
constexpr absl::Duration kStopTick = absl::Milliseconds(20);

std::string SpecString(const nlohmann::json& spec, const char* field) {
  auto it = spec.find(field);
  return it != spec.end() && it->is_string() ? it->get<std::string>() : "";
}

std::int64_t SpecInt(const nlohmann::json& spec, const char* field, std::int64_t fallback) {
  auto it = spec.find(field);
  return it != spec.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

absl::Status Validate(const LeaderElectionConfig& c) {
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("leader election config: ", what));
  };
  if (c.lease_namespace.empty()) return bad("lease_namespace is empty");
  if (c.lease_name.empty()) return bad("lease_name is empty");
  if (c.identity.empty()) return bad("identity is empty");
  if (c.retry_period <= absl::ZeroDuration()) return bad("retry_period must be positive");
  if (c.renew_deadline <= c.retry_period * 1.2) {
    return bad("renew_deadline must be greater than 1.2 * retry_period");
  }
  if (c.lease_duration <= c.renew_deadline) {
    return bad("lease_duration must be greater than renew_deadline");
  }
  if (c.lease_duration < absl::Seconds(1)) {
    return bad("lease_duration must be at least 1s (leaseDurationSeconds is whole seconds)");
  }
  if (c.call_timeout < absl::ZeroDuration() || c.call_timeout >= c.renew_deadline) {
    return bad("call_timeout must be shorter than renew_deadline (zero: renew_deadline / 2)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Duration LeaseCallTimeout(const LeaderElectionConfig& config) {
  return config.call_timeout > absl::ZeroDuration() ? config.call_timeout
                                                    : config.renew_deadline / 2;
}

// Runs one Lease call on a helper thread and waits for it until a deadline, so a stalled
// connection (no byte, no close) costs the elector at most that long whatever the transport's own
// timeouts. A call that misses its deadline is abandoned: its thread ends when the client gives
// up, and no new call starts before then, so at most one is ever in flight.
class LeaderElector::LeaseCalls {
 public:
  using Call = std::function<absl::StatusOr<nlohmann::json>()>;

  ~LeaseCalls() {
    if (thread_.joinable()) thread_.join();
  }

  absl::StatusOr<nlohmann::json> Run(Call call, absl::Time deadline, const std::string& what) {
    if (thread_.joinable()) {
      {
        StdMutexLock lock(outcome_->mu);
        if (!outcome_->done) {
          return absl::DeadlineExceededError(
              absl::StrCat(what, ": not sent: an earlier Lease call is still unanswered"));
        }
      }
      thread_.join();
    }
    auto outcome = std::make_shared<Outcome>();
    outcome_ = outcome;
    thread_ = std::thread([outcome, call = std::move(call)] {
      absl::StatusOr<nlohmann::json> result = call();
      StdMutexLock lock(outcome->mu);
      outcome->result = std::move(result);
      outcome->done = true;
      outcome->cv.notify_all();
    });
    const absl::Duration wait = std::max(deadline - absl::Now(), absl::ZeroDuration());
    StdMutexLock lock(outcome->mu);
    if (!outcome->cv.wait_for(lock.native(), absl::ToChronoNanoseconds(wait),
                              [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(outcome->mu) { return outcome->done; })) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": no answer within ", absl::FormatDuration(wait), "; abandoned"));
    }
    absl::StatusOr<nlohmann::json> result = std::move(outcome->result);
    lock.unlock();
    thread_.join();
    return result;
  }

 private:
  struct Outcome {
    StdMutex mu;
    std::condition_variable cv;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<nlohmann::json> result ABSL_GUARDED_BY(mu) = absl::UnknownError("not answered");
  };
  std::shared_ptr<Outcome> outcome_;
  std::thread thread_;
};

std::string FormatMicroTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

LeaderElector::LeaderElector(std::shared_ptr<KubeClient> client, LeaderElectionConfig config,
                             LeaderCallbacks callbacks)
    : client_(std::move(client)),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      rng_state_(std::random_device{}()),
      calls_(std::make_unique<LeaseCalls>()) {}

LeaderElector::~LeaderElector() = default;

bool LeaderElector::IsLeader() const {
  StdMutexLock lock(mu_);
  return leader_;
}

std::string LeaderElector::CurrentLeader() const {
  StdMutexLock lock(mu_);
  return current_leader_;
}

std::int64_t LeaderElector::transitions_observed() const {
  StdMutexLock lock(mu_);
  return transitions_;
}

bool LeaderElector::WaitUnlessStopped(const std::shared_ptr<Cancellation>& stop,
                                      absl::Duration delay) {
  const absl::Time deadline = absl::Now() + delay;
  while (!stop->cancelled()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return true;
    absl::SleepFor(std::min(left, kStopTick));
  }
  return false;
}

absl::Duration LeaderElector::Jittered(absl::Duration d) {
  std::mt19937_64 rng(rng_state_++);
  return d + d * std::uniform_real_distribution<double>(0.0, 0.2)(rng);
}

void LeaderElector::Observe(const nlohmann::json& spec, absl::Time now) {
  // Expiry is judged by when *we* saw the record change, so clock skew between candidates does
  // not matter (client-go's observedTime).
  if (spec != observed_spec_) {
    observed_spec_ = spec;
    observed_time_ = now;
  }
  const std::string holder = SpecString(spec, "holderIdentity");
  {
    StdMutexLock lock(mu_);
    current_leader_ = holder;
    transitions_ = SpecInt(spec, "leaseTransitions", 0);
  }
  if (!holder.empty() && holder != reported_leader_) {
    reported_leader_ = holder;
    if (callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
  }
}

LeaderElector::Attempt LeaderElector::TryAcquireOrRenew(absl::Time deadline) {
  const ResourceRef ref{"coordination.k8s.io", "v1", "leases", config_.lease_namespace,
                        config_.lease_name,    ""};
  const absl::Time now = absl::Now();
  const std::string now_text = FormatMicroTime(now);
  const std::int64_t duration_s = absl::ToInt64Seconds(config_.lease_duration);
  std::shared_ptr<KubeClient> client = client_;
  const std::string what = absl::StrCat("Lease ", config_.lease_namespace, "/", config_.lease_name);

  absl::StatusOr<nlohmann::json> lease =
      calls_->Run([client, ref] { return client->Get(ref); }, deadline, "get " + what);
  if (lease.status().code() == absl::StatusCode::kNotFound) {
    nlohmann::json spec = {{"holderIdentity", config_.identity},
                           {"leaseDurationSeconds", duration_s},
                           {"acquireTime", now_text},
                           {"renewTime", now_text},
                           {"leaseTransitions", 0}};
    nlohmann::json object = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", spec}};
    absl::StatusOr<nlohmann::json> created = calls_->Run(
        [client, ref, object] { return client->Create(ref, object); }, deadline, "create " + what);
    if (!created.ok()) {
      // AlreadyExists: another candidate created it first; we look again next round.
      if (created.status().code() != absl::StatusCode::kAlreadyExists) {
        spdlog::warn("leader election: {}", std::string(created.status().message()));
      }
      return Attempt::kFailed;
    }
    Observe(spec, absl::Now());
    return Attempt::kHolding;
  }
  if (!lease.ok()) {
    spdlog::warn("leader election: {}", std::string(lease.status().message()));
    return Attempt::kFailed;
  }
  // Observed when the answer arrived, not when the call left: the holder's renewal we see may
  // have started after our call did, and its expiry must be judged from no earlier than that.
  const absl::Time observed = absl::Now();
  nlohmann::json spec = lease->contains("spec") && (*lease)["spec"].is_object()
                            ? (*lease)["spec"]
                            : nlohmann::json::object();
  Observe(spec, observed);
  const std::string holder = SpecString(spec, "holderIdentity");
  const absl::Duration held_for = absl::Seconds(SpecInt(spec, "leaseDurationSeconds", 0));
  if (!holder.empty() && holder != config_.identity && observed_time_ + held_for > observed) {
    return Attempt::kHeldByOther;
  }
  const bool renewing = holder == config_.identity;
  nlohmann::json next = spec;
  next["holderIdentity"] = config_.identity;
  next["leaseDurationSeconds"] = duration_s;
  next["renewTime"] = now_text;
  if (!renewing || !next.contains("acquireTime")) next["acquireTime"] = now_text;
  if (!renewing) next["leaseTransitions"] = SpecInt(spec, "leaseTransitions", 0) + 1;
  nlohmann::json object = *lease;
  object["spec"] = next;  // metadata.resourceVersion kept: a concurrent writer makes this a 409
  absl::StatusOr<nlohmann::json> updated = calls_->Run(
      [client, ref, object] { return client->Update(ref, object); }, deadline, "update " + what);
  if (!updated.ok()) {
    if (!IsConflict(updated.status())) {
      spdlog::warn("leader election: {}", std::string(updated.status().message()));
    }
    return Attempt::kFailed;
  }
  Observe(next, absl::Now());
  return Attempt::kHolding;
}

void LeaderElector::Release() {
  const ResourceRef ref{"coordination.k8s.io", "v1", "leases", config_.lease_namespace,
                        config_.lease_name,    ""};
  std::shared_ptr<KubeClient> client = client_;
  const absl::Time deadline = absl::Now() + LeaseCallTimeout(config_);
  absl::StatusOr<nlohmann::json> lease =
      calls_->Run([client, ref] { return client->Get(ref); }, deadline, "release: get the Lease");
  if (!lease.ok() || !lease->contains("spec") || !(*lease)["spec"].is_object()) return;
  nlohmann::json& spec = (*lease)["spec"];
  if (SpecString(spec, "holderIdentity") != config_.identity) return;
  const std::string now_text = FormatMicroTime(absl::Now());
  // What client-go's release writes: no holder, a 1 s duration, times of the release.
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = now_text;
  spec["renewTime"] = now_text;
  absl::StatusOr<nlohmann::json> updated =
      calls_->Run([client, ref, object = *lease] { return client->Update(ref, object); }, deadline,
                  "release: update the Lease");
  if (!updated.ok()) {
    spdlog::warn("leader election: release: {}", std::string(updated.status().message()));
    return;
  }
  StdMutexLock lock(mu_);
  current_leader_.clear();
}

absl::Status LeaderElector::Run(const std::shared_ptr<Cancellation>& stop) {
  if (stop == nullptr) return absl::InvalidArgumentError("LeaderElector::Run: stop is null");
  if (absl::Status valid = Validate(config_); !valid.ok()) return valid;
  while (!stop->cancelled()) {
    // Acquire: retry_period (+ jitter) between attempts.
    const absl::Time start = absl::Now();
    if (TryAcquireOrRenew(start + LeaseCallTimeout(config_)) != Attempt::kHolding) {
      if (!WaitUnlessStopped(stop, Jittered(config_.retry_period))) break;
      continue;
    }
    Lead(stop, start + config_.renew_deadline);
  }
  return absl::OkStatus();
}

void LeaderElector::Lead(const std::shared_ptr<Cancellation>& stop, absl::Time valid_until) {
  spdlog::info("leader election: {} now leads {}/{}", config_.identity, config_.lease_namespace,
               config_.lease_name);
  if (config_.fence) config_.fence->OpenUntil(valid_until);
  {
    StdMutexLock lock(mu_);
    leader_ = true;
  }
  auto leading = std::make_shared<Cancellation>();
  std::thread leader_thread;
  if (callbacks_.on_started_leading) {
    leader_thread = std::thread([this, leading] { callbacks_.on_started_leading(leading); });
  }
  // Renew every retry_period. Leadership lasts until `valid_until`, the start of the last
  // successful renewal + renew_deadline: no call may run past it (each is cut at it), and
  // another candidate cannot take the Lease before (it waits lease_duration > renew_deadline
  // from when it saw that renewal, which it saw after the renewal started).
  std::string lost;
  while (true) {
    const absl::Time wake = std::min(absl::Now() + config_.retry_period, valid_until);
    if (!WaitUnlessStopped(stop, wake - absl::Now())) break;
    const absl::Time start = absl::Now();
    if (start >= valid_until) {
      lost = "no renewal succeeded within the renew deadline";
      break;
    }
    const Attempt attempt =
        TryAcquireOrRenew(std::min(start + LeaseCallTimeout(config_), valid_until));
    if (attempt == Attempt::kHolding) {
      valid_until = start + config_.renew_deadline;
      if (config_.fence) config_.fence->OpenUntil(valid_until);
      continue;
    }
    if (attempt == Attempt::kHeldByOther) {
      lost = "another holder took the Lease";
      break;
    }
    if (absl::Now() >= valid_until) {
      lost = "no renewal succeeded within the renew deadline";
      break;
    }
  }
  if (config_.fence) config_.fence->Close();
  if (!lost.empty()) {
    spdlog::warn("leader election: {} lost {}/{}: {}", config_.identity, config_.lease_namespace,
                 config_.lease_name, lost);
  }
  leading->Cancel();
  if (leader_thread.joinable()) leader_thread.join();
  {
    StdMutexLock lock(mu_);
    leader_ = false;
  }
  if (stop->cancelled() && config_.release_on_cancel) Release();
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace tj::kube
