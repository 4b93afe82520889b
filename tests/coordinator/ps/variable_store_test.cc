#include "coordinator/ps/variable_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "coordinator/base/values.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using ::testing::AllOf;
using testing::CreateRequest;
using ::testing::ElementsAre;
using testing::Floats;
using testing::FloatVariable;
using ::testing::HasSubstr;
using testing::PullRequest;
using testing::PushRequest;

std::vector<float> PullOne(const VariableStore& store, const std::string& name) {
  v1::PullResponse response;
  const absl::Status status = store.Pull(PullRequest({name}), response);
  EXPECT_TRUE(status.ok()) << status;
  if (!status.ok() || response.values_size() != 1) return {};
  return Floats(response.values(0));
}

TEST(VariableStoreTest, CreateIsIdempotentAndKeepsTheCurrentValue) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2}, {2})})).ok());
  ASSERT_TRUE(store.Push(PushRequest("w", FloatTensor(std::vector<float>{10, 10}, {2}))).ok());

  EXPECT_TRUE(store.Create(CreateRequest({FloatVariable("w", {0, 0}, {2})})).ok());

  EXPECT_THAT(PullOne(store, "w"), ElementsAre(11, 12));
  EXPECT_EQ(store.num_variables(), 1);
}

TEST(VariableStoreTest, CreateWithADifferentShapeIsRejectedNamingTheVariableAndBothShapes) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2, 3, 4}, {2, 2})})).ok());

  const absl::Status status = store.Create(CreateRequest({FloatVariable("w", {1, 2, 3, 4}, {4})}));

  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("float32[2, 2]"), HasSubstr("float32[4]")));
  EXPECT_THAT(PullOne(store, "w"), ElementsAre(1, 2, 3, 4));
}

TEST(VariableStoreTest, CreateWithADifferentDtypeIsRejected) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2}, {2})})).ok());
  v1::VariableSpec as_int64 = FloatVariable("w", {1, 2}, {1});  // 8 bytes: one int64
  as_int64.mutable_initial_value()->set_dtype(v1::DTYPE_INT64);

  const absl::Status status = store.Create(CreateRequest({as_int64}));

  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()), AllOf(HasSubstr("'w'"), HasSubstr("int64[1]")));
}

TEST(VariableStoreTest, CreateOnlySupportsFloat32) {
  VariableStore store;
  v1::VariableSpec as_int64 = FloatVariable("steps", {0, 0}, {1});
  as_int64.mutable_initial_value()->set_dtype(v1::DTYPE_INT64);

  const absl::Status status = store.Create(CreateRequest({as_int64}));

  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), AllOf(HasSubstr("'steps'"), HasSubstr("float32")));
}

TEST(VariableStoreTest, CreateIsAllOrNothing) {
  VariableStore store;
  v1::VariableSpec truncated = FloatVariable("bad", {1, 2}, {2});
  truncated.mutable_initial_value()->mutable_data()->resize(3);

  const absl::Status status =
      store.Create(CreateRequest({FloatVariable("good", {1}, {1}), truncated}));

  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("'bad'"));
  EXPECT_EQ(store.num_variables(), 0);
}

TEST(VariableStoreTest, ANameRepeatedInOneCreateMustKeepItsShape) {
  VariableStore store;
  const absl::Status status = store.Create(
      CreateRequest({FloatVariable("w", {1, 2}, {2}), FloatVariable("w", {1, 2}, {1, 2})}));
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store.num_variables(), 0);
}

TEST(VariableStoreTest, PushAddsDeltasElementWiseAndPullFollowsRequestOrder) {
  VariableStore store;
  ASSERT_TRUE(store
                  .Create(CreateRequest({FloatVariable("a", {1, 2, 3, 4, 5, 6}, {2, 3}),
                                         FloatVariable("b", {-1}, {})}))
                  .ok());

  v1::PushRequest push =
      PushRequest("a", FloatTensor(std::vector<float>{0.5, 0, -3, 1, 1, 1}, {2, 3}));
  push.add_names("b");
  *push.add_deltas() = FloatTensor(std::vector<float>{2}, {});
  ASSERT_TRUE(store.Push(push).ok());
  ASSERT_TRUE(store.Push(push).ok());

  v1::PullResponse response;
  ASSERT_TRUE(store.Pull(PullRequest({"b", "a"}), response).ok());
  ASSERT_EQ(response.values_size(), 2);
  EXPECT_THAT(Floats(response.values(0)), ElementsAre(3));
  EXPECT_THAT(Floats(response.values(1)), ElementsAre(2, 2, -3, 6, 7, 8));
  EXPECT_THAT(response.values(1).shape(), ElementsAre(2, 3));
}

