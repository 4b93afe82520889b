// What tj-train's CTR kernel asks the PS for: the rows' initializer from --init, and the dense
// head's scale initialized as Keras initializes a Dense(1) kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/train/model_kernel.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;

TrainConfig Fm() {
  TrainConfig config;
  config.data = "synthetic-ctr";
  config.model = "fm";
  config.seed = 5;
  return config;
}

std::vector<std::string> Names(const std::vector<v1::VariableSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name());
  return names;
}

TEST(ModelKernelTest, FmRowsStartAsInitSays) {
  TrainConfig config = Fm();
  auto normal = MakeModelKernel(config, 1 << 10, 2);
  ASSERT_TRUE(normal.ok()) << normal.status();
  const v1::Initializer by_default = (*normal)->Tables().at(0).initializer();
  EXPECT_EQ(by_default.kind(), v1::Initializer::RANDOM_NORMAL);
  EXPECT_THAT(by_default.stddev(), FloatEq(0.01f));
  EXPECT_EQ(by_default.seed(), 5u);

  config.init = v1::Initializer::RANDOM_UNIFORM;
  const v1::Initializer uniform =
      (*MakeModelKernel(config, 1 << 10, 2))->Tables().at(0).initializer();
  EXPECT_EQ(uniform.kind(), v1::Initializer::RANDOM_UNIFORM);
  EXPECT_THAT(uniform.minval(), FloatEq(-0.05f));
  EXPECT_THAT(uniform.maxval(), FloatEq(0.05f));
}

TEST(ModelKernelTest, TheDenseHeadAddsAGlorotInitializedScale) {
  TrainConfig config = Fm();
  EXPECT_THAT(Names((*MakeModelKernel(config, 1 << 10, 2))->Variables()),
              ElementsAre("ctr/bias"));
  config.head = CtrHead::kDense;
  config.optimizer = "adagrad";
  const auto variables = (*MakeModelKernel(config, 1 << 10, 2))->Variables();
  ASSERT_THAT(Names(variables), ElementsAre("ctr/bias", "ctr/scale"));
  const v1::VariableSpec& scale = variables[1];
  EXPECT_THAT(scale.shape(), ElementsAre(1));
  // Glorot uniform for a 1x1 kernel: +-sqrt(6 / (1 + 1)).
  EXPECT_EQ(scale.initializer().kind(), v1::Initializer::RANDOM_UNIFORM);
  EXPECT_THAT(scale.initializer().maxval(), FloatEq(std::sqrt(3.0f)));
  EXPECT_THAT(scale.initializer().minval(), FloatEq(-std::sqrt(3.0f)));
  EXPECT_TRUE(scale.optimizer().has_adagrad()) << "the scale learns like every other parameter";
}

}  // namespace
}  // namespace tj::train
