// tj-train's FM as real processes (2 PS, 2 workers, asynchronous) learns the synthetic click log:
// with the model and hyperparameters of bench/tf/ctr_compare.py (the TF program's Keras model:
// dense head, uniform rows, Adagrad 0.1), at a smaller size.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/trainer/train/train_cluster.h"

namespace tj::testing {
namespace {

TEST(CtrLearningTest, FmWithTheKerasModelsHeadLearnsTheSyntheticClickLog) {
  TrainCluster cluster(/*num_ps=*/2, /*num_workers=*/2);
  cluster.StartServers();
  // 800 steps of 256 over 40,000 training examples; 10,000 held out after them. The generator's
  // own click probabilities reach AUC ~0.92 on such a set (CtrConvergenceTest prints it); an FM
  // that learned nothing is at 0.5.
  cluster.StartChief({"--model=fm", "--data=synthetic-ctr", "--synthetic-examples=50000",
                      "--test-percent=20", "--split=tail", "--head=dense", "--init=uniform",
                      "--optimizer=adagrad", "--learning-rate=0.1", "--batch-size=256",
                      "--steps=800", "--eval-every-steps=400", "--min-auc=0.8"});
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  auto progress = cluster.Progress();
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->state, "succeeded");
  EXPECT_EQ(progress->step, 800);
  std::printf("FM, dense head: held-out AUC %.4f after 800 steps\n", progress->metrics.at("auc"));
  EXPECT_GE(progress->metrics.at("auc"), 0.8) << cluster.Log("chief");
}

}  // namespace
}  // namespace tj::testing
