// tj-bench-checkpoint: checkpoint write and restore bandwidth of a real tj-ps process, next to dd
// on the same directory measured in the same run (absolute numbers mean little on a shared
// machine; the ratios are the result):
//   - write: PsClient::SaveShard to a file, then ComputeFileDigest of it, as the coordinator does
//     for every shard (trainer/sdk/ps_checkpointer.cc), against
//     `dd if=<the shard file> of=<dir>/dd.bin bs=1M conv=fsync` (the same bytes, from the page
//     cache; zeros would write 2-3x faster on a VM disk that keeps them sparse);
//   - restore: PsClient::RestoreShard of that file against `dd if=<dir>/dd.bin of=/dev/null bs=1M`.
// Save and dd alternate, as do restore and the dd read, so that each pair sees the same load.
// Nothing is dropped from the page cache; how much of each file was cached before each read is
// measured (mincore) and reported.
// Prints a table to stdout and, with --json, writes the figures and the machine description.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/baselines.h"
#include "bench/bench_support.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/ps/ps_client.h"
#include "tj/v1/ps.pb.h"

#ifndef TJ_PS_BINARY
#define TJ_PS_BINARY ""
#endif
#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr double kTargetFractionOfDd = 0.50;
constexpr double kMiB = 1 << 20;
constexpr int kDim = 16;
constexpr char kTable[] = "embedding";
constexpr int64_t kPopulateBatch = 65536;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Config {
  std::string ps_binary = TJ_PS_BINARY;
  std::string ps_log;
  int64_t dense_mib = 256;
  int64_t variable_mib = 64;  // the dense bytes are split into variables of this size
  int64_t table_rows = 1 << 20;
  int reps = 5;
  std::string dir = "/var/tmp";  // a fresh directory is made in it (and removed unless --keep)
  bool keep = false;
  std::string json_path;
  bool quick = false;
  // Drop the shard file's and dd.bin's pages from the page cache before each read (fadvise
  // DONTNEED on those two files only), so that both reads come from the disk.
  bool cold = false;
};

// Fraction of `path`'s pages in the page cache (mincore), or -1 if it cannot be told.
double CachedFraction(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return -1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  double fraction = -1;
  if (mincore(map, size, resident.data()) == 0) {
    size_t in = 0;
    for (unsigned char r : resident) in += r & 1;
    fraction = static_cast<double>(in) / static_cast<double>(resident.size());
  }
  munmap(map, size);
  return fraction;
}

std::string FileSystemType(const std::string& path) {
  struct statfs fs {};
  if (statfs(path.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53UL:
      return "ext2/3/4";
    case 0x01021994UL:
      return "tmpfs";
    case 0x58465342UL:
      return "xfs";
    case 0x9123683EUL:
      return "btrfs";
    case 0x794C7630UL:
      return "overlayfs";
    default:
      return absl::StrCat("0x", absl::Hex(static_cast<unsigned long>(fs.f_type)));
  }
}

std::string LastLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  return lines.empty() ? "" : lines.back();
}

struct Rep {
  double save_s = 0;
  double digest_s = 0;
  double dd_write_s = 0;
  double restore_s = 0;
  double dd_read_s = 0;
  double save_ps_cpu_s = 0;
  double restore_ps_cpu_s = 0;
  double shard_cached_before_restore = -1;
  double dd_cached_before_read = -1;
  // The PS's resident memory just before the restore, and its peak during it (VmHWM reset first);
  // -1 if /proc could not tell.
  int64_t restore_rss_before = -1;
  int64_t restore_peak_rss = -1;
};

