// Early-return helpers for absl::Status / absl::StatusOr. Debian's Abseil ships without
// RETURN_IF_ERROR / ASSIGN_OR_RETURN, so the project defines them once, here.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TJ_STATUS_CONCAT_INNER(a, b) a##b
#define TJ_STATUS_CONCAT(a, b) TJ_STATUS_CONCAT_INNER(a, b)

#define TJ_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    ::absl::Status tj_status_ = (expr);                \
    if (!tj_status_.ok()) return tj_status_;           \
  } while (false)

#define TJ_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(*tmp)

#define TJ_ASSIGN_OR_RETURN(lhs, expr) \
  TJ_ASSIGN_OR_RETURN_IMPL(TJ_STATUS_CONCAT(tj_statusor_, __LINE__), lhs, expr)
