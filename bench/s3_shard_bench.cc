// tj-bench-s3-shard: how a parameter server's shard reaches an s3:// checkpoint, the two ways,
// against the same real S3-compatible server (SeaweedFS `weed mini`, tests/support) in the same
// run, alternating so that both see the same load:
//   - scratch: SaveShardFile to a local file, then UploadFile of it (a PS before streaming);
//   - stream:  SaveShardAnywhere to the s3:// URL (records straight into the multipart upload).
// Each trial runs in a fresh child process that builds the same store (dense variables of 16 MiB,
// counter-based initializer), resets its peak RSS (/proc/self/clear_refs 5) and saves once: the
// figures are the save's wall time and its peak RSS above the store's. The scratch file's page
// cache is not in RSS; its size (the shard's) is what it adds to the machine's memory and disk.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/checkpoint/object_transfer.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "coordinator/ps/object_shard_file.h"
#include "coordinator/ps/shard_file.h"
#include "tests/support/s3_test_server.h"

namespace tj::bench {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kVariableBytes = 16 * kMiB;

enum class Mode { kScratch, kStream };

struct Trial {
  double seconds = 0;
  double peak_extra_mib = 0;
  double shard_mib = 0;
};

// A field of /proc/self/status in kB ("VmRSS", "VmHWM").
int64_t StatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(field + ":")) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

// In the child: builds the store, saves it once the `mode` way; exits non-zero on failure.
[[noreturn]] void RunTrial(Mode mode, int64_t mib, const S3Options& options, int index,
                           const std::string& scratch_dir, int out_fd) {
  VariableStore store;
  v1::CreateVariablesRequest create;
  for (int64_t i = 0; i < mib * kMiB / kVariableBytes; ++i) {
    v1::VariableSpec& spec = *create.add_variables();
    spec.set_name(absl::StrCat("v", i));
    spec.add_shape(kVariableBytes / 4);
    spec.mutable_initializer()->set_kind(v1::Initializer::RANDOM_NORMAL);
    spec.mutable_initializer()->set_seed(static_cast<uint64_t>(i + 1));
  }
  if (!store.Create(create).ok()) ::_exit(2);
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
  const int64_t base_kb = StatusKb("VmRSS");
  const std::string key = absl::StrCat("bench/shard-", index);
  const auto start = std::chrono::steady_clock::now();
  int64_t bytes = 0;
  if (mode == Mode::kScratch) {
    const std::string path = absl::StrCat(scratch_dir, "/tj-bench-shard-", ::getpid());
    auto saved = SaveShardFile(store, path);
    S3ObjectStore objects(options, testing::kS3TestBucket);
    auto sent = saved.ok() ? UploadFile(objects, path, key) : saved.status();
    std::filesystem::remove(path);
    if (!sent.ok()) {
      std::fprintf(stderr, "scratch: %s\n", sent.status().ToString().c_str());
      ::_exit(3);
    }
    bytes = static_cast<int64_t>(sent->bytes);
  } else {
    auto saved = SaveShardAnywhere(store, absl::StrCat("s3://", testing::kS3TestBucket, "/", key));
    if (!saved.ok()) {
      std::fprintf(stderr, "stream: %s\n", saved.status().ToString().c_str());
      ::_exit(3);
    }
    bytes = saved->bytes();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Trial trial{seconds, static_cast<double>(StatusKb("VmHWM") - base_kb) / 1024.0,
                    static_cast<double>(bytes) / static_cast<double>(kMiB)};
  if (::write(out_fd, &trial, sizeof(trial)) != sizeof(trial)) ::_exit(4);
  ::_exit(0);
}

std::optional<Trial> Fork(Mode mode, int64_t mib, const S3Options& options, int index,
                          const std::string& scratch_dir) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    RunTrial(mode, mib, options, index, scratch_dir, fds[1]);
  }
  ::close(fds[1]);
  Trial trial;
  const bool read = ::read(fds[0], &trial, sizeof(trial)) == sizeof(trial);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!read || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  S3ObjectStore(options, testing::kS3TestBucket)
      .Delete(absl::StrCat("bench/shard-", index))
      .IgnoreError();
  return trial;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

int Main(int argc, char** argv) {
  CLI::App app{"s3:// shard save: a scratch file then an upload, against streaming the records"};
  int64_t mib = 256;
  int rounds = 3;
  int64_t part_mib = 16;
  std::string scratch_dir = std::filesystem::temp_directory_path().native();
  app.add_option("--mib", mib, "dense bytes in the store, MiB (multiple of 16)");
  app.add_option("--rounds", rounds, "trials of each mode, alternating");
  app.add_option("--part-mib", part_mib, "multipart part size, MiB (TJ_S3_PART_BYTES)");
  app.add_option("--scratch-dir", scratch_dir, "where the scratch mode writes its file");
  CLI11_PARSE(app, argc, argv);

  std::string skip;
  auto weed = testing::FindOrBuildWeed(&skip);
  if (!weed.ok() || weed->empty()) {
    std::fprintf(stderr, "no S3 server: %s\n",
                 weed.ok() ? skip.c_str() : weed.status().ToString().c_str());
    return 2;
  }
  auto server = testing::S3TestServer::Start(*weed);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 2;
  }
  S3Options options = (*server)->Options();
  options.part_bytes = static_cast<size_t>(part_mib * kMiB);
  ::setenv("TJ_S3_ENDPOINT", options.endpoint.c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", options.access_key.c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", options.secret_key.c_str(), 1);
  ::setenv("TJ_S3_PART_BYTES", absl::StrCat(options.part_bytes).c_str(), 1);

  std::vector<double> seconds[2], peak[2];
  double shard_mib = 0;
  int index = 0;
  for (int round = 0; round < rounds; ++round) {
    // Alternate which goes first, so neither always follows the other's writeback.
    for (Mode mode : round % 2 == 0 ? std::vector{Mode::kScratch, Mode::kStream}
                                    : std::vector{Mode::kStream, Mode::kScratch}) {
      std::optional<Trial> trial = Fork(mode, mib, options, index++, scratch_dir);
      if (!trial.has_value()) {
        std::fprintf(stderr, "a trial failed\n");
        return 1;
      }
      const int m = mode == Mode::kScratch ? 0 : 1;
      seconds[m].push_back(trial->seconds);
      peak[m].push_back(trial->peak_extra_mib);
      shard_mib = trial->shard_mib;
      std::printf("round %d %-7s %6.2f s  %7.1f MiB/s  peak RSS above the store %7.1f MiB\n", round,
                  m == 0 ? "scratch" : "stream", trial->seconds, trial->shard_mib / trial->seconds,
                  trial->peak_extra_mib);
    }
  }
  std::printf("\nshard %.1f MiB, parts of %lld MiB, %d rounds (median)\n", shard_mib,
              static_cast<long long>(part_mib), rounds);
  for (int m = 0; m < 2; ++m) {
    std::printf("%-7s %6.2f s  %7.1f MiB/s  peak RSS above the store %7.1f MiB%s\n",
                m == 0 ? "scratch" : "stream", Median(seconds[m]), shard_mib / Median(seconds[m]),
                Median(peak[m]),
                m == 0 ? absl::StrCat("  (+ a ", static_cast<int>(shard_mib), " MiB file in ",
                                      scratch_dir, ")")
                             .c_str()
                       : "");
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) { return tj::bench::Main(argc, argv); }
