// The tj-operator process's /healthz, /readyz and /metrics while clients abuse them: one sending
// its request a byte every 1.9 s (the old server's per-read timeout was 2 s, so it held the only
// thread for good and the liveness probe failed) and idle connections that never send a byte. The
// operator runs for real, its API server unreachable (a closed port on 127.0.0.1): it keeps
// competing for its Lease and serves its endpoints meanwhile; no control plane is needed.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/slow_http_clients.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

using ::testing::HasSubstr;

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(OperatorServingTest, ProbesAndScrapesAnswerWhileSlowAndIdleClientsHoldConnections) {
  tj::testing::TempDir dir;
  const std::string kubeconfig = dir.Join("kubeconfig");
  std::ofstream(kubeconfig) << absl::StrCat(R"(apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "http://127.0.0.1:)",
                                            FreePort(), R"("}
users:
- name: nobody
  user: {token: "t"}
contexts:
- name: c
  context: {cluster: nowhere, user: nobody, namespace: tj-system}
current-context: c
)");
  const int metrics_port = FreePort();
  const int health_port = FreePort();
  const std::string log = dir.Join("operator.log");
  const std::vector<std::string> args = {TJ_OPERATOR_BIN,
                                         "--kubeconfig=" + kubeconfig,
                                         "--leader-elect=true",
                                         absl::StrCat("--metrics-address=127.0.0.1:", metrics_port),
                                         absl::StrCat("--health-address=127.0.0.1:", health_port),
                                         "--log-format=text"};
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  struct Stop {
    pid_t pid;
    ~Stop() {
      kill(pid, SIGTERM);
      int status = 0;
      if (!tj::testing::WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; },
                                absl::Seconds(30))) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
    }
  } stop{pid};
  ASSERT_TRUE(tj::testing::WaitFor([&] {
    return absl::StrContains(tj::testing::GetWithin(health_port, "/healthz", absl::Seconds(5)),
                             "200 OK");
  })) << "the operator never served /healthz";

  // On each port: one client dripping its request, five connections that never send a byte.
  tj::testing::DrippingClient slow_health(health_port, absl::Milliseconds(1900));
  tj::testing::DrippingClient slow_metrics(metrics_port, absl::Milliseconds(1900));
  std::vector<int> idle;
  for (int port : {health_port, metrics_port}) {
    for (int i = 0; i < 5; ++i) idle.push_back(tj::testing::Connect(port));
  }
  ASSERT_TRUE(
      tj::testing::WaitFor([&] { return slow_health.sent() >= 1 && slow_metrics.sent() >= 1; }));

  EXPECT_THAT(tj::testing::GetWithin(health_port, "/healthz", absl::Seconds(10)),
              HasSubstr("200 OK"));
  EXPECT_THAT(tj::testing::GetWithin(health_port, "/readyz", absl::Seconds(10)),
              HasSubstr("200 OK"))
      << "a standby (it cannot reach its Lease) is ready";
  const std::string scrape = tj::testing::GetWithin(metrics_port, "/metrics", absl::Seconds(10));
  EXPECT_THAT(scrape, HasSubstr("200 OK"));
  EXPECT_THAT(scrape, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_FALSE(slow_health.closed());
  EXPECT_FALSE(slow_metrics.closed());
  for (int fd : idle) EXPECT_FALSE(tj::testing::ClosedByServer(fd)) << "served while all were held";

  // And each abusive connection is let go after the request deadline.
  EXPECT_TRUE(tj::testing::WaitFor([&] { return slow_health.closed() && slow_metrics.closed(); },
                                   absl::Seconds(30)));
  for (int fd : idle) {
    EXPECT_TRUE(
        tj::testing::WaitFor([&] { return tj::testing::ClosedByServer(fd); }, absl::Seconds(30)));
    close(fd);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the operator exited; status " << status;
}

}  // namespace
}  // namespace tj::op
