// JobMetrics: the operator's per-job gauges (tj_trainingjob_*) from TrainingJob statuses, as
// Prometheus reads them (promtool), for full statuses, jobs never started, statuses of older
// operators, odd values and deleted jobs; and every tj_trainingjob_* metric the jobs dashboard
// queries exists.
#include "operator/controller/job_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/support/promtool.h"

namespace tj::op {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z

kube::ObjectPtr Job(const std::string& name, const json& status = nullptr) {
  json job = {
      {"apiVersion", "trainingjob.dev/v1alpha1"},
      {"kind", "TrainingJob"},
      {"metadata",
       {{"name", name}, {"namespace", "ml"}, {"creationTimestamp", "2027-01-15T07:00:00Z"}}}};
  if (!status.is_null()) job["status"] = status;
  return std::make_shared<const json>(std::move(job));
}

// A status as this session's operator writes it: running for 10 minutes after one restart.
json FullStatus() {
  return json::parse(R"({
    "conditions": [
      {"type": "Created", "status": "True", "lastTransitionTime": "2027-01-15T07:00:00Z"},
      {"type": "Restarting", "status": "False", "lastTransitionTime": "2027-01-15T07:50:00Z"},
      {"type": "Running", "status": "True", "lastTransitionTime": "2027-01-15T07:50:00Z"}],
    "state": "Running",
    "replicaStatuses": {"Worker": {"active": 2, "succeeded": 0, "failed": 0, "restarts": 3,
                                   "countedRestarts": 1},
                        "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}},
    "startTime": "2027-01-15T07:00:10Z", "step": 250, "lastCheckpointStep": 200,
    "preemptions": 2, "restartCount": 1, "coordinatorRestarts": 1,
    "goodput": 0.9,
    "goodputSeconds": {"wallSeconds": 100, "productiveSeconds": 90,
                       "lostSeconds": {"startup": 4, "restart": 3, "waitingForWorkers": 1,
                                       "workerRerun": 1, "checkpointSave": 1,
                                       "stepsSinceCheckpoint": 0}}})");
}

class JobMetricsTest : public ::testing::Test {
 protected:
  std::string Refresh(const std::vector<kube::ObjectPtr>& jobs) {
    metrics_.Refresh(jobs, kNow);
    return registry_.Render();
  }

  MetricsRegistry registry_;
  JobMetrics metrics_{registry_};
};

constexpr char kLabels[] = R"(trainingjob="a",trainingjob_namespace="ml")";

// The rendered line of a series: prometheus-cpp writes values with up to 16 significant digits
// ("1799996400", "0.9").
std::string Line(const std::string& name, const std::string& extra, const std::string& value) {
  const std::string labels = extra.empty() ? kLabels : absl::StrCat(extra, ",", kLabels);
  // Labels render sorted by name: "cause", "counted", "phase" and "replica_type" sort first.
  return absl::StrCat("\n", name, "{", labels, "} ", value, "\n");
}

TEST_F(JobMetricsTest, AFullStatusGivesEveryFigure) {
  const std::string text = Refresh({Job("a", FullStatus())});
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_created_timestamp_seconds", "", "1799996400")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase", R"(phase="Running")", "1")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase_seconds", R"(phase="Running")", "600")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_duration_seconds", "", "3590")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_restarts",
                                   R"(counted="true",replica_type="worker")", "1")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_restarts",
                                   R"(counted="false",replica_type="worker")", "2")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_restarts",
                                   R"(counted="false",replica_type="ps")", "0")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_preemptions", "", "2")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_coordinator_restarts", "", "1")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_step", "", "250")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_steps_since_checkpoint", "", "50")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_goodput_ratio", "", "0.9")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_goodput_wall_seconds", "", "100")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_goodput_productive_seconds", "", "90")));
  EXPECT_THAT(text,
              HasSubstr(Line("tj_trainingjob_goodput_lost_seconds", R"(cause="startup")", "4")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_goodput_lost_seconds",
                                   R"(cause="steps_since_checkpoint")", "0")));
  const auto [code, output] = testing::Promtool(text);
  if (code == 127) GTEST_SKIP() << "promtool not installed";
  EXPECT_EQ(code, 0) << output << text;
}

TEST_F(JobMetricsTest, AJobNeverReconciledHasOnlyItsCreationTime) {
  for (const json& status : {json(nullptr), json::object()}) {
    const std::string text = Refresh({Job("a", status)});
    EXPECT_THAT(text, HasSubstr("tj_trainingjob_created_timestamp_seconds{"));
    EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_phase")));
    EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_duration_seconds")));
    EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_step")));
    EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_goodput")));
    EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_restarts{")));
  }
}

// An operator before restartLimit and goodput (session 10) wrote neither countedRestarts nor the
// goodput fields: its restarts read as not counted (the decoder's 0 for an absent
// countedRestarts), and there is no goodput series rather than a zero.
TEST_F(JobMetricsTest, AStatusFromAnOlderOperatorIsReadWithoutTheNewFields) {
  json status = FullStatus();
  status.erase("goodput");
  status.erase("goodputSeconds");
  status["replicaStatuses"]["Worker"].erase("countedRestarts");
  const std::string text = Refresh({Job("a", status)});
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_restarts",
                                   R"(counted="false",replica_type="worker")", "3")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_restarts",
                                   R"(counted="true",replica_type="worker")", "0")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase", R"(phase="Running")", "1")));
  EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_goodput")));
}

