// The informer and leader election against a real kube-apiserver (tests/kube-test-cluster/):
// add/update/delete, 500 events in one watch stream, bookmarks, a watch across a forced 410
// (etcd compaction) that relists and reports the deletions it missed, and two Lease candidates
// (one of them, once, behind a TCP proxy that stops forwarding bytes).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/api_error.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/informer.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/leader_election.h"
#include "operator/kube/leader_fence.h"
#include "tests/operator/kube/kube_cluster_env.h"
#include "tests/support/stalling_tcp_proxy.h"

namespace tj::kube {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::KubeClusterEnvironment;

// Waits (polling; these conditions live in another process) until `condition` holds.
bool Eventually(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// A transport whose watch streams can be cut and refused for a while ("paused"): the informer
// then retries with backoff and is not watching while the test changes things behind its back.
class PausableTransport : public HttpTransport {
 public:
  explicit PausableTransport(std::shared_ptr<HttpTransport> inner) : inner_(std::move(inner)) {}

  void Pause() {
    std::vector<std::shared_ptr<Cancellation>> live;
    {
      std::lock_guard<std::mutex> lock(mu_);
      paused_ = true;
      live.assign(live_.begin(), live_.end());
    }
    for (auto& c : live) c->Cancel();
  }
  void Resume() {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
  }
  int refused() {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_;
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    return inner_->Send(request);
  }

  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const StreamOptions& options,
                                      const ChunkCallback& on_chunk) override {
    auto inner_cancel = std::make_shared<Cancellation>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (paused_) {
        ++refused_;
        return absl::UnavailableError("PausableTransport: paused (connection refused)");
      }
      live_.insert(inner_cancel);
    }
    if (options.cancel) options.cancel->SetHook([inner_cancel] { inner_cancel->Cancel(); });
    StreamOptions forwarded = options;
    forwarded.cancel = inner_cancel;
    absl::StatusOr<HttpResponse> r = inner_->Stream(request, forwarded, on_chunk);
    if (options.cancel) options.cancel->SetHook(nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_.erase(inner_cancel);
    }
    if (inner_cancel->cancelled() && !(options.cancel && options.cancel->cancelled())) {
      return absl::UnavailableError("PausableTransport: connection cut");
    }
    return r;
  }

  std::string server() const override { return inner_->server(); }

 private:
  std::shared_ptr<HttpTransport> inner_;
  std::mutex mu_;
  bool paused_ = false;
  int refused_ = 0;
  std::set<std::shared_ptr<Cancellation>> live_;
};

