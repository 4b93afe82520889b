// The setting of a reconcile step's unit test, with no API server: the job of
// controller_test_jobs.h (digits in ml: a coordinator, a PS, two workers), its pods as a kubelet
// would report them, a FakeClusterView, a RecordingKubeClient, recorded Events and notices, and
// a JobReconcile made from them as the Reconciler makes it before its steps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/controller/job_reconcile.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_options.h"
#include "tests/operator/controller/controller_test_jobs.h"
#include "tests/operator/controller/fake_cluster_view.h"
#include "tests/operator/controller/kubelet_status.h"
#include "tests/operator/controller/recording_kube_client.h"
#include "tests/operator/controller/recording_sinks.h"

namespace tj::op::testing {

class StepTest : public ::testing::Test {
 protected:
  // The job (SmallJobYaml with `extra_spec`), with `status` when not null.
  void SetJob(const std::string& extra_spec = "", int workers = 2,
              nlohmann::json status = nullptr) {
    auto manifest = v1alpha1::YamlToJson(SmallJobYaml(extra_spec, workers), "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    job_json_ = *manifest;
    job_json_["metadata"]["generation"] = 1;
    if (!status.is_null()) job_json_["status"] = status;
    view_.jobs["ml/digits"] = job_json_;
  }

  // The replica's pod as the operator builds it, with a UID, reported by the kubelet as
  // Running (exit_code < 0) or exited with exit_code.
  nlohmann::json Pod(ReplicaKey key, int exit_code = -1, const std::string& ip = "10.0.0.5") {
    absl::StatusOr<nlohmann::json> pod = BuildReplicaPod(Job(), key);
    EXPECT_TRUE(pod.ok()) << pod.status();
    nlohmann::json out = pod.ok() ? *pod : nlohmann::json::object();
    out["metadata"]["uid"] = absl::StrCat("uid-", out["metadata"].value("name", ""));
    out["spec"]["nodeName"] = "node-a";
    out["status"] = exit_code < 0 ? kubelet::RunningPodStatus(ip) : kubelet::ExitedPodStatus(exit_code);
    return out;
  }
  // Every replica of the job running.
  void AllRunning() {
    for (const Replica& replica : DesiredReplicas(Job())) view_.pods.push_back(Pod(replica.key));
  }

  v1alpha1::TrainingJob Job() const {
    v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobJson(job_json_);
    EXPECT_TRUE(checked.ok());
    return checked.job.value_or(v1alpha1::TrainingJob{});
  }

  // What the Reconciler reads before its first step.
  JobReconcile Reconcile() {
    JobReconcile r;
    r.key = "ml/digits";
    r.now = now_;
    r.job_json = &job_json_;
    r.job = std::make_shared<const v1alpha1::TrainingJob>(Job());
    r.status = r.job->status.value_or(v1alpha1::TrainingJobStatus{});
    for (const nlohmann::json& pod : view_.pods) {
      absl::StatusOr<ObservedPod> observed = ObservePod(pod);
      EXPECT_TRUE(observed.ok()) << observed.status();
      if (observed.ok()) r.pods.push_back(*observed);
    }
    return r;
  }

  // The objects the queued writes name, in order ("pods/digits-ps-0", "status", ...).
  static std::vector<std::string> Queued(const JobReconcile& r) {
    std::vector<std::string> out;
    for (const Write& w : r.writes) out.push_back(w.object);
    return out;
  }

  nlohmann::json job_json_;
  FakeClusterView view_;
  RecordingKubeClient client_;
  RecordingEvents events_;
  RecordingNotifier notifier_;
  ReconcileCounting counting_;
  ReconcilerOptions options_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

}  // namespace tj::op::testing
