// Shard paths stay inside the checkpoint directory: `..`, other absolute paths and symbolic links
// out of it are refused naming the path; without a directory only an open PS takes any path.
#include "coordinator/ps/checkpoint_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "coordinator/base/job_token.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

TEST(CheckpointPathTest, PathsInsideTheDirectoryAreTakenOthersAreRefusedNamingThePath) {
  testing::TempDir dir;
  const std::string root = dir.Join("ckpt");
  std::filesystem::create_directories(root + "/ckpt-000000000001");
  EXPECT_TRUE(CheckPathWithin(root, root + "/ckpt-000000000001/ps-0-of-1.state").ok());
  EXPECT_TRUE(CheckPathWithin(root, root + "/not-yet/ps-0-of-1.state").ok());
  EXPECT_TRUE(CheckPathWithin(root + "/", root + "/a").ok());

  const absl::Status outside = CheckPathWithin(root, "/etc/passwd");
  EXPECT_EQ(outside.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(outside.message()), HasSubstr("/etc/passwd"));
  EXPECT_THAT(std::string(outside.message()), HasSubstr(root));
  EXPECT_EQ(CheckPathWithin(root, root).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckPathWithin(root, root + "-sibling/x").code(), absl::StatusCode::kPermissionDenied);

  const absl::Status climbing = CheckPathWithin(root, root + "/../x");
  EXPECT_EQ(climbing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(climbing.message()), HasSubstr(root + "/../x"));
  EXPECT_EQ(CheckPathWithin(root, root + "/a/../b").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPathWithin(root, "").code(), absl::StatusCode::kInvalidArgument);

  // Symbolic links inside the directory that lead out of it, to a directory or to a file.
  std::filesystem::create_directory_symlink(dir.path(), root + "/up");
  const absl::Status linked = CheckPathWithin(root, root + "/up/x.state");
  EXPECT_EQ(linked.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(linked.message()), HasSubstr("resolves to"));
  std::filesystem::create_symlink("/etc/passwd", root + "/passwd.state");
  EXPECT_EQ(CheckPathWithin(root, root + "/passwd.state").code(),
            absl::StatusCode::kPermissionDenied);
  // A link to a place inside is fine.
  std::filesystem::create_directory_symlink(root + "/ckpt-000000000001", root + "/latest");
  EXPECT_TRUE(CheckPathWithin(root, root + "/latest/ps-0-of-1.state").ok());
}

TEST(CheckpointPathTest, WithoutADirectoryOnlyAnOpenParameterServerTakesShardPaths) {
  SetShardPathRootForTesting(std::nullopt);
  SetJobTokenForTesting(std::nullopt);
  SetJobVerifiersForTesting(std::nullopt);
  EXPECT_TRUE(CheckShardPath("/anywhere/x").ok());
  SetJobTokenForTesting("t");
  const absl::Status refused = CheckShardPath("/anywhere/x");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("TJ_CHECKPOINT_DIR"));
  SetShardPathRootForTesting("/anywhere");
  EXPECT_TRUE(CheckShardPath("/anywhere/x").ok());
  SetJobTokenForTesting(std::nullopt);
  SetShardPathRootForTesting(std::nullopt);
}

}  // namespace
}  // namespace tj
