// AdmissionStep and WorkloadFinishedStep over fakes: a queued job's Workload (one PodSet per
// role, owned by the job) and the job held until Kueue admits it; a queue-name naming no
// LocalQueue reported and nothing else done; the admitted flavour's placement reaching the pods;
// an eviction that notifies the coordinator first, then removes the pods, then releases the
// quota; runPolicy.suspend as spec.active; the priority class; a finished job's Workload; a job
// labelled with a prebuilt Workload (MultiKueue's copy in a worker cluster) adopting that one.
#include "operator/controller/reconciler_admission.h"

#include "operator/controller/reconciler_decide.h"
#include "operator/controller/reconciler_pods.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr char kWorkloadKey[] = "workloads/ml/trainingjob-digits";

class AdmissionStepTest : public StepTest {
 protected:
  void SetUp() override {
    SetJob();
    Label("kueue.x-k8s.io/queue-name", "user-queue");
    client_.objects["localqueues/ml/user-queue"] = {{"metadata", {{"name", "user-queue"}}}};
    client_.objects["resourceflavors//spot"] = {
        {"metadata", {{"name", "spot"}}},
        {"spec",
         {{"nodeLabels", {{"cloud/pool", "spot"}}},
          {"tolerations", json::array({{{"key", "spot"}, {"operator", "Exists"}}})}}}};
    options_.kueue.enabled = true;
  }
  void Label(const std::string& key, const std::string& value) {
    job_json_["metadata"]["labels"][key] = value;
    view_.jobs["ml/digits"] = job_json_;
  }
  // The Workload as the step created it, with Kueue's answer in its status.
  json Workload(const std::string& state, const std::string& reason = "") {
    json w = BuildWorkload(Job(), std::nullopt);
    w["metadata"]["generation"] = 1;
    json conditions = json::array();
    json assignments = json::array();
    for (const char* name : {"coordinator", "ps", "worker"}) {
      assignments.push_back({{"name", name}, {"flavors", {{"cpu", "spot"}, {"memory", "spot"}}}});
    }
    if (state == "admitted" || state == "evicted") {
      conditions.push_back(
          {{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"}});
      conditions.push_back({{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}});
      w["status"]["admission"] = {{"clusterQueue", "cluster-queue"},
                                  {"podSetAssignments", assignments}};
    }
    if (state == "evicted") {
      conditions.push_back({{"type", "Evicted"},
                            {"status", "True"},
                            {"reason", reason},
                            {"message", "Preempted to accommodate a workload (UID: x)"}});
    }
    if (state == "pending") {
      conditions.push_back({{"type", "QuotaReserved"},
                            {"status", "False"},
                            {"reason", "Pending"},
                            {"message", "couldn't assign flavors to pod set worker"}});
    }
    w["status"]["conditions"] = conditions;
    return w;
  }
  StepResult Run(JobReconcile& r) { return step_.Run(r); }
  // The decision the job gets after the step.
  JobReconcile Decided() {
    JobReconcile r = Reconcile();
    Run(r);
    DecideStep decide(notices_, invalid_);
    decide.Run(r);
    return r;
  }

  NoticesStep notices_{view_, notifier_, events_, counting_, nullptr};
  RestartedPods restarted_;
  InvalidSpec invalid_{view_, client_, events_};
  AdmissionStep step_{view_, client_, events_, notices_, KueueOptionsFor()};
  KueueOptions KueueOptionsFor() {
    KueueOptions o;
    o.enabled = true;
    o.poll_interval = absl::Seconds(5);
    o.drain_timeout = absl::Minutes(2);
    return o;
  }
};

TEST_F(AdmissionStepTest, WithoutKueueOrWithoutTheLabelNothingIsAsked) {
  AdmissionStep off(view_, client_, events_, notices_, KueueOptions{});
  JobReconcile r = Reconcile();
  EXPECT_EQ(off.Run(r).next, StepResult::Next::kContinue);
  job_json_["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  JobReconcile unlabelled = Reconcile();
  const StepResult result = Run(unlabelled);
  EXPECT_EQ(result.next, StepResult::Next::kContinue);
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_FALSE(unlabelled.queue_hold.has_value());
  EXPECT_THAT(client_.calls, IsEmpty());
}

TEST_F(AdmissionStepTest, AQueuedJobGetsAWorkloadWithAPodSetPerRoleAndWaitsWithoutPods) {
  JobReconcile r = Decided();
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits",
                                         "get localqueues user-queue", "create workloads"));
  const json& w = client_.objects.at(kWorkloadKey);
  EXPECT_EQ(w["spec"]["queueName"], "user-queue");
  EXPECT_EQ(w["spec"]["active"], true);
  ASSERT_THAT(w["spec"]["podSets"], SizeIs(3));
  EXPECT_EQ(w["spec"]["podSets"][0]["name"], "coordinator");
  EXPECT_EQ(w["spec"]["podSets"][0]["count"], 1);
  EXPECT_EQ(w["spec"]["podSets"][1]["name"], "ps");
  EXPECT_EQ(w["spec"]["podSets"][1]["template"]["metadata"]["labels"]["team"], "ranking");
  EXPECT_EQ(w["spec"]["podSets"][2]["name"], "worker");
  EXPECT_EQ(w["spec"]["podSets"][2]["count"], 2);
  EXPECT_EQ(w["metadata"]["ownerReferences"][0]["uid"], "0b0e6c52-1111-4a4a-9a9a-0123456789ab");
  EXPECT_EQ(w["metadata"]["ownerReferences"][0]["controller"], true);
  ASSERT_TRUE(r.queue_hold.has_value());
  EXPECT_EQ(r.queue_hold->reason, "WaitingForAdmission");
  EXPECT_EQ(r.decision.phase, JobPhase::kSuspended);
  EXPECT_EQ(r.decision.reason, "WaitingForAdmission");
  EXPECT_FALSE(r.PodsToCreate());

  client_.calls.clear();
  client_.objects[kWorkloadKey] = Workload("pending");
  JobReconcile again = Decided();
  EXPECT_THAT(client_.calls,
              ElementsAre("get workloads trainingjob-digits", "get localqueues user-queue"));
  EXPECT_THAT(again.queue_hold->message, HasSubstr("couldn't assign flavors to pod set worker"));
  EXPECT_FALSE(again.PodsToCreate());
}

TEST_F(AdmissionStepTest, AQueueNameNamingNoLocalQueueIsReportedAndNothingElseChanges) {
  client_.objects.erase("localqueues/ml/user-queue");
  for (int i = 0; i < 2; ++i) {
    JobReconcile r = Decided();
    ASSERT_TRUE(r.queue_hold.has_value());
    EXPECT_EQ(r.queue_hold->reason, "LocalQueueNotFound");
    EXPECT_THAT(r.queue_hold->message,
                HasSubstr("metadata.labels[kueue.x-k8s.io/queue-name]: LocalQueue ml/user-queue "
                          "does not exist"));
    EXPECT_EQ(r.decision.reason, "LocalQueueNotFound");
    EXPECT_FALSE(r.PodsToCreate());
  }
  EXPECT_FALSE(client_.objects.contains(kWorkloadKey));
  EXPECT_THAT(client_.calls, Not(Contains("create workloads")));
  int warnings = 0;
  for (const std::string& e : events_.events())
    warnings += e.starts_with("Warning LocalQueueNotFound");
  EXPECT_EQ(warnings, 1);
}

TEST_F(AdmissionStepTest, AnAdmittedJobsPodsGetTheFlavoursNodeSelectorAndTolerations) {
  client_.objects[kWorkloadKey] = Workload("admitted");
  JobReconcile r = Decided();
  EXPECT_FALSE(r.queue_hold.has_value());
  ASSERT_NE(r.placements, nullptr);
  EXPECT_EQ(r.placements->at(ReplicaType::kWorker).node_selector, (json{{"cloud/pool", "spot"}}));
  ASSERT_TRUE(r.PodsToCreate());
  PodsStep pods(client_, events_, notices_, restarted_, counting_, options_);
  pods.Run(r);
  ASSERT_FALSE(r.writes.empty());
  for (Write& w : r.writes) ASSERT_TRUE(w.call().ok());
  int checked = 0;
  for (const json& body : client_.bodies) {
    if (body.value("kind", "") != "Pod") continue;
    ++checked;
    EXPECT_EQ(body["spec"]["nodeSelector"]["cloud/pool"], "spot") << body["metadata"]["name"];
    EXPECT_THAT(body["spec"]["tolerations"],
                Contains(json{{"key", "spot"}, {"operator", "Exists"}}));
    if (body["metadata"]["name"] == "digits-ps-0") {
      EXPECT_EQ(body["spec"]["nodeSelector"]["pool"], "spot")
          << "the template's own selector stays";
    }
  }
  EXPECT_EQ(checked, 4);
  client_.calls.clear();
  JobReconcile again = Decided();
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits"))
      << "the flavours are read once per admission";
}

// Workloads watched (the controller's informer): the Workload is read from the watch, not the
// API, and a job waiting for Kueue is not looked at again: the Workload's events bring it back.
TEST_F(AdmissionStepTest, AWatchedWorkloadIsReadFromTheWatchNotTheApi) {
  view_.workloads_watched = true;
  JobReconcile created = Reconcile();
  EXPECT_FALSE(Run(created).requeue_after.has_value()) << "its creation's event brings it back";
  EXPECT_THAT(client_.calls, ElementsAre("get localqueues user-queue", "create workloads"))
      << "absent from the watch: created, no GET";
  EXPECT_EQ(created.queue_hold->reason, "WaitingForAdmission");

  client_.calls.clear();
  view_.workloads["ml/trainingjob-digits"] = Workload("pending");
  JobReconcile waiting = Reconcile();
  EXPECT_FALSE(Run(waiting).requeue_after.has_value());
  EXPECT_THAT(client_.calls, ElementsAre("get localqueues user-queue"));
  EXPECT_THAT(waiting.queue_hold->message, HasSubstr("couldn't assign flavors to pod set worker"));

  client_.calls.clear();
  view_.workloads["ml/trainingjob-digits"] = Workload("admitted");
  JobReconcile admitted = Reconcile();
  EXPECT_EQ(Run(admitted).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls, ElementsAre("get resourceflavors spot"));
  EXPECT_FALSE(admitted.queue_hold.has_value());
  ASSERT_NE(admitted.placements, nullptr);
  EXPECT_FALSE(Run(admitted).requeue_after.has_value()) << "an eviction is an event too";

  // What no Workload event announces is still polled: here the LocalQueue.
  client_.objects.erase("localqueues/ml/user-queue");
  view_.workloads["ml/trainingjob-digits"] = Workload("pending");
  JobReconcile no_queue = Reconcile();
  EXPECT_EQ(Run(no_queue).requeue_after, absl::Seconds(5));
  EXPECT_EQ(no_queue.queue_hold->reason, "LocalQueueNotFound");
}

TEST_F(AdmissionStepTest, WithoutTheWatchAWaitingJobIsPolled) {
  client_.objects[kWorkloadKey] = Workload("pending");
  JobReconcile waiting = Reconcile();
  EXPECT_EQ(Run(waiting).requeue_after, absl::Seconds(5));
  EXPECT_THAT(client_.calls, Contains("get workloads trainingjob-digits"));
}

TEST_F(AdmissionStepTest, AnEvictionNotifiesTheCoordinatorThenRemovesThePodsThenReleasesTheQuota) {
  AllRunning();
  client_.objects[kWorkloadKey] = Workload("evicted", "Preempted");
  for (int i = 0; i < 2; ++i) {
    JobReconcile r = Reconcile();
    r.token = "job-token";
    const StepResult held = Run(r);
    EXPECT_EQ(held.next, StepResult::Next::kStop) << "nothing changes while it checkpoints";
  }
  ASSERT_THAT(notifier_.notices(), SizeIs(1)) << "one notice per coordinator and eviction";
  EXPECT_EQ(notifier_.notices()[0].task_type, "chief");
  EXPECT_EQ(notifier_.notices()[0].reason, "KueueEviction/Preempted");
  EXPECT_EQ(notifier_.notices()[0].token, "job-token");

  // The coordinator checkpointed and exited: now the pods go.
  view_.pods[0] = Pod({ReplicaType::kCoordinator, 0}, 75);
  JobReconcile stopping = Decided();
  ASSERT_TRUE(stopping.queue_hold.has_value());
  EXPECT_EQ(stopping.queue_hold->reason, "Evicted");
  EXPECT_EQ(stopping.decision.phase, JobPhase::kSuspended);
  EXPECT_THAT(stopping.decision.to_stop, SizeIs(4));
  EXPECT_TRUE(stopping.decision.restarts.empty()) << "the coordinator's exit is not a failure";
  EXPECT_EQ(stopping.new_preemptions, 1) << "the eviction, once, in a reconcile that writes";
  EXPECT_THAT(client_.calls, Not(Contains("update workloads/status trainingjob-digits")));

  // Every pod gone: the quota is released as Kueue's job integrations release it.
  view_.pods.clear();
  JobReconcile released = Decided();
  ASSERT_THAT(client_.calls, Contains("update workloads/status trainingjob-digits"));
  const json& status = client_.bodies.back()["status"];
  EXPECT_FALSE(status.contains("admission"));
  std::map<std::string, std::string> conditions;
  for (const json& c : status["conditions"]) {
    conditions[c["type"].get<std::string>()] =
        absl::StrCat(c["status"].get<std::string>(), "/", c["reason"].get<std::string>());
  }
  EXPECT_EQ(conditions["QuotaReserved"], "False/Pending");
  EXPECT_EQ(conditions["Admitted"], "False/NoReservation");
  EXPECT_EQ(conditions["Requeued"], "True/Preempted");
  EXPECT_EQ(conditions["Evicted"], "True/Preempted");
  EXPECT_EQ(released.queue_hold->reason, "WaitingForAdmission");
  EXPECT_EQ(released.new_preemptions, 0) << "counted once";

  // Read again before the release reached the watch: still not counted twice.
  JobReconcile stale = Decided();
  EXPECT_EQ(stale.new_preemptions, 0);
}

TEST_F(AdmissionStepTest, ACoordinatorThatDoesNotExitWithinTheDrainTimeoutLosesItsPods) {
  AllRunning();
  client_.objects[kWorkloadKey] = Workload("evicted", "Preempted");
  JobReconcile first = Reconcile();
  EXPECT_EQ(Run(first).next, StepResult::Next::kStop);
  now_ += absl::Minutes(2);
  JobReconcile late = Decided();
  ASSERT_TRUE(late.queue_hold.has_value());
  EXPECT_EQ(late.queue_hold->reason, "Evicted");
  EXPECT_THAT(late.decision.to_stop, SizeIs(4));
}

TEST_F(AdmissionStepTest, RunPolicySuspendIsTheWorkloadsSpecActive) {
  client_.objects[kWorkloadKey] = Workload("admitted");  // made while the job ran
  job_json_["spec"]["runPolicy"]["suspend"] = true;
  JobReconcile r = Decided();
  EXPECT_THAT(client_.calls, Contains("patch workloads trainingjob-digits"));
  EXPECT_THAT(client_.bodies, Contains(json{{"spec", {{"active", false}}}}));
  EXPECT_EQ(r.decision.phase, JobPhase::kSuspended);
}

TEST_F(AdmissionStepTest, ThePriorityClassGivesTheWorkloadItsPriority) {
  Label("kueue.x-k8s.io/priority-class", "high");
  JobReconcile missing = Decided();
  EXPECT_EQ(missing.queue_hold->reason, "PriorityClassNotFound");
  EXPECT_THAT(
      missing.queue_hold->message,
      HasSubstr("metadata.labels[kueue.x-k8s.io/priority-class]: WorkloadPriorityClass high"));
  EXPECT_FALSE(client_.objects.contains(kWorkloadKey));

  client_.objects["workloadpriorityclasses//high"] = {{"metadata", {{"name", "high"}}},
                                                      {"value", 1000}};
  Decided();
  const json& w = client_.objects.at(kWorkloadKey);
  EXPECT_EQ(w["spec"]["priority"], 1000);
  EXPECT_EQ(
      w["spec"]["priorityClassRef"],
      (json{{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "high"}}));
}

TEST_F(AdmissionStepTest, AWorkloadOfThatNameNotTheJobsHoldsTheJob) {
  json foreign = Workload("admitted");
  foreign["metadata"].erase("ownerReferences");
  client_.objects[kWorkloadKey] = foreign;
  JobReconcile r = Decided();
  EXPECT_EQ(r.queue_hold->reason, "WorkloadConflict");
  EXPECT_FALSE(r.PodsToCreate());
}

TEST_F(AdmissionStepTest, AFinishedJobsWorkloadIsMarkedFinishedOnce) {
  json succeeded = {{"type", "Succeeded"},
                    {"status", "True"},
                    {"reason", "Succeeded"},
                    {"message", "done"},
                    {"lastTransitionTime", "2027-01-15T08:00:00Z"}};
  SetJob("", 2, json{{"conditions", json::array({succeeded})}});
  Label("kueue.x-k8s.io/queue-name", "user-queue");
  client_.objects[kWorkloadKey] = Workload("admitted");
  WorkloadFinishedStep finished(view_, client_, KueueOptionsFor());
  for (int i = 0; i < 2; ++i) {
    JobReconcile r = Reconcile();
    EXPECT_EQ(finished.Run(r).next, StepResult::Next::kContinue);
  }
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits",
                                         "update workloads/status trainingjob-digits"));
  const json& status = client_.bodies.back()["status"];
  bool marked = false;
  for (const json& c : status["conditions"]) {
    marked |= c["type"] == "Finished" && c["status"] == "True" && c["reason"] == "Succeeded";
  }
  EXPECT_TRUE(marked) << status.dump();

