// Gang scheduling against the real API server (fixture: reconciler_integration_fixture.h).
#include <map>
#include <string>

#include "operator/controller/pod_group.h"
#include "tests/operator/controller/reconciler_integration_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;

// Gang scheduling. The PodGroup CRDs are the projects' own (testdata/, copied from their Go
// modules); nothing schedules here, so what is checked is what the operator writes: the PodGroup
// before the pods, its fields, its owner, and what happens without the CRD.
constexpr char kVolcanoCrd[] = "podgroups.scheduling.volcano.sh";
constexpr char kPluginsCrd[] = "podgroups.scheduling.x-k8s.io";

std::string CrdFile(const std::string& crd) {
  const std::string group = crd.substr(crd.find('.') + 1);
  return std::string(TJ_SOURCE_DIR) + "/tests/operator/controller/testdata/" + group +
         "_podgroups.yaml";
}

// Whether the API server serves the scheduler's podgroups in `ns` (a CRD being removed is still
// served for a moment after its object is gone).
bool Serves(kube::KubeClient& client, GangScheduler scheduler, const std::string& ns) {
  auto list = client.List(PodGroupResource(scheduler, ns), {});
  EXPECT_TRUE(list.ok() || absl::IsNotFound(list.status())) << list.status();
  return list.ok();
}

class GangSchedulingIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  void InstallCrd(const std::string& crd, GangScheduler scheduler) {
    bool ok = false;
    const std::string applied = Kubectl("apply -f " + Quote(CrdFile(crd)), &ok);
    ASSERT_TRUE(ok) << applied;
    ASSERT_TRUE(testing::WaitFor([&] { return Serves(*client_, scheduler, ns_); }))
        << crd << " was never served";
  }
  void RemoveCrd(const std::string& crd, GangScheduler scheduler) {
    bool ok = false;
    const std::string deleted = Kubectl("delete crd --ignore-not-found --wait " + crd, &ok);
    ASSERT_TRUE(ok) << deleted;
    ASSERT_TRUE(testing::WaitFor([&] { return !Serves(*client_, scheduler, ns_); }))
        << crd << " is still served";
  }
  absl::StatusOr<json> PodGroup(GangScheduler scheduler, const std::string& name = "digits") {
    return client_->Get(PodGroupResource(scheduler, ns_, name));
  }
  std::map<std::string, json> PodsOf(const std::string& job) {
    std::map<std::string, json> out;
    for (auto& [name, pod] : Pods()) {
      if (name.starts_with(job + "-")) out[name] = pod;
    }
    return out;
  }
  int EventCount(const std::string& text) {
    int n = 0;
    for (const std::string& e : events_.events()) n += e.find(text) != std::string::npos;
    return n;
  }
};

TEST_F(GangSchedulingIntegrationTest, VolcanoPodGroupCarriesThePolicyFollowsItAndGoesWithTheJob) {
  InstallCrd(kVolcanoCrd, GangScheduler::kVolcano);
  // Pods naming a PriorityClass are admitted only when it exists.
  Kubectl("create priorityclass tj-test-high --value=1000");
  ASSERT_THAT(Kubectl("get priorityclass tj-test-high -o name"), HasSubstr("priorityclass"));
  UseGangScheduler(GangScheduler::kVolcano);
  CreateJob(6, "schedulingPolicy: {minAvailable: 3, queue: research, priorityClass: tj-test-high}");
  Reconcile();

  auto group = PodGroup(GangScheduler::kVolcano);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ((*group)["spec"]["minMember"], 3);
  EXPECT_EQ((*group)["spec"]["queue"], "research");
  EXPECT_EQ((*group)["spec"]["priorityClassName"], "tj-test-high");
  EXPECT_FALSE((*group)["spec"].contains("minResources"));
  EXPECT_EQ((*group)["metadata"]["labels"]["trainingjob.dev/job-name"], "digits");
  const json job = Job();
  ASSERT_EQ((*group)["metadata"]["ownerReferences"].size(), 1u);
  const json& owner = (*group)["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(owner["kind"], "TrainingJob");
  EXPECT_EQ(owner["apiVersion"], "trainingjob.dev/v1alpha1");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_TRUE(events_.Has("Normal CreatedPodGroup: created PodGroup " + ns_ + "/digits"));

  // The pods name it the way Volcano reads it.
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) {
    EXPECT_EQ(pod["spec"]["schedulerName"], "volcano") << name;
    EXPECT_EQ(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "digits") << name;
    EXPECT_EQ(pod["metadata"]["annotations"]["volcano.sh/queue-name"], "research") << name;
    EXPECT_EQ(pod["spec"]["priorityClassName"], "tj-test-high") << name;
  }
  json created = CreatedCondition();
  EXPECT_EQ(created["status"], "True");

  // Level-based: the job's policy edited, the PodGroup follows; Volcano's own fields stay.
  auto foreign = client_->MergePatch(PodGroupResource(GangScheduler::kVolcano, ns_, "digits"),
                                     {{"spec", {{"minTaskMember", {{"worker", 1}}}}}});
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  auto patched = client_->MergePatch(
      *kube::Resource("trainingjobs", ns_, "digits"),
      {{"spec",
        {{"runPolicy", {{"schedulingPolicy", {{"minAvailable", 4}, {"queue", "batch"}}}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  Reconcile();
  group = PodGroup(GangScheduler::kVolcano);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["spec"]["minMember"], 4);
  EXPECT_EQ((*group)["spec"]["queue"], "batch");
  EXPECT_EQ((*group)["spec"]["priorityClassName"], "tj-test-high");
  EXPECT_EQ((*group)["spec"]["minTaskMember"]["worker"], 1) << "a field the job does not set";
  EXPECT_TRUE(events_.Has("Normal UpdatedPodGroup"));
  const std::string version = (*group)["metadata"]["resourceVersion"];
  Reconcile();
  EXPECT_EQ((*PodGroup(GangScheduler::kVolcano))["metadata"]["resourceVersion"], version)
      << "an unchanged job writes nothing";

  // Deleted behind the operator's back while a pod must be created: made again first.
  ASSERT_TRUE(client_->Delete(PodGroupResource(GangScheduler::kVolcano, ns_, "digits"), {}).ok());
  ASSERT_TRUE(client_->Delete(*kube::Resource("pods", ns_, "digits-worker-1"), {}).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return !Pods().contains("digits-worker-1"); }));
  Reconcile();
  EXPECT_TRUE(PodGroup(GangScheduler::kVolcano).ok());
  EXPECT_TRUE(Pods().contains("digits-worker-1"));

  // The garbage collector deletes it with the job (ownerReference; no delete by the operator).
  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  ASSERT_TRUE(client_->Delete(*kube::Resource("trainingjobs", ns_, "digits"), background).ok());
  EXPECT_TRUE(
      testing::WaitFor([&] { return absl::IsNotFound(PodGroup(GangScheduler::kVolcano).status()); },
                       absl::Seconds(120)))
      << "the PodGroup outlived its job";
}

TEST_F(GangSchedulingIntegrationTest, SchedulerPluginsPodGroupHoldsTheWholeJobAndFollowsScaling) {
  InstallCrd(kPluginsCrd, GangScheduler::kSchedulerPlugins);
  UseGangScheduler(GangScheduler::kSchedulerPlugins);
  CreateJob(6, "schedulingPolicy: {queue: ignored-by-the-coscheduler}");
  Reconcile();
  auto group = PodGroup(GangScheduler::kSchedulerPlugins);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((*group)["spec"], json({{"minMember", 4}})) << "minAvailable unset: every replica";
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["uid"], Job()["metadata"]["uid"]);
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["controller"], true);
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) {
    EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "digits") << name;
    EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler") << name;
  }

  // Elastic workers: the whole job is now 5 replicas, and so is the gang.
  bool ok = false;
  const std::string scaled =
      Kubectl(absl::StrCat("-n ", ns_, " scale tj/digits --replicas=3"), &ok);
  ASSERT_TRUE(ok) << scaled;
  Reconcile();
  group = PodGroup(GangScheduler::kSchedulerPlugins);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["spec"]["minMember"], 5);
  EXPECT_TRUE(Pods().contains("digits-worker-2"));
}

