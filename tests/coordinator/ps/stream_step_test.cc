// ShardedPsClient::StreamStep (pull, compute and push slice by slice) against the unstreamed
// reference (PullInto, compute over the whole variable, Push): a partitioned variable over two
// in-process PS tasks per client, one set of PS for each, the same initial values, the same steps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/spare_buffers.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using testing::InitializedVariable;
using testing::NormalInit;
using testing::SgdOptimizer;

constexpr char kName[] = "model/w";
constexpr int64_t kRows = 300;  // not a multiple of the slice's rows: the last slice is shorter
constexpr int64_t kColumns = 96;
constexpr int64_t kElements = kRows * kColumns;
constexpr int64_t kSliceBytes = 16 << 10;  // ~8 slices over 2 tasks

// A gradient that depends on the values and on each element's place in the variable.
absl::Status Gradient(int64_t first, std::span<const float> w, std::span<float> g) {
  for (size_t i = 0; i < w.size(); ++i) {
    g[i] = 0.25f * w[i] * w[i] - 0.125f +
           1e-3f * static_cast<float>((first + static_cast<int64_t>(i)) % 7);
  }
  return absl::OkStatus();
}

// Two PS tasks and a client of them, the variable created.
struct PsPair {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::unique_ptr<ShardedPsClient> client;
};

std::unique_ptr<PsPair> StartPair(int64_t max_bytes_in_flight) {
  auto pair = std::make_unique<PsPair>();
  std::vector<std::string> addresses;
  for (int task = 0; task < 2; ++task) {
    auto server = PsServer::Start("127.0.0.1:0", task);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    addresses.push_back((*server)->address());
    pair->servers.push_back(*std::move(server));
  }
  auto client = ShardedPsClient::Connect(
      addresses,
      {InitializedVariable(kName, {kRows, kColumns}, NormalInit(11, 0.5f), SgdOptimizer(0.5f))}, {},
      {.placement = {.partitioner = PartitionerConfig::MinSize(kSliceBytes),
                     .max_slice_bytes = kSliceBytes},
       .max_rpc_bytes = kSliceBytes,
       .max_bytes_in_flight = max_bytes_in_flight});
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return nullptr;
  pair->client = *std::move(client);
  EXPECT_TRUE(pair->client->CreateVariables().ok());
  return pair;
}

std::vector<float> PsValues(const ShardedPsClient& client) {
  auto pulled = client.Pull({kName});
  EXPECT_TRUE(pulled.ok()) << pulled.status();
  return pulled.ok() ? testing::Floats((*pulled)[0]) : std::vector<float>{};
}

bool SameBits(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `slice`'s elements are the same bits in both.
bool SliceUnchanged(const std::vector<float>& before, const std::vector<float>& after,
                    const VariableSlice& slice) {
  const size_t first = static_cast<size_t>(slice.byte_offset / 4);
  const size_t n = static_cast<size_t>(slice.num_bytes / 4);
  return before.size() == after.size() && first + n <= after.size() &&
         std::memcmp(after.data() + first, before.data() + first, n * sizeof(float)) == 0;
}

class StreamStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reference_ = StartPair(int64_t{64} << 10);
    streamed_ = StartPair(int64_t{64} << 10);
    ASSERT_NE(reference_, nullptr);
    ASSERT_NE(streamed_, nullptr);
    ASSERT_GT(streamed_->client->placement().Find(kName)->slices.size(), 4u);
  }

  // The unstreamed step: the whole variable pulled, its gradient computed, pushed.
  void ReferenceStep(std::vector<v1::Tensor>& values, const std::shared_ptr<v1::Tensor>& gradient) {
    ASSERT_TRUE(reference_->client->PullInto({kName}, values).ok());
    gradient->set_dtype(v1::DTYPE_FLOAT32);
    gradient->clear_shape();
    gradient->add_shape(kRows);
    gradient->add_shape(kColumns);
    gradient->mutable_data()->resize(kElements * sizeof(float));
    ASSERT_TRUE(Gradient(0,
                         {reinterpret_cast<const float*>(values[0].data().data()),
                          static_cast<size_t>(kElements)},
                         {reinterpret_cast<float*>(gradient->mutable_data()->data()),
                          static_cast<size_t>(kElements)})
                    .ok());
    ASSERT_TRUE(
        reference_->client->Push({kName}, std::vector<std::shared_ptr<const v1::Tensor>>{gradient})
            .ok());
  }

  std::unique_ptr<PsPair> reference_;
  std::unique_ptr<PsPair> streamed_;
};