TEST(VariableStoreTest, PushWithTheWrongByteSizeNamesTheVariable) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2}, {2})})).ok());
  v1::Tensor delta = FloatTensor(std::vector<float>{1, 1}, {2});
  delta.mutable_data()->resize(7);

  const absl::Status status = store.Push(PushRequest("w", delta));

  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("7 bytes of data, expected 8")));
}

TEST(VariableStoreTest, PushWithTheWrongDtypeNamesTheVariable) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2}, {2})})).ok());
  v1::Tensor delta = FloatTensor(std::vector<float>{1, 1, 1, 1}, {2});  // 16 bytes: two int64
  delta.set_dtype(v1::DTYPE_INT64);

  const absl::Status status = store.Push(PushRequest("w", delta));

  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("int64[2]"), HasSubstr("float32[2]")));
}

TEST(VariableStoreTest, PushWithTheWrongShapeNamesTheVariable) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2}, {2})})).ok());

  const absl::Status status =
      store.Push(PushRequest("w", FloatTensor(std::vector<float>{1, 1}, {1, 2})));

  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("float32[1, 2]"), HasSubstr("float32[2]")));
}

// A store holding nothing is a PS that restarted and lost its state: Unavailable, so workers
// report it as a PS failure and the coordinator restores its checkpoint.
TEST(VariableStoreTest, AnEmptyStoreIsUnavailableNotNotFound) {
  VariableStore store;
  const absl::Status push =
      store.Push(PushRequest("w", FloatTensor(std::vector<float>{1}, {1})));
  EXPECT_EQ(push.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(push.message()), AllOf(HasSubstr("restarted"), HasSubstr("'w'")));
  v1::PullResponse response;
  EXPECT_EQ(store.Pull(PullRequest({"w"}), response).code(), absl::StatusCode::kUnavailable);
}

TEST(VariableStoreTest, PushAndPullOfAnUnknownVariableAreNotFoundNamingIt) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1}, {1})})).ok());
  const absl::Status push =
      store.Push(PushRequest("ghost", FloatTensor(std::vector<float>{1}, {1})));
  EXPECT_EQ(push.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(push.message()), HasSubstr("'ghost'"));

  v1::PullResponse response;
  const absl::Status pull = store.Pull(PullRequest({"ghost"}), response);
  EXPECT_EQ(pull.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(pull.message()), HasSubstr("'ghost'"));
}

TEST(VariableStoreTest, AMalformedPushAppliesNothing) {
  VariableStore store;
  ASSERT_TRUE(
      store.Create(CreateRequest({FloatVariable("a", {1}, {1}), FloatVariable("b", {1}, {1})}))
          .ok());
  v1::PushRequest push = PushRequest("a", FloatTensor(std::vector<float>{5}, {1}));
  push.add_names("b");
  *push.add_deltas() = FloatTensor(std::vector<float>{5, 5}, {2});

  EXPECT_EQ(store.Push(push).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_THAT(PullOne(store, "a"), ElementsAre(1));
}

TEST(VariableStoreTest, PushNeedsOneDeltaPerName) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("a", {1}, {1})})).ok());
  v1::PushRequest push = PushRequest("a", FloatTensor(std::vector<float>{5}, {1}));
  push.add_names("a");
  EXPECT_EQ(store.Push(push).code(), absl::StatusCode::kInvalidArgument);
}

