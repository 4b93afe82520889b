// spec.checkpoint.s3 on JSON manifests: when a job may name a bucket, the defaults, the round trip
// (the CRD's side is tests/crd/'s agreement test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/v1alpha1/checkpoint_s3_json.h"
#include "api/v1alpha1/encode.h"
#include "api/v1alpha1/load.h"

namespace tj::v1alpha1 {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using json = nlohmann::json;

const json kS3 = {{"endpoint", "https://s3.example.com"}, {"credentialsSecret", {{"name", "ckpt"}}}};

json JobWith(const json& checkpoint) {
  json tmpl = {{"spec", {{"containers", {{{"name", "main"}, {"image", "img"}}}}}}};
  return {{"apiVersion", "trainingjob.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "job"}}},
          {"spec",
           {{"replicaSpecs",
             {{"Coordinator", {{"template", tmpl}}},
              {"PS", {{"template", tmpl}}},
              {"Worker", {{"template", tmpl}}}}},
            {"checkpoint", checkpoint}}}};
}

json Bucket(const json& s3 = kS3, const std::string& dir = "s3://team-ckpt/runs/1") {
  return {{"dir", dir}, {"s3", s3}};
}

std::vector<std::string> Problems(const json& manifest) {
  std::vector<std::string> out;
  for (const FieldError& e : CheckTrainingJobJson(manifest).errors) {
    out.push_back(e.field + ": " + e.message);
  }
  return out;
}

::testing::Matcher<std::vector<std::string>> OneProblem(const std::string& field,
                                                          const std::string& text) {
  return ElementsAre(AllOf(StartsWith(field + ": "), HasSubstr(text)));
}

TEST(CheckpointS3RulesTest, RegionAndKeysAreDefaultedAndRoundTrip) {
  CheckedTrainingJob checked = CheckTrainingJobJson(JobWith(Bucket()));
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("job", checked.errors);
  const CheckpointS3& s3 = *checked.job->spec.checkpoint->s3;
  EXPECT_EQ(s3.region, "us-east-1");
  EXPECT_EQ(s3.credentials_secret->access_key_id_key, "AWS_ACCESS_KEY_ID");
  EXPECT_EQ(s3.credentials_secret->secret_access_key_key, "AWS_SECRET_ACCESS_KEY");
  EXPECT_EQ(TrainingJobToJson(*checked.job)["spec"]["checkpoint"]["s3"],
            (json{{"endpoint", "https://s3.example.com"},
                  {"region", "us-east-1"},
                  {"credentialsSecret",
                   {{"name", "ckpt"},
                    {"accessKeyIdKey", "AWS_ACCESS_KEY_ID"},
                    {"secretAccessKeyKey", "AWS_SECRET_ACCESS_KEY"}}}}));
}

TEST(CheckpointS3RulesTest, S3ExactlyWithAnS3Dir) {
  EXPECT_THAT(Problems(JobWith(Bucket(kS3, "/ckpt"))),
              OneProblem("spec.checkpoint.s3", "Forbidden: may only be set when"));
  EXPECT_THAT(Problems(JobWith(json{{"dir", "s3://team-ckpt/x"}})),
              OneProblem("spec.checkpoint.s3", "Required value: the endpoint and credentials"));
  EXPECT_THAT(Problems(JobWith(Bucket(kS3, "s3://Team/x"))),
              OneProblem("spec.checkpoint.dir", "must be s3://bucket/prefix"));
  EXPECT_THAT(Problems(JobWith(Bucket(kS3, "s3://team-ckpt/a//b"))),
              OneProblem("spec.checkpoint.dir", "no empty, '.' or '..' part"));
}

TEST(CheckpointS3RulesTest, NotTogetherWithAVolume) {
  json checkpoint = Bucket();
  checkpoint["volume"] = {{"claimName", "shared"}};
  EXPECT_THAT(Problems(JobWith(checkpoint)),
              Contains(AllOf(StartsWith("spec.checkpoint.volume: "),
                             HasSubstr("may not be set together with spec.checkpoint.s3"))));
}

TEST(CheckpointS3RulesTest, EndpointIsAUrlOfAHost) {
  for (const char* bad : {"s3.example.com", "ftp://s3.example.com", "https://s3.example.com/base",
                          "http://user:pass@minio:9000", "https://"}) {
    json s3 = kS3;
    s3["endpoint"] = bad;
    EXPECT_THAT(Problems(JobWith(Bucket(s3))),
                OneProblem("spec.checkpoint.s3.endpoint", "must be an http:// or https:// URL"))
        << bad;
  }
  for (const char* good : {"http://127.0.0.1:8333", "https://s3.eu-west-1.amazonaws.com/",
                           "http://[::1]:9000", "http://minio.storage.svc.cluster.local:9000"}) {
    json s3 = kS3;
    s3["endpoint"] = good;
    EXPECT_THAT(Problems(JobWith(Bucket(s3))), ::testing::IsEmpty()) << good;
  }
  json s3 = kS3;
  s3.erase("endpoint");
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.endpoint", "Required value"));
}

TEST(CheckpointS3RulesTest, TheSecretIsNamedWithTwoDistinctKeys) {
  json s3 = kS3;
  s3.erase("credentialsSecret");
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.credentialsSecret", "Required value"));
  s3["credentialsSecret"] = json::object();
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.credentialsSecret.name", "Required value"));
  s3["credentialsSecret"] = {{"name", "Ckpt_Secret"}};
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.credentialsSecret.name", "RFC 1123 subdomain"));
  s3["credentialsSecret"] = {{"name", "ckpt"}, {"accessKeyIdKey", "key/id"}};
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.credentialsSecret.accessKeyIdKey", "a Secret key"));
  s3["credentialsSecret"] = {{"name", "ckpt"}, {"secretAccessKeyKey", "AWS_ACCESS_KEY_ID"}};
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.credentialsSecret.secretAccessKeyKey",
                         "must differ from accessKeyIdKey"));
  s3["credentialsSecret"] = {{"name", "ckpt"}, {"token", "x"}};
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.credentialsSecret.token", "unknown field"));
}

TEST(CheckpointS3RulesTest, RegionIsAName) {
  json s3 = kS3;
  s3["region"] = "us-east-1:s3";
  EXPECT_THAT(Problems(JobWith(Bucket(s3))),
              OneProblem("spec.checkpoint.s3.region", "letters, digits"));
  s3["region"] = "garage";
  EXPECT_THAT(Problems(JobWith(Bucket(s3))), ::testing::IsEmpty());
}

}  // namespace
}  // namespace tj::v1alpha1
