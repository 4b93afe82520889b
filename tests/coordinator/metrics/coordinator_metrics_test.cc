// The coordinator's runtime metrics as Prometheus scrapes them: a real coordinator over real
// tj-worker processes, one killed mid-closure, its counters rendered at scrape time through the
// real /metrics endpoint, checked by `promtool check metrics` and against the coordinator's own
// counts. Checkpoint metrics: absent before the first checkpoint, never a negative age.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/metrics/checkpoint_metrics.h"
#include "coordinator/metrics/coordinator_metrics.h"
#include "coordinator/metrics/metrics_http_server.h"
#include "coordinator/metrics/metrics_registry.h"
#include "tests/coordinator/cluster/coordinator_test_util.h"
#include "tests/coordinator/cluster/local_cluster.h"
#include "tests/support/http_get.h"
#include "tests/support/promtool.h"
#include "tests/support/wait_for.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::FastOptions;
using testing::HttpBody;
using testing::LocalCluster;
using testing::MarkerPath;
using testing::Promtool;
using testing::WaitFor;

void ExpectPromtoolAccepts(const std::string& text) {
  auto [code, output] = Promtool(text);
  if (code == 127) GTEST_SKIP() << "promtool absent: apt-get install prometheus";
  EXPECT_EQ(code, 0) << output << "\n" << text;
}

TEST(CoordinatorMetricsTest, TheEndpointShowsClosuresRetriesAndWorkerStatesAsCounted) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  MetricsRegistry registry;
  CollectCoordinatorMetrics(**coordinator, registry);
  CountPreemptionNotice(registry, "ps");
  CountPreemptionNotice(registry, "worker");
  CountPreemptionNotice(registry, "worker");
  CountPreemptionNotice(registry, "no such type");
  auto server = MetricsHttpServer::Start("127.0.0.1:0", &registry);
  ASSERT_TRUE(server.ok()) << server.status();

  const std::string marker = MarkerPath("metrics-victim");
  ASSERT_TRUE((*coordinator)->Schedule("sleep", {1000, marker}).ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  int first = -1;
  std::ifstream(marker) >> first;
  ASSERT_TRUE(first == 0 || first == 1);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*coordinator)->Schedule("noop").ok());
  // Scraped mid-run too: whatever is in flight, the exposition is valid.
  ExpectPromtoolAccepts(HttpBody(testing::HttpGet((*server)->port(), "/metrics")));
  cluster.KillWorker(first);
  ASSERT_TRUE((*coordinator)->Join().ok());

  const CoordinatorCounters c = (*coordinator)->Counters();
  ASSERT_GE(c.closures.retried, 1u);
  const std::string text = HttpBody(testing::HttpGet((*server)->port(), "/metrics"));
  EXPECT_THAT(text, HasSubstr("\ntj_coordinator_closures_scheduled_total 21\n"));
  EXPECT_THAT(text, HasSubstr("\ntj_coordinator_closures_completed_total 21\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("\ntj_coordinator_closures_retried_total ",
                                           c.closures.retried, "\n")));
  EXPECT_THAT(text, HasSubstr("\ntj_coordinator_closures_cancelled_total 0\n"));
  EXPECT_THAT(text, HasSubstr("\ntj_coordinator_closures_queued 0\n"));
  EXPECT_THAT(text, HasSubstr("\ntj_coordinator_closures_in_flight 0\n"));
  EXPECT_THAT(text, HasSubstr("tj_coordinator_worker_state_changes_total{state=\"healthy\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("tj_coordinator_worker_state_changes_total{state=\"recovering\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_coordinator_workers{state=\"recovering\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_coordinator_workers{state=\"healthy\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_coordinator_preemption_notices_total{task_type=\"worker\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tj_coordinator_preemption_notices_total{task_type=\"other\"} 1\n"));
  const int64_t survivor_runs = c.workers[static_cast<size_t>(1 - first)].completed;
  EXPECT_THAT(text, HasSubstr(absl::StrCat("tj_worker_closures_run_total{worker=\"", 1 - first,
                                           "\"} ", survivor_runs, "\n")));
  EXPECT_THAT(text, Not(HasSubstr("tj_coordinator_ps_errors_total"))) << "no PS error yet";
  ExpectPromtoolAccepts(text);
}

TEST(CheckpointMetricsTest, NothingBeforeTheFirstCheckpointThenHistogramsAndAnAge) {
  MetricsRegistry registry;
  CheckpointMetrics checkpoints(&registry);
  EXPECT_THAT(registry.Render(), Not(HasSubstr("tj_checkpoint"))) << "no checkpoint, no figure";

  const absl::Time now = absl::Now();
  checkpoints.Restored(absl::Milliseconds(700), /*found=*/true, now - absl::Seconds(90), now);
  std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_restored 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_restore_duration_seconds_bucket{le=\"0.5\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_restore_duration_seconds_bucket{le=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_restore_duration_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_age_seconds 9")) << "90 s and a little more";
  ExpectPromtoolAccepts(text);

  checkpoints.Saved(absl::Seconds(3), 4096, now);
  checkpoints.Saved(absl::Seconds(20), 8192, now);
  text = registry.Render();
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_save_duration_seconds_bucket{le=\"5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_save_duration_seconds_count 2\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_save_duration_seconds_sum 23\n"));
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_last_bytes 8192\n"));
  EXPECT_THAT(text, Not(HasSubstr("tj_checkpoint_age_seconds 9")));
  ExpectPromtoolAccepts(text);

  // A checkpoint stamped in the future (another machine's clock): age 0, not negative.
  checkpoints.Saved(absl::Seconds(1), 1, absl::Now() + absl::Hours(1));
  EXPECT_THAT(registry.Render(), HasSubstr("tj_checkpoint_age_seconds 0\n"));
}

TEST(CheckpointMetricsTest, AStartWithoutACheckpointSaysSoAndHasNoAge) {
  MetricsRegistry registry;
  CheckpointMetrics checkpoints(&registry);
  checkpoints.Restored(absl::Milliseconds(5), /*found=*/false, absl::InfinitePast(), absl::Now());
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("tj_checkpoint_restored 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("tj_checkpoint_age_seconds")));
  EXPECT_THAT(text, Not(HasSubstr("tj_checkpoint_restore_duration_seconds")));
  ExpectPromtoolAccepts(text);
}

TEST(MetricsRegistryTest, SetCounterNeverLowersACounter) {
  MetricsRegistry registry;
  registry.SetCounter("tj_things_total", "Things", 5);
  registry.SetCounter("tj_things_total", "Things", 3);
  EXPECT_THAT(registry.Render(), HasSubstr("\ntj_things_total 5\n"));
  registry.SetCounter("tj_things_total", "Things", 7);
  EXPECT_THAT(registry.Render(), HasSubstr("\ntj_things_total 7\n"));
}

}  // namespace
}  // namespace tj
