// Writes a small, known event log into the directory given as argv[1], for
// read_with_tensorboard.py to check with TensorBoard's own reader.
#include <cstdio>

#include "coordinator/summary/event_file_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LOG_DIR\n", argv[0]);
    return 2;
  }
  auto writer = tj::EventFileWriter::Create(argv[1]);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    return 1;
  }
  absl::Status status = (*writer)->WriteScalar("loss", 1, 2.5f);
  if (status.ok()) {
    status = (*writer)->WriteScalars(2, {{"loss", 1.25f}, {"accuracy", 0.5f}});
  }
  if (status.ok()) {
    status = (*writer)->WriteScalars(
        3, {{"loss", 0.625f}, {"accuracy", 0.75f}, {"examples_per_sec", 1000.0f}});
  }
  if (status.ok()) status = (*writer)->Close();
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
