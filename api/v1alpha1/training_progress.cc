#include "api/v1alpha1/training_progress.h"

#include "absl/strings/str_cat.h"

namespace tj::v1alpha1 {

nlohmann::json ToJson(const TrainingProgress& progress) {
  nlohmann::json json = {
      {"state", progress.state},
      {"step", progress.step},
      {"totalSteps", progress.total_steps},
      {"epoch", progress.epoch},
      {"metrics", progress.metrics},
      {"message", progress.message},
      {"updated", progress.updated},
  };
  if (!progress.events.empty()) json["events"] = progress.events;
  if (progress.loss) json["loss"] = *progress.loss;
  if (progress.examples_per_second) json["examplesPerSecond"] = *progress.examples_per_second;
  if (progress.last_checkpoint_step) json["lastCheckpointStep"] = *progress.last_checkpoint_step;
  if (progress.restored_from_step) json["restoredFromStep"] = *progress.restored_from_step;
  if (!progress.checkpoint_error.empty()) json["checkpointError"] = progress.checkpoint_error;
  if (progress.goodput) json["goodput"] = ToJson(*progress.goodput);
  return json;
}

namespace {

absl::Status WrongType(const char* field, const char* expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("training progress: field '", field, "' must be ", expected));
}

}  // namespace

absl::StatusOr<TrainingProgress> TrainingProgressFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return absl::InvalidArgumentError("training progress: not a JSON object");
  }
  TrainingProgress out;
  auto read_int = [&](const char* field, int64_t& into, bool required) -> absl::Status {
    auto it = json.find(field);
    if (it == json.end()) {
      return required ? absl::InvalidArgumentError(absl::StrCat(
                            "training progress: field '", field, "' is missing"))
                      : absl::OkStatus();
    }
    if (!it->is_number_integer()) return WrongType(field, "an integer");
    into = it->get<int64_t>();
    return absl::OkStatus();
  };
  auto read_string = [&](const char* field, std::string& into) -> absl::Status {
    auto it = json.find(field);
    if (it == json.end()) return absl::OkStatus();
    if (!it->is_string()) return WrongType(field, "a string");
    into = it->get<std::string>();
    return absl::OkStatus();
  };
  auto read_optional_double = [&](const char* field,
                                  std::optional<double>& into) -> absl::Status {
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) return absl::OkStatus();
    if (!it->is_number()) return WrongType(field, "a number");
    into = it->get<double>();
    return absl::OkStatus();
  };
  auto read_optional_int = [&](const char* field,
                               std::optional<int64_t>& into) -> absl::Status {
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) return absl::OkStatus();
    if (!it->is_number_integer()) return WrongType(field, "an integer");
    into = it->get<int64_t>();
    return absl::OkStatus();
  };
  for (absl::Status status : {
           read_string("state", out.state),
           read_int("step", out.step, /*required=*/true),
           read_int("totalSteps", out.total_steps, false),
           read_int("epoch", out.epoch, false),
           read_optional_double("loss", out.loss),
           read_optional_double("examplesPerSecond", out.examples_per_second),
           read_optional_int("lastCheckpointStep", out.last_checkpoint_step),
           read_optional_int("restoredFromStep", out.restored_from_step),
           read_string("message", out.message),
           read_string("updated", out.updated),
           read_string("checkpointError", out.checkpoint_error),
       }) {
    if (!status.ok()) return status;
  }
  if (auto it = json.find("events"); it != json.end()) {
    if (!it->is_array()) return WrongType("events", "an array of strings");
    for (const auto& event : *it) {
      if (!event.is_string()) return WrongType("events", "an array of strings");
      out.events.push_back(event.get<std::string>());
    }
  }
  if (auto it = json.find("goodput"); it != json.end() && !it->is_null()) {
    auto goodput = RunGoodputFromJson(*it, "training progress: goodput");
    if (!goodput.ok()) return goodput.status();
    out.goodput = *std::move(goodput);
  }
  if (auto it = json.find("metrics"); it != json.end()) {
    if (!it->is_object()) return WrongType("metrics", "an object of numbers");
    for (const auto& [name, value] : it->items()) {
      if (!value.is_number()) return WrongType("metrics", "an object of numbers");
      out.metrics[name] = value.get<double>();
    }
  }
  return out;
}

}  // namespace tj::v1alpha1
