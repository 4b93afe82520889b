// The informer over a scripted transport: list then watch, resume from the last resourceVersion,
// bookmarks, relist after 410 with missed deletions, handler order, WaitForSync, resync, Stop.
#include "operator/kube/informer.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/kube_client_impl.h"
#include "tests/operator/kube/holding_transport.h"

namespace tj::kube {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HoldingTransport;

json Cm(const std::string& name, const std::string& rv, const std::string& value = "x") {
  return json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}},
              {"data", {{"v", value}}}};
}

// List items come without apiVersion/kind, as from a real server.
std::string ListBody(const std::vector<json>& items, const std::string& rv,
                     const std::string& continue_token = "") {
  json list = {{"apiVersion", "v1"},
               {"kind", "ConfigMapList"},
               {"metadata", {{"resourceVersion", rv}}},
               {"items", json::array()}};
  if (!continue_token.empty()) list["metadata"]["continue"] = continue_token;
  for (json item : items) {
    item.erase("apiVersion");
    item.erase("kind");
    list["items"].push_back(item);
  }
  return list.dump();
}

std::string Event(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

std::string Bookmark(const std::string& rv) {
  return Event(
      "BOOKMARK",
      {{"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}});
}

std::string Gone() {
  return Event("ERROR", {{"kind", "Status"},
                         {"apiVersion", "v1"},
                         {"status", "Failure"},
                         {"message", "too old resource version: 7 (9)"},
                         {"reason", "Expired"},
                         {"code", 410}});
}

std::string Describe(const ObjectPtr& o) {
  return absl::StrCat(o->at("metadata").value("name", ""), "@",
                      o->at("metadata").value("resourceVersion", ""));
}

// Records handler calls as "add a@5", "update b@6->9", "delete c@7"; fails the test if two
// handlers ever run at once.
class Recorder {
 public:
  InformerHandlers Handlers() {
    InformerHandlers h;
    h.on_add = [this](const ObjectPtr& o) { Record("add " + Describe(o)); };
    h.on_update = [this](const ObjectPtr& old_object, const ObjectPtr& new_object) {
      Record("update " + Describe(old_object) + "->" +
             new_object->at("metadata").value("resourceVersion", ""));
    };
    h.on_delete = [this](const ObjectPtr& o) { Record("delete " + Describe(o)); };
    return h;
  }
  bool WaitForCount(std::size_t n, absl::Duration timeout = absl::Seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return log_.size() >= n; });
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

 private:
  void Record(const std::string& what) {
    EXPECT_EQ(in_handler_.fetch_add(1), 0) << "two handlers at once";
    {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back(what);
    }
    in_handler_.fetch_sub(1);
    cv_.notify_all();
  }
  std::atomic<int> in_handler_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> log_;
};

// Query value of `key` in a request path ("" if absent).
std::string QueryValue(const std::string& path, const std::string& key) {
  const std::string needle = key + "=";
  std::size_t pos = path.find("?" + needle);
  if (pos == std::string::npos) pos = path.find("&" + needle);
  if (pos == std::string::npos) return "";
  pos += needle.size() + 1;
  return path.substr(pos, path.find('&', pos) - pos);
}

std::vector<std::string> WatchResourceVersions(const std::vector<HttpRequest>& requests) {
  std::vector<std::string> out;
  for (const HttpRequest& r : requests) {
    if (QueryValue(r.path, "watch") == "true") out.push_back(QueryValue(r.path, "resourceVersion"));
  }
  return out;
}

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() : transport_(std::make_shared<HoldingTransport>()) {
    RetryPolicy no_retry;
    no_retry.max_attempts = 1;
    client_ = std::make_shared<KubeClientImpl>(transport_, no_retry);
    options_.ref = *Resource("configmaps", "ns");
    options_.backoff = {absl::Milliseconds(1), absl::Milliseconds(4), 2.0, 0.0};
  }

  std::unique_ptr<Informer> Make() {
    return std::make_unique<Informer>(client_, options_, recorder_.Handlers());
  }

  testing::FakeTransport& fake() { return transport_->fake(); }

  std::shared_ptr<HoldingTransport> transport_;
  std::shared_ptr<KubeClient> client_;
  InformerOptions options_;
  Recorder recorder_;
};

TEST_F(InformerTest, ListsPagedThenWatchesFromTheListsResourceVersion) {
  options_.page_size = 2;
  fake().PushJson(200, ListBody({Cm("a", "3"), Cm("b", "4")}, "5", "token-1"));
  fake().PushJson(200, ListBody({Cm("c", "5")}, "6"));
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(absl::Seconds(10)));
  ASSERT_TRUE(transport_->WaitForHolds(1));
  EXPECT_THAT(recorder_.log(), ElementsAre("add a@3", "add b@4", "add c@5"));
  EXPECT_EQ(informer->cache().Size(), 3u);
  ObjectPtr a = informer->cache().Get("ns/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value("kind", ""), "ConfigMap");  // filled in from the list's kind
  EXPECT_EQ(a->value("apiVersion", ""), "v1");
  const std::vector<HttpRequest> requests = fake().requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(QueryValue(requests[0].path, "limit"), "2");
  EXPECT_EQ(QueryValue(requests[1].path, "continue"), "token-1");
  EXPECT_EQ(QueryValue(requests[2].path, "resourceVersion"), "6");
  EXPECT_EQ(QueryValue(requests[2].path, "allowWatchBookmarks"), "true");
  const int timeout = std::stoi(QueryValue(requests[2].path, "timeoutSeconds"));
  EXPECT_GE(timeout, 300);
  EXPECT_LE(timeout, 600);
  InformerStats stats = informer->stats();
  EXPECT_EQ(stats.lists, 1);
  EXPECT_EQ(stats.relists, 0);
  EXPECT_EQ(stats.watches_started, 1);
}

TEST_F(InformerTest, DroppedStreamResumesFromTheLastResourceVersionSeen) {
  fake().PushJson(200, ListBody({Cm("a", "10")}, "10"));
  testing::ScriptedResponse dropped;
  dropped.response.status = 200;
  dropped.chunks = {Event("ADDED", Cm("b", "11")), Event("MODIFIED", Cm("a", "12", "y"))};
  dropped.stream_end = absl::UnavailableError("connection reset by peer");
  fake().Push(dropped);
  // A stream that breaks mid-event: only the complete event before it counts.
  fake().PushStream({Event("ADDED", Cm("c", "13")), R"({"type":"ADDED","obj)"},
                    absl::UnavailableError("connection reset by peer"));
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  ASSERT_TRUE(recorder_.WaitForCount(4));
  EXPECT_THAT(recorder_.log(), ElementsAre("add a@10", "add b@11", "update a@10->12", "add c@13"));
  EXPECT_THAT(WatchResourceVersions(fake().requests()), ElementsAre("10", "12", "13"));
  EXPECT_EQ((*informer->cache().Get("ns/a"))["data"]["v"], "y");
  InformerStats stats = informer->stats();
  EXPECT_EQ(stats.lists, 1);  // resumed, not relisted
  EXPECT_EQ(stats.watches_started, 3);
  EXPECT_THAT(stats.last_error, HasSubstr("connection reset"));
}

TEST_F(InformerTest, TransformAppliesToListedAndWatchedObjectsBeforeCaching) {
  options_.transform = [](nlohmann::json& object) {
    object["metadata"].erase("managedFields");
    object["metadata"]["labels"]["seen"] = "yes";
  };
  nlohmann::json a = Cm("a", "5");
  a["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  nlohmann::json b = Cm("b", "6");
  b["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  fake().PushJson(200, ListBody({a}, "5"));
  fake().PushStream({Event("ADDED", b)});
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  ASSERT_TRUE(recorder_.WaitForCount(2));
  for (const char* key : {"ns/a", "ns/b"}) {
    ObjectPtr cached = informer->cache().Get(key);
    ASSERT_NE(cached, nullptr) << key;
    EXPECT_FALSE((*cached)["metadata"].contains("managedFields")) << key;
    EXPECT_EQ((*cached)["metadata"]["labels"]["seen"], "yes") << key;
  }
}

// `keep` refuses objects (here those without data v=keep): never cached nor reported; one that
// stops being kept is reported deleted; one never kept is not reported deleted either.
TEST_F(InformerTest, KeepFiltersListedAndWatchedObjects) {
  options_.keep = [](const nlohmann::json& object) {
    return object.contains("data") && object["data"].value("v", "") == "keep";
  };
  fake().PushJson(200, ListBody({Cm("a", "5", "keep"), Cm("b", "6", "other")}, "6"));
  fake().PushStream({Event("ADDED", Cm("c", "7", "other")), Event("MODIFIED", Cm("a", "8")),
                     Event("DELETED", Cm("c", "9", "other")), Event("ADDED", Cm("d", "10", "keep"))});
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  ASSERT_TRUE(recorder_.WaitForCount(3));
  EXPECT_THAT(recorder_.log(), ElementsAre("add a@5", "delete a@5", "add d@10"));
  EXPECT_EQ(informer->cache().Size(), 1u);
  EXPECT_NE(informer->cache().Get("ns/d"), nullptr);
}

TEST_F(InformerTest, BookmarkAdvancesTheResourceVersionWithoutAHandlerCall) {
  fake().PushJson(200, ListBody({Cm("a", "5")}, "5"));
  fake().PushStream({Bookmark("20")});  // then the server ends the watch cleanly
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  ASSERT_TRUE(informer->WaitForSync(absl::Seconds(10)));
  EXPECT_THAT(WatchResourceVersions(fake().requests()), ElementsAre("5", "20"));
  EXPECT_THAT(recorder_.log(), ElementsAre("add a@5"));
  EXPECT_EQ(informer->notifications_dispatched(), 1);
  EXPECT_EQ(informer->stats().bookmarks, 1);
  EXPECT_EQ(informer->stats().resource_version, "20");
}

TEST_F(InformerTest, RelistAfterGoneReportsMissedDeletionsAndChanges) {
  fake().PushJson(200, ListBody({Cm("a", "5"), Cm("b", "6"), Cm("c", "7")}, "7"));
  fake().PushStream({Gone()});
  // Meanwhile: b changed, c was deleted, d was created; a is unchanged.
  fake().PushJson(200, ListBody({Cm("a", "5"), Cm("b", "9", "new"), Cm("d", "10")}, "10"));
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  ASSERT_TRUE(recorder_.WaitForCount(6));
  EXPECT_THAT(recorder_.log(), ElementsAre("add a@5", "add b@6", "add c@7", "update b@6->9",
                                           "add d@10", "delete c@7"));
  EXPECT_EQ(informer->cache().Size(), 3u);
  EXPECT_EQ(informer->cache().Get("ns/c"), nullptr);
  EXPECT_EQ((*informer->cache().Get("ns/b"))["data"]["v"], "new");
  EXPECT_THAT(WatchResourceVersions(fake().requests()), ElementsAre("7", "10"));
  InformerStats stats = informer->stats();
  EXPECT_EQ(stats.gone, 1);
  EXPECT_EQ(stats.lists, 2);
  EXPECT_EQ(stats.relists, 1);
  EXPECT_THAT(stats.last_error, HasSubstr("too old resource version"));
}

TEST_F(InformerTest, HandlersRunInEventOrderOneAtATime) {
  fake().PushJson(200, ListBody({}, "1"));
  fake().PushStream({Event("ADDED", Cm("x", "2")) + Event("MODIFIED", Cm("x", "3")),
                     Event("ADDED", Cm("y", "4")), Event("DELETED", Cm("x", "5")),
                     Event("ADDED", Cm("x", "6")), Event("MODIFIED", Cm("z", "7"))});
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(recorder_.WaitForCount(6));
  // DELETED hands over the event's final state; MODIFIED of an unknown object is an add.
  EXPECT_THAT(recorder_.log(), ElementsAre("add x@2", "update x@2->3", "add y@4", "delete x@5",
                                           "add x@6", "add z@7"));
  EXPECT_EQ(informer->cache().Size(), 3u);
}

TEST_F(InformerTest, WaitForSyncWaitsForTheFirstListAndItsHandlers) {
  fake().PushJson(403, R"({"kind":"Status","code":403,"reason":"Forbidden",
                           "message":"configmaps is forbidden"})");
  fake().PushJson(200, ListBody({Cm("a", "1")}, "1"));
  transport_->PushHold();
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  bool in_add = false;
  InformerHandlers handlers;
  handlers.on_add = [&](const ObjectPtr&) {
    std::unique_lock<std::mutex> lock(mu);
    in_add = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  Informer informer(client_, options_, handlers);
  EXPECT_FALSE(informer.HasSynced());
  informer.Start();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return in_add; }));
  }
  // The list is in the cache, but its handler has not returned: not synced yet.
  EXPECT_EQ(informer.cache().Size(), 1u);
  EXPECT_FALSE(informer.WaitForSync(absl::Milliseconds(50)));
  EXPECT_FALSE(informer.HasSynced());
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  EXPECT_TRUE(informer.HasSynced());
  InformerStats stats = informer.stats();
  EXPECT_EQ(stats.list_failures, 1);  // the 403 was retried, not fatal
  EXPECT_EQ(stats.lists, 1);
  EXPECT_THAT(stats.last_error, HasSubstr("forbidden"));
}

