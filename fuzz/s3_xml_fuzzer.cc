// An S3 endpoint's XML response body (it may be hostile), given to every parser of
// coordinator/checkpoint/s3_xml.h: error bodies, InitiateMultipartUpload and ListObjectsV2 pages.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "coordinator/checkpoint/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)tj::ParseS3Error(body);
  (void)tj::ParseInitiateMultipartUpload(body);
  absl::StatusOr<tj::S3ListPage> page = tj::ParseListObjectsV2(body);
  // What the parser promises the object store: every entry has a key, a truncated page a token.
  if (page.ok()) {
    for (const tj::ObjectInfo& object : page->objects) {
      if (object.key.empty()) __builtin_trap();
    }
    if (page->truncated && page->next_continuation_token.empty()) __builtin_trap();
  }
  return 0;
}
