#include "tjctl/local/binaries.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace tj::local {

absl::StatusOr<std::string> FindBinary(const std::string& name) {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("TJ_BIN_DIR"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(self.parent_path());
  for (const auto& dir : dirs) {
    const auto candidate = dir / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  std::string searched;
  for (const auto& dir : dirs) absl::StrAppend(&searched, searched.empty() ? "" : ", ", dir.string());
  return absl::NotFoundError(absl::StrCat("cannot find the '", name, "' binary (searched: ", searched,
                                          "); build the project or set TJ_BIN_DIR"));
}

}  // namespace tj::local
