// Splits a watch response body, delivered in chunks at arbitrary boundaries, into one JSON event
// per line and decodes each. Kept apart from the transport so framing is tested byte by byte.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "operator/kube/watch_event.h"

namespace tj::kube {

// The API server refuses JSON nested deeper than this, so no real object is; the operator walks
// and serializes objects recursively, so a deeper event is refused rather than overflow a stack.
inline constexpr int kMaxWatchEventDepth = 10000;

class WatchDecoder {
 public:
  // `endpoint` names the watch in errors (e.g. "watch configmaps in namespace \"default\"").
  // `on_event` returns an error to end the stream (an ERROR event), or sets `stop` to end it
  // cleanly.
  using EventSink = std::function<absl::Status(WatchEvent event, bool& stop)>;

  WatchDecoder(std::string endpoint, std::size_t max_event_bytes, EventSink on_event);

  // Decodes every complete line in `chunk`. Errors: DataLoss for a malformed line,
  // ResourceExhausted for an event over the cap, or the sink's error. `stopped()` after a true.
  absl::Status Feed(std::string_view chunk);

  // End of stream: DataLoss if a partial event is pending (the stream was truncated).
  absl::Status Finish() const;

  bool stopped() const { return stopped_; }
  std::size_t events() const { return events_; }

 private:
  absl::Status DecodeLine(std::string_view line);

  std::string endpoint_;
  std::size_t max_event_bytes_;
  EventSink on_event_;
  std::string pending_;  // bytes of an event not yet terminated by '\n'
  bool stopped_ = false;
  std::size_t events_ = 0;
};

}  // namespace tj::kube
