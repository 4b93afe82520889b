// Unit tests of KubeClientImpl, the error mapping and watch framing, over a scripted transport.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/api_error.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/retry.h"
#include "tests/operator/kube/fake_transport.h"

namespace tj::kube {
namespace {

using nlohmann::json;
using testing::FakeTransport;
using ::testing::HasSubstr;

RetryPolicy NoSleep(std::vector<absl::Duration>* slept = nullptr) {
  RetryPolicy p;
  p.sleep = [slept](absl::Duration d) {
    if (slept) slept->push_back(d);
  };
  return p;
}

ResourceRef ConfigMap(std::string name = "") {
  return *Resource("configmaps", "default", std::move(name));
}

std::string StatusBody(int code, const std::string& reason, const std::string& message,
                       json details = nullptr) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
            {"code", code},     {"reason", reason},   {"message", message}};
  if (!details.is_null()) s["details"] = details;
  return s.dump();
}

struct MappingCase {
  int http;
  std::string reason;
  absl::StatusCode code;
};

TEST(ApiErrorTest, MapsHttpStatusesToCodes) {
  const std::vector<MappingCase> cases = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {409, "Conflict", absl::StatusCode::kAborted},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {410, "Expired", kGoneCode},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {429, "TooManyRequests", absl::StatusCode::kUnavailable},
      {500, "InternalError", absl::StatusCode::kUnavailable},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {504, "Timeout", absl::StatusCode::kDeadlineExceeded},
  };
  for (const MappingCase& c : cases) {
    absl::Status s = ApiError(c.http, StatusBody(c.http, c.reason, "the message"), "get",
                              "configmaps \"x\" in namespace \"default\"");
    EXPECT_EQ(s.code(), c.code) << c.http << " " << c.reason << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("get configmaps \"x\""));
    EXPECT_THAT(std::string(s.message()), HasSubstr("the message"));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.reason));
  }
  EXPECT_TRUE(IsGone(ApiError(410, "", "watch", "pods")));
  EXPECT_TRUE(IsConflict(ApiError(409, StatusBody(409, "Conflict", "stale"), "update", "x")));
}

TEST(ApiErrorTest, InvalidListsEveryFieldCause) {
  json details = {{"causes",
                   {{{"field", "spec.replicas"}, {"message", "must be >= 0"}},
                    {{"field", "metadata.name"}, {"message", "must be a DNS name"}}}}};
  absl::Status s = ApiError(422, StatusBody(422, "Invalid", "x is invalid", details), "create",
                            "trainingjobs.trainingjob.dev \"x\"");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("field spec.replicas: must be >= 0"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("field metadata.name: must be a DNS name"));
}

TEST(ApiErrorTest, NonStatusBodyIsQuoted) {
  absl::Status s = ApiError(502, "<html>bad gateway</html>", "list", "pods");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad gateway"));
}

TEST(ApiErrorTest, RetryAfterIsCarried) {
  absl::Status s =
      ApiError(429, StatusBody(429, "TooManyRequests", "slow down"), "list", "pods", "3");
  ASSERT_TRUE(RetryAfter(s).has_value());
  EXPECT_EQ(*RetryAfter(s), absl::Seconds(3));
  EXPECT_FALSE(RetryAfter(ApiError(500, "", "list", "pods")).has_value());
}

