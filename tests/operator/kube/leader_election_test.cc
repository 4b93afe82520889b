// LeaderElector against an in-memory Lease store (a KubeClient fake with resourceVersion
// conflicts and injectable failures): renew-deadline loss, takeover only after the lease went
// unchanged for its duration on our clock, conflicts, and the MicroTime format. A leader whose
// connection stalls (calls that never answer) stops acting, and its fence closes, before another
// candidate can take the Lease.
#include "operator/kube/leader_election.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/api_error.h"
#include "operator/kube/leader_fence.h"

namespace tj::kube {
namespace {

using nlohmann::json;

// One object store keyed by name, enough for Lease get/create/update.
class FakeLeaseClient : public KubeClient {
 public:
  std::atomic<bool> fail{false};  // every call: Unavailable (API server unreachable)

  absl::StatusOr<json> Get(const ResourceRef& ref) override {
    if (fail) return absl::UnavailableError("fake: unreachable");
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_) return absl::NotFoundError(absl::StrCat("get ", ref.Describe()));
    return *lease_;
  }
  absl::StatusOr<json> Create(const ResourceRef& ref, const json& object) override {
    if (fail) return absl::UnavailableError("fake: unreachable");
    std::lock_guard<std::mutex> lock(mu_);
    if (lease_) return absl::AlreadyExistsError(absl::StrCat("create ", ref.Describe()));
    lease_ = object;
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++rv_);
    return *lease_;
  }
  absl::StatusOr<json> Update(const ResourceRef& ref, const json& object) override {
    if (fail) return absl::UnavailableError("fake: unreachable");
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_) return absl::NotFoundError(absl::StrCat("update ", ref.Describe()));
    if (object["metadata"].value("resourceVersion", "") != std::to_string(rv_)) {
      return ApiError(409, R"({"kind":"Status","code":409,"reason":"Conflict"})", "update",
                      ref.Describe());
    }
    lease_ = object;
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++rv_);
    return *lease_;
  }
  // Another candidate writing the Lease directly.
  void SetSpec(const json& spec) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lease_) lease_ = json{{"metadata", {{"name", "lock"}, {"namespace", "ns"}}}};
    (*lease_)["spec"] = spec;
    (*lease_)["metadata"]["resourceVersion"] = std::to_string(++rv_);
  }
  json Spec() {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_ ? (*lease_)["spec"] : json();
  }

  absl::StatusOr<json> List(const ResourceRef&, const ListOptions&) override { return Nope(); }
  absl::StatusOr<json> UpdateStatus(const ResourceRef&, const json&) override { return Nope(); }
  absl::StatusOr<json> MergePatch(const ResourceRef&, const json&) override { return Nope(); }
  absl::StatusOr<json> JsonPatch(const ResourceRef&, const json&) override { return Nope(); }
  absl::StatusOr<json> Delete(const ResourceRef&, const DeleteOptions&) override { return Nope(); }
  absl::Status Watch(const ResourceRef&, const std::string&, const WatchOptions&,
                     const WatchHandler&) override {
    return absl::UnimplementedError("fake");
  }

 private:
  static absl::Status Nope() { return absl::UnimplementedError("fake"); }
  std::mutex mu_;
  std::optional<json> lease_;
  std::int64_t rv_ = 0;
};

// A candidate's own connection to the shared store: while stalled, every call blocks (no answer,
// no error) until it is released, as through a proxy that stopped forwarding bytes.
class StallingClient : public KubeClient {
 public:
  explicit StallingClient(std::shared_ptr<KubeClient> store) : store_(std::move(store)) {}
  void Stall() {
    std::lock_guard<std::mutex> lock(mu_);
    stalled_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    stalled_ = false;
    cv_.notify_all();
  }
  int blocked() const { return blocked_.load(); }

  absl::StatusOr<json> Get(const ResourceRef& ref) override {
    Wait();
    return store_->Get(ref);
  }
  absl::StatusOr<json> Create(const ResourceRef& ref, const json& object) override {
    Wait();
    return store_->Create(ref, object);
  }
  absl::StatusOr<json> Update(const ResourceRef& ref, const json& object) override {
    Wait();
    return store_->Update(ref, object);
  }
  absl::StatusOr<json> List(const ResourceRef& r, const ListOptions& o) override {
    return store_->List(r, o);
  }
  absl::StatusOr<json> UpdateStatus(const ResourceRef& r, const json& o) override {
    return store_->UpdateStatus(r, o);
  }
  absl::StatusOr<json> MergePatch(const ResourceRef& r, const json& p) override {
    return store_->MergePatch(r, p);
  }
  absl::StatusOr<json> JsonPatch(const ResourceRef& r, const json& p) override {
    return store_->JsonPatch(r, p);
  }
  absl::StatusOr<json> Delete(const ResourceRef& r, const DeleteOptions& o) override {
    return store_->Delete(r, o);
  }
  absl::Status Watch(const ResourceRef& r, const std::string& v, const WatchOptions& o,
                     const WatchHandler& h) override {
    return store_->Watch(r, v, o, h);
  }

