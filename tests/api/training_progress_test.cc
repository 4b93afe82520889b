// TrainingProgress JSON: what the coordinator writes and `tjctl run` (later the operator) reads.
#include "api/v1alpha1/training_progress.h"

#include "gtest/gtest.h"

namespace tj::v1alpha1 {
namespace {

TEST(TrainingProgressTest, RoundTripsEveryField) {
  TrainingProgress progress;
  progress.state = "training";
  progress.step = 120;
  progress.total_steps = 900;
  progress.epoch = 2;
  progress.loss = 0.5;
  progress.examples_per_second = 12000;
  progress.metrics = {{"accuracy", 0.93}};
  progress.last_checkpoint_step = 100;
  progress.restored_from_step = 50;
  progress.message = "restored checkpoint 50";
  progress.updated = "2026-11-22T10:00:00Z";
  progress.events = {"2026-11-22T09:59:00Z notice for ps:0 (spot): checkpoint and exit"};
  progress.checkpoint_error = "credentials from Secret ns/s3 refused for bucket b (PUT s3://b/p)";
  auto back = TrainingProgressFromJson(ToJson(progress));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, progress);
  EXPECT_EQ(ToJson(progress)["totalSteps"], 900);
}

TEST(TrainingProgressTest, OptionalFieldsStayUnset) {
  auto back = TrainingProgressFromJson(nlohmann::json{{"step", 3}});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step, 3);
  EXPECT_FALSE(back->loss.has_value());
  EXPECT_FALSE(back->last_checkpoint_step.has_value());
  EXPECT_FALSE(ToJson(*back).contains("loss"));
  EXPECT_FALSE(ToJson(*back).contains("checkpointError")) << "no failed save: absent";
}

TEST(TrainingProgressTest, ErrorsNameTheField) {
  auto missing = TrainingProgressFromJson(nlohmann::json::object());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("'step'"), std::string::npos);

  auto wrong = TrainingProgressFromJson(nlohmann::json{{"step", 1}, {"loss", "high"}});
  EXPECT_NE(wrong.status().message().find("'loss'"), std::string::npos) << wrong.status();

  auto metrics = TrainingProgressFromJson(nlohmann::json{{"step", 1}, {"metrics", {{"a", "x"}}}});
  EXPECT_NE(metrics.status().message().find("'metrics'"), std::string::npos);

  EXPECT_FALSE(TrainingProgressFromJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace tj::v1alpha1
