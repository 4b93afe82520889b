#include "tests/support/s3_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/s3_object_store.h"

namespace tj::testing {
namespace {

// A port nobody listens on now; the server binds it a moment later.
absl::StatusOr<int> FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return absl::InternalError("bind/getsockname on 127.0.0.1:0");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string Run(const std::string& command, int* rc) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

absl::StatusOr<std::string> FindOrBuildWeed(std::string* skip_reason) {
  if (const char* weed = std::getenv("TJ_S3_WEED"); weed != nullptr && *weed != '\0') {
    return std::string(weed);
  }
  int rc = 0;
  const std::string path = Run(absl::StrCat(TJ_SOURCE_DIR, "/scripts/install-s3-server.sh"), &rc);
  if (rc == 3) {
    *skip_reason =
        "\n\n*** SKIPPING the S3 checkpoint tests: `go` is not on PATH and "
        "scripts/install-s3-server.sh has not built the S3 test server (SeaweedFS) before. ***\n";
    return std::string();
  }
  if (rc != 0) {
    return absl::InternalError("scripts/install-s3-server.sh failed (see its stderr above)");
  }
  return path;
}

absl::StatusOr<std::unique_ptr<S3TestServer>> S3TestServer::Start(const std::string& weed) {
  std::unique_ptr<S3TestServer> server(new S3TestServer());
  std::string pattern = "/tmp/tj-s3-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp");
  server->dir_ = pattern;
  const std::string config = server->dir_ + "/s3.json";
  if (absl::Status written = server->WriteIdentities(true); !written.ok()) return written;
  std::vector<int> ports;
  for (int i = 0; i < 9; ++i) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    ports.push_back(*port);
  }
  server->endpoint_ = absl::StrCat("http://127.0.0.1:", ports[0]);
  std::vector<std::string> args = {
      weed,
      "mini",
      "-dir=" + server->dir_ + "/data",
      "-ip=127.0.0.1",
      "-ip.bind=127.0.0.1",
      "-s3.config=" + config,
      absl::StrCat("-bucket=", kS3TestBucket),
      absl::StrCat("-s3.port=", ports[0]),
      absl::StrCat("-s3.port.grpc=", ports[1]),
      absl::StrCat("-master.port=", ports[2]),
      absl::StrCat("-master.port.grpc=", ports[3]),
      absl::StrCat("-volume.port=", ports[4]),
      absl::StrCat("-volume.port.grpc=", ports[5]),
      absl::StrCat("-filer.port=", ports[6]),
      absl::StrCat("-filer.port.grpc=", ports[7]),
      absl::StrCat("-admin.port=", ports[8]),
      "-s3.port.iceberg=0",
      "-s3.port.lance=0",
      "-webdav=false",
      "-admin.ui=false",
      "-master.telemetry=false",
      // As S3 itself: a bucket that does not exist is an error, not made on first upload.
      "-s3.autoCreateBucket=false",
  };
  const std::string log = server->dir_ + "/weed.log";
  server->pid_ = ::fork();
  if (server->pid_ < 0) return absl::InternalError("fork");
  if (server->pid_ == 0) {
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::freopen(log.c_str(), "w", stdout);
    std::freopen(log.c_str(), "a", stderr);
    ::setpgid(0, 0);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  // Ready when the bucket made at start answers a listing with our credentials.
  S3ObjectStore store(server->Options(), kS3TestBucket);
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  absl::Status last;
  while (!(last = store.CheckAccess()).ok()) {
    int status = 0;
    if (::waitpid(server->pid_, &status, WNOHANG) == server->pid_) {
      server->pid_ = -1;
      return absl::InternalError(absl::StrCat("weed mini exited early; see ", log));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("weed mini not ready after 120 s (", last.message(), "); see ", log));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return server;
}

absl::Status S3TestServer::WriteIdentities(bool full_identity_writes) const {
  const std::string scope = absl::StrCat(kS3TestBucket, "/", kS3TestScopedPrefix, "/*");
  const std::string full_actions =
      full_identity_writes ? R"("Read","Write","List","Tagging")" : R"("Read","List","Tagging")";
  const std::string path = dir_ + "/s3.json";
  std::ofstream out(path + ".new");
  out << R"({"identities":[{"name":"tj","credentials":[{"accessKey":")" << kS3TestAccessKey
      << R"(","secretKey":")" << kS3TestSecretKey << R"("}],"actions":[)" << full_actions
      << "]},"
      << R"({"name":"tj-scoped","credentials":[{"accessKey":")" << kS3TestScopedAccessKey
      << R"(","secretKey":")" << kS3TestScopedSecretKey << R"("}],"actions":["Read:)" << scope
      << R"(","Write:)" << scope << R"(","List:)" << scope << R"(","Tagging:)" << scope
      << R"("]}]})";
  out.close();
  // Replaced whole, so a reload never reads half a file.
  std::error_code error;
  std::filesystem::rename(path + ".new", path, error);
  if (!out || error) return absl::InternalError(absl::StrCat("writing ", path));
  return absl::OkStatus();
}

absl::Status S3TestServer::SetWritesAllowed(bool allowed) {
  TJ_RETURN_IF_ERROR(WriteIdentities(allowed));
  // weed reloads its -s3.config file on SIGHUP (util/grace's reload hooks).
  if (::kill(pid_, SIGHUP) != 0) return absl::InternalError("kill(weed, SIGHUP)");
  // The reload is asynchronous: done when a write with the identity is answered as asked.
  S3ObjectStore store(Options(), kS3TestBucket);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (true) {
    const absl::Status put = store.Put("tj-test-write-probe", "x");
    if (allowed ? put.ok() : absl::IsPermissionDenied(put)) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "weed did not apply writes ", allowed ? "allowed" : "refused", ": ", put.ToString()));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

S3TestServer::~S3TestServer() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (!dir_.empty() && std::getenv("TJ_S3_KEEP_DIR") == nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

S3Options S3TestServer::Options() const {
  S3Options options;
  options.endpoint = endpoint_;
  options.access_key = kS3TestAccessKey;
  options.secret_key = kS3TestSecretKey;
  options.part_bytes = kMinS3PartBytes;
  return options;
}

S3Options S3TestServer::ScopedOptions() const {
  S3Options options = Options();
  options.access_key = kS3TestScopedAccessKey;
  options.secret_key = kS3TestScopedSecretKey;
  return options;
}

std::string S3TestServer::EnvAssignments() const {
  return absl::StrCat("TJ_S3_ENDPOINT=", endpoint_, " AWS_ACCESS_KEY_ID=", kS3TestAccessKey,
                      " AWS_SECRET_ACCESS_KEY=", kS3TestSecretKey,
                      " TJ_S3_PART_BYTES=", kMinS3PartBytes);
}

}  // namespace tj::testing
