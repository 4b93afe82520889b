// The coordinator claim of an s3:// checkpoint location against a real S3-compatible server: the
// server's conditional writes (If-None-Match: *, If-Match on an ETag) that the claim relies on,
// and concurrent claims, which must leave the newest generation whoever writes last.
#include "coordinator/checkpoint/object_generation_claim.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/checkpoint/checkpoint_storage_error.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/checkpoint/s3_test_env.h"

namespace tj {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::S3TestEnvironment;

class ObjectGenerationClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TJ_REQUIRE_S3_SERVER();
    store_ = NewStore();
    key_ = absl::StrCat("claims/", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                        "/COORDINATOR_GENERATION");
  }
  static std::unique_ptr<S3ObjectStore> NewStore() {
    return std::make_unique<S3ObjectStore>(S3TestEnvironment::server()->Options(),
                                           testing::kS3TestBucket);
  }

  std::unique_ptr<S3ObjectStore> store_;
  std::string key_;
};

TEST_F(ObjectGenerationClaimTest, TheServerChecksWriteConditionsOnTheVersionRead) {
  ASSERT_TRUE(store_->PutIfUnchanged(key_, "1\n", std::nullopt).ok());
  // Something is there now: a put "where nothing is" fails.
  EXPECT_TRUE(absl::IsAborted(store_->PutIfUnchanged(key_, "9\n", std::nullopt)));
  auto first = store_->GetTagged(key_, 64);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->data, "1\n");
  ASSERT_FALSE((*first)->etag.empty());
  ASSERT_TRUE(store_->PutIfUnchanged(key_, "2\n", (*first)->etag).ok());
  // The ETag read before that write no longer names the object.
  const absl::Status stale = store_->PutIfUnchanged(key_, "1\n", (*first)->etag);
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  auto now = store_->Get(key_, 64);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, "2\n");
  // Removed since it was read: Aborted too.
  auto second = store_->GetTagged(key_, 64);
  ASSERT_TRUE(second.ok() && second->has_value());
  ASSERT_TRUE(store_->Delete(key_).ok());
  EXPECT_TRUE(absl::IsAborted(store_->PutIfUnchanged(key_, "3\n", (*second)->etag)));
}

TEST_F(ObjectGenerationClaimTest, AClaimOnlyGrowsAndNamesTheNewerGenerationWhenRefused) {
  auto none = ReadClaimedGeneration(*store_, key_);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, 0u);
  EXPECT_TRUE(ClaimGeneration(*store_, key_, 0).ok());
  EXPECT_FALSE(store_->Size(key_)->has_value()) << "generation 0 claims nothing";
  ASSERT_TRUE(ClaimGeneration(*store_, key_, 5).ok());
  ASSERT_TRUE(ClaimGeneration(*store_, key_, 5).ok());
  const absl::Status older = ClaimGeneration(*store_, key_, 4);
  EXPECT_TRUE(absl::IsFailedPrecondition(older)) << older;
  EXPECT_FALSE(IsCheckpointStorageError(older)) << "a newer coordinator's claim ends this one";
  EXPECT_THAT(std::string(older.message()),
              AllOf(HasSubstr("generation 5"), HasSubstr("generation 4"), HasSubstr(key_)));
  ASSERT_TRUE(ClaimGeneration(*store_, key_, 9).ok());
  EXPECT_EQ(*ReadClaimedGeneration(*store_, key_), 9u);
  // Not a number (a claim cut short, a stray file): no claim, replaced by the next one.
  ASSERT_TRUE(store_->Put(key_, "garbage").ok());
  EXPECT_EQ(*ReadClaimedGeneration(*store_, key_), 0u);
  ASSERT_TRUE(ClaimGeneration(*store_, key_, 3).ok());
  EXPECT_EQ(*ReadClaimedGeneration(*store_, key_), 3u);
}

// Coordinators claiming at once, each from its own connection: whatever the interleaving, the
// claim ends at the newest generation, and every older one that lost is told it was overtaken. A
// read-then-put without the server's condition leaves an older generation behind here.
TEST_F(ObjectGenerationClaimTest, ConcurrentClaimsLeaveTheNewestGeneration) {
  constexpr int kRounds = 5;
  constexpr int kClaimants = 6;
  for (int round = 0; round < kRounds; ++round) {
    const std::string key = absl::StrCat(key_, "-", round);
    std::atomic<int> ready{0};
    std::vector<absl::Status> results(kClaimants);
    std::vector<std::thread> threads;
    for (int i = 0; i < kClaimants; ++i) {
      threads.emplace_back([&, i] {
        std::unique_ptr<S3ObjectStore> store = NewStore();
        ready.fetch_add(1);
        while (ready.load() < kClaimants) std::this_thread::yield();
        // Generations 10, 20, ...: the highest is started first, so it often lands before the
        // older ones try to overwrite it.
        results[i] = ClaimGeneration(*store, key, static_cast<uint64_t>((kClaimants - i) * 10));
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_TRUE(results[0].ok()) << results[0];
    for (int i = 1; i < kClaimants; ++i) {
      EXPECT_TRUE(results[i].ok() || absl::IsFailedPrecondition(results[i])) << results[i];
    }
    auto claimed = ReadClaimedGeneration(*store_, key);
    ASSERT_TRUE(claimed.ok()) << claimed.status();
    EXPECT_EQ(*claimed, static_cast<uint64_t>(kClaimants * 10)) << "round " << round;
  }
}

}  // namespace
}  // namespace tj