// Handler calls as "add name", "update name", "delete name", with a condition to wait on.
class Recorder {
 public:
  InformerHandlers Handlers() {
    InformerHandlers h;
    h.on_add = [this](const ObjectPtr& o) { Record("add " + Name(o)); };
    h.on_update = [this](const ObjectPtr&, const ObjectPtr& o) { Record("update " + Name(o)); };
    h.on_delete = [this](const ObjectPtr& o) { Record("delete " + Name(o)); };
    return h;
  }
  bool WaitFor(const std::function<bool(const std::vector<std::string>&)>& pred,
               absl::Duration timeout = absl::Seconds(30)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return pred(log_); });
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  std::size_t Count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::count_if(log_.begin(), log_.end(),
                         [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
  }

 private:
  static std::string Name(const ObjectPtr& o) { return (*o)["metadata"].value("name", ""); }
  void Record(std::string what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back(std::move(what));
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> log_;
};

class InformerIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
    auto config = LoadKubeConfigFiles({KubeClusterEnvironment::kubeconfig()});
    ASSERT_TRUE(config.ok()) << config.status();
    auto transport = CppRestTransport::Create(*config);
    ASSERT_TRUE(transport.ok()) << transport.status();
    transport_ = std::shared_ptr<HttpTransport>(std::move(*transport));
    client_ = std::make_shared<KubeClientImpl>(transport_);
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ns_ = "inf-" + name;
    auto created = client_->Create(*Resource("namespaces"), json{{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok()) << created.status();
  }

  ResourceRef Cm(std::string name = "") { return *Resource("configmaps", ns_, std::move(name)); }
  static json CmObject(const std::string& name, const std::string& value = "1") {
    return json{{"metadata", {{"name", name}, {"labels", {{"it", "yes"}}}}},
                {"data", {{"v", value}}}};
  }
  // The controller-manager adds kube-root-ca.crt to every namespace: select only ours.
  InformerOptions CmInformer() {
    InformerOptions o;
    o.ref = Cm();
    o.label_selector = "it=yes";
    return o;
  }

  std::shared_ptr<HttpTransport> transport_;
  std::shared_ptr<KubeClient> client_;
  std::string ns_;
};

TEST_F(InformerIntegrationTest, SeesAddUpdateDelete) {
  ASSERT_TRUE(client_->Create(Cm(), CmObject("before")).ok());
  Recorder recorder;
  Informer informer(client_, CmInformer(), recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  EXPECT_THAT(recorder.log(), ElementsAre("add before"));

  ASSERT_TRUE(client_->Create(Cm(), CmObject("c")).ok());
  ASSERT_TRUE(client_->MergePatch(Cm("c"), json{{"data", {{"v", "2"}}}}).ok());
  ASSERT_TRUE(client_->Delete(Cm("c"), {}).ok());
  ASSERT_TRUE(recorder.WaitFor([](const auto& log) { return log.size() >= 4; }));
  EXPECT_THAT(recorder.log(), ElementsAre("add before", "add c", "update c", "delete c"));
  EXPECT_EQ(informer.cache().Size(), 1u);
  EXPECT_NE(informer.cache().Get(ns_ + "/before"), nullptr);
  EXPECT_EQ(informer.cache().Get(ns_ + "/c"), nullptr);
  EXPECT_EQ(informer.cache().ListByLabels(ns_, {{"it", "yes"}}).size(), 1u);
}

TEST_F(InformerIntegrationTest, FiveHundredEventsArriveInOneStream) {
  InformerOptions options = CmInformer();
  Recorder recorder;
  Informer informer(client_, options, recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  constexpr int kCount = 500;
  // Two writers, so the server sees concurrent creates as a controller would cause.
  auto create = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto created = client_->Create(Cm(), CmObject(absl::StrCat("many-", i)));
      ASSERT_TRUE(created.ok()) << created.status();
    }
  };
  std::thread first(create, 0, kCount / 2);
  create(kCount / 2, kCount);
  first.join();
  ASSERT_TRUE(recorder.WaitFor([&](const auto& log) { return log.size() >= kCount; }));
  EXPECT_EQ(recorder.Count("add "), static_cast<std::size_t>(kCount));
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.watches_started, 1) << stats.last_error;  // no reconnect needed
  EXPECT_EQ(stats.lists, 1);
  EXPECT_EQ(stats.watch_events, kCount);

  ListOptions list_options;
  list_options.label_selector = "it=yes";
  list_options.limit = 100;
  auto fresh = ListAll(*client_, Cm(), list_options);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  std::map<std::string, std::string> listed, cached;
  for (const json& item : (*fresh)["items"]) {
    listed[ObjectKey(item)] = item["metadata"]["resourceVersion"].get<std::string>();
  }
  for (const ObjectPtr& o : informer.cache().List()) {
    cached[ObjectKey(*o)] = (*o)["metadata"]["resourceVersion"].get<std::string>();
  }
  EXPECT_EQ(listed.size(), static_cast<std::size_t>(kCount));
  EXPECT_EQ(cached, listed);
}