TEST(VariableStoreTest, ConcurrentPushesAreNeverLost) {
  VariableStore store;
  ASSERT_TRUE(store
                  .Create(CreateRequest(
                      {FloatVariable("shared", {0, 0}, {2}), FloatVariable("other", {0}, {1})}))
                  .ok());
  constexpr int kThreads = 8;
  constexpr int kPushesPerThread = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      v1::PushRequest shared = PushRequest("shared", FloatTensor(std::vector<float>{1, 2}, {2}));
      v1::PushRequest other = PushRequest("other", FloatTensor(std::vector<float>{1}, {1}));
      for (int i = 0; i < kPushesPerThread; ++i) {
        EXPECT_TRUE(store.Push(shared).ok());
        // Half the threads also pull and push another variable, to mix readers into the contention.
        if (t % 2 == 0) {
          EXPECT_TRUE(store.Push(other).ok());
          v1::PullResponse response;
          EXPECT_TRUE(store.Pull(PullRequest({"shared"}), response).ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  EXPECT_THAT(PullOne(store, "shared"), ElementsAre(8000, 16000));
  EXPECT_THAT(PullOne(store, "other"), ElementsAre(4000));
}

TEST(VariableStoreTest, CreateFromAnInitializerIsDeterministicAcrossStores) {
  VariableStore a, b;
  const v1::VariableSpec spec = testing::InitializedVariable("w", {4, 3}, testing::NormalInit(9));
  ASSERT_TRUE(a.Create(CreateRequest({spec})).ok());
  ASSERT_TRUE(b.Create(CreateRequest({spec})).ok());

  const std::vector<float> values = PullOne(a, "w");
  EXPECT_EQ(values.size(), 12u);
  EXPECT_EQ(PullOne(b, "w"), values);
  EXPECT_NE(values[0], values[1]);
}

TEST(VariableStoreTest, RecreatingWithAnotherOptimizerIsRejectedNamingBoth) {
  VariableStore store;
  v1::VariableSpec sgd = FloatVariable("w", {1}, {1});
  *sgd.mutable_optimizer() = testing::SgdOptimizer(0.5f);
  ASSERT_TRUE(store.Create(CreateRequest({sgd})).ok());
  v1::VariableSpec adam = sgd;
  *adam.mutable_optimizer() = testing::AdamOptimizer(0.5f);

  EXPECT_TRUE(store.Create(CreateRequest({sgd})).ok());
  const absl::Status status = store.Create(CreateRequest({adam}));

  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("sgd(lr=0.5)"), HasSubstr("adam(lr=0.5")));
}

TEST(VariableStoreTest, NonFiniteGradientsAreRejectedNamingTheVariableAndApplyNothing) {
  VariableStore store;
  ASSERT_TRUE(
      store.Create(CreateRequest({FloatVariable("a", {1}, {1}), FloatVariable("w", {1, 2}, {2})}))
          .ok());
  v1::PushRequest push = PushRequest("a", FloatTensor(std::vector<float>{5}, {1}));
  push.add_names("w");
  *push.add_deltas() = FloatTensor(std::vector<float>{1, -INFINITY}, {2});

  const absl::Status status = store.Push(push);

  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("'w'"), HasSubstr("element 1"), HasSubstr("infinite")));
  EXPECT_THAT(PullOne(store, "a"), ElementsAre(1));
}

TEST(VariableStoreTest, BadSpecsAreRejectedNamingTheVariable) {
  VariableStore store;
  v1::VariableSpec nan_value = FloatVariable("n", {1, NAN}, {2});
  v1::VariableSpec negative = testing::InitializedVariable("neg", {2, -1}, v1::Initializer());
  v1::VariableSpec bad_partition = testing::InitializedVariable("p", {4}, v1::Initializer());
  bad_partition.mutable_partition()->set_full_name("big");
  bad_partition.mutable_partition()->set_row_offset(7);
  bad_partition.mutable_partition()->set_full_rows(10);
  v1::VariableSpec shape_clash = FloatVariable("c", {1, 2}, {2});
  shape_clash.add_shape(3);

  for (const auto& [spec, detail] :
       std::vector<std::pair<v1::VariableSpec, std::string>>{{nan_value, "not finite"},
                                                             {negative, "negative"},
                                                             {bad_partition, "does not fit"},
                                                             {shape_clash, "shape says"}}) {
    const absl::Status status = store.Create(CreateRequest({spec}));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << spec.name();
    EXPECT_THAT(std::string(status.message()),
                AllOf(HasSubstr("'" + spec.name() + "'"), HasSubstr(detail)));
  }
  EXPECT_EQ(store.num_variables(), 0);
}

}  // namespace
}  // namespace tj
