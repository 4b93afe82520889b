#include "coordinator/summary/event_file_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/checkpoint/crc32c.h"
#include "coordinator/checkpoint/record_file.h"
#include "coordinator/checkpoint/record_framing.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

// Every event in the file, read with the checkpoint record reader (which checks both CRCs).
std::vector<tensorflow::Event> ReadEvents(const std::string& path) {
  std::vector<tensorflow::Event> events;
  auto reader = RecordFileReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return events;
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    tensorflow::Event event;
    EXPECT_TRUE(event.ParseFromString(record));
    events.push_back(std::move(event));
  }
  return events;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

TEST(EventFileWriterTest, WritesVersionThenScalarEventsThatReadBack) {
  testing::TempDir dir;
  const double before = WallTimeNow();
  auto writer = EventFileWriter::Create(dir.Join("logs/train"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = (*writer)->path();
  EXPECT_THAT(std::filesystem::path(path).filename().string(),
              MatchesRegex("events\\.out\\.tfevents\\.[0-9]{10}\\." + HostName()));
  EXPECT_EQ(std::filesystem::path(path).parent_path(), dir.Join("logs/train"));

  ASSERT_TRUE((*writer)->WriteScalar("loss", 1, 2.5f).ok());
  ASSERT_TRUE((*writer)->WriteScalars(2, {{"loss", 1.25f}, {"accuracy", 0.75f}}).ok());
  ASSERT_TRUE((*writer)->WriteScalars(3, {{"examples_per_sec", 12345.5f}}).ok());
  ASSERT_TRUE((*writer)->Flush().ok());

  const std::vector<tensorflow::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GE(events[0].wall_time(), before - 1);
  EXPECT_EQ(events[1].step(), 1);
  ASSERT_EQ(events[1].summary().value_size(), 1);
  EXPECT_EQ(events[1].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 2.5f);
  EXPECT_EQ(events[2].step(), 2);
  ASSERT_EQ(events[2].summary().value_size(), 2);
  EXPECT_EQ(events[2].summary().value(1).tag(), "accuracy");
  EXPECT_EQ(events[2].summary().value(1).simple_value(), 0.75f);
  EXPECT_EQ(events[3].summary().value(0).tag(), "examples_per_sec");
  EXPECT_EQ(events[3].summary().value(0).simple_value(), 12345.5f);
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_GE(events[i].wall_time(), events[i - 1].wall_time());
    EXPECT_LE(events[i].wall_time(), WallTimeNow());
  }
}

TEST(EventFileWriterTest, RecordsCarryTensorFlowsMaskedCrcs) {
  testing::TempDir dir;
  std::string path;
  {
    auto writer = EventFileWriter::Create(dir.path());
    ASSERT_TRUE(writer.ok());
    path = (*writer)->path();
  }
  // The file holds exactly the version record; check its frame byte by byte.
  std::string bytes(std::filesystem::file_size(path), '\0');
  FILE* file = std::fopen(path.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
  const uint64_t length = DecodeFixed64(bytes.data());
  ASSERT_EQ(bytes.size(), kRecordHeaderSize + length + kRecordFooterSize);
  EXPECT_EQ(DecodeFixed32(bytes.data() + 8), crc32c::Mask(crc32c::Value(bytes.data(), 8)));
  const std::string_view data(bytes.data() + kRecordHeaderSize, length);
  EXPECT_EQ(DecodeFixed32(bytes.data() + kRecordHeaderSize + length),
            crc32c::Mask(crc32c::Value(data)));
  tensorflow::Event event;
  ASSERT_TRUE(event.ParseFromArray(data.data(), static_cast<int>(data.size())));
  EXPECT_EQ(event.file_version(), kEventFileVersion);
}

TEST(EventFileWriterTest, BuffersUntilFlushAndFlushesOnDestruction) {
  testing::TempDir dir;
  EventFileOptions options;
  options.flush_interval = absl::Hours(1);
  auto writer = EventFileWriter::Create(dir.path(), options);
  ASSERT_TRUE(writer.ok());
  const std::string path = (*writer)->path();
  ASSERT_TRUE((*writer)->WriteScalar("loss", 1, 1.0f).ok());
  EXPECT_EQ(ReadEvents(path).size(), 1u) << "only the version record is written yet";
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(ReadEvents(path).size(), 2u);
  ASSERT_TRUE((*writer)->WriteScalar("loss", 2, 0.5f).ok());
  writer->reset();
  const std::vector<tensorflow::Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].step(), 2);
}

TEST(EventFileWriterTest, AZeroIntervalWritesEveryEventAtOnce) {
  testing::TempDir dir;
  EventFileOptions options;
  options.flush_interval = absl::ZeroDuration();
  auto writer = EventFileWriter::Create(dir.path(), options);
  ASSERT_TRUE(writer.ok());
  for (int step = 1; step <= 5; ++step) {
    ASSERT_TRUE((*writer)->WriteScalar("loss", step, 1.0f / static_cast<float>(step)).ok());
    EXPECT_EQ(ReadEvents((*writer)->path()).size(), static_cast<size_t>(step + 1));
  }
}

TEST(EventFileWriterTest, AFullBufferIsWritten) {
  testing::TempDir dir;
  EventFileOptions options;
  options.flush_interval = absl::Hours(1);
  options.max_buffered_bytes = 1000;
  auto writer = EventFileWriter::Create(dir.path(), options);
  ASSERT_TRUE(writer.ok());
  for (int step = 0; step < 100; ++step) ASSERT_TRUE((*writer)->WriteScalar("x", step, 1).ok());
  EXPECT_GT(ReadEvents((*writer)->path()).size(), 50u);
}

TEST(EventFileWriterTest, TwoWritersInTheSameSecondGetTwoFiles) {
  testing::TempDir dir;
  auto first = EventFileWriter::Create(dir.path());
  auto second = EventFileWriter::Create(dir.path());
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_NE((*first)->path(), (*second)->path());
  EXPECT_THAT(std::filesystem::path((*second)->path()).filename().string(),
              StartsWith("events.out.tfevents."));
}

TEST(EventFileWriterTest, TheFilenameSuffixIsAppended) {
  testing::TempDir dir;
  EventFileOptions options;
  options.filename_suffix = ".v2";
  auto writer = EventFileWriter::Create(dir.path(), options);
  ASSERT_TRUE(writer.ok());
  EXPECT_THAT((*writer)->path(), HasSubstr(HostName() + ".v2"));
}

TEST(EventFileWriterTest, ConcurrentWritersProduceWholeRecords) {
  testing::TempDir dir;
  auto writer = EventFileWriter::Create(dir.path());
  ASSERT_TRUE(writer.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < 250; ++step) {
        EXPECT_TRUE((*writer)->WriteScalar("thread" + std::to_string(t), step, 1).ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadEvents((*writer)->path()).size(), 1001u);
  EXPECT_EQ((*writer)->WriteScalar("late", 1, 1).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(EventFileWriterTest, AnUnwritableDirectoryIsAnErrorNamingIt) {
  testing::TempDir dir;
  FILE* file = std::fopen(dir.Join("plain").c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  auto writer = EventFileWriter::Create(dir.Join("plain/logs"));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(std::string(writer.status().message()), HasSubstr(dir.Join("plain/logs")));
}

}  // namespace
}  // namespace tj
