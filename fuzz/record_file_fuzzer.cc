// A checkpoint shard file (length-delimited, CRC-checked records) as a restoring PS reads it. The
// bytes are written to a file, as the reader reads files.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "coordinator/checkpoint/record_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tj-record-fuzz-" + std::to_string(::getpid());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto reader = tj::RecordFileReader::Open(path);
  if (!reader.ok()) __builtin_trap();  // the file was just written
  std::string record;
  uint64_t bytes = 0;
  while (true) {
    absl::StatusOr<bool> next = (*reader)->Next(&record);
    if (!next.ok() || !*next) break;
    bytes += record.size();
    if (bytes > size) __builtin_trap();  // records cannot hold more than the file
  }
  return 0;
}
