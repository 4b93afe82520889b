// S3ObjectStore against a real S3-compatible server (SeaweedFS, tests/support/s3_test_server.h):
// whole objects, multipart uploads larger than a part, abandoned uploads, ranged reads, listings,
// and the errors a missing bucket, refused credentials and a dead endpoint give.
#include "coordinator/checkpoint/s3_object_store.h"

#include <string>

#include "coordinator/checkpoint/checkpoint_storage_error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/checkpoint/s3_test_env.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using testing::S3TestEnvironment;

// Bytes that differ at every offset, so a part out of place or a range off by one shows.
std::string Pattern(size_t size, uint32_t seed) {
  std::string bytes(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return bytes;
}

class S3ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TJ_REQUIRE_S3_SERVER();
    store_ = std::make_unique<S3ObjectStore>(S3TestEnvironment::server()->Options(),
                                             testing::kS3TestBucket);
    prefix_ = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/";
  }

  std::unique_ptr<S3ObjectStore> store_;
  std::string prefix_;
};

TEST_F(S3ObjectStoreTest, PutGetSizeListDelete) {
  const std::string key = prefix_ + "small";
  ASSERT_TRUE(store_->Put(key, "hello, bucket").ok());
  absl::StatusOr<std::string> got = store_->Get(key, 1024);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "hello, bucket");
  absl::StatusOr<std::optional<uint64_t>> size = store_->Size(key);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, std::optional<uint64_t>(13));
  absl::StatusOr<std::vector<ObjectInfo>> listed = store_->List(prefix_);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, key);
  EXPECT_EQ((*listed)[0].size, 13u);
  ASSERT_TRUE(store_->Delete(key).ok());
  size = store_->Size(key);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_FALSE(size->has_value());
  EXPECT_TRUE(absl::IsNotFound(store_->Get(key, 1024).status()));
  EXPECT_TRUE(store_->Delete(key).ok()) << "deleting an absent object is not an error";
}

TEST_F(S3ObjectStoreTest, GetRefusesAnObjectLargerThanAllowed) {
  const std::string key = prefix_ + "big";
  ASSERT_TRUE(store_->Put(key, std::string(100, 'x')).ok());
  absl::Status status = store_->Get(key, 99).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(key));
}

TEST_F(S3ObjectStoreTest, MultipartUploadOfMoreThanOnePartReadsBackInRanges) {
  const std::string key = prefix_ + "shard";
  // Two whole parts and a short last one, appended in pieces that straddle part boundaries.
  const std::string data = Pattern(2 * kMinS3PartBytes + 12345, 7);
  absl::StatusOr<ObjectUploadPtr> upload = store_->BeginUpload(key);
  ASSERT_TRUE(upload.ok()) << upload.status();
  for (size_t at = 0; at < data.size(); at += 3'000'001) {
    ASSERT_TRUE((*upload)->Append(std::string_view(data).substr(at, 3'000'001)).ok());
  }
  EXPECT_EQ((*upload)->bytes(), data.size());
  absl::StatusOr<std::optional<uint64_t>> size = store_->Size(key);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_FALSE(size->has_value()) << "visible before Finish()";
  ASSERT_TRUE((*upload)->Finish().ok());
  size = store_->Size(key);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, std::optional<uint64_t>(data.size()));

  std::string back(data.size(), '\0');
  for (size_t at = 0; at < data.size();) {
    absl::StatusOr<size_t> n = store_->ReadAt(key, at, back.data() + at, 4'000'000);
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_GT(*n, 0u);
    at += *n;
  }
  EXPECT_TRUE(back == data) << "the object read back differs from what was uploaded";
  absl::StatusOr<size_t> past_end = store_->ReadAt(key, data.size(), back.data(), 10);
  ASSERT_TRUE(past_end.ok()) << past_end.status();
  EXPECT_EQ(*past_end, 0u);
}

TEST_F(S3ObjectStoreTest, AnUploadDroppedBeforeFinishLeavesTheOlderObject) {
  const std::string key = prefix_ + "shard";
  ASSERT_TRUE(store_->Put(key, "the previous checkpoint's shard").ok());
  {
    absl::StatusOr<ObjectUploadPtr> upload = store_->BeginUpload(key);
    ASSERT_TRUE(upload.ok()) << upload.status();
    // More than a part, so the multipart upload is under way when it is dropped.
    ASSERT_TRUE((*upload)->Append(Pattern(kMinS3PartBytes + 10, 3)).ok());
  }
  absl::StatusOr<std::string> got = store_->Get(key, 1024);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "the previous checkpoint's shard");
}

TEST_F(S3ObjectStoreTest, ListingPagesThroughMoreThanOnePage) {
  // ListObjectsV2 pages hold 1000 keys.
  constexpr int kObjects = 1003;
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_TRUE(store_->Put(absl::StrCat(prefix_, absl::Dec(i, absl::kZeroPad4)), "x").ok());
  }
  absl::StatusOr<std::vector<ObjectInfo>> listed = store_->List(prefix_);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), static_cast<size_t>(kObjects));
  EXPECT_EQ(listed->back().key, prefix_ + "1002");
}