TEST_F(InformerIntegrationTest, BookmarksAdvanceTheResourceVersion) {
  // The watch cache sends a bookmark 2 s before a watch's deadline (and every minute): a 4 s
  // watch gets one at ~2 s.
  InformerOptions options = CmInformer();
  options.watch_timeout_min = absl::Seconds(4);
  options.watch_timeout_max = absl::Seconds(4);
  ASSERT_TRUE(client_->Create(Cm(), CmObject("one")).ok());
  Recorder recorder;
  Informer informer(client_, options, recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  const std::string listed_at = informer.stats().resource_version;
  ASSERT_FALSE(listed_at.empty()) << "synced with no resourceVersion recorded";
  // The watch cache sends a bookmark only at a resourceVersion newer than the watch's start, that
  // is after it processed some ConfigMap event: writes in another namespace (which this watch
  // does not see) provide them.
  bool bookmarked = false;
  for (int i = 0; i < 40 && !bookmarked; ++i) {
    ASSERT_TRUE(client_
                    ->Create(*Resource("configmaps", "default"),
                             json{{"metadata", {{"generateName", "bump-"}}}})
                    .ok());
    bookmarked =
        Eventually([&] { return informer.stats().bookmarks >= 1; }, absl::Milliseconds(500));
  }
  ASSERT_TRUE(bookmarked) << informer.stats().last_error;
  const InformerStats stats = informer.stats();
  ASSERT_FALSE(stats.resource_version.empty()) << "gone after the bookmark: " << stats.last_error;
  EXPECT_GT(std::stoll(stats.resource_version), std::stoll(listed_at));
  EXPECT_EQ(stats.watch_events, 0);
  EXPECT_THAT(recorder.log(), ElementsAre("add one"));  // a bookmark calls no handler
}

// etcd's client URL from the env file up.sh wrote.
std::string EtcdUrl() {
  std::ifstream env(KubeClusterEnvironment::workdir() + "/env");
  std::string line;
  while (std::getline(env, line)) {
    if (line.rfind("TJ_KUBE_ETCD=", 0) == 0) return line.substr(13);
  }
  return "";
}

json EventObject(const std::string& ns, const std::string& name, const std::string& message) {
  return json{{"metadata", {{"name", name}}},
              {"involvedObject", {{"kind", "ConfigMap"}, {"name", "x"}, {"namespace", ns}}},
              {"reason", "Test"},
              {"message", message},
              {"type", "Normal"}};
}

// Events have no watch cache in kube-apiserver (DefaultWatchCacheSizes sets 0), so a watch of
// them is an etcd watch, and compacting etcd past the informer's resourceVersion makes its next
// watch fail with 410 Gone, the way a long disconnection does in production.
TEST_F(InformerIntegrationTest, WatchAcrossEtcdCompactionRelistsAndReportsMissedDeletions) {
  const std::string etcd = EtcdUrl();
  ASSERT_FALSE(etcd.empty()) << "no TJ_KUBE_ETCD in " << KubeClusterEnvironment::workdir()
                             << "/env";
  const ResourceRef events = *Resource("events", ns_);
  for (const char* name : {"e1", "e2", "e3"}) {
    ASSERT_TRUE(client_->Create(events, EventObject(ns_, name, "first")).ok());
  }
  auto pausable = std::make_shared<PausableTransport>(transport_);
  auto client = std::make_shared<KubeClientImpl>(pausable);
  InformerOptions options;
  options.ref = events;
  options.backoff = {absl::Milliseconds(50), absl::Milliseconds(200), 2.0, 0.5};
  Recorder recorder;
  Informer informer(client, options, recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(30)));
  ASSERT_EQ(informer.cache().Size(), 3u);
  ASSERT_TRUE(Eventually([&] { return informer.stats().watches_started >= 1; }, absl::Seconds(10)));

  pausable->Pause();  // the informer now retries its watch and is refused
  ASSERT_TRUE(Eventually([&] { return pausable->refused() >= 1; }, absl::Seconds(10)));
  ASSERT_TRUE(client_->Delete(*Resource("events", ns_, "e1"), {}).ok());
  ASSERT_TRUE(
      client_->MergePatch(*Resource("events", ns_, "e2"), json{{"message", "second"}}).ok());
  auto e4 = client_->Create(events, EventObject(ns_, "e4", "first"));
  ASSERT_TRUE(e4.ok()) << e4.status();
  const std::string revision = (*e4)["metadata"]["resourceVersion"];
  bool ok = false;
  const std::string answer = testing::RunCommand(
      absl::StrCat("curl -fsS -X POST ", etcd, "/v3/kv/compaction -d '{\"revision\":\"", revision,
                   "\",\"physical\":true}'"),
      &ok);
  ASSERT_TRUE(ok) << "etcd compaction at revision " << revision << " failed: " << answer;
  EXPECT_EQ(informer.stats().gone, 0);
  pausable->Resume();

  ASSERT_TRUE(recorder.WaitFor([](const auto& log) { return log.size() >= 6; }))
      << ::testing::PrintToString(recorder.log()) << " " << informer.stats().last_error;
  EXPECT_THAT(recorder.log(),
              ElementsAre("add e1", "add e2", "add e3", "update e2", "add e4", "delete e1"));
  const InformerStats stats = informer.stats();
  EXPECT_GE(stats.gone, 1);
  EXPECT_GE(stats.relists, 1);
  EXPECT_THAT(stats.last_error, HasSubstr("410"));
  EXPECT_EQ(informer.cache().Get(ns_ + "/e1"), nullptr);
  EXPECT_EQ((*informer.cache().Get(ns_ + "/e2"))["message"], "second");
  // And it watches again after the relist: a new event still arrives.
  ASSERT_TRUE(client_->Create(events, EventObject(ns_, "e5", "after")).ok());
  EXPECT_TRUE(recorder.WaitFor([](const auto& log) { return log.size() >= 7; }));
  EXPECT_EQ(recorder.log().back(), "add e5");
}

