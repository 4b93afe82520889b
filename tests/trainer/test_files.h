// Helpers for the trainer tests: write plain or gzip files under the test's temp directory, and
// find the digits data set that Debian's python3-sklearn ships.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace tj::train::testing {

// A directory per process (ctest runs test cases in parallel processes, next to other suites),
// removed when the process exits.
inline const std::filesystem::path& TestDir() {
  struct Dir {
    Dir()
        : path(std::filesystem::path(::testing::TempDir()) /
               ("tj_trainer_test_" + std::to_string(::getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    std::filesystem::path path;
  };
  static const Dir dir;
  return dir.path;
}

inline std::string TempPath(std::string_view name) {
  return (TestDir() / std::string(name)).string();
}

inline std::string WriteFile(std::string_view name, std::string_view content) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

inline std::string WriteGzip(std::string_view name, std::string_view content) {
  const std::string path = TempPath(name);
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, content.data(), static_cast<unsigned>(content.size()));
  gzclose(file);
  return path;
}

// $TJ_DIGITS_CSV, else where python3-sklearn installs it. Empty if the file is absent.
inline std::string DigitsCsvPath() {
  const char* env = std::getenv("TJ_DIGITS_CSV");
  const std::string path =
      env != nullptr ? env : "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  return std::filesystem::exists(path) ? path : "";
}

}  // namespace tj::train::testing