TEST_F(InformerTest, StopDuringBackoffReturnsPromptly) {
  options_.backoff = {absl::Hours(1), absl::Hours(1), 2.0, 0.0};
  fake().PushJson(500, R"({"kind":"Status","code":500,"message":"etcd unavailable"})");
  auto informer = Make();
  informer->Start();
  // Wait until the failed list has been recorded: the reflector is now in its 1 h backoff.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (informer->stats().list_failures == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(informer->stats().list_failures, 1);
  EXPECT_FALSE(informer->WaitForSync(absl::Milliseconds(1)));
  const absl::Time before = absl::Now();
  informer->Stop();
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
  EXPECT_FALSE(informer->WaitForSync(absl::Seconds(1)));  // stopped: returns at once
  informer->Stop();                                       // idempotent
}

TEST_F(InformerTest, StopDuringAWatchReturnsPromptly) {
  fake().PushJson(200, ListBody({Cm("a", "1")}, "1"));
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  const absl::Time before = absl::Now();
  informer.reset();  // the destructor stops
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
}

TEST_F(InformerTest, ResyncCallsUpdateWithTheSameObject) {
  options_.resync_period = absl::Milliseconds(20);
  fake().PushJson(200, ListBody({Cm("a", "1"), Cm("b", "2")}, "2"));
  transport_->PushHold();
  std::mutex mu;
  std::condition_variable cv;
  int same = 0;
  int different = 0;
  InformerHandlers handlers;
  handlers.on_update = [&](const ObjectPtr& old_object, const ObjectPtr& new_object) {
    std::lock_guard<std::mutex> lock(mu);
    (old_object == new_object ? same : different)++;
    cv.notify_all();
  };
  Informer informer(client_, options_, handlers);
  informer.Start();
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return same >= 4; }));
  EXPECT_EQ(different, 0);
}