// Two candidates in one process, each with its own elector (as two operator replicas).
struct Candidate {
  std::unique_ptr<LeaderElector> elector;
  std::shared_ptr<Cancellation> stop = std::make_shared<Cancellation>();
  std::thread thread;
  absl::Status result;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::vector<std::string> leaders_seen;  // on Run's thread; read after join
  std::shared_ptr<LeaderFence> fence = std::make_shared<LeaderFence>();

  ~Candidate() {  // also when an assertion returned early
    stop->Cancel();
    if (thread.joinable()) thread.join();
  }
};

class LeaderElectionIntegrationTest : public InformerIntegrationTest {
 protected:
  // `client`: the candidate's own (default: the fixture's).
  void StartCandidate(Candidate& c, const std::string& identity, bool release,
                      std::shared_ptr<KubeClient> client = nullptr,
                      absl::Duration lease_duration = absl::Seconds(2),
                      absl::Duration renew_deadline = absl::Milliseconds(1500),
                      absl::Duration retry_period = absl::Milliseconds(300)) {
    LeaderElectionConfig config;
    config.lease_namespace = ns_;
    config.lease_name = "operator-lock";
    config.identity = identity;
    config.lease_duration = lease_duration;
    config.renew_deadline = renew_deadline;
    config.retry_period = retry_period;
    config.release_on_cancel = release;
    config.fence = c.fence;
    candidates_.push_back(&c);
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this, &c](std::shared_ptr<Cancellation> leading) {
      ++c.started;
      const int now_leading = ++leading_now_;
      EXPECT_EQ(now_leading, 1) << "two leaders at once";
      for (const Candidate* other : candidates_) {
        if (other != &c) {
          EXPECT_FALSE(other->fence->IsOpen()) << "another leader may still write";
        }
      }
      while (!leading->cancelled()) absl::SleepFor(absl::Milliseconds(5));
      --leading_now_;
    };
    callbacks.on_stopped_leading = [&c] { ++c.stopped; };
    callbacks.on_new_leader = [&c](const std::string& id) { c.leaders_seen.push_back(id); };
    c.elector = std::make_unique<LeaderElector>(client ? client : client_, config, callbacks);
    c.thread = std::thread([&c] { c.result = c.elector->Run(c.stop); });
  }
  static void StopCandidate(Candidate& c) {
    c.stop->Cancel();
    if (c.thread.joinable()) c.thread.join();
  }
  json Lease() {
    auto lease = client_->Get(*Resource("leases", ns_, "operator-lock"));
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? (*lease)["spec"] : json::object();
  }

  std::atomic<int> leading_now_{0};
  std::vector<const Candidate*> candidates_;  // started in this case (they outlive its end)
};

