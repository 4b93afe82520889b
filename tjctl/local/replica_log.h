// A replica's log file (<work-dir>/logs/<replica>.log): stdout and stderr of every start of the
// replica, appended, each start announced by a header line that tjctl writes.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace tj::local {

// Appends "=== 2024-05-01T12:00:00Z start #2: <command line>".
void AppendStartHeader(const std::string& path, absl::Time time, int start_number,
                       const std::string& command_line);
// Appends one line written by tjctl itself ("=== ...: <text>").
void AppendNote(const std::string& path, absl::Time time, const std::string& text);
// The last `n` lines of the file (fewer if it is shorter; none if it cannot be read).
std::vector<std::string> LastLines(const std::string& path, size_t n);

}  // namespace tj::local
