// TrainConfig checks and JSON, StepSchedule's exactly-once epochs, LoadTrainingData's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "tests/trainer/test_files.h"
#include "trainer/train/train_config.h"
#include "trainer/train/training_data.h"

namespace tj::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TrainConfig Valid() {
  TrainConfig config;
  config.data = "synthetic-ctr";
  config.model = "lr";
  return config;
}

TEST(TrainConfigTest, BadValuesAreRefusedNamingTheFlag) {
  struct Case {
    std::function<void(TrainConfig&)> change;
    std::string flag;
  };
  const std::vector<Case> cases = {
      {[](TrainConfig& c) { c.model = "mlp"; }, "--model"},
      {[](TrainConfig& c) { c.data.clear(); }, "--data"},
      {[](TrainConfig& c) { c.batch_size = 0; }, "--batch-size"},
      {[](TrainConfig& c) { c.test_percent = 100; }, "--test-percent"},
      {[](TrainConfig& c) { c.optimizer = "rmsprop"; }, "--optimizer"},
      {[](TrainConfig& c) { c.learning_rate = 0; }, "--learning-rate"},
      {[](TrainConfig& c) { c.steps = -1; }, "--steps"},
      {[](TrainConfig& c) { c.min_accuracy = 2; }, "--min-accuracy"},
      {[](TrainConfig& c) { c.model = "fm"; c.factor_dim = 0; }, "--factor-dim"},
      {[](TrainConfig& c) { c.model = "softmax"; }, "--model softmax"},
      {[](TrainConfig& c) { c.init_limit = -1; }, "--init-limit"},
      {[](TrainConfig& c) { c.init = v1::Initializer::ZEROS; }, "--init"},
      {[](TrainConfig& c) {
         c.model = "softmax";
         c.data = "digits.csv";
         c.head = CtrHead::kDense;
       },
       "--head"},
  };
  for (const Case& c : cases) {
    TrainConfig config = Valid();
    c.change(config);
    const absl::Status status = Validate(config);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.flag));
  }
  EXPECT_TRUE(Validate(Valid()).ok());
}

TEST(TrainConfigTest, JsonRoundTripsAndFingerprintIgnoresTheSchedule) {
  TrainConfig config = Valid();
  config.model = "fm";
  config.factor_dim = 4;
  config.learning_rate = 0.25;
  config.step_sleep_ms = 7;
  auto back = TrainConfigFromJson(ToJson(config));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToJson(*back), ToJson(config));

  TrainConfig longer = config;
  longer.epochs = 50;
  longer.step_sleep_ms = 0;
  EXPECT_EQ(Fingerprint(longer), Fingerprint(config)) << "more epochs may resume a checkpoint";
  TrainConfig other = config;
  other.batch_size = 64;
  EXPECT_NE(Fingerprint(other), Fingerprint(config)) << "another batching may not";

  EXPECT_FALSE(TrainConfigFromJson(nlohmann::json{{"model", "lr"}}).ok());
}

TEST(TrainConfigTest, KindsRoundTripAndOnlyModelChangesEnterTheFingerprint) {
  TrainConfig config = Valid();
  config.model = "fm";
  config.head = CtrHead::kDense;
  config.init = v1::Initializer::RANDOM_UNIFORM;
  config.init_limit = 0.125;
  config.split = SplitRule::kTail;
  const nlohmann::json json = ToJson(config);
  EXPECT_EQ(json.at("head"), "dense");
  EXPECT_EQ(json.at("init"), "uniform");
  EXPECT_EQ(json.at("split"), "tail");
  auto back = TrainConfigFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->head, CtrHead::kDense);
  EXPECT_EQ(back->init, v1::Initializer::RANDOM_UNIFORM);
  EXPECT_EQ(back->init_limit, 0.125);
  EXPECT_EQ(back->split, SplitRule::kTail);

  // A configuration without them (an earlier coordinator's) has the defaults.
  nlohmann::json older = ToJson(Valid());
  for (const char* key : {"head", "init", "init_limit", "split"}) older.erase(key);
  auto defaults = TrainConfigFromJson(older);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->head, CtrHead::kBias);
  EXPECT_EQ(defaults->init, v1::Initializer::RANDOM_NORMAL);
  EXPECT_EQ(defaults->split, SplitRule::kInterleaved);

  nlohmann::json wrong = json;
  wrong["head"] = "mlp";
  EXPECT_THAT(std::string(TrainConfigFromJson(wrong).status().message()),
              AllOf(HasSubstr("--head"), HasSubstr("bias, dense"), HasSubstr("mlp")));
  EXPECT_THAT(std::string(ParseInit("glorot").status().message()),
              HasSubstr("normal, truncated_normal, uniform"));

  // The head and the split change the model and the data; the init only the start. The defaults
  // leave the fingerprint as it was, so earlier runs' checkpoints still resume.
  EXPECT_EQ(Fingerprint(Valid()).count("head"), 0);
  EXPECT_EQ(Fingerprint(Valid()).count("split"), 0);
  TrainConfig textbook = config;
  textbook.head = CtrHead::kBias;
  EXPECT_NE(Fingerprint(textbook), Fingerprint(config));
  TrainConfig interleaved = config;
  interleaved.split = SplitRule::kInterleaved;
  EXPECT_NE(Fingerprint(interleaved), Fingerprint(config));
  TrainConfig normal = config;
  normal.init = v1::Initializer::RANDOM_NORMAL;
  EXPECT_EQ(Fingerprint(normal), Fingerprint(config));
}

