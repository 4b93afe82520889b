// The authorization table covers every RPC of proto/tj/v1 exactly once and holds the role model;
// role credentials and verifiers; the coordinator generation fence.
#include "coordinator/base/rpc_authorization.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/job_roles.h"
#include "tj/v1/coordination.grpc.pb.h"
#include "tj/v1/ps.grpc.pb.h"
#include "tj/v1/worker.grpc.pb.h"

namespace tj {
namespace {

using enum JobRole;
using ::testing::HasSubstr;

TEST(RpcAuthorizationTest, EveryMethodOfEveryServiceHasExactlyOneRule) {
  std::set<std::string> in_protos;
  // A message of each file brings the file's descriptors (services included) into the pool.
  for (const google::protobuf::FileDescriptor* file :
       {v1::RegisterTaskRequest::descriptor()->file(), v1::PullRequest::descriptor()->file(),
        v1::RunRequest::descriptor()->file()}) {
    ASSERT_EQ(file->service_count(), 1) << file->name();
    const google::protobuf::ServiceDescriptor* service = file->service(0);
    const std::string service_name = service->full_name();
    for (int i = 0; i < service->method_count(); ++i) {
      in_protos.insert(std::string(service_name) + "/" + service->method(i)->name());
    }
  }
  std::set<std::string> in_table;
  for (const RpcRule& rule : RpcRules()) {
    EXPECT_TRUE(in_table.insert(std::string(rule.service) + "/" + rule.method).second)
        << rule.service << "/" << rule.method << " twice";
    EXPECT_FALSE(rule.allowed.empty()) << rule.method;
    EXPECT_EQ(&RuleOf(rule.rpc), &rule);
  }
  EXPECT_EQ(in_table, in_protos);
}

TEST(RpcAuthorizationTest, OnlyTheCoordinatorChangesWhatTheJobIs) {
  for (Rpc rpc : {Rpc::kCreateVariables, Rpc::kSaveShard, Rpc::kRestoreShard, Rpc::kStreamSaveShard,
                  Rpc::kStreamRestoreShard, Rpc::kKeyValueSet, Rpc::kKeyValueDelete, Rpc::kRun,
                  Rpc::kRunStream, Rpc::kCreateResource}) {
    EXPECT_EQ(RuleOf(rpc).allowed, JobRoleSet({kCoordinator})) << RuleOf(rpc).method;
  }
}

TEST(RpcAuthorizationTest, WorkersPullPushAndReport) {
  for (Rpc rpc : {Rpc::kPull, Rpc::kPush, Rpc::kLookup, Rpc::kPushSparse, Rpc::kPsHealth,
                  Rpc::kRegisterTask, Rpc::kHeartbeat, Rpc::kKeyValueGet}) {
    EXPECT_TRUE(RuleOf(rpc).allowed.Contains(kWorker)) << RuleOf(rpc).method;
  }
  EXPECT_FALSE(RuleOf(Rpc::kPull).allowed.Contains(kPs));
  EXPECT_FALSE(RuleOf(Rpc::kPull).allowed.Contains(kControl));
}

TEST(RpcAuthorizationTest, NoticesComeFromControlOrATaskAboutItsOwnKindButNeverTheCoordinator) {
  const JobRoleSet notice = RuleOf(Rpc::kPreemptionNotice).allowed;
  EXPECT_TRUE(notice.Contains(kControl));
  EXPECT_FALSE(notice.Contains(kCoordinator));
  // The control role reads progress and sends notices, nothing else.
  for (const RpcRule& rule : RpcRules()) {
    if (rule.allowed.Contains(kControl)) {
      EXPECT_THAT((std::set<Rpc>{Rpc::kPreemptionNotice, Rpc::kKeyValueGet, Rpc::kKeyValueList,
                                 Rpc::kGetTaskStates}),
                  ::testing::Contains(rule.rpc))
          << rule.method;
    }
  }
  EXPECT_EQ(RuleOf(Rpc::kSaveShard).allowed.ToString(), "coordinator");
}

TEST(JobRolesTest, EachRoleHasItsOwnCredentialAndServersRecogniseItByItsVerifier) {
  std::set<std::string> credentials;
  const RoleVerifiers verifiers = DeriveRoleVerifiers("secret-a");
  for (JobRole role : kAllJobRoles) {
    const std::string credential = DeriveRoleCredential("secret-a", role);
    EXPECT_EQ(credential.size(), 64u);
    EXPECT_EQ(credential, DeriveRoleCredential("secret-a", role)) << "deterministic";
    EXPECT_NE(credential, DeriveRoleCredential("secret-b", role));
    credentials.insert(credential);
    EXPECT_EQ(IdentifyRole(verifiers, credential), role);
    // A verifier is not a credential: holding the verifiers grants nothing.
    EXPECT_EQ(IdentifyRole(verifiers, verifiers.of(role)), std::nullopt);
    EXPECT_EQ(JobRoleFromName(JobRoleName(role)), role);
  }
  EXPECT_EQ(credentials.size(), kAllJobRoles.size());
  EXPECT_EQ(IdentifyRole(verifiers, "secret-a"), std::nullopt) << "the secret is no role";
  EXPECT_EQ(IdentifyRole(verifiers, DeriveRoleCredential("secret-b", kWorker)), std::nullopt);
}

TEST(JobRolesTest, VerifiersFileRoundTripsAndErrorsNameFileAndLine) {
  const RoleVerifiers verifiers = DeriveRoleVerifiers("s");
  auto parsed = ParseRoleVerifiers(FormatRoleVerifiers(verifiers), "v");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->by_role, verifiers.by_role);