TEST_F(GangSchedulingIntegrationTest, MissingPodGroupCrdWarnsHoldsThePodsAndServesOtherJobs) {
  RemoveCrd(kVolcanoCrd, GangScheduler::kVolcano);
  // A job already running (its pods made before the flag was set) and a new one.
  CreateJob(6, "", "other");
  Reconcile("other");
  for (const auto& [name, pod] : PodsOf("other")) SetRunning(name);
  Reconcile("other");
  ASSERT_EQ(State("other"), "Running");
  UseGangScheduler(GangScheduler::kVolcano);
  CreateJob();

  const ReconcileResult blocked = Reconcile();  // OK: not an error to back off and retry
  ASSERT_TRUE(blocked.requeue_after.has_value()) << "nothing else would bring the job back";
  EXPECT_EQ(*blocked.requeue_after, absl::Minutes(1));
  EXPECT_TRUE(PodsOf("digits").empty()) << "pods without their PodGroup would never schedule";
  const json created = CreatedCondition();
  EXPECT_EQ(created["status"], "False");
  EXPECT_EQ(created["reason"], "PodGroupUnavailable");
  EXPECT_THAT(created["message"].get<std::string>(),
              HasSubstr("podgroups.scheduling.volcano.sh is not installed"));
  EXPECT_THAT(created["message"].get<std::string>(), HasSubstr("--gang-scheduler=volcano"));
  EXPECT_TRUE(
      events_.Has("Warning PodGroupUnavailable: podgroups.scheduling.volcano.sh is not "
                  "installed"));
  EXPECT_TRUE(client_->Get(*kube::Resource("services", ns_, "digits-ps-0")).ok())
      << "the rest of the job is made";
  Reconcile();
  EXPECT_EQ(EventCount("Warning PodGroupUnavailable"), 1) << "one Warning, not one a minute";

  // The other job goes on: it finishes and is cleaned up.
  SetExited("other-coordinator-0", 0);
  Reconcile("other");
  EXPECT_EQ(State("other"), "Succeeded");
  EXPECT_FALSE(PodsOf("other").contains("other-ps-0"));

  // Installed: the next reconcile makes the PodGroup, then the pods.
  InstallCrd(kVolcanoCrd, GangScheduler::kVolcano);
  const ReconcileResult unblocked = Reconcile();
  EXPECT_FALSE(unblocked.requeue_after.has_value());
  EXPECT_TRUE(PodGroup(GangScheduler::kVolcano).ok());
  EXPECT_EQ(PodsOf("digits").size(), 4u);
  EXPECT_EQ(CreatedCondition()["status"], "True");
  EXPECT_EQ(State(), "Created");
}


// spec.checkpoint.volume (reconciler_checkpoint_volume.cc): the claim before the pods, mounted on
// the coordinator and PS only; a claim that cannot serve holds the job; the garbage collector

}  // namespace
}  // namespace tj::op::testing