TEST_F(LeaderElectionIntegrationTest, ExactlyOneLeadsAndAReleasedLeaseIsTakenOverAtOnce) {
  Candidate a, b;
  StartCandidate(a, "candidate-a", /*release=*/true);
  StartCandidate(b, "candidate-b", /*release=*/true);
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader() || b.elector->IsLeader(); },
                         absl::Seconds(10)));
  // Hold for a few lease durations: renewals keep one leader, the other never gets in.
  const absl::Time until = absl::Now() + absl::Seconds(3);
  while (absl::Now() < until) {
    ASSERT_NE(a.elector->IsLeader(), b.elector->IsLeader());
    absl::SleepFor(absl::Milliseconds(20));
  }
  Candidate& leader = a.elector->IsLeader() ? a : b;
  Candidate& follower = a.elector->IsLeader() ? b : a;
  const std::string leader_id = leader.elector->CurrentLeader();
  EXPECT_EQ(follower.elector->CurrentLeader(), leader_id);
  EXPECT_EQ(Lease()["holderIdentity"], leader_id);
  EXPECT_EQ(Lease()["leaseTransitions"], 0);
  EXPECT_EQ(leader.started.load(), 1);
  EXPECT_EQ(follower.started.load(), 0);

  const absl::Time stopped_at = absl::Now();
  StopCandidate(leader);
  EXPECT_TRUE(leader.result.ok()) << leader.result;
  EXPECT_EQ(leader.stopped.load(), 1);
  ASSERT_TRUE(Eventually([&] { return follower.elector->IsLeader(); }, absl::Seconds(10)));
  // Released: no waiting out the 2 s lease.
  EXPECT_LT(absl::Now() - stopped_at, absl::Milliseconds(1500));
  EXPECT_EQ(Lease()["holderIdentity"], follower.elector->CurrentLeader());
  EXPECT_EQ(Lease()["leaseTransitions"], 1);
  EXPECT_EQ(follower.started.load(), 1);
  StopCandidate(follower);
  EXPECT_TRUE(follower.result.ok()) << follower.result;
  EXPECT_EQ(Lease()["holderIdentity"], "");  // released again
  EXPECT_THAT(follower.leaders_seen, ::testing::Contains(leader_id));
}

TEST_F(LeaderElectionIntegrationTest, ALeaseNotRenewedIsTakenOverAfterItsDuration) {
  Candidate a, b;
  StartCandidate(a, "candidate-a", /*release=*/false);  // a crashing leader releases nothing
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, absl::Seconds(10)));
  StartCandidate(b, "candidate-b", /*release=*/false);
  ASSERT_TRUE(
      Eventually([&] { return b.elector->CurrentLeader() == "candidate-a"; }, absl::Seconds(10)));
  const absl::Time stopped_at = absl::Now();
  StopCandidate(a);
  EXPECT_EQ(Lease()["holderIdentity"], "candidate-a");  // not released
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, absl::Seconds(10)));
  const absl::Duration took = absl::Now() - stopped_at;
  // b saw a's last renewal at most one retry period (+ jitter) before a stopped, and may take
  // over only after the 2 s lease duration has passed since then.
  EXPECT_GE(took, absl::Seconds(2) - absl::Milliseconds(400));
  EXPECT_LT(took, absl::Seconds(2) + absl::Seconds(2));
  EXPECT_EQ(Lease()["holderIdentity"], "candidate-b");
  EXPECT_EQ(Lease()["leaseTransitions"], 1);
  StopCandidate(b);
  EXPECT_EQ(b.started.load(), 1);
  EXPECT_EQ(b.stopped.load(), 1);
}