TEST_F(InformerTest, NoResyncWhenThePeriodIsZero) {
  fake().PushJson(200, ListBody({Cm("a", "1")}, "1"));
  fake().PushStream({Event("MODIFIED", Cm("a", "2"))});
  transport_->PushHold();
  auto informer = Make();
  informer->Start();
  ASSERT_TRUE(transport_->WaitForHolds(1));
  ASSERT_TRUE(recorder_.WaitForCount(2));
  EXPECT_EQ(informer->notifications_dispatched(), 2);
}

TEST(ObjectCacheTest, KeysAndLabelQueries) {
  EXPECT_EQ(ObjectKey(Cm("a", "1")), "ns/a");
  EXPECT_EQ(ObjectKey(json{{"metadata", {{"name", "node-1"}}}}), "node-1");
  EXPECT_EQ(ObjectKey(json{{"metadata", {{"namespace", "ns"}}}}), "");
  EXPECT_EQ(ObjectKey(json::array()), "");

  ObjectCache cache;
  auto labelled = [](const std::string& ns, const std::string& name, json labels) {
    return std::make_shared<const json>(
        json{{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels}}}});
  };
  EXPECT_EQ(cache.Upsert(labelled("a", "p1", {{"job", "j1"}, {"role", "ps"}})), nullptr);
  cache.Upsert(labelled("a", "p2", {{"job", "j1"}, {"role", "worker"}}));
  cache.Upsert(labelled("b", "p3", {{"job", "j1"}, {"role", "ps"}}));
  cache.Upsert(
      std::make_shared<const json>(json{{"metadata", {{"namespace", "a"}, {"name", "bare"}}}}));
  EXPECT_EQ(cache.Size(), 4u);
  EXPECT_EQ(cache.ListByLabels("a", {{"job", "j1"}}).size(), 2u);
  EXPECT_EQ(cache.ListByLabels("", {{"role", "ps"}}).size(), 2u);
  EXPECT_EQ(cache.ListByLabels("a", {{"role", "ps"}, {"job", "j1"}}).size(), 1u);
  EXPECT_EQ(cache.ListByLabels("a", {{"role", "nope"}}).size(), 0u);
  EXPECT_EQ(cache.ListByLabels("a", {}).size(), 3u);
  ObjectPtr old = cache.Upsert(labelled("a", "p1", {{"job", "j2"}}));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ((*old)["metadata"]["labels"]["job"], "j1");
  EXPECT_NE(cache.Erase("a/p1"), nullptr);
  EXPECT_EQ(cache.Erase("a/p1"), nullptr);
  EXPECT_EQ(cache.Get("a/p1"), nullptr);
  EXPECT_EQ(cache.List().size(), 3u);
}

