// Runs the real tj-ps binary as a child process: the LISTENING handshake, a push/pull over the
// wire, and a graceful exit on SIGTERM.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/shard_file.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/coordinator/ps/tj_ps_child.h"
#include "tests/support/sanitizers.h"
#include "tests/support/temp_dir.h"

#ifndef TJ_PS_BINARY
#error "TJ_PS_BINARY must name the tj-ps executable"
#endif

namespace tj {
namespace {

using ::testing::ElementsAre;
using testing::Floats;
using testing::FloatVariable;
using ::testing::StartsWith;
using testing::ChildProcess;
using testing::kStartupTimeoutMs;
using testing::ProcStatusBytes;
using testing::StartPsWithEnvironment;

constexpr int kExitTimeoutMs = 30'000;

TEST(TjPsBinaryTest, ServesPushPullAndExitsZeroOnSigterm) {
  auto child = ChildProcess::Spawn({TJ_PS_BINARY, "--task", "7", "--address", "127.0.0.1:0"});
  ASSERT_TRUE(child.has_value()) << "cannot start " << TJ_PS_BINARY;

  const std::optional<std::string> line = child->ReadLine(kStartupTimeoutMs);
  ASSERT_TRUE(line.has_value()) << "tj-ps printed no LISTENING line";
  ASSERT_THAT(*line, StartsWith("LISTENING 127.0.0.1:"));
  const std::string address = line->substr(std::string("LISTENING ").size());

  auto client = PsClient::Connect(address, 7);
  ASSERT_TRUE(client->CreateVariables({FloatVariable("w", {1, 2}, {2})}).ok());
  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(std::vector<float>{3, 4}, {2})}).ok());
  auto values = client->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(Floats((*values)[0]), ElementsAre(4, 6));
  auto health = client->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->ps_task(), 7);

  // The client keeps its connection open: shutdown must not wait for it to hang up, so tj-ps exits
  // well within its 5 s grace period.
  const absl::Time signalled = absl::Now();
  ASSERT_TRUE(child->Signal(SIGTERM));
  const std::optional<int> status = child->WaitForExit(kExitTimeoutMs);
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(4));

  ASSERT_TRUE(status.has_value()) << "tj-ps did not exit after SIGTERM";
  ASSERT_TRUE(WIFEXITED(*status)) << "tj-ps died of signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST(TjPsBinaryTest, ExitsNonZeroWhenItCannotListen) {
  auto occupant = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(occupant.ok()) << occupant.status();
  auto child =
      ChildProcess::Spawn({TJ_PS_BINARY, "--task", "0", "--address", (*occupant)->address()});
  ASSERT_TRUE(child.has_value());

  EXPECT_EQ(child->ReadLine(kStartupTimeoutMs), std::nullopt);  // EOF, no LISTENING line
  const std::optional<int> status = child->WaitForExit(kExitTimeoutMs);

  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 1);
}

// Starts tj-ps as task 0 with TJ_PS_MEMORY_LIMIT_BYTES=`limit` and connects to it.
void StartPsWithMemoryLimit(const char* limit, std::optional<ChildProcess>& child,
                            std::shared_ptr<PsClient>& client) {
  StartPsWithEnvironment("TJ_PS_MEMORY_LIMIT_BYTES", limit, child, client);
}

// A worker's lookups of ever new ids meet the PS's memory budget (here TJ_PS_MEMORY_LIMIT_BYTES)
// as RESOURCE_EXHAUSTED naming the table and the budget, and the PS keeps serving: no OOM kill.
TEST(TjPsBinaryTest, LookupsBeyondTheMemoryBudgetAreRefusedAndThePsLivesOn) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << testing::kAsanMemoryBoundSkip;
  // 256 MiB less the process and the 128 MiB of headroom: room for about a million rows of dim 16.
  std::optional<ChildProcess> child;
  std::shared_ptr<PsClient> client;
  ASSERT_NO_FATAL_FAILURE(StartPsWithMemoryLimit("268435456", child, client));
  v1::CreateVariablesRequest create;
  *create.add_tables() = testing::Table("emb", 16);
  ASSERT_TRUE(client->Create(create).ok());

  constexpr int64_t kBatch = 65536;
  int64_t created = 0;
  absl::Status refused;
  while (refused.ok() && created < 8'000'000) {
    std::vector<int64_t> ids(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) ids[static_cast<size_t>(i)] = created + i;
    auto rows = client->Lookup(testing::LookupRequest({{"emb", ids}}));
    if (rows.ok()) {
      created += kBatch;
    } else {
      refused = rows.status();
    }
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(std::string(refused.message()),
              ::testing::AllOf(::testing::HasSubstr("table 'emb'"),
                               ::testing::HasSubstr(absl::StrCat("holds ", created, " rows")),
                               ::testing::HasSubstr("TJ_PS_MEMORY_LIMIT_BYTES")));
  EXPECT_GT(created, 0);
  // Rows it holds are still served.
  auto again = client->Lookup(testing::LookupRequest({{"emb", {0, 1, created - 1}}}));
  EXPECT_TRUE(again.ok()) << again.status();
}

