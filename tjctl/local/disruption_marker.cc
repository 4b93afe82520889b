#include "tjctl/local/disruption_marker.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/base/strings.h"

namespace tj::local {

std::string DisruptionMarkerPath(const std::string& work_dir, const std::string& replica) {
  return work_dir + "/disruptions/" + replica;
}

absl::Status WriteDisruptionMarker(const std::string& work_dir, const std::string& replica,
                                   const std::string& reason, absl::Duration grace) {
  std::error_code error;
  std::filesystem::create_directories(work_dir + "/disruptions", error);
  std::ofstream out(DisruptionMarkerPath(work_dir, replica));
  out << reason << "\n" << absl::ToInt64Seconds(grace) << "\n";
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

bool HasDisruptionMarker(const std::string& work_dir, const std::string& replica,
                         absl::Time now) {
  const std::string path = DisruptionMarkerPath(work_dir, replica);
  std::error_code error;
  const auto written = std::filesystem::last_write_time(path, error);
  if (error) return false;  // no marker
  std::ifstream in(path);
  std::string reason;
  int64_t grace_seconds = 0;
  std::getline(in, reason);
  if (!(in >> grace_seconds) || grace_seconds < 0) grace_seconds = 0;  // an older marker: no grace
  const absl::Duration age_now = absl::FromChrono(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::file_clock::now() - written));
  const absl::Duration age = age_now + (now - absl::Now());
  return age <= absl::Seconds(grace_seconds) + kDisruptionMarkerSlack;
}

}  // namespace tj::local
