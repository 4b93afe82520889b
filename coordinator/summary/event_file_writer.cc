#include "coordinator/summary/event_file_writer.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/record_framing.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

// Enough attempts for every writer a restarting job could start within one second.
constexpr int kMaxNameAttempts = 1000;

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

double WallTimeNow() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(std::string log_dir,
                                                                         EventFileOptions options) {
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("creating event log directory ", log_dir, ": ", error.message()));
  }
  const double now = WallTimeNow();
  const std::string base =
      absl::StrFormat("%s/events.out.tfevents.%010d.%s%s", log_dir, static_cast<int64_t>(now),
                      HostName(), options.filename_suffix);
  std::string path = base;
  UniqueFd fd;
  for (int attempt = 1; attempt <= kMaxNameAttempts; ++attempt) {
    fd = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644));
    if (fd.valid() || errno != EEXIST) break;
    path = absl::StrCat(base, ".", attempt);
  }
  if (!fd.valid()) return ErrnoError(errno, "creating event file", path);

  auto writer = std::unique_ptr<EventFileWriter>(
      new EventFileWriter(std::move(path), std::move(fd), std::move(options)));
  tensorflow::Event version;
  version.set_wall_time(now);
  version.set_file_version(kEventFileVersion);
  // Written at once, so the file is a valid (empty) event log from the start.
  StdMutexLock lock(writer->mu_);
  TJ_RETURN_IF_ERROR(writer->AppendLocked(version));
  TJ_RETURN_IF_ERROR(writer->FlushLocked());
  return writer;
}

EventFileWriter::EventFileWriter(std::string path, UniqueFd fd, EventFileOptions options)
    : path_(std::move(path)),
      options_(std::move(options)),
      fd_(std::move(fd)),
      last_flush_(absl::Now()) {}

EventFileWriter::~EventFileWriter() {
  if (absl::Status status = Close(); !status.ok()) {
    spdlog::error("event file {}: {}", path_, std::string(status.message()));
  }
}

absl::Status EventFileWriter::AppendLocked(const tensorflow::Event& event) {
  if (!error_.ok()) return error_;
  if (!fd_.valid()) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed"));
  event.SerializeToString(&serialized_);
  AppendFramedRecord(serialized_, &buffer_);
  if (buffer_.size() >= options_.max_buffered_bytes ||
      absl::Now() - last_flush_ >= options_.flush_interval) {
    return FlushLocked();
  }
  return absl::OkStatus();
}

absl::Status EventFileWriter::FlushLocked() {
  if (!error_.ok()) return error_;
  last_flush_ = absl::Now();
  if (buffer_.empty()) return absl::OkStatus();
  absl::Status status = WriteAll(fd_.get(), buffer_, path_);
  buffer_.clear();
  if (!status.ok()) error_ = status;
  return status;
}

absl::Status EventFileWriter::WriteEvent(const tensorflow::Event& event) {
  StdMutexLock lock(mu_);
  return AppendLocked(event);
}

absl::Status EventFileWriter::WriteScalars(int64_t step, std::span<const Scalar> scalars) {
  tensorflow::Event event;
  event.set_wall_time(WallTimeNow());
  event.set_step(step);
  tensorflow::Summary* summary = event.mutable_summary();
  for (const Scalar& scalar : scalars) {
    tensorflow::Summary::Value* value = summary->add_value();
    value->set_tag(std::string(scalar.tag));
    value->set_simple_value(scalar.value);
  }
  return WriteEvent(event);
}

absl::Status EventFileWriter::Flush() {
  StdMutexLock lock(mu_);
  if (!fd_.valid()) return error_;
  return FlushLocked();
}

absl::Status EventFileWriter::Close() {
  StdMutexLock lock(mu_);
  if (!fd_.valid()) return error_;
  absl::Status status = FlushLocked();
  if (status.ok() && ::fsync(fd_.get()) != 0) status = ErrnoError(errno, "syncing", path_);
  absl::Status closed = fd_.Close(path_);
  if (status.ok()) status = closed;
  if (!status.ok() && error_.ok()) error_ = status;
  return status;
}

}  // namespace tj