 private:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++blocked_;
    cv_.wait(lock, [&] { return !stalled_; });
    --blocked_;
  }
  std::shared_ptr<KubeClient> store_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stalled_ = false;
  std::atomic<int> blocked_{0};
};

bool Eventually(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionConfig Config(const std::string& identity) {
    LeaderElectionConfig c;
    c.lease_namespace = "ns";
    c.lease_name = "lock";
    c.identity = identity;
    c.lease_duration = absl::Seconds(1);
    c.renew_deadline = absl::Milliseconds(500);
    c.retry_period = absl::Milliseconds(100);
    return c;
  }
  void Run(LeaderElectionConfig config) {
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this](std::shared_ptr<Cancellation> leading) {
      ++started_;
      while (!leading->cancelled()) absl::SleepFor(absl::Milliseconds(1));
      ended_leading_at_ = absl::Now();
    };
    callbacks.on_stopped_leading = [this] { ++stopped_; };
    elector_ = std::make_unique<LeaderElector>(client_, std::move(config), callbacks);
    thread_ = std::thread([this] { result_ = elector_->Run(stop_); });
  }
  void TearDown() override {
    stop_->Cancel();
    if (thread_.joinable()) thread_.join();
  }

  std::shared_ptr<FakeLeaseClient> client_ = std::make_shared<FakeLeaseClient>();
  std::shared_ptr<Cancellation> stop_ = std::make_shared<Cancellation>();
  std::unique_ptr<LeaderElector> elector_;
  std::thread thread_;
  absl::Status result_;
  std::atomic<int> started_{0};
  std::atomic<int> stopped_{0};
  std::atomic<absl::Time> ended_leading_at_{absl::InfinitePast()};
};

TEST_F(LeaderElectionTest, CreatesTheLeaseAndRenewsIt) {
  Run(Config("me"));
  ASSERT_TRUE(Eventually([&] { return elector_->IsLeader(); }, absl::Seconds(5)));
  json first = client_->Spec();
  EXPECT_EQ(first["holderIdentity"], "me");
  EXPECT_EQ(first["leaseDurationSeconds"], 1);
  EXPECT_EQ(first["leaseTransitions"], 0);
  EXPECT_EQ(first["acquireTime"], first["renewTime"]);
  ASSERT_TRUE(Eventually([&] { return client_->Spec()["renewTime"] != first["renewTime"]; },
                         absl::Seconds(5)));
  EXPECT_EQ(client_->Spec()["acquireTime"], first["acquireTime"]);  // renewal keeps it
  EXPECT_EQ(client_->Spec()["leaseTransitions"], 0);
  stop_->Cancel();
  thread_.join();
  EXPECT_TRUE(result_.ok()) << result_;
  EXPECT_EQ(started_.load(), 1);
  EXPECT_EQ(stopped_.load(), 1);
  EXPECT_EQ(client_->Spec()["holderIdentity"], "");  // released
  EXPECT_EQ(client_->Spec()["leaseDurationSeconds"], 1);
}

TEST_F(LeaderElectionTest, StopsLeadingWhenRenewalsFailForTheRenewDeadline) {
  Run(Config("me"));
  ASSERT_TRUE(Eventually([&] { return elector_->IsLeader(); }, absl::Seconds(5)));
  const absl::Time cut = absl::Now();
  client_->fail = true;
  ASSERT_TRUE(Eventually([&] { return stopped_.load() == 1; }, absl::Seconds(5)));
  EXPECT_FALSE(elector_->IsLeader());
  const absl::Duration led_on = ended_leading_at_.load() - cut;
  EXPECT_GE(led_on, absl::Milliseconds(400));  // renew_deadline 500 ms from the last renewal
  EXPECT_LT(led_on, absl::Milliseconds(900));  // and well before the 1 s lease runs out
  client_->fail = false;  // back: the lease still names us, so we take it again
  ASSERT_TRUE(Eventually([&] { return started_.load() == 2; }, absl::Seconds(5)));
  EXPECT_EQ(client_->Spec()["leaseTransitions"], 0);
}

