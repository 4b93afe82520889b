#include "coordinator/ps/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::InitializedVariable;

v1::VariableSpec Var(std::string name, std::vector<int64_t> shape) {
  return InitializedVariable(std::move(name), std::move(shape), v1::Initializer());
}

// (task, ps_name, row_begin, row_end) of every shard of `name`.
std::vector<std::tuple<int, std::string, int64_t, int64_t>> Shards(const PsPlacement& p,
                                                                   const std::string& name) {
  std::vector<std::tuple<int, std::string, int64_t, int64_t>> out;
  for (const VariableSlice& s : p.Find(name)->slices) {
    out.emplace_back(s.ps_task, s.ps_name, s.row_begin, s.row_end);
  }
  return out;
}

TEST(PlacementTest, DeterministicWhateverTheOrderOfTheList) {
  std::vector<v1::VariableSpec> vars = {Var("a", {100}), Var("b", {300}),   Var("c", {200}),
                                        Var("d", {100}), Var("e", {50, 2}), Var("f", {})};
  auto one = PsPlacement::Plan(vars, 3, 1 << 20);
  std::reverse(vars.begin(), vars.end());
  auto two = PsPlacement::Plan(vars, 3, 1 << 20);
  ASSERT_TRUE(one.ok() && two.ok());
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
    EXPECT_EQ(Shards(*one, name), Shards(*two, name)) << name;
  }
  EXPECT_EQ(one->bytes_per_task(), two->bytes_per_task());
  EXPECT_EQ(one->variables()[0].name, "a");  // variables() keeps the given order
}

TEST(PlacementTest, GreedyLargestFirstBalancesBytes) {
  // Largest first: b (1200 bytes) -> t0, c (800) -> t1, then the 400s by name: a -> t2, d -> t2
  // (t2 at 400 < t1 at 800), e -> t1 (t1 and t2 tie at 800; the lower index wins).
  auto p = PsPlacement::Plan(
      {Var("a", {100}), Var("b", {300}), Var("c", {200}), Var("d", {100}), Var("e", {100})}, 3,
      1 << 20);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Find("b")->slices[0].ps_task, 0);
  EXPECT_EQ(p->Find("c")->slices[0].ps_task, 1);
  EXPECT_EQ(p->Find("a")->slices[0].ps_task, 2);
  EXPECT_EQ(p->Find("d")->slices[0].ps_task, 2);
  EXPECT_EQ(p->Find("e")->slices[0].ps_task, 1);
  EXPECT_THAT(p->bytes_per_task(), ElementsAre(1200, 1200, 800));
}

TEST(PlacementTest, ManySmallVariablesEndUpWithinOneVariableOfBalance) {
  std::vector<v1::VariableSpec> vars;
  for (int i = 0; i < 200; ++i) vars.push_back(Var("v" + std::to_string(i), {1 + i % 17, 8}));
  auto p = PsPlacement::Plan(vars, 4, 1 << 20);
  ASSERT_TRUE(p.ok());
  const auto& bytes = p->bytes_per_task();
  EXPECT_LE(
      *std::max_element(bytes.begin(), bytes.end()) - *std::min_element(bytes.begin(), bytes.end()),
      17 * 8 * 4);
}

TEST(PlacementTest, LargeVariablesAreSplitAlongDimZeroOntoDistinctTasks) {
  // 10 rows of 1000 floats = 40,000 bytes; threshold 16,000 -> ceil(2.5) = 3 shards: 4, 3, 3 rows.
  auto p = PsPlacement::Plan({Var("big", {10, 1000}), Var("small", {10})}, 4, 16000);
  ASSERT_TRUE(p.ok()) << p.status();
  const VariablePlacement& big = *p->Find("big");
  ASSERT_TRUE(big.split());
  EXPECT_EQ(Shards(*p, "big"),
            (std::vector<std::tuple<int, std::string, int64_t, int64_t>>{
                {0, "big/part_0", 0, 4}, {1, "big/part_1", 4, 7}, {2, "big/part_2", 7, 10}}));
  EXPECT_EQ(big.slices[0].num_bytes, 16000);
  EXPECT_EQ(p->Find("small")->slices[0].ps_task, 3);
  EXPECT_FALSE(p->Find("small")->split());
}

TEST(PlacementTest, SplitsAreCappedByTasksAndRows) {
  auto p = PsPlacement::Plan({Var("wide", {2, 100000}), Var("tall", {1000, 1000})}, 3, 1000);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Find("wide")->slices.size(), 2u);  // only 2 rows
  EXPECT_EQ(p->Find("tall")->slices.size(), 3u);  // only 3 tasks
  auto single = PsPlacement::Plan({Var("tall", {1000, 1000})}, 1, 1000);
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(single->Find("tall")->split());
  EXPECT_EQ(single->Find("tall")->slices[0].ps_name, "tall");
}

TEST(PlacementTest, BadListsAreRejected) {
  EXPECT_THAT(
      std::string(PsPlacement::Plan({Var("a", {1}), Var("a", {2})}, 2, 10).status().message()),
      HasSubstr("'a' is given twice"));
  EXPECT_THAT(std::string(PsPlacement::Plan({Var("big", {4, 100}), Var("big/part_1", {1})}, 2, 100)
                              .status()
                              .message()),
              HasSubstr("collides"));
  EXPECT_EQ(PsPlacement::Plan({Var("a", {-1})}, 2, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PsPlacement::Plan({}, 0, 10).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tj
