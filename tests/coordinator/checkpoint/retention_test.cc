// PlanRetention, the retention decision every checkpoint store (directory, bucket) carries out.
#include "coordinator/checkpoint/retention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

CheckpointListing Committed(int64_t step) { return {step, "", true}; }
CheckpointListing Unfinished(int64_t step) { return {step, "", false}; }

// Manifests by step: each lists the earlier steps whose files it needs (an incremental chain).
auto Manifests(std::map<int64_t, std::vector<int64_t>> chains) {
  return [chains](int64_t step) -> absl::StatusOr<Manifest> {
    auto it = chains.find(step);
    if (it == chains.end()) return absl::DataLossError("unreadable");
    Manifest manifest;
    manifest.step = step;
    for (const int64_t earlier : it->second) {
      manifest.shards.push_back({"ps-0-of-1", FileDigest{}, earlier});
    }
    return manifest;
  };
}

TEST(RetentionTest, KeepsTheNewestAndRemovesTheRestWithTheReason) {
  const RetentionPlan plan = PlanRetention({Committed(10), Committed(20), Committed(30)}, 30, 2,
                                           Manifests({{10, {}}, {20, {}}, {30, {}}}));
  EXPECT_THAT(plan.beyond_keep, ElementsAre(RetentionPlan::Removal{10, "beyond the newest 2"}));
  EXPECT_THAT(plan.kept_for_chains, IsEmpty());
  EXPECT_THAT(plan.unfinished, IsEmpty());
}

TEST(RetentionTest, AnOlderCheckpointAKeptOneBuildsOnStays) {
  // 40 is a delta on 30 and 10 (its full base); keep 1.
  const RetentionPlan plan =
      PlanRetention({Committed(10), Committed(20), Committed(30), Committed(40)}, 40, 1,
                    Manifests({{10, {}}, {20, {10}}, {30, {10}}, {40, {10, 30}}}));
  EXPECT_THAT(plan.kept_for_chains, ElementsAre(30, 10));
  EXPECT_THAT(plan.beyond_keep, ElementsAre(RetentionPlan::Removal{20, "beyond the newest 1"}));
}

TEST(RetentionTest, TheJustCommittedCheckpointIsKeptEvenBeyondKeep) {
  // A newer checkpoint exists (another writer's); the one just committed stays too.
  const RetentionPlan plan = PlanRetention({Committed(10), Committed(20), Committed(30)}, 20, 1,
                                           Manifests({{10, {}}, {20, {}}, {30, {}}}));
  EXPECT_THAT(plan.beyond_keep, ElementsAre(RetentionPlan::Removal{10, "beyond the newest 1"}));
}

TEST(RetentionTest, UnfinishedSavesOlderThanTheNewestCommitGoAndANewerOneStays) {
  const RetentionPlan plan =
      PlanRetention({Unfinished(5), Committed(10), Unfinished(15), Committed(20), Unfinished(25)},
                    20, 5, Manifests({{10, {}}, {20, {}}}));
  EXPECT_THAT(plan.unfinished, ElementsAre(5, 15));
  EXPECT_THAT(plan.beyond_keep, IsEmpty());
}

TEST(RetentionTest, AnUnreadableManifestKeepsNothingAlive) {
  // 30's manifest does not read: whatever it listed is not protected.
  const RetentionPlan plan = PlanRetention({Committed(10), Committed(20), Committed(30)}, 30, 1,
                                           Manifests({{10, {}}, {20, {}}}));
  EXPECT_THAT(plan.beyond_keep, ElementsAre(RetentionPlan::Removal{20, "beyond the newest 1"},
                                            RetentionPlan::Removal{10, "beyond the newest 1"}));
}

}  // namespace
}  // namespace tj
