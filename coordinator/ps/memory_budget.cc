#include "coordinator/ps/memory_budget.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tj {
namespace {

// The first line of `path`, trimmed; empty when unreadable.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

// A byte count, or -1 for "max", an absurd value (cgroup v1 says "no limit" with ~2^63) or junk.
int64_t ReadLimitFile(const std::string& path) {
  const std::string text = FirstLine(path);
  int64_t value = 0;
  if (text.empty() || text == "max" || !absl::SimpleAtoi(text, &value) || value <= 0 ||
      value >= (int64_t{1} << 60)) {
    return -1;
  }
  return value;
}

// A "<Key>: <n> kB" line of /proc/meminfo or /proc/self/status, in bytes; -1 when absent.
int64_t ReadKbField(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest(line);
    if (!absl::ConsumePrefix(&rest, absl::string_view(key.data(), key.size())) ||
        !absl::ConsumePrefix(&rest, ":")) {
      continue;
    }
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    int64_t kb = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kb)) return kb * 1024;
  }
  return -1;
}

// This process's cgroup path for `controller` ("" is the v2 unified line "0::<path>").
std::string CgroupPath(const std::string& root, std::string_view controller) {
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (controller.empty() ? parts[0] == "0" && parts[1].empty()
                           : absl::StrContains(parts[1], absl::string_view(controller.data(),
                                                                           controller.size()))) {
      return parts[2] == "/" ? "" : parts[2];
    }
  }
  return "";
}

}  // namespace

MemoryBudget ReadMemoryBudget(const std::string& root) {
  MemoryBudget budget;
  const int64_t mem_available = ReadKbField(root + "/proc/meminfo", "MemAvailable");
  if (const char* env = std::getenv("TJ_PS_MEMORY_LIMIT_BYTES"); env != nullptr && root.empty()) {
    int64_t limit = 0;
    if (absl::SimpleAtoi(env, &limit) && limit > 0) {
      const int64_t rss = std::max<int64_t>(0, ReadKbField("/proc/self/status", "VmRSS"));
      budget.limit_bytes = limit;
      budget.available_bytes = std::max<int64_t>(0, limit - rss);
      if (mem_available >= 0)
        budget.available_bytes = std::min(budget.available_bytes, mem_available);
      budget.source = "TJ_PS_MEMORY_LIMIT_BYTES";
      return budget;
    }
  }
  // cgroup v2: the process's own group, then the namespace root (a container sees its group as /).
  const std::string v2 = CgroupPath(root, "");
  for (const std::string& dir : {root + "/sys/fs/cgroup" + v2, root + "/sys/fs/cgroup"}) {
    const int64_t limit = ReadLimitFile(dir + "/memory.max");
    if (limit < 0) continue;
    const int64_t current = std::max<int64_t>(0, ReadLimitFile(dir + "/memory.current"));
    budget.limit_bytes = limit;
    budget.available_bytes = std::max<int64_t>(0, limit - current);
    budget.source = absl::StrCat("cgroup memory.max ", HumanBytes(limit));
    break;
  }
  if (budget.limit_bytes == 0) {
    const std::string v1 = CgroupPath(root, "memory");
    for (const std::string& dir :
         {root + "/sys/fs/cgroup/memory" + v1, root + "/sys/fs/cgroup/memory"}) {
      const int64_t limit = ReadLimitFile(dir + "/memory.limit_in_bytes");
      if (limit < 0) continue;
      const int64_t usage = std::max<int64_t>(0, ReadLimitFile(dir + "/memory.usage_in_bytes"));
      budget.limit_bytes = limit;
      budget.available_bytes = std::max<int64_t>(0, limit - usage);
      budget.source = absl::StrCat("cgroup memory.limit_in_bytes ", HumanBytes(limit));
      break;
    }
  }
  if (budget.limit_bytes == 0) {
    budget.limit_bytes = std::max<int64_t>(0, ReadKbField(root + "/proc/meminfo", "MemTotal"));
    budget.available_bytes = std::max<int64_t>(0, mem_available);
    budget.source = absl::StrCat("MemAvailable ", HumanBytes(budget.available_bytes));
    return budget;
  }
  if (mem_available >= 0) budget.available_bytes = std::min(budget.available_bytes, mem_available);
  return budget;
}

std::string HumanBytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace tj
