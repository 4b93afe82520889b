#include "operator/controller/reconcile_guard.h"

#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tj::op {
namespace {

std::string Thrown(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

}  // namespace

absl::StatusOr<nlohmann::json> RunWriteGuarded(
    const std::function<absl::StatusOr<nlohmann::json>()>& write, bool* threw) {
  *threw = false;
  try {
    return write();
  } catch (...) {
    *threw = true;
    return absl::InternalError(absl::StrCat("internal error while building or writing the object: ",
                                            Thrown(std::current_exception())));
  }
}

GuardedReconcile RunReconcileGuarded(const std::function<ReconcileResult()>& reconcile) {
  GuardedReconcile out;
  try {
    out.result = reconcile();
  } catch (...) {
    out.threw = true;
    out.result = {absl::InternalError(absl::StrCat("internal error while reconciling: ",
                                                   Thrown(std::current_exception()))),
                  std::nullopt};
  }
  return out;
}

std::string ReconcileErrorReason(const GuardedReconcile& guarded) {
  if (guarded.threw) return "exception";
  return absl::AsciiStrToLower(absl::StatusCodeToString(guarded.result.status.code()));
}

void CountReconcileError(MetricsRegistry* metrics, const std::string& reason) {
  if (metrics == nullptr) return;
  metrics->AddCounter("tj_operator_reconcile_errors_total",
                      "Reconciles (or the writes they handed over) that failed and were requeued "
                      "with backoff, by reason: \"exception\" when one threw, else the error's "
                      "status code in snake case",
                      1, {{"reason", reason}});
}

}  // namespace tj::op