TEST_F(LeaderElectionIntegrationTest, ALeaderWhoseConnectionStallsStopsBeforeAnotherTakesOver) {
  // Candidate a reaches the API server through a proxy; the test makes it stop forwarding bytes
  // without closing anything. a's client is what tj-operator gives its elector: no retries, a
  // request timeout of one Lease call. The candidates outlive the proxy: its end closes the
  // stalled connections, so a call a abandoned ends before a's elector joins it.
  Candidate a, b;
  auto config = LoadKubeConfigFiles({KubeClusterEnvironment::kubeconfig()});
  ASSERT_TRUE(config.ok()) << config.status();
  const size_t colon = config->server.rfind(':');
  ASSERT_NE(colon, std::string::npos) << config->server;
  tj::testing::StallingTcpProxy proxy(std::stoi(config->server.substr(colon + 1)));
  config->server = absl::StrCat(config->server.substr(0, config->server.find("://") + 3),
                                "127.0.0.1:", proxy.port());
  auto transport = CppRestTransport::Create(*config);
  ASSERT_TRUE(transport.ok()) << transport.status();
  RetryPolicy no_retry;
  no_retry.max_attempts = 1;
  const absl::Duration lease = absl::Seconds(4);
  const absl::Duration renew = absl::Seconds(2);
  const absl::Duration retry = absl::Milliseconds(500);
  LeaderElectionConfig timing;
  timing.renew_deadline = renew;
  auto proxied = std::make_shared<KubeClientImpl>(
      std::shared_ptr<HttpTransport>(std::move(*transport)), no_retry, LeaseCallTimeout(timing));

  StartCandidate(a, "candidate-a", /*release=*/false, proxied, lease, renew, retry);
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, absl::Seconds(10)));
  EXPECT_TRUE(a.fence->IsOpen());
  StartCandidate(b, "candidate-b", /*release=*/false, nullptr, lease, renew, retry);
  ASSERT_TRUE(
      Eventually([&] { return b.elector->CurrentLeader() == "candidate-a"; }, absl::Seconds(10)));
  const int connections_before = proxy.accepted();
  const absl::Time stalled_at = absl::Now();
  proxy.Stall();
  // a's renewals get no answer: it stops leading (and its fence closes) although no call ever
  // returns an error; then b, which saw the Lease unchanged for its duration, takes over. The
  // candidates' on_started_leading checks that b never leads while a does or may still write.
  ASSERT_TRUE(Eventually([&] { return !a.elector->IsLeader(); }, absl::Seconds(20)))
      << "the leader kept leading with its connection stalled";
  const absl::Duration a_stopped_after = absl::Now() - stalled_at;
  EXPECT_FALSE(a.fence->IsOpen());
  EXPECT_EQ(a.stopped.load(), 1);
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, absl::Seconds(20)));
  const absl::Duration b_led_after = absl::Now() - stalled_at;
  EXPECT_GT(proxy.accepted(), connections_before) << "a kept trying, through the proxy";
  EXPECT_EQ(Lease()["holderIdentity"], "candidate-b");
  EXPECT_EQ(b.started.load(), 1);
  std::cerr << "stalled: a stopped leading after " << absl::FormatDuration(a_stopped_after)
            << " (renew deadline " << absl::FormatDuration(renew) << "), b led after "
            << absl::FormatDuration(b_led_after) << " (lease " << absl::FormatDuration(lease)
            << ")\n";
  StopCandidate(b);
}

TEST_F(LeaderElectionIntegrationTest, BadConfigNamesTheField) {
  LeaderElectionConfig config;
  config.lease_namespace = ns_;
  config.lease_name = "x";
  config.identity = "me";
  config.renew_deadline = absl::Seconds(20);  // longer than the 15 s lease
  LeaderElector elector(client_, config, {});
  absl::Status status = elector.Run(std::make_shared<Cancellation>());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("lease_duration"));
}

}  // namespace
}  // namespace tj::kube

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
