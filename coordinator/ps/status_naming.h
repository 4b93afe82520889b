// Prefixes an error with what was being done to which variable or table ("push to table 'emb': "),
// keeping its code: checks below the store report what is wrong, the caller adds whose it is.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tj {

inline absl::Status Naming(std::string_view what, std::string_view name,
                           const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(std::string(what), " '", std::string(name),
                                                  "': ", status.message()));
}

}  // namespace tj
