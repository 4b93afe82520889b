// The metrics registry's exposition, checked by Prometheus' own parser (`promtool check metrics`,
// Debian's prometheus package), and the GET /metrics endpoint over a real socket, including while
// slow, idle and too many clients hold connections to it.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "coordinator/metrics/metrics_http_server.h"
#include "coordinator/metrics/metrics_registry.h"
#include "tests/support/http_get.h"
#include "tests/support/promtool.h"
#include "tests/support/slow_http_clients.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"

namespace tj {
namespace {

using testing::ClosedByServer;
using testing::Connect;
using testing::DrippingClient;
using testing::GetWithin;
using testing::Promtool;
using ::testing::HasSubstr;


void FillSample(MetricsRegistry& registry) {
  registry.SetGauge("tj_training_step", "Training steps completed", 120);
  registry.SetGauge("tj_eval_metric", "Latest held-out evaluation", 0.93, {{"name", "accuracy"}});
  registry.SetGauge("tj_eval_metric", "Latest held-out evaluation", 0.2, {{"name", "eval_loss"}});
  registry.AddCounter("tj_checkpoints_total", "Checkpoints saved");
  registry.AddCounter("tj_checkpoints_total", "Checkpoints saved");
  registry.AddCounter("tj_preemption_events_total", "Events \"quoted\"\nand escaped", 1,
                      {{"reason", "Evicted \"now\"\\later"}});
  for (double seconds : {0.002, 0.02, 0.02, 3.0}) {
    registry.ObserveHistogram("tj_reconcile_duration_seconds", "Reconcile duration", seconds,
                              {0.005, 0.05, 1}, {{"result", "ok"}});
  }
}

TEST(MetricsTest, TheExpositionIsWhatPrometheusExpects) {
  MetricsRegistry registry;
  FillSample(registry);
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE tj_checkpoints_total counter\ntj_checkpoints_total 2\n"));
  EXPECT_THAT(text, HasSubstr("tj_eval_metric{name=\"accuracy\"} 0.93"));
  // Cumulative buckets, +Inf equal to the count.
  EXPECT_THAT(text, HasSubstr("tj_reconcile_duration_seconds_bucket{result=\"ok\","
                              "le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_reconcile_duration_seconds_bucket{result=\"ok\",le=\"1\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("tj_reconcile_duration_seconds_bucket{result=\"ok\",le=\"+Inf\"} 4\n"));
  // Help text with a newline and a backslash is escaped (prometheus-cpp 1.0.1 does not).
  EXPECT_THAT(text,
              HasSubstr("# HELP tj_preemption_events_total Events \"quoted\"\\nand escaped\n"));
  EXPECT_THAT(text, HasSubstr("tj_reconcile_duration_seconds_count{result=\"ok\"} 4\n"));
  auto [code, output] = Promtool(text);
  if (code == 127) GTEST_SKIP() << "promtool absent: apt-get install prometheus";
  EXPECT_EQ(code, 0) << output << "\n" << text;
}

TEST(MetricsTest, ACollectorRunsAtEachRenderUntilItIsRemoved) {
  MetricsRegistry registry;
  int first_runs = 0;
  int second_runs = 0;
  const MetricsRegistry::CollectorId first = registry.AddCollector([&] {
    ++first_runs;
    registry.SetGauge("first_figure", "From the first collector", first_runs);
  });
  registry.AddCollector([&] { ++second_runs; });
  EXPECT_THAT(registry.Render(), HasSubstr("first_figure 1\n"));
  EXPECT_THAT(registry.Render(), HasSubstr("first_figure 2\n"));
  registry.RemoveCollector(first);
  registry.Render();
  EXPECT_EQ(first_runs, 2);  // removed: the figure stays as last set, and is no longer moved
  EXPECT_EQ(second_runs, 3);  // the other collector is untouched
  registry.RemoveCollector(first);  // a second removal is harmless
  registry.Render();
  EXPECT_EQ(second_runs, 4);
}

TEST(MetricsTest, PromtoolRejectsWhatItShould) {
  // The check is real: a counter without _total and a duplicate sample are problems to promtool.
  auto [code, output] = Promtool("# HELP c a counter\n# TYPE c counter\nc 1\nc 2\n");
  if (code == 127) GTEST_SKIP() << "promtool absent";
  EXPECT_NE(code, 0) << output;
}

TEST(MetricsTest, TheEndpointServesMetricsAndNothingElse) {
  MetricsRegistry registry;
  FillSample(registry);
  auto server = MetricsHttpServer::Start("127.0.0.1:0", &registry);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string ok = testing::HttpGet((*server)->port(), "/metrics");
  EXPECT_THAT(ok, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(ok, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(ok, HasSubstr("tj_training_step 120"));
  registry.SetGauge("tj_training_step", "Training steps completed", 121);
  EXPECT_THAT(testing::HttpGet((*server)->port(), "/metrics"), HasSubstr("tj_training_step 121"));
  EXPECT_THAT(testing::HttpGet((*server)->port(), "/other"), HasSubstr("404"));
  EXPECT_FALSE(MetricsHttpServer::Start("nonsense", &registry).ok());
}

TEST(MetricsTest, HealthChecksAnswer200Or503WithTheReason) {
  std::atomic<bool> ready{false};
  auto server = MetricsHttpServer::Start(
      "127.0.0.1:0", nullptr,
      {{"/healthz", [] { return absl::OkStatus(); }},
       {"/readyz", [&] {
          return ready.load() ? absl::OkStatus()
                              : absl::UnavailableError("informers have not synced");
        }}});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT(testing::HttpGet((*server)->port(), "/healthz"), HasSubstr("200 OK"));
  const std::string not_ready = testing::HttpGet((*server)->port(), "/readyz");
  EXPECT_THAT(not_ready, HasSubstr("503"));
  EXPECT_THAT(not_ready, HasSubstr("informers have not synced"));
  ready = true;
  EXPECT_THAT(testing::HttpGet((*server)->port(), "/readyz"), HasSubstr("200 OK"));
  EXPECT_THAT(testing::HttpGet((*server)->port(), "/metrics"), HasSubstr("404"))
      << "no registry, no metrics";
}

int ThreadsOfThisProcess() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

TEST(MetricsServerAbuseTest, ASlowClientAndIdleConnectionsDoNotHoldTheEndpoints) {
  MetricsRegistry registry;
  FillSample(registry);
  auto server = MetricsHttpServer::Start("127.0.0.1:0", &registry,
                                         {{"/healthz", [] { return absl::OkStatus(); }}});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  // A byte every 1.9 s: under the old server's 2 s per-read timeout, forever.
  DrippingClient slow(port, absl::Milliseconds(1900));
  std::vector<int> idle;  // connected, never a byte
  for (int i = 0; i < 5; ++i) idle.push_back(Connect(port));
  ASSERT_TRUE(testing::WaitFor([&] { return slow.sent() >= 1; }));

  const std::string health = GetWithin(port, "/healthz", absl::Seconds(10));
  EXPECT_THAT(health, HasSubstr("200 OK"));
  EXPECT_THAT(health, HasSubstr("ok"));
  const std::string metrics = GetWithin(port, "/metrics", absl::Seconds(10));
  EXPECT_THAT(metrics, HasSubstr("200 OK"));
  EXPECT_THAT(metrics, HasSubstr("tj_training_step 120"));
  // Served while they were all still connected.
  EXPECT_FALSE(slow.closed());
  for (int fd : idle) EXPECT_FALSE(ClosedByServer(fd));

  // The request head has a total deadline (5 s by default): the dripping client is cut off
  // although it never paused for as long as that.
  EXPECT_TRUE(testing::WaitFor([&] { return slow.closed(); }, absl::Seconds(30)))
      << "the slow client still holds its connection after sending " << slow.sent() << " bytes";
  for (int fd : idle) {
    EXPECT_TRUE(testing::WaitFor([&] { return ClosedByServer(fd); }, absl::Seconds(30)));
    close(fd);
  }
}

TEST(MetricsServerAbuseTest, TheRequestHeadHasATotalDeadlineNotAPerReadOne) {
  MetricsRegistry registry;
  MetricsHttpServerOptions options;
  options.request_timeout = absl::Seconds(1);
  auto server = MetricsHttpServer::Start("127.0.0.1:0", &registry, {}, options);
  ASSERT_TRUE(server.ok()) << server.status();
  // A byte every 100 ms: no read ever waits 1 s.
  DrippingClient slow((*server)->port(), absl::Milliseconds(100));
  ASSERT_TRUE(testing::WaitFor([&] { return slow.closed(); }, absl::Seconds(30)))
      << "sent " << slow.sent() << " bytes and still connected";
  EXPECT_GT(slow.sent(), 10) << "cut off only after the deadline had passed";
}

TEST(MetricsServerAbuseTest, MoreConnectionsThanItServesAreBoundedAndPassWithTheirDeadline) {
  MetricsRegistry registry;
  FillSample(registry);
  MetricsHttpServerOptions options;
  options.threads = 4;
  options.queue = 8;
  options.request_timeout = absl::Milliseconds(300);
  auto server = MetricsHttpServer::Start("127.0.0.1:0", &registry, {}, options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int threads = ThreadsOfThisProcess();
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(Connect((*server)->port()));
  // A flood of idle connections: no thread more, and each is let go after its deadline, so a
  // scrape gets through once the ones ahead of it have timed out.
  EXPECT_THAT(GetWithin((*server)->port(), "/metrics", absl::Seconds(30)),
              HasSubstr("tj_training_step 120"));
  EXPECT_EQ(ThreadsOfThisProcess(), threads);
  for (int fd : idle) {
    EXPECT_TRUE(testing::WaitFor([&] { return ClosedByServer(fd); }, absl::Seconds(30)));
    close(fd);
  }
}

}  // namespace
}  // namespace tj