TEST_F(LeaderElectionTest, TakesOverOnlyAfterTheLeaseWentUnchangedForItsDuration) {
  // Another holder's renewTime is far in the past by *its* clock: irrelevant, only our
  // observation of change counts.
  client_->SetSpec({{"holderIdentity", "other"},
                    {"leaseDurationSeconds", 1},
                    {"acquireTime", "2000-01-01T00:00:00.000000Z"},
                    {"renewTime", "2000-01-01T00:00:00.000000Z"},
                    {"leaseTransitions", 4}});
  const absl::Time start = absl::Now();
  Run(Config("me"));
  ASSERT_TRUE(Eventually([&] { return elector_->CurrentLeader() == "other"; }, absl::Seconds(5)));
  // "other" renews for a while: we never take over.
  absl::Time last_renewal;
  for (int i = 0; i < 10; ++i) {
    last_renewal = absl::Now();
    client_->SetSpec({{"holderIdentity", "other"},
                      {"leaseDurationSeconds", 1},
                      {"renewTime", FormatMicroTime(absl::Now())},
                      {"leaseTransitions", 4}});
    absl::SleepFor(absl::Milliseconds(150));
    ASSERT_FALSE(elector_->IsLeader());
  }
  ASSERT_TRUE(Eventually([&] { return elector_->IsLeader(); }, absl::Seconds(5)));
  // We saw the last renewal no earlier than it was written, and waited a lease duration from then.
  EXPECT_GE(absl::Now() - last_renewal, absl::Seconds(1));
  EXPECT_GT(absl::Now() - start, absl::Milliseconds(1500));
  EXPECT_EQ(client_->Spec()["holderIdentity"], "me");
  EXPECT_EQ(client_->Spec()["leaseTransitions"], 5);
  EXPECT_NE(client_->Spec()["acquireTime"], "2000-01-01T00:00:00.000000Z");
  EXPECT_EQ(elector_->transitions_observed(), 5);
}

TEST_F(LeaderElectionTest, StopsLeadingAtOnceWhenAnotherHolderIsSeen) {
  Run(Config("me"));
  ASSERT_TRUE(Eventually([&] { return elector_->IsLeader(); }, absl::Seconds(5)));
  const absl::Time stolen = absl::Now();
  client_->SetSpec({{"holderIdentity", "thief"},
                    {"leaseDurationSeconds", 10},
                    {"renewTime", FormatMicroTime(absl::Now())},
                    {"leaseTransitions", 1}});
  ASSERT_TRUE(Eventually([&] { return stopped_.load() == 1; }, absl::Seconds(5)));
  EXPECT_LT(ended_leading_at_.load() - stolen, absl::Milliseconds(400));  // not renew_deadline
  EXPECT_EQ(elector_->CurrentLeader(), "thief");
  stop_->Cancel();
  thread_.join();
  EXPECT_EQ(client_->Spec()["holderIdentity"], "thief");  // not ours: not released
}

TEST_F(LeaderElectionTest, BadConfigIsRejectedNamingTheField) {
  LeaderElectionConfig c = Config("me");
  c.identity.clear();
  LeaderElector no_identity(client_, c, {});
  EXPECT_THAT(std::string(no_identity.Run(stop_).message()), ::testing::HasSubstr("identity"));
  c = Config("me");
  c.renew_deadline = absl::Milliseconds(110);  // < 1.2 * retry_period
  LeaderElector tight(client_, c, {});
  absl::Status status = tight.Run(stop_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("renew_deadline"));
}