TEST_F(StreamStepTest, EveryStepEqualsTheUnstreamedOneBitForBit) {
  std::vector<v1::Tensor> reference_values;
  auto reference_gradient = std::make_shared<v1::Tensor>();
  v1::Tensor values;
  auto gradient = std::make_shared<v1::Tensor>();
  ASSERT_TRUE(SameBits(PsValues(*reference_->client), PsValues(*streamed_->client)));
  for (int step = 0; step < 4; ++step) {
    ReferenceStep(reference_values, reference_gradient);
    ASSERT_TRUE(streamed_->client->StreamStep(kName, values, gradient, Gradient).ok());
    EXPECT_TRUE(SameBits(values.data(), reference_values[0].data())) << "values, step " << step;
    EXPECT_TRUE(SameBits(gradient->data(), reference_gradient->data()))
        << "gradient, step " << step;
    EXPECT_EQ(values.shape_size(), 2);
    EXPECT_EQ(gradient->shape(0), kRows);
    EXPECT_EQ(gradient->shape(1), kColumns);
    // What the PS tasks hold after the push.
    const std::vector<float> reference_state = PsValues(*reference_->client);
    EXPECT_TRUE(SameBits(PsValues(*streamed_->client), reference_state)) << "PS, step " << step;
    // The step changed the variable (the comparison is not of two untouched copies).
    EXPECT_FALSE(SameBits(reference_state, testing::Floats(reference_values[0])));
    // gRPC has let go of the gradient: the next step writes into the same buffer.
    EXPECT_EQ(gradient.use_count(), 1);
  }
}

TEST_F(StreamStepTest, ASmallWindowStillMovesEverySliceOnce) {
  // A window of one slice: pulls and pushes one at a time each; the result is the same.
  auto narrow = StartPair(kSliceBytes);
  ASSERT_NE(narrow, nullptr);
  std::vector<v1::Tensor> reference_values;
  auto reference_gradient = std::make_shared<v1::Tensor>();
  v1::Tensor values;
  auto gradient = std::make_shared<v1::Tensor>();
  for (int step = 0; step < 2; ++step) {
    ReferenceStep(reference_values, reference_gradient);
    ASSERT_TRUE(narrow->client->StreamStep(kName, values, gradient, Gradient).ok());
  }
  EXPECT_TRUE(SameBits(PsValues(*narrow->client), PsValues(*reference_->client)));
}

TEST_F(StreamStepTest, TheGradientIsComputedOverWholeRowsCoveringTheVariableOnce) {
  std::vector<int> seen(static_cast<size_t>(kElements), 0);
  v1::Tensor values;
  auto gradient = std::make_shared<v1::Tensor>();
  ASSERT_TRUE(streamed_->client
                  ->StreamStep(kName, values, gradient,
                               [&](int64_t first, std::span<const float> w, std::span<float> g) {
                                 EXPECT_EQ(first % kColumns, 0);
                                 EXPECT_EQ(w.size() % kColumns, 0u);
                                 EXPECT_EQ(w.size(), g.size());
                                 for (size_t i = 0; i < w.size(); ++i) {
                                   ++seen[static_cast<size_t>(first) + i];
                                 }
                                 return Gradient(first, w, g);
                               })
                  .ok());
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "element " << i;
}

TEST_F(StreamStepTest, ANonFiniteGradientIsRefusedNamingTheElementAndItsSliceIsNotPushed) {
  const std::vector<float> before = PsValues(*streamed_->client);
  const VariablePlacement& placement = *streamed_->client->placement().Find(kName);
  // An element in the middle of the third slice.
  const VariableSlice& bad_slice = placement.slices[2];
  const int64_t bad = bad_slice.byte_offset / 4 + bad_slice.num_bytes / 8;
  v1::Tensor values;
  auto gradient = std::make_shared<v1::Tensor>();
  absl::Status status = streamed_->client->StreamStep(
      kName, values, gradient, [&](int64_t first, std::span<const float> w, std::span<float> g) {
        TJ_RETURN_IF_ERROR(Gradient(first, w, g));
        if (bad >= first && bad < first + static_cast<int64_t>(g.size())) {
          g[static_cast<size_t>(bad - first)] = std::numeric_limits<float>::quiet_NaN();
        }
        return absl::OkStatus();
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(
                absl::StrCat("push to variable '", kName, "': gradient element ", bad, " is NaN")),
            std::string_view::npos)
      << status;
  // The slice with the bad element is as it was; slices already pushed may have changed.
  EXPECT_TRUE(SliceUnchanged(before, PsValues(*streamed_->client), bad_slice));
}

TEST_F(StreamStepTest, AnErrorOfTheModelStopsTheStepWithThatError) {
  v1::Tensor values;
  auto gradient = std::make_shared<v1::Tensor>();
  absl::Status status = streamed_->client->StreamStep(
      kName, values, gradient, [](int64_t, std::span<const float>, std::span<float>) {
        return absl::FailedPreconditionError("model says no");
      });
  EXPECT_EQ(status, absl::FailedPreconditionError("model says no"));
  // Nothing was pushed: every slice's compute failed before its push.
  EXPECT_TRUE(SameBits(PsValues(*streamed_->client), PsValues(*reference_->client)));
}

TEST_F(StreamStepTest, AnUnknownVariableOrNoGradientIsRefusedNamingIt) {
  v1::Tensor values;
  auto gradient = std::make_shared<v1::Tensor>();
  absl::Status unknown = streamed_->client->StreamStep("model/nope", values, gradient, Gradient);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("model/nope"), std::string_view::npos) << unknown;
  absl::Status none = streamed_->client->StreamStep(kName, values, nullptr, Gradient);
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find(kName), std::string_view::npos) << none;
}