TEST(StepScheduleTest, EveryEpochCoversEveryExampleOnceInANewOrder) {
  StepSchedule schedule(/*num_examples=*/103, /*batch_size=*/10, /*seed=*/7);
  ASSERT_EQ(schedule.batches_per_epoch(), 11);
  std::vector<int64_t> first_order, second_order;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> seen(103, 0);
    for (int64_t k = 0; k < 11; ++k) {
      const StepRange range = schedule.RangeOf(epoch * 11 + k);
      EXPECT_EQ(range.epoch, epoch);
      for (int64_t i = range.begin; i < range.end; ++i) ++seen[static_cast<size_t>(i)];
      if (epoch == 0) first_order.push_back(range.begin);
      if (epoch == 1) second_order.push_back(range.begin);
    }
    EXPECT_EQ(std::set<int>(seen.begin(), seen.end()), std::set<int>{1}) << "epoch " << epoch;
  }
  EXPECT_NE(first_order, second_order);

  // A step means the same range whatever was asked before: a restarted coordinator agrees.
  StepSchedule fresh(103, 10, 7);
  const StepRange late = fresh.RangeOf(25);
  StepSchedule replay(103, 10, 7);
  for (int64_t s = 0; s < 25; ++s) replay.RangeOf(s);
  EXPECT_EQ(replay.RangeOf(25).begin, late.begin);
}

TEST(TrainingDataTest, ARowOfTheWrongWidthNamesFileAndLine) {
  const std::string path = testing::WriteFile("bad.csv", "1,2,0\n3,4,1\n5,1\n");
  TrainConfig config;
  config.data = path;
  auto data = LoadTrainingData(config);
  EXPECT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(data.status().message()), AllOf(HasSubstr(path), HasSubstr(":3")));
}

TEST(TrainingDataTest, AnUnreadableFileIsNamed) {
  TrainConfig config;
  config.data = "/nonexistent/digits.csv";
  auto data = LoadTrainingData(config);
  EXPECT_FALSE(data.ok());
  EXPECT_THAT(std::string(data.status().message()), HasSubstr("/nonexistent/digits.csv"));
}

TEST(TrainingDataTest, ModelAndDataKindMustAgree) {
  TrainConfig sparse_for_softmax;
  sparse_for_softmax.data = testing::WriteFile("a.libsvm", "1 1:1 3:1\n0 2:1\n");
  auto refused = LoadTrainingData(sparse_for_softmax);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--model softmax needs dense"));

  TrainConfig split = Valid();
  split.synthetic_examples = 1000;
  split.test_percent = 20;
  auto data = LoadTrainingData(split);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train->num_examples(), 800);
  EXPECT_EQ(data->test->num_examples(), 200);
  EXPECT_EQ(data->BatchesPerEpoch(32), 25);

  // --split=tail holds out the last examples: the same held-out set as a program that trains on
  // the first 1,000 examples of the generator and evaluates on the next 250.
  TrainConfig tail = Valid();
  tail.synthetic_examples = 1250;
  tail.split = SplitRule::kTail;
  auto tail_data = LoadTrainingData(tail);
  ASSERT_TRUE(tail_data.ok()) << tail_data.status();
  EXPECT_EQ(tail_data->train->num_examples(), 1000);
  EXPECT_EQ(tail_data->test->num_examples(), 250);
  EXPECT_EQ(static_cast<const SplitDataset&>(*tail_data->test).SourceIndex(0), 1000);
}

}  // namespace
}  // namespace tj::train