TEST_F(LeaderElectionTest, AStalledLeaderStopsActingBeforeItsLeaseCanBeTakenOver) {
  // Candidate a reaches the store through a connection the test stalls; b directly.
  auto a_client = std::make_shared<StallingClient>(client_);
  auto a_fence = std::make_shared<LeaderFence>();
  auto b_fence = std::make_shared<LeaderFence>();
  std::atomic<bool> a_leading{false};
  // What b finds when it starts leading: the instant that matters.
  std::atomic<int> a_leading_when_b_started{-1};
  std::atomic<int> a_fence_open_when_b_started{-1};
  auto config = [&](const std::string& identity, std::shared_ptr<LeaderFence> fence) {
    LeaderElectionConfig c = Config(identity);
    c.lease_duration = absl::Seconds(2);
    c.renew_deadline = absl::Seconds(1);
    c.retry_period = absl::Milliseconds(200);
    c.fence = std::move(fence);
    return c;
  };
  LeaderCallbacks a_callbacks;
  a_callbacks.on_started_leading = [&](std::shared_ptr<Cancellation> leading) {
    a_leading = true;
    while (!leading->cancelled()) absl::SleepFor(absl::Milliseconds(1));
    a_leading = false;
  };
  LeaderCallbacks b_callbacks;
  b_callbacks.on_started_leading = [&](std::shared_ptr<Cancellation> leading) {
    a_leading_when_b_started = a_leading.load() ? 1 : 0;
    a_fence_open_when_b_started = a_fence->IsOpen() ? 1 : 0;
    while (!leading->cancelled()) absl::SleepFor(absl::Milliseconds(1));
  };
  auto a = std::make_unique<LeaderElector>(a_client, config("a", a_fence), a_callbacks);
  auto b = std::make_unique<LeaderElector>(client_, config("b", b_fence), b_callbacks);
  auto a_stop = std::make_shared<Cancellation>();
  auto b_stop = std::make_shared<Cancellation>();
  absl::Status a_result;
  std::thread a_thread([&] { a_result = a->Run(a_stop); });
  std::thread b_thread;
  auto finish = [&] {  // also when an assertion returns early
    a_client->Release();
    a_stop->Cancel();
    b_stop->Cancel();
    if (a_thread.joinable()) a_thread.join();
    if (b_thread.joinable()) b_thread.join();
  };
  struct Finally {
    std::function<void()> f;
    ~Finally() { f(); }
  } finally{finish};

  ASSERT_TRUE(Eventually([&] { return a->IsLeader() && a_fence->IsOpen(); }, absl::Seconds(5)));
  b_thread = std::thread([&] { (void)b->Run(b_stop); });
  ASSERT_TRUE(Eventually([&] { return b->CurrentLeader() == "a"; }, absl::Seconds(5)));
  a_client->Stall();
  // a's renewals now hang; its elector gives each up at its deadline and stops leading within
  // the renew deadline although no call ever returns.
  ASSERT_TRUE(Eventually([&] { return !a->IsLeader(); }, absl::Seconds(5)))
      << "the leader kept leading with its calls hanging";
  EXPECT_FALSE(a_fence->IsOpen());
  EXPECT_GE(a_client->blocked(), 1) << "a's calls were not stalled";
  // b takes over once the Lease went unrenewed for its duration, and by then a had stopped.
  ASSERT_TRUE(Eventually([&] { return b->IsLeader(); }, absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return a_leading_when_b_started.load() != -1; }, absl::Seconds(5)));
  EXPECT_EQ(a_leading_when_b_started.load(), 0) << "two leaders at once";
  EXPECT_EQ(a_fence_open_when_b_started.load(), 0) << "a could still write when b took over";
  EXPECT_TRUE(b_fence->IsOpen());
  EXPECT_EQ(client_->Spec()["holderIdentity"], "b");
}

TEST(LeaderFenceTest, WritesPassOnlyWhileTheFenceIsOpen) {
  auto store = std::make_shared<FakeLeaseClient>();
  store->SetSpec({{"holderIdentity", "x"}});
  auto fence = std::make_shared<LeaderFence>();
  FencedKubeClient client(store, fence);
  const ResourceRef ref{"coordination.k8s.io", "v1", "leases", "ns", "lock", ""};
  EXPECT_FALSE(fence->IsOpen()) << "closed until first opened";
  ASSERT_TRUE(client.Get(ref).ok()) << "reads pass";
  absl::StatusOr<json> refused = client.Update(ref, *client.Get(ref));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("not the leader"));
  EXPECT_EQ(client.Delete(ref, {}).status().code(), absl::StatusCode::kFailedPrecondition);

  fence->OpenUntil(absl::Now() + absl::Hours(1));
  EXPECT_TRUE(client.Update(ref, *client.Get(ref)).ok());
  fence->Close();
  EXPECT_EQ(client.MergePatch(ref, json::object()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  fence->OpenUntil(absl::Now() - absl::Seconds(1));  // a deadline already passed
  EXPECT_FALSE(fence->IsOpen());
}

TEST(MicroTimeTest, FormatsLikeKubernetes) {
  const absl::Time t = absl::FromUnixMicros(1136214245000001);  // 2006-01-02T15:04:05.000001Z
  EXPECT_EQ(FormatMicroTime(t), "2006-01-02T15:04:05.000001Z");
  EXPECT_EQ(FormatMicroTime(absl::FromUnixSeconds(1136214245)), "2006-01-02T15:04:05.000000Z");
}

}  // namespace
}  // namespace tj::kube
