// A real S3-compatible server for tests: SeaweedFS's `weed mini` (built by
// scripts/install-s3-server.sh) on 127.0.0.1, every port it listens on picked free, its data in a
// temporary directory, one bucket and two identities made at start (one for the whole bucket, one
// allowed only under a prefix of it); killed and removed at the end.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/s3_location.h"

namespace tj::testing {

inline constexpr char kS3TestAccessKey[] = "tj-test-access";
inline constexpr char kS3TestSecretKey[] = "tj-test-secret-0123456789";
inline constexpr char kS3TestBucket[] = "tj-ckpt";
// An identity allowed to read, write and list only under s3://tj-ckpt/team-a/ (SeaweedFS's
// "Action:bucket/prefix/*" grants), as credentials scoped to a job's checkpoint prefix are.
inline constexpr char kS3TestScopedAccessKey[] = "tj-test-scoped";
inline constexpr char kS3TestScopedSecretKey[] = "tj-test-scoped-secret-0123456789";
inline constexpr char kS3TestScopedPrefix[] = "team-a";

// The weed binary, building it on first use (cached). Empty with `*skip_reason` set when Go is
// absent so it cannot be built; a failed build is an error, not a skip.
absl::StatusOr<std::string> FindOrBuildWeed(std::string* skip_reason);

class S3TestServer {
 public:
  static absl::StatusOr<std::unique_ptr<S3TestServer>> Start(const std::string& weed);
  S3TestServer(const S3TestServer&) = delete;
  S3TestServer& operator=(const S3TestServer&) = delete;
  ~S3TestServer();  // kills the server and removes its directory

  const std::string& endpoint() const { return endpoint_; }
  // Endpoint and the identity's credentials, small parts (kMinS3PartBytes) for multipart tests.
  S3Options Options() const;
  // The same with the identity scoped to kS3TestScopedPrefix.
  S3Options ScopedOptions() const;
  // Grants or withdraws the full identity's Write (Read and List stay), reloading the server's
  // identities as `weed shell s3.configure` would; returns once the server answers accordingly.
  absl::Status SetWritesAllowed(bool allowed);
  // The environment a process needs for s3:// checkpoints here ("NAME=value" pairs).
  std::string EnvAssignments() const;

 private:
  S3TestServer() = default;
  absl::Status WriteIdentities(bool full_identity_writes) const;

  std::string dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace tj::testing
