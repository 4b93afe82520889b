// The operator's side of a job's mutual TLS: the TLS part of the job's Secret (job_tls_secret.h)
// and the notices and progress reads made with it, against a real Coordination service that
// serves with the coordinator's certificate from that Secret and requires client certificates,
// as a coordinator pod does (TJ_TLS_DIR, job_tls.h).
#include <condition_variable>
#include <mutex>
#include <vector>

#include "absl/strings/escaping.h"
#include "coordinator/base/job_certificates.h"
#include "coordinator/base/job_roles.h"
#include "coordinator/base/job_tls.h"
#include "coordinator/base/job_token.h"
#include "coordinator/coordination/coordination_service.h"
#include "coordinator/coordination/coordination_state.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "operator/controller/coordinator_progress.h"
#include "operator/controller/job_tls_secret.h"
#include "operator/controller/preemption_notifier.h"
#include "tests/operator/controller/notice_outcomes.h"
#include "tests/operator/controller/controller_test_jobs.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Decode(const json& data, const std::string& key) {
  std::string out;
  EXPECT_TRUE(data.contains(key)) << key;
  if (data.contains(key)) absl::Base64Unescape(data[key].get<std::string>(), &out);
  return out;
}

std::vector<std::string> Names(const json& data, const std::string& key) {
  auto names = CertificateDnsNames(Decode(data, key));
  EXPECT_TRUE(names.ok()) << key << ": " << names.status();
  return names.ok() ? *names : std::vector<std::string>();
}

TEST(JobTlsSecretTest, ANewJobGetsACaAndACertificatePerRoleNamingItsServices) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  auto data = NewJobTlsSecretData(job);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_TRUE(HasJobTls(*data));
  EXPECT_THAT(Names(*data, "coordinator.crt"), ElementsAre("digits-coordinator-0.ml.svc"));
  EXPECT_THAT(Names(*data, "ps.crt"), ElementsAre("digits-ps-0.ml.svc"));
  EXPECT_THAT(Names(*data, "worker.crt"),
              ElementsAre("digits-worker-0.ml.svc", "digits-worker-1.ml.svc"));
  EXPECT_TRUE(Names(*data, "control.crt").empty());
  EXPECT_THAT(Decode(*data, "ca.key"), HasSubstr("PRIVATE KEY"));
  auto tls = ControlTlsFromSecret(job, *data);
  ASSERT_NE(tls, nullptr);
  EXPECT_EQ(tls->server_name, "digits-coordinator-0.ml.svc");
  EXPECT_EQ(tls->ca_pem, Decode(*data, "ca.crt"));
  EXPECT_EQ(ControlTlsFromSecret(job, json{{"ca.crt", (*data)["ca.crt"]}}), nullptr);
}

TEST(JobTlsSecretTest, UpdatesAddWhatIsMissingAndNothingElse) {
  v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  // A Secret of an operator before TLS: everything.
  auto everything = JobTlsSecretUpdate(job, json{{"token", "c2VjcmV0"}});
  ASSERT_TRUE(everything.ok()) << everything.status();
  EXPECT_TRUE(HasJobTls(*everything));
  EXPECT_TRUE(everything->contains("control.key"));
  // Complete: nothing.
  auto nothing = JobTlsSecretUpdate(job, *everything);
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_TRUE(nothing->empty()) << nothing->dump();
  // Scaled up: the worker's pair, signed by the same CA; scaled down again: nothing.
  job.spec.replica_specs[v1alpha1::ReplicaType::kWorker].replicas = 3;
  auto scaled = JobTlsSecretUpdate(job, *everything);
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  EXPECT_EQ(scaled->size(), 2u) << scaled->dump();
  EXPECT_THAT(Names(*scaled, "worker.crt"),
              ElementsAre("digits-worker-0.ml.svc", "digits-worker-1.ml.svc",
                          "digits-worker-2.ml.svc"));
  json merged = *everything;
  merged.update(*scaled);
  job.spec.replica_specs[v1alpha1::ReplicaType::kWorker].replicas = 1;
  EXPECT_TRUE(JobTlsSecretUpdate(job, merged)->empty());
  // A certificate that does not parse is named.
  merged["worker.crt"] = absl::Base64Escape("garbage");
  auto broken = JobTlsSecretUpdate(job, merged);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("worker.crt"));
}

using Outcomes = NoticeOutcomes;