TEST(ResourceTest, PathsAndTable) {
  EXPECT_EQ(ResourcePath(ConfigMap("a")), "/api/v1/namespaces/default/configmaps/a");
  auto lease = Resource("leases", "kube-system", "l");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(ResourcePath(*lease), "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l");
  auto tj = Resource("trainingjobs.trainingjob.dev", "ns", "j");
  ASSERT_TRUE(tj.ok());
  tj->subresource = "status";
  EXPECT_EQ(ResourcePath(*tj),
            "/apis/trainingjob.dev/v1alpha1/namespaces/ns/trainingjobs/j/status");
  auto node = Resource("nodes", "ignored", "n1");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(ResourcePath(*node), "/api/v1/nodes/n1");
  EXPECT_EQ(Resource("widgets").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(QueryEscape("app=x,tier in (a b)"), "app%3Dx%2Ctier%20in%20%28a%20b%29");
}

TEST(KubeClientTest, GetKeepsUnknownFields) {
  auto t = std::make_shared<FakeTransport>();
  t->PushJson(200, R"({"kind":"ConfigMap","metadata":{"name":"a"},"x-future":{"deep":[1,2]}})");
  KubeClientImpl client(t, NoSleep());
  auto got = client.Get(ConfigMap("a"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["x-future"]["deep"][1], 2);
  ASSERT_EQ(t->requests().size(), 1u);
  EXPECT_EQ(t->requests()[0].method, "GET");
  EXPECT_EQ(t->requests()[0].path, "/api/v1/namespaces/default/configmaps/a");
}

TEST(KubeClientTest, ListAllFollowsContinueTokens) {
  auto t = std::make_shared<FakeTransport>();
  t->PushJson(200, R"({"kind":"ConfigMapList","metadata":{"continue":"c1","remainingItemCount":3},
                       "items":[{"n":1},{"n":2}]})");
  t->PushJson(200, R"({"kind":"ConfigMapList","metadata":{"continue":"c 2"},
                       "items":[{"n":3},{"n":4}]})");
  t->PushJson(200, R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"77"},
                       "items":[{"n":5}]})");
  KubeClientImpl client(t, NoSleep());
  ListOptions options;
  options.limit = 2;
  options.label_selector = "app=x";
  auto all = ListAll(client, ConfigMap(), options);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ((*all)["items"].size(), 5u);
  EXPECT_EQ((*all)["items"][4]["n"], 5);
  EXPECT_EQ((*all)["metadata"]["resourceVersion"], "77");
  EXPECT_FALSE((*all)["metadata"].contains("continue"));
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dx&limit=2");
  EXPECT_EQ(reqs[1].path,
            "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dx&limit=2&continue=c1");
  EXPECT_EQ(reqs[2].path,
            "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dx&limit=2&continue=c%202");
}

TEST(KubeClientTest, ListAllStopsAtAnErrorPage) {
  auto t = std::make_shared<FakeTransport>();
  t->PushJson(200, R"({"metadata":{"continue":"c1"},"items":[{}]})");
  t->PushJson(410, StatusBody(410, "Expired", "The provided continue parameter is too old"));
  KubeClientImpl client(t, NoSleep());
  ListOptions options;
  options.limit = 1;
  auto all = ListAll(client, ConfigMap(), options);
  EXPECT_TRUE(IsGone(all.status())) << all.status();
}

TEST(KubeClientTest, RetriesTooManyRequestsHonouringRetryAfter) {
  auto t = std::make_shared<FakeTransport>();
  t->PushJson(429, StatusBody(429, "TooManyRequests", "slow down"), {{"retry-after", "2"}});
  t->PushJson(503, "", {});
  t->PushJson(200, R"({"metadata":{"name":"a"}})");
  std::vector<absl::Duration> slept;
  KubeClientImpl client(t, NoSleep(&slept));
  auto got = client.Get(ConfigMap("a"));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(slept.size(), 2u);
  EXPECT_EQ(slept[0], absl::Seconds(2));
  EXPECT_EQ(slept[1], absl::Milliseconds(200));  // second retry: exponential backoff
}