// StreamPush: the push half alone, the gradient written just before each slice leaves.
TEST_F(StreamStepTest, AStreamedPushEqualsTheWholeGradientPushedBitForBit) {
  std::vector<v1::Tensor> reference_values;
  auto reference_gradient = std::make_shared<v1::Tensor>();
  std::vector<v1::Tensor> values;
  auto gradient = std::make_shared<v1::Tensor>();
  std::vector<int> seen(static_cast<size_t>(kElements), 0);
  for (int step = 0; step < 3; ++step) {
    ReferenceStep(reference_values, reference_gradient);
    ASSERT_TRUE(streamed_->client->PullInto({kName}, values).ok());
    const float* w = reinterpret_cast<const float*>(values[0].data().data());
    ASSERT_TRUE(streamed_->client
                    ->StreamPush(kName, gradient,
                                 [&](int64_t first, std::span<float> g) {
                                   EXPECT_EQ(first % kColumns, 0);
                                   EXPECT_EQ(g.size() % kColumns, 0u);
                                   for (size_t i = 0; i < g.size(); ++i) {
                                     ++seen[static_cast<size_t>(first) + i];
                                   }
                                   return Gradient(first, {w + first, g.size()}, g);
                                 })
                    .ok());
    EXPECT_TRUE(SameBits(gradient->data(), reference_gradient->data())) << "step " << step;
    EXPECT_EQ(gradient->shape(0), kRows);
    EXPECT_TRUE(SameBits(PsValues(*streamed_->client), PsValues(*reference_->client)))
        << "PS, step " << step;
    EXPECT_EQ(gradient.use_count(), 1);
  }
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 3) << "element " << i;
}

TEST_F(StreamStepTest, AStreamedPushRefusesANonFiniteGradientNamingTheElementAndStopsThere) {
  const std::vector<float> before = PsValues(*streamed_->client);
  const VariableSlice& bad_slice = streamed_->client->placement().Find(kName)->slices[2];
  const int64_t bad = bad_slice.byte_offset / 4 + 5;
  auto gradient = std::make_shared<v1::Tensor>();
  absl::Status status =
      streamed_->client->StreamPush(kName, gradient, [&](int64_t first, std::span<float> g) {
        for (size_t i = 0; i < g.size(); ++i) g[i] = 0.5f;
        if (bad >= first && bad < first + static_cast<int64_t>(g.size())) {
          g[static_cast<size_t>(bad - first)] = std::numeric_limits<float>::infinity();
        }
        return absl::OkStatus();
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(
      status.message().find(absl::StrCat("push to variable '", kName, "': gradient element ", bad)),
      std::string_view::npos)
      << status;
  EXPECT_TRUE(SliceUnchanged(before, PsValues(*streamed_->client), bad_slice));
}

TEST(SpareBuffersTest, TheSmallestSpareThatFitsIsTakenWithItsMemory) {
  const size_t held = SpareBufferBytes();
  constexpr size_t kMiB = size_t{1} << 20;
  std::string two(2 * kMiB, 'a');
  std::string four(4 * kMiB, 'b');
  const char* two_memory = two.data();
  const char* four_memory = four.data();
  const size_t capacities = two.capacity() + four.capacity();
  GiveSpareBuffer(std::move(two));
  GiveSpareBuffer(std::move(four));
  GiveSpareBuffer(std::string(1000, 'c'));  // too small to keep
  EXPECT_EQ(SpareBufferBytes(), held + capacities);
  std::string values;
  ASSERT_TRUE(TakeSpareBuffer(values, 3 * kMiB));
  EXPECT_EQ(values.data(), four_memory);
  EXPECT_EQ(values.size(), 3 * kMiB);
  // A buffer that already holds enough keeps its own.
  EXPECT_FALSE(TakeSpareBuffer(values, 3 * kMiB));
  std::string gradient;
  ASSERT_TRUE(TakeSpareBuffer(gradient, kMiB + 1));
  EXPECT_EQ(gradient.data(), two_memory);
  EXPECT_EQ(SpareBufferBytes(), held);
  std::string more;
  EXPECT_FALSE(TakeSpareBuffer(more, 2 * kMiB));
}

}  // namespace
}  // namespace tj