TEST_F(S3ObjectStoreTest, AMissingBucketIsNamed) {
  S3ObjectStore missing(S3TestEnvironment::server()->Options(), "tj-no-such-bucket");
  const absl::Status access = missing.CheckAccess();
  EXPECT_TRUE(absl::IsFailedPrecondition(access)) << access;
  EXPECT_THAT(access.message(), HasSubstr("bucket tj-no-such-bucket does not exist"));
  EXPECT_TRUE(IsCheckpointStorageError(access)) << "a training loop saves again later";
  absl::StatusOr<ObjectUploadPtr> upload = missing.BeginUpload("a/shard");
  ASSERT_TRUE(upload.ok());
  ASSERT_TRUE((*upload)->Append("bytes").ok());
  const absl::Status finish = (*upload)->Finish();
  EXPECT_FALSE(finish.ok());
  EXPECT_THAT(finish.message(), HasSubstr("tj-no-such-bucket"));
}

TEST_F(S3ObjectStoreTest, RefusedCredentialsNameTheirSecret) {
  S3Options options = S3TestEnvironment::server()->Options();
  options.secret_key = "not-the-secret";
  options.credentials_source = "Secret tj-s3-credentials";
  S3ObjectStore refused(options, testing::kS3TestBucket);
  const absl::Status access = refused.CheckAccess();
  EXPECT_TRUE(absl::IsPermissionDenied(access)) << access;
  EXPECT_THAT(access.message(), HasSubstr("Secret tj-s3-credentials"));
  EXPECT_THAT(access.message(), HasSubstr(testing::kS3TestBucket));
  EXPECT_TRUE(absl::IsPermissionDenied(refused.Put("k", "v"))) << refused.Put("k", "v");
  EXPECT_TRUE(IsCheckpointStorageError(access));
}

// Credentials scoped to s3://tj-ckpt/team-a (SeaweedFS grants "Read/Write/List:tj-ckpt/team-a/*"
// and nothing on the bucket): the access check lists only the store's prefix, so they pass there,
// and are refused for the bucket root, another prefix and a prefix that merely starts alike.
TEST_F(S3ObjectStoreTest, CredentialsScopedToAPrefixPassTheAccessCheckOfThatPrefixOnly) {
  const S3Options scoped = S3TestEnvironment::server()->ScopedOptions();
  const std::string prefix = std::string(testing::kS3TestScopedPrefix) + "/" + prefix_;
  S3ObjectStore store(scoped, testing::kS3TestBucket, prefix.substr(0, prefix.size() - 1));
  const absl::Status access = store.CheckAccess();
  ASSERT_TRUE(access.ok()) << access;
  // And what a checkpoint store does there next: write, list, read, delete.
  ASSERT_TRUE(store.Put(prefix + "MANIFEST.json", "{}").ok());
  absl::StatusOr<std::vector<ObjectInfo>> listed = store.List(prefix);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 1u);
  absl::StatusOr<std::optional<uint64_t>> missing = store.Size(prefix + "absent");
  ASSERT_TRUE(missing.ok()) << missing.status() << " (a 404 HEAD asks the access check)";
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(store.Delete(prefix + "MANIFEST.json").ok());

  for (const char* elsewhere : {"", "team-b", "team-ab"}) {
    S3ObjectStore outside(scoped, testing::kS3TestBucket, elsewhere);
    const absl::Status refused = outside.CheckAccess();
    EXPECT_TRUE(absl::IsPermissionDenied(refused)) << "'" << elsewhere << "': " << refused;
  }
}

TEST(S3ObjectStoreOfflineTest, AnEndpointThatDoesNotAnswerIsNamed) {
  S3Options options;
  options.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  options.access_key = "a";
  options.secret_key = "b";
  S3ObjectStore store(options, "bucket");
  const absl::Status access = store.CheckAccess();
  EXPECT_TRUE(absl::IsUnavailable(access)) << access;
  EXPECT_THAT(access.message(), HasSubstr("http://127.0.0.1:1"));
  EXPECT_TRUE(IsCheckpointStorageError(access));
}

TEST(S3LocationTest, ParsesBucketAndPrefix) {
  absl::StatusOr<S3Location> location = ParseS3Location("s3://my-bucket/jobs/digits/");
  ASSERT_TRUE(location.ok()) << location.status();
  EXPECT_EQ(location->bucket, "my-bucket");
  EXPECT_EQ(location->prefix, "jobs/digits");
  EXPECT_EQ(location->Key("ckpt-000000000001/MANIFEST.json"),
            "jobs/digits/ckpt-000000000001/MANIFEST.json");
  EXPECT_EQ(location->Url(), "s3://my-bucket/jobs/digits");
  location = ParseS3Location("s3://bucket");
  ASSERT_TRUE(location.ok()) << location.status();
  EXPECT_EQ(location->prefix, "");
}

TEST(S3LocationTest, RefusesBadBucketsAndPrefixes) {
  for (const char* url : {"s3://", "s3://Upper", "s3://ab", "s3://b_u", "s3://bucket/a//b",
                          "s3://bucket/../x", "/local/dir"}) {
    absl::Status status = ParseS3Location(url).status();
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << url;
    EXPECT_THAT(status.message(), HasSubstr(url)) << url;
  }
}

}  // namespace
}  // namespace tj
