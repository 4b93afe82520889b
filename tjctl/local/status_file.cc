#include "tjctl/local/status_file.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace tj::local {

std::string FormatRfc3339(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

nlohmann::json ToJson(const RunStatus& status) {
  auto optional_int = [](const auto& v) -> nlohmann::json {
    return v.has_value() ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json replicas = nlohmann::json::object();
  for (const ReplicaRunStatus& r : status.replicas) {
    nlohmann::json& replica = replicas[r.name];
    replica = {
        {"type", r.type},
        {"index", r.index},
        {"address", r.address},
        {"state", r.state},
        {"starts", r.starts},
        {"lastExitCode", optional_int(r.last_exit_code)},
        {"lastSignal", optional_int(r.last_signal)},
        {"pid", optional_int(r.pid)},
        {"log", r.log},
    };
    if (!r.coordination_address.empty()) replica["coordinationAddress"] = r.coordination_address;
  }
  return {
      {"job", status.job},
      {"phase", status.phase},
      {"reason", status.reason},
      {"message", status.message},
      {"restartCount", status.restart_count},
      {"startTime", FormatRfc3339(status.start_time)},
      {"completionTime", status.completion_time ? nlohmann::json(FormatRfc3339(*status.completion_time))
                                                : nlohmann::json(nullptr)},
      {"workDir", status.work_dir},
      {"checkpointDir", status.checkpoint_dir.empty() ? nlohmann::json(nullptr)
                                                      : nlohmann::json(status.checkpoint_dir)},
      {"progress", status.progress ? v1alpha1::ToJson(*status.progress) : nlohmann::json(nullptr)},
      {"replicas", std::move(replicas)},
  };
}

}  // namespace tj::local
