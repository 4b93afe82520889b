// The operator's bucket check in a reconcile worker: an endpoint that accepts the connection and
// never answers is given up after kBucketProbeTimeout, not after the runtime's 60 s stall limit.
#include "operator/controller/checkpoint_storage_probe.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/operator/controller/controller_test_jobs.h"

namespace tj::op {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// A loopback socket that listens and never accepts: the kernel completes the TCP handshake from its
// backlog, and the request then waits for a response that never comes.
class SilentEndpoint {
 public:
  SilentEndpoint() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~SilentEndpoint() { ::close(fd_); }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(CheckpointStorageProbeTest, AnEndpointThatNeverAnswersIsGivenUpNamingTheBucket) {
  SilentEndpoint endpoint;
  const std::string spec = absl::StrReplaceAll(R"(  checkpoint:
    dir: s3://team-ckpt/runs/digits
    s3:
      endpoint: ENDPOINT
      credentialsSecret: {name: ckpt-s3}
)",
                                               {{"ENDPOINT", endpoint.url()}});
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(spec));
  // The subject is a deadline, so the test bounds the wait: halfway between the probe's 5 s and
  // the 60 s after which the client's stall limit would end the request anyway.
  std::future<absl::Status> probe = std::async(std::launch::async, [&job] {
    return ProbeCheckpointBucket(job, {"AKIDEXAMPLE0001", "secret"});
  });
  ASSERT_EQ(probe.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the bucket check still waits on a silent endpoint";
  const absl::Status probed = probe.get();
  EXPECT_TRUE(absl::IsUnavailable(probed)) << probed;
  EXPECT_THAT(std::string(probed.message()), AllOf(HasSubstr("team-ckpt"),
                                                   HasSubstr(endpoint.url())));
}

}  // namespace
}  // namespace tj::op
