// The placement a checkpoint records: independent of the order of the variable list, equal for
// the same slices under other options, and a clear refusal naming the variable otherwise.
#include "trainer/sdk/placement_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tj::sdk {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

v1::VariableSpec Var(const std::string& name, std::vector<int64_t> shape) {
  v1::VariableSpec spec;
  spec.set_name(name);
  spec.mutable_shape()->Assign(shape.begin(), shape.end());
  return spec;
}

nlohmann::json Record(std::vector<v1::VariableSpec> vars, int num_ps, PlacementOptions options) {
  auto plan = PsPlacement::Plan(vars, num_ps, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return PlacementRecord(*plan);
}

TEST(PlacementRecordTest, SamePlanSameRecordWhateverTheOrder) {
  const PlacementOptions options{PartitionerConfig::FixedShards(2), 400};
  const nlohmann::json a = Record({Var("w", {64, 10}), Var("b", {10})}, 2, options);
  const nlohmann::json b = Record({Var("b", {10}), Var("w", {64, 10})}, 2, options);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(CheckPlacementRecord(a, b, "/ckpt/ckpt-1").ok());
  // A checkpoint written before placements were recorded: nothing to compare.
  EXPECT_TRUE(CheckPlacementRecord(nullptr, b, "/ckpt/ckpt-1").ok());
}

TEST(PlacementRecordTest, TheSameSlicesUnderOtherOptionsAreAccepted) {
  // Both cut [64, 10] into 2 shards of one slice each.
  const nlohmann::json fixed =
      Record({Var("w", {64, 10})}, 2, {PartitionerConfig::FixedShards(2), 1 << 20});
  const nlohmann::json min =
      Record({Var("w", {64, 10})}, 2, {PartitionerConfig::MinSize(1280), 1 << 20});
  EXPECT_TRUE(CheckPlacementRecord(fixed, min, "/ckpt/ckpt-1").ok());
}

TEST(PlacementRecordTest, AnotherPlacementIsRefusedNamingTheVariable) {
  const nlohmann::json two =
      Record({Var("w", {64, 10})}, 2, {PartitionerConfig::FixedShards(2), 1 << 20});
  const nlohmann::json four =
      Record({Var("w", {64, 10})}, 2, {PartitionerConfig::FixedShards(4), 1 << 20});
  const absl::Status refused = CheckPlacementRecord(two, four, "/ckpt/ckpt-90");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("/ckpt/ckpt-90"), HasSubstr("another placement"), HasSubstr("'w'"),
                    HasSubstr("fixed:2"), HasSubstr("fixed:4")));
  const nlohmann::json three_ps =
      Record({Var("w", {64, 10})}, 3, {PartitionerConfig::FixedShards(2), 1 << 20});
  EXPECT_THAT(std::string(CheckPlacementRecord(two, three_ps, "c").message()),
              HasSubstr("another number of PS tasks"));
  const nlohmann::json other_var =
      Record({Var("v", {64, 10})}, 2, {PartitionerConfig::FixedShards(2), 1 << 20});
  EXPECT_THAT(std::string(CheckPlacementRecord(two, other_var, "c").message()),
              HasSubstr("'v' is not in it"));
}

}  // namespace
}  // namespace tj::sdk