  const std::string hex(64, 'a');
  EXPECT_THAT(
      std::string(
          ParseRoleVerifiers("coordinator " + hex + "\nboss " + hex, "/f").status().message()),
      HasSubstr("/f:2: unknown role \"boss\""));
  EXPECT_THAT(std::string(ParseRoleVerifiers("worker xyz", "/f").status().message()),
              HasSubstr("/f:1: the verifier of role worker"));
  EXPECT_THAT(std::string(ParseRoleVerifiers("worker " + hex, "/f").status().message()),
              HasSubstr("no verifier for role coordinator"));
  EXPECT_THAT(
      std::string(ParseRoleVerifiers("worker " + hex + "\nworker " + hex, "/f").status().message()),
      HasSubstr("/f:2: role worker appears twice"));
  const auto files = JobCredentialFiles("s");
  EXPECT_EQ(files.size(), kAllJobRoles.size() + 1);
  EXPECT_EQ(files.at("worker"), DeriveRoleCredential("s", kWorker));
  EXPECT_EQ(files.at(kVerifiersFileName), FormatRoleVerifiers(verifiers));
}

TEST(CoordinatorGenerationTest, TheFenceAdmitsTheNewestGenerationOnly) {
  GenerationFence fence;
  EXPECT_TRUE(fence.Admit(0, "SaveShard").ok()) << "no generation: as before fencing";
  EXPECT_TRUE(fence.Admit(5, "SaveShard").ok());
  EXPECT_TRUE(fence.Admit(5, "SaveShard").ok());
  const absl::Status older = fence.Admit(3, "RestoreShard");
  EXPECT_EQ(older.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      std::string(older.message()),
      AllOf(HasSubstr("RestoreShard"), HasSubstr("generation 3"), HasSubstr("generation 5")));
  EXPECT_EQ(fence.Admit(0, "CreateVariables").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fence.Admit(6, "SaveShard").ok());
  EXPECT_EQ(fence.newest(), 6u);
}

TEST(CoordinatorGenerationTest, StartersHandOutGrowingGenerations) {
  const uint64_t first = NextCoordinatorGeneration(0);
  EXPECT_GT(first, 1'600'000'000'000u) << "at least the clock in milliseconds";
  EXPECT_GT(NextCoordinatorGeneration(first), first);
  EXPECT_EQ(NextCoordinatorGeneration(UINT64_C(1) << 62), (UINT64_C(1) << 62) + 1);
}

}  // namespace
}  // namespace tj