absl::Status PopulateState(const Config& config, const PsClient& ps, int64_t& num_variables) {
  v1::CreateVariablesRequest create;
  const int64_t dense_bytes = config.dense_mib << 20;
  const int64_t per_variable = config.variable_mib << 20;
  int index = 0;
  for (int64_t offset = 0; offset < dense_bytes; offset += per_variable, ++index) {
    const int64_t bytes = std::min(per_variable, dense_bytes - offset);
    v1::VariableSpec* spec = create.add_variables();
    spec->set_name(absl::StrCat("dense_", index));
    spec->add_shape(bytes / 4);
    spec->mutable_initializer()->set_kind(v1::Initializer::RANDOM_NORMAL);
    spec->mutable_initializer()->set_stddev(0.05f);
    spec->mutable_initializer()->set_seed(static_cast<uint64_t>(index) + 1);
  }
  num_variables = index;
  if (config.table_rows > 0) {
    v1::TableSpec* table = create.add_tables();
    table->set_name(kTable);
    table->set_dim(kDim);
    table->mutable_initializer()->set_kind(v1::Initializer::RANDOM_UNIFORM);
    table->mutable_initializer()->set_minval(-0.05f);
    table->mutable_initializer()->set_maxval(0.05f);
    table->mutable_initializer()->set_seed(7);
  }
  if (absl::Status s = ps.Create(create); !s.ok()) return s;
  // Rows are created on first touch: look every id up once.
  std::vector<int64_t> ids;
  for (int64_t first = 0; first < config.table_rows; first += kPopulateBatch) {
    ids.clear();
    for (int64_t id = first; id < std::min(config.table_rows, first + kPopulateBatch); ++id) {
      ids.push_back(id * 7919 + 13);  // spread over the id space, as real ids are
    }
    v1::LookupRequest lookup;
    auto* l = lookup.add_lookups();
    l->set_table(kTable);
    l->set_ids(std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 8));
    if (auto r = ps.Lookup(lookup); !r.ok()) return r.status();
  }
  return absl::OkStatus();
}

