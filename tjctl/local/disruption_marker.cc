#include "tjctl/local/disruption_marker.h"

#include <filesystem>
#include <fstream>

#include "coordinator/base/strings.h"

namespace tj::local {

std::string DisruptionMarkerPath(const std::string& work_dir, const std::string& replica) {
  return work_dir + "/disruptions/" + replica;
}

absl::Status WriteDisruptionMarker(const std::string& work_dir, const std::string& replica,
                                   const std::string& reason) {
  std::error_code error;
  std::filesystem::create_directories(work_dir + "/disruptions", error);
  std::ofstream out(DisruptionMarkerPath(work_dir, replica));
  out << reason << "\n";
  if (!out) {
    return absl::UnavailableError(
        Cat("cannot write ", DisruptionMarkerPath(work_dir, replica), ": ",
            error ? error.message() : std::string("write failed")));
  }
  return absl::OkStatus();
}

bool ConsumeDisruptionMarker(const std::string& work_dir, const std::string& replica) {
  std::error_code error;
  return std::filesystem::remove(DisruptionMarkerPath(work_dir, replica), error);
}

}  // namespace tj::local
