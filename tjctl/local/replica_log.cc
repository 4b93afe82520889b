#include "tjctl/local/replica_log.h"

#include <deque>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tjctl/local/status_file.h"

namespace tj::local {

void AppendStartHeader(const std::string& path, absl::Time time, int start_number,
                       const std::string& command_line) {
  std::ofstream(path, std::ios::app) << "=== " << FormatRfc3339(time) << " start #" << start_number
                                     << ": " << command_line << "\n";
}

void AppendNote(const std::string& path, absl::Time time, const std::string& text) {
  std::ofstream(path, std::ios::app) << "=== " << FormatRfc3339(time) << " " << text << "\n";
}

std::vector<std::string> LastLines(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(std::move(line));
    if (lines.size() > n) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

}  // namespace tj::local