  // Watched: the Workload comes from the watch, the update still goes to the API.
  client_.calls.clear();
  view_.workloads_watched = true;
  view_.workloads["ml/trainingjob-digits"] = Workload("admitted");
  WorkloadFinishedStep watched(view_, client_, KueueOptionsFor());
  JobReconcile r = Reconcile();
  EXPECT_EQ(watched.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls, ElementsAre("update workloads/status trainingjob-digits"));
}

// MultiKueue's copy of a job in a worker cluster names the Workload MultiKueue copied there: the
// job adopts that one (controller reference, job-uid label, resourceVersion as a precondition) and
// runs when it is admitted; it never creates one of its own.
TEST_F(AdmissionStepTest, APrebuiltWorkloadIsAdoptedAndNeverCreated) {
  Label("kueue.x-k8s.io/prebuilt-workload-name", "trainingjob-digits-mk");
  JobReconcile missing = Decided();
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits-mk"));
  ASSERT_TRUE(missing.queue_hold.has_value());
  EXPECT_EQ(missing.queue_hold->reason, "PrebuiltWorkloadNotFound");
  EXPECT_THAT(missing.queue_hold->message,
              HasSubstr("metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Workload "
                        "ml/trainingjob-digits-mk does not exist"));
  EXPECT_FALSE(missing.PodsToCreate());

  // Copied by MultiKueue: its spec, no owner; admitted by this cluster's Kueue. The watch keeps
  // only Workloads a TrainingJob controls, so it is asked of the API.
  view_.workloads_watched = true;
  json copied = Workload("admitted");
  copied["metadata"]["name"] = "trainingjob-digits-mk";
  copied["metadata"].erase("ownerReferences");
  copied["metadata"]["resourceVersion"] = "41";
  client_.objects["workloads/ml/trainingjob-digits-mk"] = copied;
  client_.calls.clear();
  client_.bodies.clear();
  JobReconcile adopted = Decided();
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits-mk",
                                         "patch workloads trainingjob-digits-mk",
                                         "get resourceflavors spot"));
  ASSERT_THAT(client_.bodies, SizeIs(1));
  const json& patch = client_.bodies[0]["metadata"];
  EXPECT_EQ(patch["resourceVersion"], "41");
  ASSERT_THAT(patch["ownerReferences"], SizeIs(1));
  EXPECT_EQ(patch["ownerReferences"][0]["kind"], "TrainingJob");
  EXPECT_EQ(patch["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(patch["ownerReferences"][0]["uid"], "0b0e6c52-1111-4a4a-9a9a-0123456789ab");
  EXPECT_EQ(patch["labels"]["kueue.x-k8s.io/job-uid"], "0b0e6c52-1111-4a4a-9a9a-0123456789ab");
  EXPECT_FALSE(adopted.queue_hold.has_value());
  EXPECT_TRUE(adopted.PodsToCreate());
  EXPECT_FALSE(client_.objects.contains(kWorkloadKey)) << "no Workload of its own";

  // Adopted, it is in the watch: read there, nothing asked of the API.
  view_.workloads["ml/trainingjob-digits-mk"] =
      client_.objects["workloads/ml/trainingjob-digits-mk"];
  client_.calls.clear();
  JobReconcile running = Decided();
  EXPECT_THAT(client_.calls, IsEmpty());
  EXPECT_TRUE(running.PodsToCreate());
}

TEST_F(AdmissionStepTest, APrebuiltWorkloadThatIsNotTheJobsHoldsIt) {
  Label("kueue.x-k8s.io/prebuilt-workload-name", "trainingjob-digits-mk");
  json other = Workload("admitted");
  other["metadata"]["name"] = "trainingjob-digits-mk";
  other["spec"]["podSets"][2]["count"] = 3;
  client_.objects["workloads/ml/trainingjob-digits-mk"] = other;
  JobReconcile r = Decided();
  ASSERT_TRUE(r.queue_hold.has_value());
  EXPECT_EQ(r.queue_hold->reason, "PrebuiltWorkloadOutOfSync");
  EXPECT_THAT(r.queue_hold->message,
              HasSubstr("its PodSet worker counts 3 pods, the job has 2"));
  EXPECT_FALSE(r.PodsToCreate());
  EXPECT_THAT(events_.events(), Contains(HasSubstr("PrebuiltWorkloadOutOfSync")));

  // Controlled by something else: never taken over.
  other = Workload("admitted");
  other["metadata"]["name"] = "trainingjob-digits-mk";
  other["metadata"]["ownerReferences"][0]["uid"] = "another-job";
  client_.objects["workloads/ml/trainingjob-digits-mk"] = other;
  client_.calls.clear();
  JobReconcile conflict = Decided();
  EXPECT_EQ(conflict.queue_hold->reason, "WorkloadConflict");
  EXPECT_THAT(client_.calls, Not(Contains("patch workloads trainingjob-digits-mk")));
}

TEST_F(AdmissionStepTest, AFinishedJobMarksItsPrebuiltWorkloadFinished) {
  json succeeded = {{"type", "Succeeded"}, {"status", "True"}, {"reason", "Succeeded"}};
  SetJob("", 2, json{{"conditions", json::array({succeeded})}});
  Label("kueue.x-k8s.io/queue-name", "user-queue");
  Label("kueue.x-k8s.io/prebuilt-workload-name", "trainingjob-digits-mk");
  json adopted = Workload("admitted");
  adopted["metadata"]["name"] = "trainingjob-digits-mk";
  client_.objects["workloads/ml/trainingjob-digits-mk"] = adopted;
  WorkloadFinishedStep finished(view_, client_, KueueOptionsFor());
  JobReconcile r = Reconcile();
  EXPECT_EQ(finished.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits-mk",
                                         "update workloads/status trainingjob-digits-mk"));
}

}  // namespace
}  // namespace tj::op::testing