// A coordinator of the job "digits" serving mutual TLS with its certificate from the Secret.
class CoordinatorTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_ = testing::LoadJob(testing::SmallJobYaml());
    auto data = NewJobTlsSecretData(job_);
    ASSERT_TRUE(data.ok()) << data.status();
    data_ = *data;
    SetJobVerifiersForTesting(DeriveRoleVerifiers("job-secret"));
    SetJobTlsForTesting(JobTlsFiles{Decode(data_, "ca.crt"), Decode(data_, "coordinator.crt"),
                                    Decode(data_, "coordinator.key")});
    service_ = std::make_unique<CoordinationService>(
        &state_, [](const v1::PreemptionNoticeRequest&) {
          v1::PreemptionNoticeResponse response;
          response.set_accepted(true);
          response.set_decision("checkpoint now");
          return response;
        });
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", RuntimeServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    SetJobVerifiersForTesting(std::nullopt);
    SetJobTlsForTesting(std::nullopt);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // The outcome of one notice made with `tls`.
  NoticeOutcome Notify(std::shared_ptr<const CoordinatorTls> tls) {
    Outcomes outcomes;
    GrpcPreemptionNotifier notifier({.rpc_timeout = absl::Seconds(5),
                                     .max_queued = 4,
                                     .on_outcome = [&](const NoticeOutcome& o) { outcomes.Add(o); }});
    PreemptionNotice notice;
    notice.job = "ml/digits";
    notice.coordinator_address = address();
    notice.token = "job-secret";
    notice.tls = std::move(tls);
    notice.task_type = "ps";
    notice.reason = "DisruptionTarget/EvictionByEvictionAPI";
    notifier.Send(notice);
    std::vector<NoticeOutcome> got = outcomes.WaitFor(1);
    return got.empty() ? NoticeOutcome{notice, absl::DeadlineExceededError("no outcome"), false, ""}
                       : got[0];
  }

  v1alpha1::TrainingJob job_;
  json data_;
  CoordinationState state_;
  std::unique_ptr<CoordinationService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(CoordinatorTlsTest, TheOperatorsNoticeArrivesOverMutualTls) {
  const NoticeOutcome outcome = Notify(ControlTlsFromSecret(job_, data_));
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_TRUE(outcome.accepted);
  EXPECT_EQ(outcome.decision, "checkpoint now");
}

TEST_F(CoordinatorTlsTest, NoCertificateAnotherJobsOrPlaintextGetsNoNotice) {
  EXPECT_EQ(Notify(nullptr).status.code(), absl::StatusCode::kUnavailable) << "plaintext";
  // Trusting the job's CA but presenting no certificate.
  auto anonymous = std::make_shared<CoordinatorTls>(*ControlTlsFromSecret(job_, data_));
  anonymous->cert_pem.clear();
  anonymous->key_pem.clear();
  EXPECT_EQ(Notify(anonymous).status.code(), absl::StatusCode::kUnavailable);
  // Another job's control certificate (its own CA): refused by this job's coordinator.
  auto other = NewJobTlsSecretData(job_);
  ASSERT_TRUE(other.ok());
  auto foreign = std::make_shared<CoordinatorTls>(*ControlTlsFromSecret(job_, *other));
  foreign->ca_pem = Decode(data_, "ca.crt");  // even trusting this job's server
  EXPECT_EQ(Notify(foreign).status.code(), absl::StatusCode::kUnavailable);
  // A certificate for another name (the PS's), where the coordinator's is expected: the
  // operator does not talk to an impostor of the coordinator.
  auto misnamed = std::make_shared<CoordinatorTls>(*ControlTlsFromSecret(job_, data_));
  misnamed->server_name = "digits-ps-0.ml.svc";
  EXPECT_EQ(Notify(misnamed).status.code(), absl::StatusCode::kUnavailable);
}

TEST_F(CoordinatorTlsTest, TheOperatorReadsProgressOverMutualTls) {
  v1alpha1::TrainingProgress p;
  p.state = "training";
  p.step = 77;
  ASSERT_TRUE(state_.Set(v1alpha1::kProgressKey, v1alpha1::ToJson(p).dump(), true).ok());
  GrpcCoordinatorProgress progress;
  progress.Refresh("ml/plain", address(), "job-secret", nullptr);
  progress.Refresh("ml/digits", address(), "job-secret", ControlTlsFromSecret(job_, data_));
  ASSERT_TRUE(tj::testing::WaitFor([&] { return progress.Latest("ml/digits").has_value(); }));
  EXPECT_EQ(progress.Latest("ml/digits")->step, 77);
  EXPECT_FALSE(progress.Latest("ml/plain").has_value()) << "plaintext is refused";
}

}  // namespace
}  // namespace tj::op
