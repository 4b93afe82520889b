#include "coordinator/checkpoint/atomic_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(AtomicFileTest, CommitPutsTheBytesAtThePathAndLeavesNoTemporaryFile) {
  testing::TempDir dir;
  auto file = AtomicFile::Create(dir.Join("out"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT((*file)->temp_path(), HasSubstr(dir.Join("out.tmp-")));
  ASSERT_TRUE((*file)->Append("hello ").ok());
  std::string world = "world";
  iovec pieces[2] = {{world.data(), 3}, {world.data() + 3, 2}};
  ASSERT_TRUE((*file)->Append(std::span<iovec>(pieces)).ok());
  EXPECT_THAT(Entries(dir.path()), ElementsAre(HasSubstr("out.tmp-")));

  ASSERT_TRUE((*file)->Commit().ok());

  EXPECT_EQ(ReadFile(dir.Join("out")), "hello world");
  EXPECT_THAT(Entries(dir.path()), ElementsAre("out"));
  EXPECT_EQ((*file)->Append("more").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(AtomicFileTest, TheOldContentStaysUntilCommit) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.Join("f"), "old").ok());
  auto file = AtomicFile::Create(dir.Join("f"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("new").ok());
  EXPECT_EQ(ReadFile(dir.Join("f")), "old");
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(ReadFile(dir.Join("f")), "new");
}

TEST(AtomicFileTest, DroppingAnUncommittedFileRemovesItsTemporaryFile) {
  testing::TempDir dir;
  {
    auto file = AtomicFile::Create(dir.Join("out"));
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("partial").ok());
  }
  EXPECT_THAT(Entries(dir.path()), IsEmpty());
}

TEST(AtomicFileTest, CreateUnderARegularFileFailsNamingThePathAndErrno) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.Join("plain"), "x").ok());

  auto file = AtomicFile::Create(dir.Join("plain/out"));

  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()), HasSubstr(dir.Join("plain/out")));
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("Not a directory"));
  EXPECT_THAT(Entries(dir.path()), ElementsAre("plain"));
  EXPECT_FALSE(WriteFileAtomically(dir.Join("plain/out"), "x").ok());
}

TEST(AtomicFileTest, AFailedRenameRemovesTheTemporaryFileAndNamesBothPaths) {
  testing::TempDir dir;
  // rename(2) cannot replace a non-empty directory with a file.
  std::filesystem::create_directories(dir.Join("target/inside"));
  auto file = AtomicFile::Create(dir.Join("target"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("data").ok());

  const absl::Status status = (*file)->Commit();

  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr((*file)->temp_path()));
  EXPECT_THAT(std::string(status.message()), HasSubstr(dir.Join("target")));
  EXPECT_THAT(std::string(status.message()), HasSubstr("Is a directory"));
  EXPECT_THAT(Entries(dir.path()), ElementsAre("target"));
  EXPECT_EQ((*file)->Append("x"), status) << "errors are sticky";
}

TEST(AtomicFileTest, AFailedWriteRemovesTheTemporaryFile) {
  testing::TempDir dir;
  auto file = AtomicFile::Create(dir.Join("out"));
  ASSERT_TRUE(file.ok());
  // A write from an unmapped address fails with EFAULT without crashing.
  iovec bad{reinterpret_cast<void*>(uintptr_t{8}), 16};
  const absl::Status status = (*file)->Append(std::span<iovec>(&bad, 1));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr((*file)->temp_path()));
  EXPECT_THAT(Entries(dir.path()), IsEmpty());
  EXPECT_FALSE((*file)->Commit().ok());
  EXPECT_THAT(Entries(dir.path()), IsEmpty());
}

}  // namespace
}  // namespace tj
