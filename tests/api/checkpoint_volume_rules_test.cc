// spec.checkpoint.volume on JSON manifests: which claims a job may name or ask for, the defaults,
// the round trip (the CRD's side is tests/crd/'s agreement test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/v1alpha1/checkpoint_volume_json.h"
#include "api/v1alpha1/encode.h"
#include "api/v1alpha1/load.h"

namespace tj::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using json = nlohmann::json;

json JobWithVolume(const json& volume, const std::string& dir = "/ckpt/run") {
  json tmpl = {{"spec", {{"containers", {{{"name", "main"}, {"image", "img"}}}}}}};
  return {{"apiVersion", "trainingjob.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "job"}}},
          {"spec",
           {{"replicaSpecs",
             {{"Coordinator", {{"template", tmpl}}},
              {"PS", {{"template", tmpl}}},
              {"Worker", {{"template", tmpl}}}}},
            {"checkpoint", {{"dir", dir}, {"volume", volume}}}}}};
}

// One problem at `field` whose message has `text`.
::testing::Matcher<std::vector<std::string>> OneProblem(const std::string& field,
                                                          const std::string& text) {
  return ElementsAre(::testing::AllOf(::testing::StartsWith(field + ": "), ::testing::HasSubstr(text)));
}

std::vector<std::string> Problems(const json& manifest) {
  std::vector<std::string> out;
  for (const FieldError& e : CheckTrainingJobJson(manifest).errors) {
    out.push_back(e.field + ": " + e.message);
  }
  return out;
}

const json kTemplate = {{"claimTemplate", {{"resources", {{"requests", {{"storage", "10Gi"}}}}}}}};

TEST(CheckpointVolumeRulesTest, TemplateIsDefaultedToReadWriteManyAndRetainAndRoundTrips) {
  CheckedTrainingJob checked = CheckTrainingJobJson(JobWithVolume(kTemplate));
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("job", checked.errors);
  const CheckpointVolume& volume = *checked.job->spec.checkpoint->volume;
  EXPECT_EQ(volume.reclaim_policy, ClaimReclaimPolicy::kRetain);
  EXPECT_EQ(volume.claim_template->access_modes,
            std::vector<VolumeAccessMode>{VolumeAccessMode::kReadWriteMany});
  EXPECT_EQ(volume.claim_template->storage, "10Gi");
  EXPECT_EQ(TrainingJobToJson(*checked.job)["spec"]["checkpoint"]["volume"],
            (json{{"claimTemplate",
                   {{"accessModes", {"ReadWriteMany"}},
                    {"resources", {{"requests", {{"storage", "10Gi"}}}}}}},
                  {"reclaimPolicy", "Retain"}}));
}

TEST(CheckpointVolumeRulesTest, ExactlyOneOfClaimNameAndTemplate) {
  json both = kTemplate;
  both["claimName"] = "shared";
  EXPECT_THAT(Problems(JobWithVolume(both)),
              OneProblem("spec.checkpoint.volume.claimTemplate",
                         "may not be set together with claimName"));
  EXPECT_THAT(Problems(JobWithVolume(json::object())),
              OneProblem("spec.checkpoint.volume.claimName", "or claimTemplate"));
  EXPECT_THAT(Problems(JobWithVolume({{"claimName", "shared.team-a"}})), ElementsAre());
}

TEST(CheckpointVolumeRulesTest, TemplateNeedsAPositiveSizeAndReadWriteMany) {
  json zero = kTemplate;
  zero["claimTemplate"]["resources"]["requests"]["storage"] = "0.0Mi";
  EXPECT_THAT(Problems(JobWithVolume(zero)),
              OneProblem("spec.checkpoint.volume.claimTemplate.resources.requests.storage",
                         "must be a Kubernetes quantity greater than zero"));
  json rwo = kTemplate;
  rwo["claimTemplate"]["accessModes"] = {"ReadWriteOnce"};
  EXPECT_THAT(Problems(JobWithVolume(rwo)),
              OneProblem("spec.checkpoint.volume.claimTemplate.accessModes",
                         "must include ReadWriteMany"));
}

TEST(CheckpointVolumeRulesTest, DirectoryLiesOnTheMountedVolume) {
  EXPECT_THAT(Problems(JobWithVolume({{"claimName", "c"}, {"mountPath", "/ckpt"}})), ElementsAre());
  EXPECT_THAT(Problems(JobWithVolume({{"claimName", "c"}, {"mountPath", "/ckpt/"}})), ElementsAre());
  EXPECT_THAT(Problems(JobWithVolume({{"claimName", "c"}, {"mountPath", "/ck"}})),
              OneProblem("spec.checkpoint.volume.mountPath",
                         "must be spec.checkpoint.dir (/ckpt/run) or a directory above it"));
  EXPECT_THAT(Problems(JobWithVolume({{"claimName", "c"}}, "relative/dir")),
              OneProblem("spec.checkpoint.dir", "must be an absolute path"));
}

TEST(CheckpointVolumeRulesTest, QuantitiesAsKubernetesWritesThem) {
  for (const char* ok : {"1", "10Gi", "500M", "1.5Ti", "1e9", "+2Ki", ".5G", "100m"}) {
    EXPECT_TRUE(IsPositiveQuantity(ok)) << ok;
  }
  for (const char* bad : {"", "0", "0Gi", "-1Gi", "10 GB", "10GB", "Gi", "1.2.3", "0e5"}) {
    EXPECT_FALSE(IsPositiveQuantity(bad)) << bad;
  }
}

}  // namespace
}  // namespace tj::v1alpha1
