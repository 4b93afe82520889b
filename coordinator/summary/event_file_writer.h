// Writes TensorBoard event files (`events.out.tfevents.<unix seconds>.<hostname>`) that TensorBoard
// itself reads: TFRecord-framed tensorflow.Event records, the first naming the format
// ("brain.Event:2"), the rest carrying scalar summaries such as loss, accuracy and examples/s.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/checkpoint/posix_file.h"
#include "tensorboard/event.pb.h"

namespace tj {

inline constexpr char kEventFileVersion[] = "brain.Event:2";

struct EventFileOptions {
  // Events are buffered and written when this much time has passed since the last write (zero:
  // every event is written at once), when the buffer is full, or on Flush().
  absl::Duration flush_interval = absl::Seconds(2);
  size_t max_buffered_bytes = 256 << 10;
  // Appended to the file name, like TensorFlow's `filename_suffix`.
  std::string filename_suffix;
};

struct Scalar {
  std::string_view tag;
  float value = 0;
};

// Thread-safe. After a write error every call returns that error: a torn record would hide every
// later one from TensorBoard, so nothing more is appended.
class EventFileWriter {
 public:
  // Creates `log_dir` if needed and a new event file in it (never appending to an existing one: a
  // second writer in the same second gets a ".1", ".2", ... name), and writes the version record.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(std::string log_dir,
                                                                 EventFileOptions options = {});

  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;
  // Close(), logging an error it returns.
  ~EventFileWriter();

  const std::string& path() const { return path_; }

  // One Event at the current wall time holding every scalar, as tf.summary does per step.
  absl::Status WriteScalars(int64_t step, std::span<const Scalar> scalars);
  absl::Status WriteScalars(int64_t step, std::initializer_list<Scalar> scalars) {
    return WriteScalars(step, std::span<const Scalar>(scalars.begin(), scalars.size()));
  }
  absl::Status WriteScalar(std::string_view tag, int64_t step, float value) {
    return WriteScalars(step, {Scalar{tag, value}});
  }
  // Any Event, as given (the caller sets wall_time).
  absl::Status WriteEvent(const tensorflow::Event& event);

  // Hands buffered events to the kernel, where readers see them.
  absl::Status Flush();
  // Flush, fsync, close. Later writes fail.
  absl::Status Close();

 private:
  EventFileWriter(std::string path, UniqueFd fd, EventFileOptions options);
  absl::Status AppendLocked(const tensorflow::Event& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const EventFileOptions options_;
  StdMutex mu_;
  UniqueFd fd_ ABSL_GUARDED_BY(mu_);
  std::string buffer_ ABSL_GUARDED_BY(mu_);      // framed records not yet written
  std::string serialized_ ABSL_GUARDED_BY(mu_);  // reused for each event
  absl::Time last_flush_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// The seconds since the Unix epoch that Event.wall_time holds.
double WallTimeNow();

}  // namespace tj
