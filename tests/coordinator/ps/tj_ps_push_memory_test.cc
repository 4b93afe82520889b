// What many workers pushing at once, and a client lying about its push's size, cost a real tj-ps
// in memory (its peak, VmHWM): the push window bounds the bodies it reads at once, its gRPC memory
// (TJ_PS_GRPC_MEMORY_BYTES, a ResourceQuota) what connected workers cost beyond it and what a body
// longer than announced can take before it is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/ps_channel.h"
#include "coordinator/ps/ps_client.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/coordinator/ps/raw_push.h"
#include "tests/coordinator/ps/tj_ps_child.h"
#include "tests/support/sanitizers.h"

namespace tj {
namespace {

using testing::ChildProcess;
using testing::Floats;
using testing::ProcStatusBytes;
using testing::StartPsWithEnvironment;

// `workers` clients, each on its own connection as workers are, push a 4 MiB delta 8 times at once
// to a tj-ps with an 8 MiB push window and TJ_PS_GRPC_MEMORY_BYTES=`grpc_memory` (unset: the
// default); every push is applied exactly once. `grown`: how much the PS's peak memory grew.
void PushAtOnce(int workers, const char* grpc_memory, int64_t& grown) {
  std::optional<ChildProcess> child;
  std::shared_ptr<PsClient> client;
  if (grpc_memory != nullptr) setenv("TJ_PS_GRPC_MEMORY_BYTES", grpc_memory, 1);
  StartPsWithEnvironment("TJ_PS_PUSH_WINDOW_BYTES", std::to_string(int64_t{8} << 20).c_str(),
                         child, client);
  unsetenv("TJ_PS_GRPC_MEMORY_BYTES");
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  constexpr int64_t kFloats = int64_t{1} << 20;  // 4 MiB
  constexpr int kPushes = 8;
  ASSERT_TRUE(
      client->Create(testing::CreateRequest({testing::InitializedVariable("w", {kFloats}, {})}))
          .ok());
  std::vector<std::shared_ptr<PsClient>> connections;
  for (int w = 0; w < workers; ++w) {
    connections.push_back(PsClient::Connect(client->address(), 0));
    ASSERT_TRUE(connections.back()->Pull({"w"}).ok());
  }
  // One push first, so that the update's buffer and gRPC's own are already counted.
  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(std::vector<float>(kFloats, 0.0f), {kFloats})}).ok());
  const int64_t peak_before = ProcStatusBytes(child->pid(), "VmHWM");

  std::vector<absl::Status> failed(static_cast<size_t>(workers));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      const v1::Tensor delta = FloatTensor(std::vector<float>(kFloats, 1.0f), {kFloats});
      for (int i = 0; i < kPushes && failed[static_cast<size_t>(w)].ok(); ++i) {
        failed[static_cast<size_t>(w)] = connections[static_cast<size_t>(w)]->Push({"w"}, {delta});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& status : failed) EXPECT_TRUE(status.ok()) << status;

  grown = ProcStatusBytes(child->pid(), "VmHWM") - peak_before;
  std::printf("PS peak grew by %lld MiB while %d workers pushed at once\n",
              static_cast<long long>(grown >> 20), workers);
  auto values = client->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(Floats((*values)[0]), ::testing::Each(static_cast<float>(kPushes * workers)));
}

TEST(TjPsBinaryTest, ManyWorkersPushingAtOnceStayWithinThePushWindow) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << testing::kAsanMemoryBoundSkip;
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kTsanMemoryBoundSkip;
  constexpr int kWorkers = 16;
  int64_t grown = 0;
  ASSERT_NO_FATAL_FAILURE(PushAtOnce(kWorkers, nullptr, grown));
  EXPECT_LT(grown, (int64_t{8} << 20) + kWorkers * (int64_t{2} << 20) + (int64_t{8} << 20))
      << "the PS's peak grew by " << (grown >> 20) << " MiB";
}

// Beyond the window, what connected workers cost is bounded as a whole by the PS's gRPC memory
// (a ResourceQuota): 40 workers without it cost about 1.5 MiB each (68 MiB with the window).
TEST(TjPsBinaryTest, WhatManyWorkersCostBeyondTheWindowIsBoundedByTheGrpcMemory) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << testing::kAsanMemoryBoundSkip;
  constexpr int kWorkers = 40;
  int64_t grown = 0;
  ASSERT_NO_FATAL_FAILURE(PushAtOnce(kWorkers, std::to_string(int64_t{16} << 20).c_str(), grown));
  EXPECT_LT(grown, int64_t{36} << 20) << "the PS's peak grew by " << (grown >> 20) << " MiB";
}

// A client announces 1000 bytes and sends a 64 MiB body. Without a bound on gRPC's memory the PS
// receives all of it before it can compare; with one (16 MiB here), gRPC stops reading it once
// its memory is full: the push fails, the PS's peak grows by about the bound, nothing is applied.
TEST(TjPsBinaryTest, ABodyLongerThanAnnouncedTakesNoMoreThanTheGrpcMemory) {
  if (testing::kAddressSanitizer) GTEST_SKIP() << testing::kAsanMemoryBoundSkip;
  std::optional<ChildProcess> child;
  std::shared_ptr<PsClient> client;
  setenv("TJ_PS_GRPC_MEMORY_BYTES", std::to_string(int64_t{16} << 20).c_str(), 1);
  StartPsWithEnvironment("TJ_PS_PUSH_WINDOW_BYTES", std::to_string(int64_t{8} << 20).c_str(),
                         child, client);
  unsetenv("TJ_PS_GRPC_MEMORY_BYTES");
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  constexpr int64_t kFloats = int64_t{16} << 20;  // 64 MiB
  ASSERT_TRUE(
      client->Create(testing::CreateRequest({testing::InitializedVariable("w", {1}, {})})).ok());
  const int64_t peak_before = ProcStatusBytes(child->pid(), "VmHWM");
  const grpc::Status status = testing::RawPush(
      MakePsChannel(client->address()),
      EncodePushRequest({"w"}, {FloatTensor(std::vector<float>(kFloats, 1.0f), {kFloats})}),
      "1000");
  const int64_t grown = ProcStatusBytes(child->pid(), "VmHWM") - peak_before;
  std::printf("a 64 MiB body announced as 1000 bytes: %d %s; PS peak grew by %lld MiB\n",
              static_cast<int>(status.error_code()), status.error_message().c_str(),
              static_cast<long long>(grown >> 20));
  EXPECT_FALSE(status.ok());
  EXPECT_LT(grown, int64_t{32} << 20) << "the PS's peak grew by " << (grown >> 20) << " MiB";
  // On a new connection: under the pressure gRPC also closes idle connections (GOAWAY), and a
  // call that meets that on the old one fails UNAVAILABLE, as on a PS that restarted.
  auto values = PsClient::Connect(client->address(), 0)->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(Floats((*values)[0]), ::testing::ElementsAre(0.0f));
}

}  // namespace
}  // namespace tj
