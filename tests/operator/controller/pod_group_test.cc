// The PodGroup of a job, for each gang scheduler: API version, name (the group the pods
// reference), ownership, and the spec each scheduler reads, from the job's schedulingPolicy.
#include "operator/controller/pod_group.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "operator/kube/resource.h"
#include "tests/operator/controller/controller_test_jobs.h"

namespace tj::op {
namespace {

using nlohmann::json;
using v1alpha1::ReplicaType;

struct SpecCase {
  std::string name;
  std::string extra_spec;  // appended to SmallJobYaml (1 coordinator, 1 PS, `workers` workers)
  int workers;
  GangScheduler scheduler;
  json want_spec;  // the whole spec: nothing more, nothing less
};

TEST(PodGroupTest, SpecIsWhatEachSchedulerReads) {
  const std::string full = R"(  runPolicy:
    schedulingPolicy: {minAvailable: 3, queue: research, priorityClass: high}
)";
  const std::vector<SpecCase> cases = {
      {"volcano, every field",
       full,
       2,
       GangScheduler::kVolcano,
       {{"minMember", 3}, {"queue", "research"}, {"priorityClassName", "high"}}},
      {"volcano, no policy: the whole job, Volcano's default queue",
       "",
       5,
       GangScheduler::kVolcano,
       {{"minMember", 7}}},
      {"volcano, queue only",
       "  runPolicy:\n    schedulingPolicy: {queue: q1}\n",
       2,
       GangScheduler::kVolcano,
       {{"minMember", 4}, {"queue", "q1"}}},
      {"volcano, priority only",
       "  runPolicy:\n    schedulingPolicy: {priorityClass: low}\n",
       1,
       GangScheduler::kVolcano,
       {{"minMember", 3}, {"priorityClassName", "low"}}},
      {"scheduler-plugins reads minMember only",
       full,
       2,
       GangScheduler::kSchedulerPlugins,
       {{"minMember", 3}}},
      {"scheduler-plugins, no policy", "", 6, GangScheduler::kSchedulerPlugins, {{"minMember", 8}}},
      {"minAvailable equal to every replica",
       "  runPolicy:\n    schedulingPolicy: {minAvailable: 4}\n",
       2,
       GangScheduler::kSchedulerPlugins,
       {{"minMember", 4}}},
  };
  for (const SpecCase& c : cases) {
    SCOPED_TRACE(c.name);
    const v1alpha1::TrainingJob job =
        testing::LoadJob(testing::SmallJobYaml(c.extra_spec, c.workers));
    const json group = BuildPodGroup(job, c.scheduler);
    EXPECT_EQ(group["spec"], c.want_spec);
    EXPECT_EQ(PodGroupMinMember(job), c.want_spec["minMember"].get<int32_t>());
  }
}

struct ApiCase {
  GangScheduler scheduler;
  std::string api_version;
  std::string path;
  std::string api_name;
};

TEST(PodGroupTest, EachSchedulerHasItsOwnApi) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  for (const ApiCase& c : std::vector<ApiCase>{
           {GangScheduler::kVolcano, "scheduling.volcano.sh/v1beta1",
            "/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/digits",
            "podgroups.scheduling.volcano.sh"},
           {GangScheduler::kSchedulerPlugins, "scheduling.x-k8s.io/v1alpha1",
            "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/digits",
            "podgroups.scheduling.x-k8s.io"},
       }) {
    SCOPED_TRACE(c.api_version);
    const json group = BuildPodGroup(job, c.scheduler);
    EXPECT_EQ(group["apiVersion"], c.api_version);
    EXPECT_EQ(group["kind"], "PodGroup");
    EXPECT_EQ(kube::ResourcePath(PodGroupResource(c.scheduler, "ml", "digits")), c.path);
    EXPECT_EQ(PodGroupApiName(c.scheduler), c.api_name);
  }
}

TEST(PodGroupTest, NamedAsThePodsReferenceItAndOwnedByTheJob) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  for (GangScheduler scheduler : {GangScheduler::kVolcano, GangScheduler::kSchedulerPlugins}) {
    const json group = BuildPodGroup(job, scheduler);
    const json& meta = group["metadata"];
    EXPECT_EQ(meta["name"], "digits");
    EXPECT_EQ(meta["namespace"], "ml");
    EXPECT_EQ(meta["labels"], json({{"trainingjob.dev/job-name", "digits"}}));
    ASSERT_EQ(meta["ownerReferences"].size(), 1u);
    EXPECT_EQ(meta["ownerReferences"][0], ControllerReference(job));
    EXPECT_EQ(meta["ownerReferences"][0]["uid"], "0b0e6c52-1111-4a4a-9a9a-0123456789ab");
    EXPECT_TRUE(meta["ownerReferences"][0]["controller"].get<bool>());
  }
  // The group each scheduler finds on the pods is this PodGroup.
  auto volcano_pod = BuildReplicaPod(job, {ReplicaType::kPs, 0}, {GangScheduler::kVolcano});
  ASSERT_TRUE(volcano_pod.ok());
  EXPECT_EQ((*volcano_pod)["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
            BuildPodGroup(job, GangScheduler::kVolcano)["metadata"]["name"]);
  auto plugins_pod =
      BuildReplicaPod(job, {ReplicaType::kPs, 0}, {GangScheduler::kSchedulerPlugins});
  ASSERT_TRUE(plugins_pod.ok());
  EXPECT_EQ((*plugins_pod)["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"],
            BuildPodGroup(job, GangScheduler::kSchedulerPlugins)["metadata"]["name"]);
}

TEST(PodGroupTest, NoGangSchedulerNoPodGroup) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(R"(  runPolicy:
    schedulingPolicy: {minAvailable: 2}
)"));
  EXPECT_TRUE(BuildPodGroup(job, GangScheduler::kNone).is_null());
}

TEST(PodGroupTest, AJobWithoutNamespaceGetsItsPodGroupInDefault) {
  std::string yaml = testing::SmallJobYaml();
  yaml.erase(yaml.find("  namespace: ml\n"), std::string("  namespace: ml\n").size());
  const v1alpha1::TrainingJob job = testing::LoadJob(yaml);
  EXPECT_EQ(BuildPodGroup(job, GangScheduler::kVolcano)["metadata"]["namespace"], "default");
}

TEST(PodGroupTest, BuildingTwiceGivesTheSameObject) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  EXPECT_EQ(BuildPodGroup(job, GangScheduler::kVolcano),
            BuildPodGroup(job, GangScheduler::kVolcano));
}

}  // namespace
}  // namespace tj::op
