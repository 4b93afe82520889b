#include "trainer/train/training_data.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string_view>

#include "absl/strings/match.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "trainer/data/csv_reader.h"
#include "trainer/data/libsvm_reader.h"
#include "trainer/data/split.h"
#include "trainer/data/synthetic_ctr.h"

namespace tj::train {
namespace {

std::string FormatOf(const TrainConfig& config) {
  if (config.data_format != "auto") return config.data_format;
  std::string_view path = config.data;
  if (absl::EndsWith(AbslView(path), ".gz")) path.remove_suffix(3);
  if (absl::EndsWith(AbslView(path), ".csv")) return "csv";
  return "libsvm";
}

absl::StatusOr<std::shared_ptr<const Dataset>> LoadSource(const TrainConfig& config) {
  if (config.data == "synthetic-ctr") {
    SyntheticCtrOptions options;
    options.seed = config.seed;
    options.num_examples = config.synthetic_examples;
    options.num_fields = config.synthetic_fields;
    options.vocab_per_field = config.synthetic_vocab;
    options.id_space = config.id_space;
    TJ_ASSIGN_OR_RETURN(auto dataset, SyntheticCtrDataset::Create(options));
    return std::shared_ptr<const Dataset>(std::move(dataset));
  }
  if (FormatOf(config) == "csv") {
    CsvOptions options;
    options.label_column = config.label_column;
    options.num_classes = config.num_classes;
    TJ_ASSIGN_OR_RETURN(auto dataset, ReadCsv(config.data, options));
    return std::shared_ptr<const Dataset>(std::move(dataset));
  }
  LibsvmOptions options;
  options.num_features = config.num_features;
  options.num_classes = config.num_classes == 0 ? 2 : config.num_classes;
  TJ_ASSIGN_OR_RETURN(auto dataset, ReadLibsvm(config.data, options));
  return std::shared_ptr<const Dataset>(std::move(dataset));
}

}  // namespace

int64_t TrainingData::BatchesPerEpoch(int64_t batch_size) const {
  return (train->num_examples() + batch_size - 1) / batch_size;
}

absl::StatusOr<TrainingData> LoadTrainingData(const TrainConfig& config) {
  TJ_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> source, LoadSource(config));
  if (config.model == "softmax" && source->kind() != BatchKind::kDense) {
    return absl::InvalidArgumentError(Cat("--model softmax needs dense data; ", config.data,
                                          " is sparse (LibSVM): use --model lr or fm"));
  }
  if (config.model != "softmax" &&
      (source->kind() != BatchKind::kSparse || source->num_classes() != 2)) {
    return absl::InvalidArgumentError(Cat("--model ", config.model,
                                          " needs sparse binary data (LibSVM or synthetic-ctr); ",
                                          config.data, " is not"));
  }
  TJ_ASSIGN_OR_RETURN(TrainTestSplit split, SplitTrainTest(source, config.test_percent, config.split));
  return TrainingData{std::shared_ptr<const Dataset>(std::move(split.train)),
                      std::shared_ptr<const Dataset>(std::move(split.test))};
}

StepSchedule::StepSchedule(int64_t num_examples, int64_t batch_size, uint64_t seed)
    : num_examples_(num_examples),
      batch_size_(batch_size),
      seed_(seed),
      batches_per_epoch_((num_examples + batch_size - 1) / batch_size) {}

StepRange StepSchedule::RangeOf(int64_t step) {
  const int64_t epoch = step / batches_per_epoch_;
  if (epoch != cached_epoch_) {
    order_.resize(static_cast<size_t>(batches_per_epoch_));
    std::iota(order_.begin(), order_.end(), 0);
    // std::mt19937_64 and a hand-written Fisher-Yates: std::shuffle's algorithm is unspecified,
    // and the order must not change with the standard library.
    std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
    for (size_t i = order_.size(); i > 1; --i) {
      std::swap(order_[i - 1], order_[rng() % i]);
    }
    cached_epoch_ = epoch;
  }
  const int64_t batch = order_[static_cast<size_t>(step % batches_per_epoch_)];
  const int64_t begin = batch * batch_size_;
  return StepRange{epoch, begin, std::min(begin + batch_size_, num_examples_)};
}

}  // namespace tj::train
