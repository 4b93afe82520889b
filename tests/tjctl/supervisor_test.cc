// Supervisor and ChildProcess against real processes (/bin/sh): exits are reported with Kubernetes-
// style codes, process groups are stopped whole, and nothing outlives its supervisor.
#include "tjctl/local/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"

namespace tj::local {
namespace {

ProcessSpec Shell(const std::string& script, const std::string& log = "") {
  return ProcessSpec{"/bin/sh", {"-c", script}, {}, log, {}};
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

TEST(SupervisorTest, ReportsWhichProcessExitedAndItsCode) {
  Supervisor supervisor;
  ASSERT_TRUE(supervisor.Start("quick", Shell("exit 3")).ok());
  ASSERT_TRUE(supervisor.Start("slow", Shell("sleep 30")).ok());
  auto exit = supervisor.WaitForAnyExit(absl::Seconds(30));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->name, "quick");
  EXPECT_EQ(exit->exit.exit_code, 3);
  EXPECT_EQ(exit->exit.signal, 0);
  EXPECT_TRUE(supervisor.running("slow"));
  EXPECT_FALSE(supervisor.running("quick"));
}

TEST(SupervisorTest, ASignalledProcessExitsWith128PlusTheSignal) {
  Supervisor supervisor;
  ASSERT_TRUE(supervisor.Start("victim", Shell("sleep 30")).ok());
  const pid_t pid = *supervisor.pid("victim");
  kill(pid, SIGKILL);
  auto exit = supervisor.WaitForAnyExit(absl::Seconds(30));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit.exit_code, 137);
  EXPECT_EQ(exit->exit.signal, SIGKILL);
}

TEST(SupervisorTest, WaitForAnyExitTimesOutWhenNothingExits) {
  Supervisor supervisor;
  ASSERT_TRUE(supervisor.Start("slow", Shell("sleep 30")).ok());
  EXPECT_FALSE(supervisor.WaitForAnyExit(absl::Milliseconds(50)).has_value());
}

TEST(SupervisorTest, RestartsAnExitedProcessUnderTheSameName) {
  Supervisor supervisor;
  ASSERT_TRUE(supervisor.Start("p", Shell("exit 0")).ok());
  ASSERT_TRUE(supervisor.WaitForAnyExit(absl::Seconds(30)).has_value());
  ASSERT_TRUE(supervisor.Start("p", Shell("sleep 30")).ok());
  EXPECT_TRUE(supervisor.running("p"));
  EXPECT_TRUE(absl::IsAlreadyExists(supervisor.Start("p", Shell("sleep 30"))));
}

TEST(SupervisorTest, LogsGoToTheLogFile) {
  testing::TempDir dir;
  const std::string log = dir.Join("log.txt");
  Supervisor supervisor;
  ASSERT_TRUE(supervisor.Start("p", Shell("echo out; echo err >&2", log)).ok());
  ASSERT_TRUE(supervisor.WaitForAnyExit(absl::Seconds(30)).has_value());
  std::ifstream in(log);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "out\nerr\n");
}

TEST(SupervisorTest, StopTerminatesTheWholeProcessGroup) {
  testing::TempDir dir;
  const std::string pid_file = dir.Join("grandchild.pid");
  Supervisor supervisor;
  // The shell starts a grandchild and waits; stopping must take the grandchild too.
  ASSERT_TRUE(supervisor.Start("p", Shell("sleep 60 & echo $! > " + pid_file + "; wait")).ok());
  ASSERT_TRUE(testing::WaitFor([&] {
    return std::filesystem::exists(pid_file) && std::filesystem::file_size(pid_file) > 0;
  }));
  pid_t grandchild = 0;
  std::ifstream(pid_file) >> grandchild;
  ASSERT_GT(grandchild, 0);
  auto exit = supervisor.Stop("p", absl::Seconds(5));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 143);
  EXPECT_TRUE(testing::WaitFor([&] { return !Alive(grandchild); }, absl::Seconds(10)));
}

TEST(SupervisorTest, StopAllEscalatesToSigkillAfterTheGracePeriod) {
  Supervisor supervisor;
  ASSERT_TRUE(supervisor.Start("stubborn", Shell("trap '' TERM; sleep 60 & wait")).ok());
  ASSERT_TRUE(supervisor.Start("polite", Shell("sleep 60")).ok());
  const pid_t stubborn = *supervisor.pid("stubborn");
  supervisor.StopAll(absl::Milliseconds(300));
  EXPECT_EQ(supervisor.num_running(), 0);
  EXPECT_FALSE(Alive(stubborn));
}

TEST(SupervisorTest, ChildrenDieWithTheirSupervisingProcess) {
  testing::TempDir dir;
  const std::string pid_file = dir.Join("orphan.pid");
  // A forked "tjctl" starts a child and then crashes (SIGKILL): the child must not survive it.
  const pid_t fake_tjctl = fork();
  if (fake_tjctl == 0) {
    Supervisor supervisor;
    if (!supervisor.Start("p", Shell("echo $$ > " + pid_file + "; exec sleep 60")).ok()) _exit(1);
    pause();
    _exit(0);
  }
  ASSERT_TRUE(testing::WaitFor([&] {
    return std::filesystem::exists(pid_file) && std::filesystem::file_size(pid_file) > 0;
  }));
  pid_t child = 0;
  std::ifstream(pid_file) >> child;
  ASSERT_GT(child, 0);
  kill(fake_tjctl, SIGKILL);
  waitpid(fake_tjctl, nullptr, 0);
  // The orphan is re-parented and killed by PR_SET_PDEATHSIG; it may linger as a zombie of init, so
  // check its state rather than its existence.
  EXPECT_TRUE(testing::WaitFor([&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    if (!(stat >> pid >> comm >> state)) return true;
    return state == "Z";
  }, absl::Seconds(10)));
}

TEST(SupervisorTest, AMissingBinaryIsAClearError) {
  Supervisor supervisor;
  auto status = supervisor.Start("p", ProcessSpec{"/nonexistent/tj-train", {}, {}, "", {}});
  EXPECT_TRUE(absl::IsNotFound(status));
  EXPECT_NE(std::string(status.message()).find("/nonexistent/tj-train"), std::string::npos);
}

}  // namespace
}  // namespace tj::local