// Clocks disagree (a transition stamped after the operator's now) and hands edit statuses
// (a checkpoint step past the step, a negative or non-numeric goodput): no figure is negative or
// NaN; what is wrong is absent.
TEST_F(JobMetricsTest, OddStatusesGiveNoNegativeOrNonFiniteFigure) {
  json status = FullStatus();
  status["conditions"][2]["lastTransitionTime"] = "2027-01-15T09:00:00Z";  // after kNow
  status["startTime"] = "2027-01-15T09:00:00Z";
  status["lastCheckpointStep"] = 300;
  status["goodput"] = -0.5;
  status["goodputSeconds"] = "lots";
  const std::string text = Refresh({Job("a", status)});
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase_seconds", R"(phase="Running")", "0")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_duration_seconds", "", "0")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_steps_since_checkpoint", "", "0")));
  EXPECT_THAT(text, Not(HasSubstr("tj_trainingjob_goodput")));
  for (const char* bad : {"} -", "} NaN", "} nan", "} +Inf", "} Inf"}) {
    EXPECT_THAT(text, Not(HasSubstr(bad))) << text;
  }
}

TEST_F(JobMetricsTest, ADeletedJobsSeriesGoAwayAndALeftPhaseIsDropped) {
  std::string text = Refresh({Job("a", FullStatus()), Job("b", FullStatus())});
  EXPECT_THAT(text, HasSubstr(R"(trainingjob="b")"));
  const size_t two_jobs = metrics_.SeriesCount();

  json succeeded = FullStatus();
  succeeded["conditions"].push_back(
      {{"type", "Succeeded"}, {"status", "True"}, {"lastTransitionTime", "2027-01-15T07:59:00Z"}});
  text = Refresh({Job("a", succeeded)});
  EXPECT_THAT(text, Not(HasSubstr(R"(trainingjob="b")")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase", R"(phase="Succeeded")", "1")));
  EXPECT_THAT(text, Not(HasSubstr(R"(phase="Running")")));
  EXPECT_EQ(metrics_.SeriesCount() * 2, two_jobs);

  text = Refresh({});
  EXPECT_THAT(text, Not(HasSubstr("trainingjob=")));
  EXPECT_EQ(metrics_.SeriesCount(), 0u);
}

// The operator refreshes every job at each scrape: a job whose resourceVersion has not moved is not
// decoded again (at 10,000 jobs decoding was 1.4 CPU-seconds a refresh), but its figures that move
// with the clock do move, and a new version replaces every figure of the old one.
TEST_F(JobMetricsTest, AJobAtTheSameVersionMovesOnlyWithTheClockAndANewVersionIsReadAgain) {
  auto versioned = [](const std::string& version, const json& status) {
    json job = *Job("a", status);
    job["metadata"]["resourceVersion"] = version;
    return std::make_shared<const json>(std::move(job));
  };
  json status = FullStatus();
  metrics_.Refresh({versioned("10", status)}, kNow);
  const size_t series = metrics_.SeriesCount();

  // The same version with another body: only a status write makes a new version, so what it
  // says is not read again; 60 s later the clock figures moved.
  json other = status;
  other["step"] = 999;
  metrics_.Refresh({versioned("10", other)}, kNow + absl::Seconds(60));
  std::string text = registry_.Render();
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_step", "", "250")));
  // Running since 07:50 and started at 07:00:10, as of 08:01.
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase_seconds", R"(phase="Running")", "660")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_duration_seconds", "", "3650")));
  EXPECT_EQ(metrics_.SeriesCount(), series);

  // A new version is read: its step, and the phase it moved to with its own clock.
  other["conditions"].push_back(
      {{"type", "Succeeded"}, {"status", "True"}, {"lastTransitionTime", "2027-01-15T08:00:30Z"}});
  other["completionTime"] = "2027-01-15T08:00:30Z";
  metrics_.Refresh({versioned("11", other)}, kNow + absl::Seconds(90));
  text = registry_.Render();
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_step", "", "999")));
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_phase_seconds", R"(phase="Succeeded")", "60")));
  EXPECT_THAT(text, Not(HasSubstr(R"(phase="Running")")));
  // Completed: start to completion, whatever the clock says later.
  EXPECT_THAT(text, HasSubstr(Line("tj_trainingjob_duration_seconds", "", "3620")));
  metrics_.Refresh({versioned("11", other)}, kNow + absl::Seconds(600));
  EXPECT_THAT(registry_.Render(),
              HasSubstr(Line("tj_trainingjob_duration_seconds", "", "3620")));
}

// The jobs dashboard (helm/trainingjob-operator/dashboards/trainingjob-jobs.json) reads these
// gauges for jobs whose pods are not scraped; a name it queries that the operator does not export
// would be an empty panel. (The runtime metrics it queries are checked against a real Prometheus
// by tj_dashboards_prometheus_test.)
TEST_F(JobMetricsTest, EveryOperatorMetricTheJobsDashboardQueriesIsExported) {
  std::ifstream in(std::string(TJ_SOURCE_DIR) +
                   "/helm/trainingjob-operator/dashboards/trainingjob-jobs.json");
  const json dashboard = json::parse(in);
  const std::string text = Refresh({Job("a", FullStatus())});
  const std::regex name("tj_trainingjob_[a-z_]+");
  std::set<std::string> queried;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) {
      const std::string expr = target["expr"];
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name);
           it != std::sregex_iterator(); ++it) {
        queried.insert(it->str());
        EXPECT_THAT(text, HasSubstr("\n" + it->str() + "{")) << panel["title"];
      }
    }
  }
  EXPECT_GE(queried.size(), 6u) << "the dashboard reads the operator's per-job figures";
}

}  // namespace
}  // namespace tj::op
