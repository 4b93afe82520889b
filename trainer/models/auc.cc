#include "trainer/models/auc.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tj::train {

absl::StatusOr<double> Auc(std::span<const float> scores, std::span<const int32_t> labels) {
  if (scores.size() != labels.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AUC over ", scores.size(), " scores and ", labels.size(), " labels"));
  }
  for (size_t i = 0; i < scores.size(); ++i) {
    // A NaN would break the sort's ordering; a diverged model should be reported, not ranked.
    if (std::isnan(scores[i])) {
      return absl::InvalidArgumentError(absl::StrCat("AUC: score ", i, " is NaN"));
    }
  }
  int64_t positives = 0;
  for (const int32_t y : labels) {
    if (y != 0 && y != 1) {
      return absl::InvalidArgumentError(absl::StrCat("AUC needs 0/1 labels, got ", y));
    }
    positives += y;
  }
  const auto n = static_cast<int64_t>(labels.size());
  const int64_t negatives = n - positives;
  if (positives == 0 || negatives == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "AUC is undefined with ", positives, " positive and ", negatives, " negative examples"));
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney U: the sum of the positives' 1-based ranks, each tie group at its mean rank.
  double positive_rank_sum = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    int64_t group_positives = 0;
    while (j < n && scores[order[j]] == scores[order[i]]) group_positives += labels[order[j++]];
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    positive_rank_sum += mean_rank * static_cast<double>(group_positives);
    i = j;
  }
  const auto p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1) / 2) / (p * static_cast<double>(negatives));
}

}  // namespace tj::train
