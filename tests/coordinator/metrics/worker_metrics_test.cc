// A worker process's own /metrics (TJ_METRICS_ADDRESS on tj-worker): the closures it ran and the
// ones that ended in an error, as a real coordinator dispatched them, checked by `promtool check
// metrics`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "tests/coordinator/cluster/coordinator_test_util.h"
#include "tests/support/http_get.h"
#include "tests/support/promtool.h"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using testing::HttpBody;

TEST(WorkerMetricsTest, TheTjWorkerBinaryCountsItsRunsAndErrorsWhenTjMetricsAddressIsSet) {
  const int port = local::PickFreePort();
  auto worker = local::ChildProcess::StartAndWaitListening(
      TJ_WORKER_BINARY, {"--address", "127.0.0.1:0", "--task", "0"},
      {{"TJ_METRICS_ADDRESS", absl::StrCat("127.0.0.1:", port)}});
  ASSERT_TRUE(worker.ok()) << worker.status();
  // The endpoint opens just after the RPC server (LISTENING). Serving before any closure: every
  // count present at 0, never absent or made up.
  std::string before;
  ASSERT_TRUE(testing::WaitFor([&] {
    before = HttpBody(testing::HttpGet(port, "/metrics"));
    return !before.empty();
  })) << "no /metrics on port "
      << port;
  EXPECT_THAT(before, HasSubstr("\ntj_worker_runs_total 0\n"));
  EXPECT_THAT(before, HasSubstr("\ntj_worker_run_errors_total 0\n"));

  auto coordinator = ClusterCoordinator::Create({worker->address()}, testing::FastOptions());
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*coordinator)->Schedule("noop").ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  ASSERT_TRUE((*coordinator)->Schedule("fail", {std::string("on purpose")}).ok());
  EXPECT_FALSE((*coordinator)->Join().ok()) << "the closure's error is raised";

  const std::string text = HttpBody(testing::HttpGet(port, "/metrics"));
  EXPECT_THAT(text, HasSubstr("\ntj_worker_runs_total 6\n")) << text;
  EXPECT_THAT(text, HasSubstr("\ntj_worker_run_errors_total 1\n")) << text;
  auto [code, output] = testing::Promtool(text);
  if (code == 127) GTEST_SKIP() << "promtool absent: apt-get install prometheus";
  EXPECT_EQ(code, 0) << output << "\n" << text;
}

}  // namespace
}  // namespace tj
