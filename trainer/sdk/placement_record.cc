#include "trainer/sdk/placement_record.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj::sdk {

nlohmann::json PlacementRecord(const PsPlacement& placement) {
  std::map<std::string, nlohmann::json> by_name;
  for (const VariablePlacement& v : placement.variables()) {
    nlohmann::json slices = nlohmann::json::array();
    for (const VariableSlice& s : v.slices) slices.push_back({s.ps_task, s.row_begin, s.row_end});
    by_name[v.name] = {{"name", v.name}, {"shape", v.spec.shape}, {"slices", std::move(slices)}};
  }
  nlohmann::json variables = nlohmann::json::array();
  for (auto& [name, v] : by_name) variables.push_back(std::move(v));
  return {{"num_ps", placement.num_ps()},
          {"partitioner", placement.options().partitioner.ToString()},
          {"max_slice_bytes", placement.options().max_slice_bytes},
          {"variables", std::move(variables)}};
}

absl::Status CheckPlacementRecord(const nlohmann::json& recorded, const nlohmann::json& current,
                                  const std::string& checkpoint_dir) {
  if (recorded.is_null() || recorded == current) return absl::OkStatus();
  auto refuse = [&](const std::string& what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", checkpoint_dir,
        " was written with another placement of the dense "
        "variables over the PS tasks (",
        what, "; recorded partitioner ", recorded.value("partitioner", std::string("?")),
        ", max slice ", recorded.value("max_slice_bytes", int64_t{0}), " bytes, ",
        recorded.value("num_ps", 0), " PS; now ", current.value("partitioner", std::string("?")),
        ", ", current.value("max_slice_bytes", int64_t{0}), " bytes, ", current.value("num_ps", 0),
        " PS). Restore it with the same --partitioner, "
        "--max-slice-bytes and PS replicas, or use a new checkpoint directory"));
  };
  if (!recorded.is_object() || !recorded.contains("variables") ||
      !recorded["variables"].is_array()) {
    return refuse("its placement record is malformed");
  }
  if (recorded.value("num_ps", 0) != current.value("num_ps", 0)) {
    return refuse("another number of PS tasks");
  }
  std::map<std::string, nlohmann::json> was, now;
  for (const auto& v : recorded["variables"]) was[v.value("name", std::string())] = v;
  for (const auto& v : current["variables"]) now[v.value("name", std::string())] = v;
  for (const auto& [name, v] : now) {
    auto it = was.find(name);
    if (it == was.end()) return refuse(absl::StrCat("variable '", name, "' is not in it"));
    if (it->second.value("shape", nlohmann::json()) != v["shape"]) {
      return refuse(absl::StrCat("variable '", name, "' had shape ",
                                 it->second.value("shape", nlohmann::json()).dump(), ", now ",
                                 v["shape"].dump()));
    }
    if (it->second.value("slices", nlohmann::json()) != v["slices"]) {
      return refuse(absl::StrCat(
          "variable '", name, "' was in ", it->second.value("slices", nlohmann::json()).size(),
          " slices [task, first row, end row] ",
          it->second.value("slices", nlohmann::json()).dump().substr(0, 200), ", now in ",
          v["slices"].size(), " ", v["slices"].dump().substr(0, 200)));
    }
  }
  for (const auto& [name, v] : was) {
    if (!now.contains(name))
      return refuse(absl::StrCat("it has variable '", name, "', not used now"));
  }
  // The same slices under other options (another partitioner that happens to cut the same way):
  // the shard files hold what this run looks for.
  return absl::OkStatus();
}

std::string DescribePlacement(const PsPlacement& placement) {
  std::vector<std::string> parts;
  for (const VariablePlacement& v : placement.variables()) {
    if (parts.size() == 4) {
      parts.push_back("...");
      break;
    }
    std::set<int> tasks;
    for (const VariableSlice& s : v.slices) tasks.insert(s.ps_task);
    parts.push_back(absl::StrCat(v.name, " ", v.spec.ToString(), ": ", v.num_shards, " shard(s), ",
                                 v.slices.size(), " slice(s) on ", tasks.size(), " task(s)"));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace tj::sdk
