#include "coordinator/checkpoint/record_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/checkpoint/crc32c.h"
#include "coordinator/checkpoint/record_framing.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteRaw(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

FileDigest WriteRecords(const std::string& path, const std::vector<std::string>& records) {
  auto writer = RecordFileWriter::Create(path);
  EXPECT_TRUE(writer.ok()) << writer.status();
  for (const std::string& record : records) EXPECT_TRUE((*writer)->Append(record).ok());
  absl::StatusOr<FileDigest> digest = (*writer)->Finish();
  EXPECT_TRUE(digest.ok()) << digest.status();
  return digest.value_or(FileDigest{});
}

// Reads to the end; the status of the first failure, or OK with every record.
absl::Status ReadAll(const std::string& path, std::vector<std::string>* records) {
  auto reader = RecordFileReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::string record;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&record);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    records->push_back(record);
  }
}

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::string bytes(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    const uint64_t word = rng();
    std::memcpy(bytes.data() + i, &word, 8);
  }
  return bytes;
}

TEST(RecordFileTest, RoundTripsEmptySmallAndLargeRecordsWithTheFileDigest) {
  testing::TempDir dir;
  const std::string path = dir.Join("shard.rec");
  std::vector<std::string> records = {"", "a", std::string(1000, 'x')};
  for (int i = 0; i < 2000; ++i) records.push_back("record-" + std::to_string(i));
  records.push_back(RandomBytes(32 << 20, 1));  // one PS shard's dense variable
  records.push_back("");
  records.push_back(RandomBytes(70 << 10, 2));  // just above the buffering threshold
  records.push_back("tail");

  const FileDigest digest = WriteRecords(path, records);

  std::vector<std::string> read;
  ASSERT_TRUE(ReadAll(path, &read).ok());
  ASSERT_EQ(read.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) ASSERT_TRUE(read[i] == records[i]) << "record " << i;
  absl::StatusOr<FileDigest> actual = ComputeFileDigest(path);
  ASSERT_TRUE(actual.ok());
  EXPECT_EQ(digest, *actual) << ToString(digest) << " vs " << ToString(*actual);
  EXPECT_EQ(digest.bytes, std::filesystem::file_size(path));
}

TEST(RecordFileTest, RecordsReadInPiecesMatchAndYieldTheFileDigestInOnePass) {
  testing::TempDir dir;
  const std::string path = dir.Join("shard.rec");
  const std::vector<std::string> records = {"head", RandomBytes(3 << 20, 3), "",
                                            RandomBytes(300 << 10, 4), "end"};
  const FileDigest written = WriteRecords(path, records);
  auto reader = RecordFileReader::Open(path);
  ASSERT_TRUE(reader.ok());
  for (const std::string& expected : records) {
    uint64_t size = 0;
    absl::StatusOr<bool> more = (*reader)->BeginRecord(&size);
    ASSERT_TRUE(more.ok() && *more) << more.status();
    ASSERT_EQ(size, expected.size());
    // Uneven pieces: a few bytes, then most of it straight into place, then the rest.
    std::string got(size, '\0');
    const size_t first = std::min<size_t>(size, 7);
    const size_t second = (size - first) / 2;
    ASSERT_TRUE((*reader)->ReadRecord(got.data(), first).ok());
    ASSERT_TRUE((*reader)->ReadRecord(got.data() + first, second).ok());
    ASSERT_TRUE((*reader)->ReadRecord(got.data() + first + second, size - first - second).ok());
    ASSERT_TRUE(got == expected);
  }
  uint64_t size = 0;
  absl::StatusOr<bool> more = (*reader)->BeginRecord(&size);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_EQ((*reader)->digest(), written) << ToString((*reader)->digest());
  EXPECT_EQ(written, *ComputeFileDigest(path));
}

TEST(RecordFileTest, ACorruptByteInALargeRecordReadInPiecesIsDataLossAtItsLastByte) {
  testing::TempDir dir;
  const std::string path = dir.Join("shard.rec");
  WriteRecords(path, {RandomBytes(2 << 20, 5)});
  std::string bytes = ReadFile(path);
  bytes[12 + (1 << 20)] ^= 4;
  WriteRaw(path, bytes);
  auto reader = RecordFileReader::Open(path);
  ASSERT_TRUE(reader.ok());
  uint64_t size = 0;
  ASSERT_TRUE(*(*reader)->BeginRecord(&size));
  std::string got(size, '\0');
  ASSERT_TRUE((*reader)->ReadRecord(got.data(), size - 1).ok());
  const absl::Status status = (*reader)->ReadRecord(got.data() + size - 1, 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(path + ": corrupt record at offset 0: data checksum mismatch"));
  // Sticky, and nothing past the record.
  EXPECT_EQ((*reader)->BeginRecord(&size).status().code(), absl::StatusCode::kDataLoss);
}

