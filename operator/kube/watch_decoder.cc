#include "operator/kube/watch_decoder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/json_depth.h"

namespace tj::kube {

WatchDecoder::WatchDecoder(std::string endpoint, std::size_t max_event_bytes, EventSink on_event)
    : endpoint_(std::move(endpoint)),
      max_event_bytes_(max_event_bytes),
      on_event_(std::move(on_event)) {}

absl::Status WatchDecoder::Feed(std::string_view chunk) {
  while (!chunk.empty() && !stopped_) {
    const std::size_t nl = chunk.find('\n');
    const std::string_view part = chunk.substr(0, nl);
    if (pending_.size() + part.size() > max_event_bytes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat(endpoint_, ": one watch event exceeds the cap of ", max_event_bytes_,
                       " bytes (WatchOptions.max_event_bytes)"));
    }
    if (nl == std::string_view::npos) {
      pending_.append(part);
      return absl::OkStatus();
    }
    chunk.remove_prefix(nl + 1);
    absl::Status status;
    if (pending_.empty()) {
      status = DecodeLine(part);  // the common case: no copy
    } else {
      // Decoded in place and cleared, not moved out: pending_ keeps its capacity, so an event split
      // across chunks costs no allocation once the buffer has grown to the usual event size.
      pending_.append(part);
      status = DecodeLine(pending_);
      pending_.clear();
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status WatchDecoder::Finish() const {
  for (char c : pending_) {
    if (c != ' ' && c != '\r' && c != '\t') {
      return absl::DataLossError(absl::StrCat(endpoint_,
                                              ": stream ended in the middle of an event (",
                                              pending_.size(), " bytes without a newline)"));
    }
  }
  return absl::OkStatus();
}

absl::Status WatchDecoder::DecodeLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return absl::OkStatus();
  if (JsonTextNestsDeeperThan(line, kMaxWatchEventDepth)) {
    return absl::DataLossError(absl::StrCat(endpoint_, ": watch event nested deeper than ",
                                            kMaxWatchEventDepth, " levels"));
  }
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("type") ||
      !parsed["type"].is_string() || !parsed.contains("object")) {
    return absl::DataLossError(
        absl::StrCat(endpoint_, ": malformed watch event (not {\"type\",\"object\"} JSON): ",
                     std::string(line.substr(0, 200))));
  }
  WatchEvent event;
  event.type = parsed["type"].get<std::string>();
  event.object = std::move(parsed["object"]);
  ++events_;
  return on_event_(std::move(event), stopped_);
}

}  // namespace tj::kube
