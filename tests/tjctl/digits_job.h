// The digits job the `tjctl run` process tests run with tj-train (20 epochs of 45 steps, slowed
// down so faults land mid-run, a checkpoint every 100 steps), and the JSON files they read back.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tj::testing {

inline constexpr char kDigitsData[] =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
inline constexpr int64_t kDigitsSteps = 900;

// The manifest; every replica runs `tj_train` with `container_fields` after its command (", env:
// [...]" or "").
inline std::string DigitsJobYaml(const std::string& tj_train, const std::string& container_fields) {
  const std::string container =
      absl::StrCat("containers: [{name: trainer, command: [", tj_train, "]", container_fields);
  return absl::StrCat("apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\n",
                      "metadata: {name: digits}\nspec:\n  replicaSpecs:\n",
                      "    Coordinator:\n      template: {spec: {", container,
                      ", args: [--model=softmax, --data=", kDigitsData,
                      ", --epochs=20, --step-sleep-ms=10, --log-every-steps=5]}]}}\n",
                      "    PS:\n      template: {spec: {", container, "}]}}\n",
                      "    Worker:\n      replicas: 2\n      template: {spec: {", container,
                      "}]}}\n", "  checkpoint: {dir: /unused, intervalSteps: 100}\n");
}

// A JSON file tjctl writes (status.json, progress.json); an empty object while it is missing or
// being replaced.
inline nlohmann::json ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  return json.is_object() ? json : nlohmann::json::object();
}

}  // namespace tj::testing