TEST(RecordFileTest, ARecordMustBeReadToItsEndBeforeTheNext) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  WriteRecords(path, {"abcdef", "g"});
  auto reader = RecordFileReader::Open(path);
  ASSERT_TRUE(reader.ok());
  uint64_t size = 0;
  ASSERT_TRUE(*(*reader)->BeginRecord(&size));
  char two[2];
  ASSERT_TRUE((*reader)->ReadRecord(two, 2).ok());
  EXPECT_EQ((*reader)->BeginRecord(&size).status().code(),
            absl::StatusCode::kFailedPrecondition);
  char many[10];
  EXPECT_EQ((*reader)->ReadRecord(many, 10).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RecordFileTest, AnEmptyFileHasNoRecords) {
  testing::TempDir dir;
  const FileDigest digest = WriteRecords(dir.Join("empty"), {});
  EXPECT_EQ(digest, (FileDigest{0, 0}));
  std::vector<std::string> read;
  EXPECT_TRUE(ReadAll(dir.Join("empty"), &read).ok());
  EXPECT_TRUE(read.empty());
}

TEST(RecordFileTest, UsesTensorFlowsRecordFraming) {
  testing::TempDir dir;
  WriteRecords(dir.Join("f"), {"abc"});
  const std::string bytes = ReadFile(dir.Join("f"));
  ASSERT_EQ(bytes.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(DecodeFixed64(bytes.data()), 3u);
  EXPECT_EQ(DecodeFixed32(bytes.data() + 8), crc32c::Mask(crc32c::Value(bytes.data(), 8)));
  EXPECT_EQ(bytes.substr(12, 3), "abc");
  EXPECT_EQ(DecodeFixed32(bytes.data() + 15), crc32c::Mask(crc32c::Value("abc")));
}

TEST(RecordFileTest, NothingAppearsWithoutFinish) {
  testing::TempDir dir;
  {
    auto writer = RecordFileWriter::Create(dir.Join("f"));
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(std::string(1 << 20, 'z')).ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(RecordFileTest, AppendAfterFinishIsRefused) {
  testing::TempDir dir;
  auto writer = RecordFileWriter::Create(dir.Join("f"));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ((*writer)->Append("x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->Finish().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RecordFileTest, TruncationAtEveryOffsetIsDataLossNamingTheRecordOffset) {
  testing::TempDir dir;
  const std::vector<std::string> records = {"abc", "", std::string(100, 'q'), "z"};
  WriteRecords(dir.Join("whole"), records);
  const std::string bytes = ReadFile(dir.Join("whole"));
  // Record boundaries: truncating exactly there leaves a shorter, valid file.
  std::vector<size_t> starts;
  size_t offset = 0;
  for (const std::string& record : records) {
    starts.push_back(offset);
    offset += kRecordHeaderSize + record.size() + kRecordFooterSize;
  }
  ASSERT_EQ(offset, bytes.size());

  const std::string path = dir.Join("cut");
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    WriteRaw(path, std::string_view(bytes).substr(0, cut));
    std::vector<std::string> read;
    const absl::Status status = ReadAll(path, &read);
    const auto boundary = std::find(starts.begin(), starts.end(), cut);
    if (boundary != starts.end()) {
      EXPECT_TRUE(status.ok()) << "cut " << cut << ": " << status;
      EXPECT_EQ(read.size(), static_cast<size_t>(boundary - starts.begin()));
      continue;
    }
    const size_t record = std::upper_bound(starts.begin(), starts.end(), cut) - starts.begin() - 1;
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << "cut " << cut;
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(path + ": truncated record at offset " + std::to_string(starts[record])))
        << "cut " << cut;
    EXPECT_EQ(read.size(), record) << "cut " << cut;
  }
}

TEST(RecordFileTest, ATruncatedLargeRecordIsDataLossAndAllocatesNothing) {
  testing::TempDir dir;
  WriteRecords(dir.Join("big"), {"first", RandomBytes(8 << 20, 3)});
  std::filesystem::resize_file(dir.Join("big"), 4 << 20);
  std::vector<std::string> read;
  const absl::Status status = ReadAll(dir.Join("big"), &read);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("truncated record at offset 21: 8388608"));
  EXPECT_EQ(read.size(), 1u);
}

TEST(RecordFileTest, AFlippedByteAnywhereIsDetected) {
  testing::TempDir dir;
  WriteRecords(dir.Join("whole"), {"abc", std::string(40, 'q')});
  const std::string bytes = ReadFile(dir.Join("whole"));
  const std::string path = dir.Join("flipped");
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::string corrupt = bytes;
    corrupt[at] = static_cast<char>(corrupt[at] ^ 0x20);
    WriteRaw(path, corrupt);
    std::vector<std::string> read;
    const absl::Status status = ReadAll(path, &read);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << "byte " << at;
    const std::string offset = at < 19 ? "offset 0" : "offset 19";
    EXPECT_THAT(std::string(status.message()), HasSubstr(offset)) << "byte " << at;
  }
}

TEST(RecordFileTest, ACorruptDataByteNamesTheChecksum) {
  testing::TempDir dir;
  WriteRecords(dir.Join("f"), {"abc", "defgh"});
  std::string bytes = ReadFile(dir.Join("f"));
  bytes[19 + 12 + 2] ^= 1;
  WriteRaw(dir.Join("f"), bytes);
  std::vector<std::string> read;
  const absl::Status status = ReadAll(dir.Join("f"), &read);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(dir.Join("f") +
                        ": corrupt record at offset 19: data checksum mismatch over 5 bytes"));
  EXPECT_EQ(read.size(), 1u);
}

TEST(RecordFileTest, OpeningAMissingFileNamesIt) {
  testing::TempDir dir;
  auto reader = RecordFileReader::Open(dir.Join("nope"));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(reader.status().message()), HasSubstr(dir.Join("nope")));
}

}  // namespace
}  // namespace tj