// An index follows every write: relabelled objects move, erased ones leave, a relist rebuilds it.
TEST(ObjectCacheTest, IndexesFollowUpsertEraseAndReplace) {
  auto by_job = [](const json& object) -> std::vector<std::string> {
    const json& labels = object["metadata"].value("labels", json::object());
    if (!labels.contains("job")) return {};
    return {object["metadata"].value("namespace", "") + "/" + labels["job"].get<std::string>()};
  };
  ObjectCache cache({{"job", by_job}});
  auto labelled = [](const std::string& ns, const std::string& name, json labels) {
    return std::make_shared<const json>(
        json{{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels}}}});
  };
  auto names = [&](const std::string& value) {
    std::vector<std::string> out;
    for (const ObjectPtr& o : cache.ByIndex("job", value)) out.push_back(ObjectKey(*o));
    return out;
  };
  cache.Upsert(labelled("a", "p1", {{"job", "j1"}}));
  cache.Upsert(labelled("a", "p2", {{"job", "j1"}}));
  cache.Upsert(labelled("b", "p3", {{"job", "j1"}}));
  cache.Upsert(labelled("a", "bare", json::object()));
  EXPECT_EQ(names("a/j1"), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_EQ(names("b/j1"), (std::vector<std::string>{"b/p3"}));
  EXPECT_TRUE(cache.ByIndex("nope", "a/j1").empty());
  cache.Upsert(labelled("a", "p1", {{"job", "j2"}}));  // relabelled
  EXPECT_EQ(names("a/j1"), (std::vector<std::string>{"a/p2"}));
  EXPECT_EQ(names("a/j2"), (std::vector<std::string>{"a/p1"}));
  cache.Erase("a/p2");
  EXPECT_TRUE(names("a/j1").empty());
  std::unordered_map<std::string, ObjectPtr> relisted = {
      {"a/p9", labelled("a", "p9", {{"job", "j1"}})}};
  cache.Replace(relisted);
  EXPECT_EQ(names("a/j1"), (std::vector<std::string>{"a/p9"}));
  EXPECT_TRUE(names("a/j2").empty());
  EXPECT_TRUE(names("b/j1").empty());
}