// A restore is held to the same budget: a shard whose variables would not fit is refused with
// RESOURCE_EXHAUSTED naming the file and the budget before the variable is allocated (the PS's
// memory stays far below the shard's size). The PS lives on, holding nothing (the restore released
// what it held) until a restore succeeds.
TEST(TjPsBinaryTest, ARestoreBeyondTheMemoryBudgetIsRefusedNamingTheFileAndThePsLivesOn) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << testing::kAsanMemoryBoundSkip;
  // 256 MiB less the process and the 128 MiB of headroom, as in the test above.
  std::optional<ChildProcess> child;
  std::shared_ptr<PsClient> client;
  ASSERT_NO_FATAL_FAILURE(StartPsWithMemoryLimit("268435456", child, client));
  ASSERT_TRUE(client->CreateVariables({FloatVariable("small", {1, 2}, {2})}).ok());
  auto health = client->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  constexpr int64_t kHeadroom = int64_t{128} << 20;
  ASSERT_GT(health->memory_available_bytes(), kHeadroom + (int64_t{8} << 20))
      << "tj-ps's own memory leaves it no budget under this limit";
  // A variable 16 MiB larger than the budget the PS read at its start (about what is available
  // now, less the headroom).
  const int64_t floats = (health->memory_available_bytes() - kHeadroom + (int64_t{16} << 20)) / 4;
  ::tj::testing::TempDir dir;
  const std::string shard = dir.Join("ps-0-of-1.state");
  {
    VariableStore store;
    ASSERT_TRUE(store
                    .Create(testing::CreateRequest({testing::InitializedVariable(
                        "big", {floats}, testing::ConstantInit(0.5f),
                        testing::SgdOptimizer(0.1f))}))
                    .ok());
    ASSERT_TRUE(SaveShardFile(store, shard).ok());
  }

  auto refused = client->RestoreShard(shard);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::AllOf(::testing::HasSubstr(shard), ::testing::HasSubstr("variable 'big'"),
                               ::testing::HasSubstr("memory budget"),
                               ::testing::HasSubstr("TJ_PS_MEMORY_LIMIT_BYTES")));
  // Refused before the variable was allocated: the PS's memory did not grow by anything like it.
  auto after = client->Health();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(after->memory_available_bytes(),
            health->memory_available_bytes() - (int64_t{32} << 20));
  auto pulled = client->Pull({"small"});
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kUnavailable) << pulled.status();
  EXPECT_THAT(std::string(pulled.status().message()),
              ::testing::AllOf(::testing::HasSubstr("its last restore failed"),
                               ::testing::HasSubstr("memory budget")));
  const std::string fits = dir.Join("fits.state");
  {
    VariableStore store;
    ASSERT_TRUE(store.Create(testing::CreateRequest({FloatVariable("small", {3, 4}, {2})})).ok());
    ASSERT_TRUE(SaveShardFile(store, fits).ok());
  }
  ASSERT_TRUE(client->RestoreShard(fits).ok());
  pulled = client->Pull({"small"});
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_THAT(Floats((*pulled)[0]), ElementsAre(3, 4));
}


// A restore of a PS that holds state replaces it one state at a time: the PS's peak resident
// memory (VmHWM, which the kernel keeps) does not grow by anything like the state's size while it
// restores the same state it holds. Holding the old state until the new one is read, it grew by
// the whole state (96 MiB here).
TEST(TjPsBinaryTest, ARestoreHoldsOneStateAtATime) {
  std::optional<ChildProcess> child;
  std::shared_ptr<PsClient> client;
  ASSERT_NO_FATAL_FAILURE(StartPsWithMemoryLimit("0", child, client));  // "0": no limit set
  constexpr int kVariables = 6;
  constexpr int64_t kFloats = int64_t{4} << 20;  // 16 MiB each: 96 MiB in all
  constexpr int64_t kStateBytes = kVariables * kFloats * 4;
  for (int i = 0; i < kVariables; ++i) {
    // One request each, as ShardedPsClient sends slices: each well within the RPC deadline.
    ASSERT_TRUE(client
                    ->Create(testing::CreateRequest({testing::InitializedVariable(
                        absl::StrCat("w", i), {kFloats},
                        testing::NormalInit(static_cast<uint64_t>(i) + 1))}))
                    .ok());
  }
  ::tj::testing::TempDir dir;
  const std::string shard = dir.Join("ps-0-of-1.state");
  ASSERT_TRUE(client->SaveShard(shard).ok());
  auto before = client->Pull({"w0", "w5"});
  ASSERT_TRUE(before.ok()) << before.status();
  const int64_t peak_before = ProcStatusBytes(child->pid(), "VmHWM");
  ASSERT_GT(peak_before, kStateBytes) << "the PS does not hold its state";

  auto restored = client->RestoreShard(shard);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->num_variables(), kVariables);

  const int64_t peak_after = ProcStatusBytes(child->pid(), "VmHWM");
  std::printf("PS peak %lld MiB before the restore, %lld MiB after (state %lld MiB)\n",
              static_cast<long long>(peak_before >> 20), static_cast<long long>(peak_after >> 20),
              static_cast<long long>(kStateBytes >> 20));
  EXPECT_LT(peak_after - peak_before, kStateBytes / 3)
      << "peak " << (peak_before >> 20) << " MiB before the restore, " << (peak_after >> 20)
      << " MiB after";
  auto after = client->Pull({"w0", "w5"});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*after)[0].data(), (*before)[0].data());
  EXPECT_EQ((*after)[1].data(), (*before)[1].data());
}

}  // namespace
}  // namespace tj
