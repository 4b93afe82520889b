// `promtool check metrics` (Debian's prometheus package) on an exposition: Prometheus' own verdict
// on what an endpoint serves. Exit code 127 means promtool is not installed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "tests/support/temp_dir.h"

namespace tj::testing {

// promtool's exit code and output for `text`.
inline std::pair<int, std::string> Promtool(const std::string& text) {
  TempDir dir;
  const std::string path = dir.Join("metrics.txt");
  std::ofstream(path) << text;
  FILE* pipe = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r");
  std::string output;
  char buffer[512];
  while (pipe != nullptr && fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pipe == nullptr ? -1 : pclose(pipe);
  return {status == -1 ? -1 : WEXITSTATUS(status), output};
}

// The body of an HTTP response (after the blank line ending its head).
inline std::string HttpBody(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

}  // namespace tj::testing