TEST(KubeClientTest, RetryIsBounded) {
  auto t = std::make_shared<FakeTransport>();
  for (int i = 0; i < 10; ++i) {
    t->PushJson(429, StatusBody(429, "TooManyRequests", "slow down"), {{"retry-after", "600"}});
  }
  std::vector<absl::Duration> slept;
  RetryPolicy policy = NoSleep(&slept);
  policy.max_attempts = 3;
  KubeClientImpl client(t, policy);
  auto got = client.Get(ConfigMap("a"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(t->requests().size(), 3u);
  ASSERT_EQ(slept.size(), 2u);
  EXPECT_EQ(slept[0], policy.max_backoff);  // Retry-After capped
}

TEST(KubeClientTest, ConflictIsNotRetried) {
  auto t = std::make_shared<FakeTransport>();
  t->PushJson(409, StatusBody(409, "Conflict", "the object has been modified"));
  KubeClientImpl client(t, NoSleep());
  auto got = client.Update(ConfigMap("a"), json{{"metadata", {{"name", "a"}}}});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("update configmaps \"a\""));
  EXPECT_EQ(t->requests().size(), 1u);
}

TEST(KubeClientTest, RequestsCarryVerbsBodiesAndContentTypes) {
  auto t = std::make_shared<FakeTransport>();
  for (int i = 0; i < 5; ++i) t->PushJson(200, "{}");
  KubeClientImpl client(t, NoSleep());
  ASSERT_TRUE(client.MergePatch(ConfigMap("a"), json{{"data", {{"k", "v"}}}}).ok());
  ASSERT_TRUE(
      client.JsonPatch(ConfigMap("a"), json::array({{{"op", "remove"}, {"path", "/data/k"}}}))
          .ok());
  DeleteOptions del;
  del.propagation_policy = "Foreground";
  del.precondition_uid = "u-1";
  del.precondition_resource_version = "42";
  ASSERT_TRUE(client.Delete(ConfigMap("a"), del).ok());
  ASSERT_TRUE(client.UpdateStatus(ConfigMap("a"), json::object()).ok());
  ASSERT_TRUE(client.Create(ConfigMap("ignored"), json{{"metadata", {{"name", "b"}}}}).ok());
  auto reqs = t->requests();
  auto content_type = [](const HttpRequest& r) {
    for (const auto& [k, v] : r.headers) {
      if (k == "Content-Type") return v;
    }
    return std::string();
  };
  EXPECT_EQ(reqs[0].method, "PATCH");
  EXPECT_EQ(content_type(reqs[0]), "application/merge-patch+json");
  EXPECT_EQ(content_type(reqs[1]), "application/json-patch+json");
  EXPECT_EQ(reqs[2].method, "DELETE");
  json body = json::parse(reqs[2].body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "42");
  EXPECT_EQ(reqs[3].method, "PUT");
  EXPECT_EQ(reqs[3].path, "/api/v1/namespaces/default/configmaps/a/status");
  EXPECT_EQ(reqs[4].method, "POST");
  EXPECT_EQ(reqs[4].path, "/api/v1/namespaces/default/configmaps");
  EXPECT_FALSE(client.JsonPatch(ConfigMap("a"), json::object()).ok());
}

TEST(KubeClientTest, TransportFailureNamesTheEndpoint) {
  auto t = std::make_shared<FakeTransport>();
  testing::ScriptedResponse r;
  r.error = absl::UnavailableError("connection refused");
  for (int i = 0; i < 5; ++i) t->Push(r);
  KubeClientImpl client(t, NoSleep());
  auto got = client.Get(ConfigMap("a"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("https://fake:6443/api/v1/namespaces/default/configmaps/a"));
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("connection refused"));
}

TEST(KubeClientTest, NonJsonSuccessIsDataLoss) {
  auto t = std::make_shared<FakeTransport>();
  t->PushJson(200, "garbage{");
  KubeClientImpl client(t, NoSleep());
  auto got = client.Get(ConfigMap("a"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("garbage{"));
}

// --- watch ---

std::string Event(const std::string& type, const std::string& name, int rv) {
  return json{{"type", type},
              {"object",
               {{"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"resourceVersion", std::to_string(rv)}}},
                {"data", {{"unicode", "h\u00e9llo \\n {}"}}}}}}
             .dump() +
         "\n";
}

TEST(WatchTest, EventsSplitAtEveryByteBoundaryDecode) {
  const std::string stream =
      Event("ADDED", "a", 1) + Event("MODIFIED", "a", 2) + Event("DELETED", "a", 3);
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= stream.size(); cut2 += 7) {
      auto t = std::make_shared<FakeTransport>();
      t->PushStream(
          {stream.substr(0, cut1), stream.substr(cut1, cut2 - cut1), stream.substr(cut2)});
      KubeClientImpl client(t, NoSleep());
      std::vector<std::string> seen;
      absl::Status s = client.Watch(ConfigMap(), "0", {}, [&](const WatchEvent& e) {
        seen.push_back(e.type + ":" + e.object["metadata"]["resourceVersion"].get<std::string>());
        return true;
      });
      ASSERT_TRUE(s.ok()) << "cuts " << cut1 << "," << cut2 << ": " << s;
      ASSERT_EQ(seen, (std::vector<std::string>{"ADDED:1", "MODIFIED:2", "DELETED:3"}))
          << "cuts " << cut1 << "," << cut2;
    }
  }
}

TEST(WatchTest, OneByteChunks) {
  const std::string stream = Event("ADDED", "a", 1) + Event("BOOKMARK", "", 9);
  std::vector<std::string> chunks;
  for (char c : stream) chunks.emplace_back(1, c);
  auto t = std::make_shared<FakeTransport>();
  t->PushStream(chunks);
  KubeClientImpl client(t, NoSleep());
  int n = 0;
  WatchOptions options;
  options.allow_watch_bookmarks = true;
  options.timeout_seconds = 30;
  ASSERT_TRUE(client
                  .Watch(ConfigMap(), "5", options,
                         [&](const WatchEvent&) {
                           ++n;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(n, 2);
  EXPECT_EQ(t->requests()[0].path,
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=5&"
            "allowWatchBookmarks=true&timeoutSeconds=30");
}

TEST(WatchTest, MalformedLineNamesTheEndpoint) {
  auto t = std::make_shared<FakeTransport>();
  t->PushStream({Event("ADDED", "a", 1), "{\"type\":\"ADDED\",\"object\":{oops}\n"});
  KubeClientImpl client(t, NoSleep());
  int n = 0;
  absl::Status s = client.Watch(ConfigMap(), "", {}, [&](const WatchEvent&) {
    ++n;
    return true;
  });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("watch configmaps in namespace \"default\""));
  EXPECT_THAT(std::string(s.message()), HasSubstr("https://fake:6443/api/v1/namespaces/default"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("{oops}"));
}

TEST(WatchTest, TruncatedStreamIsDataLoss) {
  const std::string e = Event("ADDED", "a", 1);
  auto t = std::make_shared<FakeTransport>();
  t->PushStream({e, e.substr(0, e.size() / 2)});
  KubeClientImpl client(t, NoSleep());
  absl::Status s = client.Watch(ConfigMap(), "", {}, [](const WatchEvent&) { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ended in the middle of an event"));
}

TEST(WatchTest, ConnectionLostMidStreamIsUnavailable) {
  auto t = std::make_shared<FakeTransport>();
  t->PushStream({Event("ADDED", "a", 1)}, absl::UnavailableError("connection reset"));
  KubeClientImpl client(t, NoSleep());
  absl::Status s = client.Watch(ConfigMap(), "", {}, [](const WatchEvent&) { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("connection reset"));
}

TEST(WatchTest, EventOverTheCapIsRejected) {
  auto t = std::make_shared<FakeTransport>();
  t->PushStream({std::string(600, 'x'), std::string(600, 'y')});
  KubeClientImpl client(t, NoSleep());
  WatchOptions options;
  options.max_event_bytes = 1000;
  absl::Status s = client.Watch(ConfigMap(), "", options, [](const WatchEvent&) { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cap of 1000 bytes"));
}

TEST(WatchTest, GoneErrorEventIsDistinguishable) {
  auto t = std::make_shared<FakeTransport>();
  t->PushStream({json{{"type", "ERROR"},
                      {"object", json::parse(StatusBody(410, "Expired",
                                                        "too old resource version: 5 (900)"))}}
                     .dump() +
                 "\n"});
  KubeClientImpl client(t, NoSleep());
  absl::Status s = client.Watch(ConfigMap(), "5", {}, [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsGone(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("too old resource version"));
}

TEST(WatchTest, HandlerCanStopAndHttpErrorsMap) {
  auto t = std::make_shared<FakeTransport>();
  t->PushStream({Event("ADDED", "a", 1) + Event("ADDED", "b", 2)});
  t->PushJson(403, StatusBody(403, "Forbidden", "configmaps is forbidden"));
  KubeClientImpl client(t, NoSleep());
  int n = 0;
  EXPECT_TRUE(client
                  .Watch(ConfigMap(), "", {},
                         [&](const WatchEvent&) {
                           ++n;
                           return false;
                         })
                  .ok());
  EXPECT_EQ(n, 1);
  absl::Status s = client.Watch(ConfigMap(), "", {}, [](const WatchEvent&) { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()), HasSubstr("watch configmaps"));
}

}  // namespace
}  // namespace tj::kube