TEST(BackoffTest, DoublesToTheCapAndResets) {
  Backoff backoff({absl::Milliseconds(800), absl::Seconds(30), 2.0, 0.0});
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 8; ++i) delays.push_back(backoff.Next());
  EXPECT_THAT(delays, ElementsAre(absl::Milliseconds(800), absl::Milliseconds(1600),
                                  absl::Milliseconds(3200), absl::Milliseconds(6400),
                                  absl::Milliseconds(12800), absl::Milliseconds(25600),
                                  absl::Seconds(30), absl::Seconds(30)));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(800));
}

TEST(BackoffTest, JitterStretchesEachDelayByUpToItsFraction) {
  Backoff backoff({absl::Milliseconds(100), absl::Milliseconds(100), 2.0, 1.0}, /*seed=*/7);
  absl::Duration low = absl::InfiniteDuration(), high = absl::ZeroDuration();
  for (int i = 0; i < 1000; ++i) {
    const absl::Duration d = backoff.Next();
    low = std::min(low, d);
    high = std::max(high, d);
  }
  EXPECT_GE(low, absl::Milliseconds(100));
  EXPECT_LT(high, absl::Milliseconds(200));
  EXPECT_LT(low, absl::Milliseconds(110));  // spread over the range, not constant
  EXPECT_GT(high, absl::Milliseconds(190));
}

}  // namespace
}  // namespace tj::kube
