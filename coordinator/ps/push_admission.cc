#include "coordinator/ps/push_admission.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/ps/memory_budget.h"

namespace tj {

PushAnnouncement ReadPushAnnouncement(const grpc::ServerContext& context,
                                      int64_t max_message_bytes) {
  const auto& metadata = context.client_metadata();
  const auto it =
      metadata.find(grpc::string_ref(kPushBytesHeader.data(), kPushBytesHeader.size()));
  if (it == metadata.end()) return ParsePushAnnouncement(std::nullopt, max_message_bytes);
  return ParsePushAnnouncement(std::string_view(it->second.data(), it->second.size()),
                               max_message_bytes);
}

grpc::Status ServeAdmittedPush(PushWindow& window, VariableStore& store, PsCounters& counters,
                               grpc::ServerContext& context, RawUnaryStream& stream,
                               const PushAdmissionOptions& options) {
  const PushAnnouncement announced = ReadPushAnnouncement(context, options.max_message_bytes);
  const std::string who = absl::StrCat("parameter server /job:ps/task:", options.ps_task);
  if (announced.kind == PushAnnouncement::Kind::kMalformed) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat(who, ": a push from ", context.peer(), " announced ",
                                     std::string(kPushBytesHeader), "='", announced.text,
                                     "', not a number of bytes from 0 to ",
                                     options.max_message_bytes, "; nothing was read or applied"));
  }
  if (announced.kind == PushAnnouncement::Kind::kAnnounced && options.largest_push_bytes >= 0 &&
      announced.bytes > options.largest_push_bytes) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat(who, ": a push of ", HumanBytes(announced.bytes), " from ", context.peer(),
                     " is larger than this PS receives at once (",
                     HumanBytes(options.largest_push_bytes),
                     ": TJ_PS_GRPC_MEMORY_BYTES less TJ_PS_PUSH_WINDOW_BYTES); push smaller "
                     "batches (ShardedPsOptions::max_rpc_bytes) or raise the PS's gRPC memory; "
                     "nothing was read or applied"));
  }
  // A push of unknown size is admitted alone: whatever its size, no other push is read beside it.
  const bool known = announced.kind == PushAnnouncement::Kind::kAnnounced;
  const int64_t admitted_bytes = known ? announced.bytes : std::max<int64_t>(0, window.capacity());
  // Answered before the caller's deadline, which would read as a lost PS.
  const absl::Time now = absl::Now();
  const absl::Time deadline =
      now + std::min(options.hold, (absl::FromChrono(context.deadline()) - now) / 2);
  std::optional<PushWindow::Ticket> admitted = window.Admit(admitted_bytes, deadline);
  if (!admitted.has_value()) {
    context.AddTrailingMetadata(std::string(kPushHeldBackTrailer), "1");
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat(who, ": a push of ",
                     known ? HumanBytes(announced.bytes) : std::string("unannounced size"),
                     " was held back: its push window (", HumanBytes(window.capacity()),
                     ", TJ_PS_PUSH_WINDOW_BYTES) stayed full; nothing was read or applied"));
  }
  PushBodyBound bound;
  bound.max_bytes = known ? announced.bytes : -1;
  bound.peer = context.peer();
  bound.who = who;
  return ServeRawPush(store, stream, counters, bound);
}

}  // namespace tj
