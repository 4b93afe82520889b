#include "tjctl/local/progress_file.h"

#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"

namespace tj::local {

std::optional<v1alpha1::TrainingProgress> ReadProgressFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::nullopt;
  auto progress = v1alpha1::TrainingProgressFromJson(json);
  if (!progress.ok()) return std::nullopt;
  return *std::move(progress);
}

}  // namespace tj::local
