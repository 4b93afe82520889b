// A watch response body from the API server, split into chunks at arbitrary boundaries (the first
// byte of the input picks the chunk size), decoded event by event with a small event cap.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "operator/kube/watch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t events = 0;
  tj::kube::WatchDecoder decoder("watch fuzz", /*max_event_bytes=*/4096,
                                 [&events](tj::kube::WatchEvent event, bool& stop) {
                                   ++events;
                                   (void)event.object.dump();
                                   stop = event.type == "STOP";
                                   return absl::OkStatus();
                                 });
  while (!body.empty()) {
    const std::string_view piece = body.substr(0, chunk);
    body.remove_prefix(piece.size());
    if (!decoder.Feed(piece).ok() || decoder.stopped()) return 0;
  }
  (void)decoder.Finish();
  return 0;
}
