#include "coordinator/cluster/schedule_args.h"

#include "absl/strings/str_cat.h"

namespace tj {

absl::StatusOr<std::string> SerializeArgs(std::string_view function,
                                          const std::vector<ScheduleArg>& args) {
  v1::ValueList list;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i].get();
    if (const auto* value = std::get_if<v1::Value>(&arg)) {
      if (value->kind_case() == v1::Value::kResource) {
        return absl::InvalidArgumentError(absl::StrCat(
            "argument ", i, " of Schedule(\"", std::string(function),
            "\") is a raw resource reference; pass the PerWorkerValues that "
            "CreatePerWorkerResource returned"));
      }
      *list.add_values() = *value;
    } else if (const auto* per_worker = std::get_if<PerWorkerValues>(&arg)) {
      list.add_values()->mutable_resource()->set_resource_id(per_worker->resource_id());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", i, " of Schedule(\"", std::string(function),
          "\") is a RemoteValue; a RemoteValue cannot be the input of another scheduled function. "
          "Fetch() it and pass the value"));
    }
  }
  std::string out;
  list.SerializeToString(&out);
  return out;
}

}  // namespace tj
