#include "tjctl/local/executable_lookup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tjctl/local/binaries.h"

namespace tj::local {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

absl::StatusOr<std::string> ResolveExecutable(const std::string& command) {
  if (command.empty()) return absl::InvalidArgumentError("the command is empty");
  if (command.find('/') != std::string::npos) {
    std::error_code ec;
    const std::string path = std::filesystem::absolute(command, ec).lexically_normal().string();
    if (ec || !IsExecutableFile(path)) {
      return absl::NotFoundError(absl::StrCat("\"", command, "\" is not an executable file"));
    }
    return path;
  }
  if (auto found = FindBinary(command); found.ok()) return found;
  const char* path_env = std::getenv("PATH");
  const std::string path_list = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  for (absl::string_view dir : absl::StrSplit(path_list, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", command);
    if (IsExecutableFile(candidate)) {
      std::error_code ec;
      return std::filesystem::absolute(candidate, ec).lexically_normal().string();
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "executable \"", command,
      "\" not found in $TJ_BIN_DIR, next to tjctl or on $PATH (build the project, set TJ_BIN_DIR, "
      "or give an absolute path)"));
}

}  // namespace tj::local