int Run(Config config) {
  if (config.quick) {
    config.dense_mib = std::min<int64_t>(config.dense_mib, 16);
    config.variable_mib = std::min<int64_t>(config.variable_mib, 8);
    config.table_rows = std::min<int64_t>(config.table_rows, 65536);
    config.reps = std::min(config.reps, 2);
  }
  if (config.ps_binary.empty()) {
    std::fprintf(stderr, "tj-bench-checkpoint: pass --ps-binary (path to tj-ps)\n");
    return 2;
  }
  auto fail = [](const std::string& what, const absl::Status& status) {
    std::fprintf(stderr, "tj-bench-checkpoint: %s: %s\n", what.c_str(), status.ToString().c_str());
    return 1;
  };
  if (FindOnPath("dd").empty()) {
    return fail("baseline", absl::NotFoundError("dd not found on PATH (coreutils)"));
  }
  json machine = MachineDescription();
  machine["build_type"] = TJ_BENCH_BUILD_TYPE;

  std::error_code ec;
  std::filesystem::create_directories(config.dir, ec);
  std::string pattern = (std::filesystem::path(config.dir) / "tj-bench-checkpoint-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return fail("directory", absl::InternalError(absl::StrCat("cannot create ", pattern)));
  }
  const std::string work = pattern;
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code e;
      if (!keep) std::filesystem::remove_all(dir, e);
    }
  } cleanup{work, config.keep};
  const std::string shard_path = work + "/ps-0-of-1.state";
  const std::string dd_path = work + "/dd.bin";
  const std::string fs_type = FileSystemType(work);

  auto process = WorkerProcess::Start(config.ps_binary, 0, config.ps_log);
  if (!process.ok()) return fail("starting tj-ps", process.status());
  const WorkerProcess& ps_process = **process;
  PsClientOptions client_options;
  client_options.rpc_timeout = absl::Minutes(10);
  auto ps = PsClient::Connect(ps_process.address(), 0, client_options);
  if (auto health = ps->WaitForHealth(absl::Seconds(30)); !health.ok()) {
    return fail("tj-ps health", health.status());
  }
  int64_t num_variables = 0;
  const auto populate_start = Clock::now();
  if (absl::Status s = PopulateState(config, *ps, num_variables); !s.ok()) {
    return fail("filling the PS", s);
  }
  const double populate_s = SecondsSince(populate_start);

  std::printf(
      "Checkpoint write and restore (tj-bench-checkpoint): one tj-ps at %s holding %lld MiB "
      "dense (%lld variables) + a dim-%d table of %lld rows; %d CPUs, load %s\n",
      ps_process.address().c_str(), static_cast<long long>(config.dense_mib),
      static_cast<long long>(num_variables), kDim, static_cast<long long>(config.table_rows),
      machine["nproc"].get<int>(), LoadAverage().c_str());
  std::printf("  directory %s (%s); state created in %.1f s\n\n", work.c_str(), fs_type.c_str(),
              populate_s);
  std::fflush(stdout);

  // Write: SaveShard + digest and dd, alternating which goes first.
  std::vector<Rep> reps(static_cast<size_t>(config.reps));
  int64_t shard_bytes = 0;
  int64_t records = 0;
  std::string dd_write_line, dd_read_line;
  int64_t dd_mib = 0;
  auto save = [&](Rep& rep) -> absl::Status {
    std::filesystem::remove(shard_path, ec);
    const double cpu0 = ps_process.CpuSeconds();
    const auto start = Clock::now();
    auto saved = ps->SaveShard(shard_path);
    if (!saved.ok()) return saved.status();
    rep.save_s = SecondsSince(start);
    rep.save_ps_cpu_s = ps_process.CpuSeconds() - cpu0;
    const auto digest_start = Clock::now();
    auto digest = ComputeFileDigest(shard_path);
    if (!digest.ok()) return digest.status();
    rep.digest_s = SecondsSince(digest_start);
    if (static_cast<int64_t>(digest->bytes) != saved->bytes()) {
      return absl::DataLossError(absl::StrCat("SaveShard reported ", saved->bytes(),
                                              " bytes, the file has ", digest->bytes));
    }
    shard_bytes = saved->bytes();
    records = saved->records();
    return absl::OkStatus();
  };
  auto dd_write = [&](Rep& rep) -> absl::Status {
    std::filesystem::remove(dd_path, ec);
    dd_mib = (shard_bytes + (int64_t{1} << 20) - 1) >> 20;
    // The shard's own bytes (in the page cache: just written, or read back for its digest).
    auto r = RunCommand({"dd", "if=" + shard_path, "of=" + dd_path, "bs=1M", "conv=fsync"},
                        /*capture_stderr=*/true);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      return absl::InternalError(absl::StrCat("dd write exited ", r->exit_code, ": ", r->output));
    }
    rep.dd_write_s = r->seconds;
    dd_write_line = LastLine(r->output);
    return absl::OkStatus();
  };
  for (int i = 0; i < config.reps; ++i) {
    Rep& rep = reps[static_cast<size_t>(i)];
    const bool save_first = i % 2 == 0;  // the first save tells dd the size
    if (absl::Status s = save_first ? save(rep) : dd_write(rep); !s.ok()) {
      return fail(save_first ? "save" : "dd write", s);
    }
    if (absl::Status s = save_first ? dd_write(rep) : save(rep); !s.ok()) {
      return fail(save_first ? "dd write" : "save", s);
    }
  }

  // Restore and the dd read of the same size, alternating likewise.
  auto restore = [&](Rep& rep) -> absl::Status {
    if (config.cold) DropFromPageCache(shard_path);
    rep.shard_cached_before_restore = CachedFraction(shard_path);
    const std::string pid = std::to_string(ps_process.pid());
    const bool peak_reset = ResetPeakRss(ps_process.pid());
    rep.restore_rss_before = ProcStatusBytes(pid, "VmRSS");
    const double cpu0 = ps_process.CpuSeconds();
    const auto start = Clock::now();
    auto restored = ps->RestoreShard(shard_path);
    if (!restored.ok()) return restored.status();
    rep.restore_s = SecondsSince(start);
    rep.restore_ps_cpu_s = ps_process.CpuSeconds() - cpu0;
    if (peak_reset) rep.restore_peak_rss = ProcStatusBytes(pid, "VmHWM");
    const int64_t tables = config.table_rows > 0 ? 1 : 0;
    if (restored->num_variables() != num_variables || restored->num_tables() != tables ||
        restored->num_rows() != config.table_rows) {
      return absl::DataLossError(absl::StrCat("restore gave ", restored->num_variables(),
                                              " variables, ", restored->num_tables(), " tables, ",
                                              restored->num_rows(), " rows"));
    }
    return absl::OkStatus();
  };
  auto dd_read = [&](Rep& rep) -> absl::Status {
    if (config.cold) DropFromPageCache(dd_path);
    rep.dd_cached_before_read = CachedFraction(dd_path);
    auto r = RunCommand({"dd", "if=" + dd_path, "of=/dev/null", "bs=1M"},
                        /*capture_stderr=*/true);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      return absl::InternalError(absl::StrCat("dd read exited ", r->exit_code, ": ", r->output));
    }
    rep.dd_read_s = r->seconds;
    dd_read_line = LastLine(r->output);
    return absl::OkStatus();
  };
  for (int i = 0; i < config.reps; ++i) {
    Rep& rep = reps[static_cast<size_t>(i)];
    const bool restore_first = i % 2 == 0;
    if (absl::Status s = restore_first ? restore(rep) : dd_read(rep); !s.ok()) {
      return fail(restore_first ? "restore" : "dd read", s);
    }
    if (absl::Status s = restore_first ? dd_read(rep) : restore(rep); !s.ok()) {
      return fail(restore_first ? "dd read" : "restore", s);
    }
  }

  const double shard_mib = static_cast<double>(shard_bytes) / kMiB;
  const double dd_bytes_mib = static_cast<double>(dd_mib);
  auto rates = [&](auto seconds_of, double mib) {
    std::vector<double> out;
    for (const Rep& rep : reps) out.push_back(mib / seconds_of(rep));
    return out;
  };
  const auto save_rates = rates([](const Rep& r) { return r.save_s; }, shard_mib);
  const auto digest_rates = rates([](const Rep& r) { return r.digest_s; }, shard_mib);
  const auto checkpoint_rates =
      rates([](const Rep& r) { return r.save_s + r.digest_s; }, shard_mib);
  const auto dd_write_rates = rates([](const Rep& r) { return r.dd_write_s; }, dd_bytes_mib);
  const auto restore_rates = rates([](const Rep& r) { return r.restore_s; }, shard_mib);
  const auto dd_read_rates = rates([](const Rep& r) { return r.dd_read_s; }, dd_bytes_mib);
  const double save_mib_s = Median(save_rates);
  const double digest_mib_s = Median(digest_rates);
  const double checkpoint_mib_s = Median(checkpoint_rates);
  const double dd_write_mib_s = Median(dd_write_rates);
  const double restore_mib_s = Median(restore_rates);
  const double dd_read_mib_s = Median(dd_read_rates);
  std::vector<double> save_cpu, restore_cpu, shard_cached, dd_cached, rss_before, peak_rss;
  for (const Rep& rep : reps) {
    rss_before.push_back(static_cast<double>(rep.restore_rss_before) / kMiB);
    peak_rss.push_back(static_cast<double>(rep.restore_peak_rss) / kMiB);
    save_cpu.push_back(rep.save_ps_cpu_s / rep.save_s);
    restore_cpu.push_back(rep.restore_ps_cpu_s / rep.restore_s);
    shard_cached.push_back(rep.shard_cached_before_restore);
    dd_cached.push_back(rep.dd_cached_before_read);
  }

  std::printf("Shard file: %.1f MiB, %lld records; dd: %lld MiB copied from it, bs=1M\n", shard_mib,
              static_cast<long long>(records), static_cast<long long>(dd_mib));
  std::printf("  %-48s %10s %10s %10s %9s\n", "", "MiB/s", "best", "worst", "vs dd");
  auto line = [&](const char* label, const std::vector<double>& r, double baseline) {
    const std::string ratio =
        baseline > 0 ? absl::StrFormat("%8.1f%%", 100 * Median(r) / baseline) : "        -";
    std::printf("  %-48s %10.1f %10.1f %10.1f %9s\n", label, Median(r),
                *std::max_element(r.begin(), r.end()), *std::min_element(r.begin(), r.end()),
                ratio.c_str());
  };
  std::printf("Write (median of %d, alternating with dd)\n", config.reps);
  line("dd if=<shard> bs=1M conv=fsync (baseline)", dd_write_rates, 0);
  line("SaveShard + ComputeFileDigest (a checkpoint)", checkpoint_rates, dd_write_mib_s);
  line("  SaveShard alone (RPC, PS writes + fsyncs)", save_rates, dd_write_mib_s);
  line("  ComputeFileDigest alone (reads it back)", digest_rates, 0);
  std::printf("Restore (median of %d, alternating with dd)\n", config.reps);
  line("dd of=/dev/null bs=1M (baseline)", dd_read_rates, 0);
  line("RestoreShard (RPC, PS reads + rebuilds state)", restore_rates, dd_read_mib_s);
  std::printf(
      "  page cache before each read (%s): shard file %.0f%%, dd.bin %.0f%% cached (median)\n",
      config.cold ? "both files dropped with fadvise DONTNEED" : "nothing dropped",
      100 * Median(shard_cached), 100 * Median(dd_cached));
  std::printf("  PS CPU busy during save %.0f%%, during restore %.0f%% of one CPU (median)\n",
              100 * Median(save_cpu), 100 * Median(restore_cpu));
  // The PS holds the state when each restore starts: what the restore adds on top of it. The first
  // restore shows it best: later ones start with what earlier ones freed and the process kept.
  std::printf("  PS memory, resident before -> peak during each restore (MiB; shard %.0f MiB):",
              shard_mib);
  for (size_t i = 0; i < reps.size(); ++i) {
    std::printf("%s %.0f -> %.0f", i == 0 ? "" : ",", rss_before[i], peak_rss[i]);
  }
  std::printf("\n\n");

  const double write_ratio = checkpoint_mib_s / dd_write_mib_s;
  const double restore_ratio = restore_mib_s / dd_read_mib_s;
  std::printf("Targets\n");
  std::printf("  checkpoint write >= %.0f%% of dd write: %s (%.1f%%; SaveShard alone %.1f%%)\n",
              100 * kTargetFractionOfDd, write_ratio >= kTargetFractionOfDd ? "MET" : "MISSED",
              100 * write_ratio, 100 * save_mib_s / dd_write_mib_s);
  std::printf("  restore >= %.0f%% of dd read: %s (%.1f%%)\n", 100 * kTargetFractionOfDd,
              restore_ratio >= kTargetFractionOfDd ? "MET" : "MISSED", 100 * restore_ratio);
  if (config.quick) std::printf("  (--quick: small state, few reps; not meaningful)\n");

  if (!config.json_path.empty()) {
    json out;
    out["benchmark"] = "checkpoint";
    out["machine"] = machine;
    out["machine"]["loadavg_at_end"] = LoadAverage();
    out["config"] = {{"dense_mib", config.dense_mib},
                     {"variable_mib", config.variable_mib},
                     {"table_rows", config.table_rows},
                     {"dim", kDim},
                     {"reps", config.reps},
                     {"quick", config.quick},
                     {"cold", config.cold}};
    out["directory"] = {{"path", work}, {"filesystem", fs_type}, {"kept", config.keep}};
    out["shard"] = {{"bytes", shard_bytes}, {"records", records}, {"variables", num_variables}};
    json reps_json = json::array();
    for (const Rep& rep : reps) {
      reps_json.push_back(
          {{"save_s", rep.save_s},
           {"digest_s", rep.digest_s},
           {"dd_write_s", rep.dd_write_s},
           {"restore_s", rep.restore_s},
           {"dd_read_s", rep.dd_read_s},
           {"save_ps_cpu_s", rep.save_ps_cpu_s},
           {"restore_ps_cpu_s", rep.restore_ps_cpu_s},
           {"shard_cached_fraction_before_restore", rep.shard_cached_before_restore},
           {"dd_cached_fraction_before_read", rep.dd_cached_before_read},
           {"restore_rss_before", rep.restore_rss_before},
           {"restore_peak_rss", rep.restore_peak_rss}});
    }
    out["reps"] = reps_json;
    out["write"] = {
        {"dd_mib_s", dd_write_mib_s},      {"dd_mib", dd_mib},
        {"dd_last_line", dd_write_line},   {"checkpoint_mib_s", checkpoint_mib_s},
        {"save_shard_mib_s", save_mib_s},  {"digest_mib_s", digest_mib_s},
        {"checkpoint_vs_dd", write_ratio}, {"save_shard_vs_dd", save_mib_s / dd_write_mib_s}};
    out["restore"] = {{"dd_mib_s", dd_read_mib_s},
                      {"dd_last_line", dd_read_line},
                      {"restore_shard_mib_s", restore_mib_s},
                      {"restore_vs_dd", restore_ratio},
                      {"shard_cached_fraction_median", Median(shard_cached)},
                      {"dd_cached_fraction_median", Median(dd_cached)},
                      {"ps_rss_before_mib_median", Median(rss_before)},
                      {"ps_peak_rss_mib_median", Median(peak_rss)}};
    out["targets"] = json::array({{{"name", "checkpoint_write_vs_dd"},
                                   {"target", kTargetFractionOfDd},
                                   {"value", write_ratio},
                                   {"met", write_ratio >= kTargetFractionOfDd}},
                                  {{"name", "restore_vs_dd_read"},
                                   {"target", kTargetFractionOfDd},
                                   {"value", restore_ratio},
                                   {"met", restore_ratio >= kTargetFractionOfDd}}});
    if (!WriteJsonFile(config.json_path, out, "tj-bench-checkpoint")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{
      "tj-bench-checkpoint: checkpoint save (+ digest) and restore bandwidth of a real tj-ps, "
      "with dd on the same directory measured in the same run"};
  app.add_option("--dense-mib", config.dense_mib, "MiB of dense variables on the PS")
      ->capture_default_str();
  app.add_option("--variable-mib", config.variable_mib, "MiB per dense variable")
      ->capture_default_str();
  app.add_option("--table-rows", config.table_rows, "rows of the dim-16 embedding table (0: none)")
      ->capture_default_str();
  app.add_option("--reps", config.reps, "repetitions (median reported)")->capture_default_str();
  app.add_option("--dir", config.dir,
                 "a fresh directory is made in this one for the shard and dd files")
      ->capture_default_str();
  app.add_flag("--keep", config.keep, "keep the files afterwards");
  app.add_flag("--cold", config.cold,
               "evict the shard file and dd.bin from the page cache before each read (fadvise "
               "DONTNEED on those files only), so restore and dd both read the disk");
  app.add_option("--json", config.json_path, "write the results as JSON to this path");
  app.add_option("--ps-binary", config.ps_binary, "path to tj-ps")->capture_default_str();
  app.add_option("--ps-log", config.ps_log, "where tj-ps's log goes (default /dev/null)");
  app.add_flag("--quick,--smoke", config.quick,
               "seconds: 16 MiB and 65536 rows, 2 reps; the figures are not meaningful");
  CLI11_PARSE(app, argc, argv);
  if (config.dense_mib < 1 || config.variable_mib < 1 || config.table_rows < 0 || config.reps < 1) {
    std::fprintf(stderr,
                 "tj-bench-checkpoint: --dense-mib, --variable-mib and --reps must be positive\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  return tj::bench::Run(std::move(config));
}
