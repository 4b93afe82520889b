#include "coordinator/checkpoint/manifest.h"

#include <algorithm>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/base/json_depth.h"
#include "coordinator/checkpoint/crc32c.h"

namespace tj {
namespace {

using Json = nlohmann::json;

// Keys of the top-level object.
constexpr char kFormatVersionKey[] = "format_version";
constexpr char kStepKey[] = "step";
constexpr char kCreatedTimeKey[] = "created_time";
constexpr char kStateKey[] = "state";
constexpr char kShardsKey[] = "shards";
constexpr char kChecksumKey[] = "manifest_crc32c";
// Of a shard entry: absent for a file of the checkpoint itself.
constexpr char kCheckpointStepKey[] = "checkpoint_step";

constexpr size_t kMaxShardNameBytes = 200;

// The checksum covers the compact dump of every other field. nlohmann's objects are ordered by key
// and its number output round-trips, so parsing and dumping again reproduces the same bytes.
uint32_t BodyChecksum(const Json& body) { return crc32c::Value(body.dump()); }

absl::Status Bad(std::string_view what) {
  return absl::DataLossError(absl::StrCat("MANIFEST.json: ", std::string(what)));
}

// A file of another checkpoint must be of an earlier one: a chain of deltas only reaches back.
absl::Status CheckEarlierStep(const ManifestShard& shard, int64_t step) {
  if (shard.checkpoint_step != -1 && (shard.checkpoint_step < 0 || shard.checkpoint_step >= step)) {
    return absl::DataLossError(absl::StrCat("shard \"", shard.name, "\" of checkpoint step ",
                                            shard.checkpoint_step, " is not of a step before ",
                                            step));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckShardName(std::string_view name) {
  const auto fail = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard name \"", std::string(name.substr(0, 64)), "\": ", std::string(why)));
  };
  if (name.empty()) return fail("empty");
  if (name.size() > kMaxShardNameBytes) return fail("longer than 200 bytes");
  if (name.front() == '.') return fail("starts with '.'");
  if (name == kManifestFileName) return fail("is the manifest's own name");
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return fail("only letters, digits, '.', '_' and '-' are allowed");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> SerializeManifest(const Manifest& manifest) {
  if (!manifest.state.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint state must be a JSON object, got ", manifest.state.type_name()));
  }
  // The state is one level down in the manifest; what is written must read back.
  if (JsonValueNestsDeeperThan(manifest.state, kMaxManifestDepth - 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint state nests deeper than ", kMaxManifestDepth - 1, " levels"));
  }
  Json shards = Json::array();
  std::set<std::pair<int64_t, std::string_view>> seen;
  for (const ManifestShard& shard : manifest.shards) {
    if (absl::Status status = CheckShardName(shard.name); !status.ok()) return status;
    if (absl::Status status = CheckEarlierStep(shard, manifest.step); !status.ok()) {
      return absl::InvalidArgumentError(status.message());
    }
    if (!seen.insert({shard.checkpoint_step, shard.name}).second) {
      return absl::InvalidArgumentError(absl::StrCat("shard \"", shard.name, "\" listed twice"));
    }
    Json entry = {
        {"name", shard.name}, {"bytes", shard.digest.bytes}, {"crc32c", shard.digest.crc32c}};
    if (shard.checkpoint_step >= 0) entry[kCheckpointStepKey] = shard.checkpoint_step;
    shards.push_back(std::move(entry));
  }
  const bool chained = std::any_of(manifest.shards.begin(), manifest.shards.end(),
                                  [](const ManifestShard& s) { return s.checkpoint_step >= 0; });
  Json body = {{kFormatVersionKey, chained ? kManifestFormatVersion : kPlainManifestFormatVersion},
               {kStepKey, manifest.step},
               {kCreatedTimeKey, manifest.created_time},
               {kStateKey, manifest.state},
               {kShardsKey, std::move(shards)}};
  try {
    const uint32_t checksum = BodyChecksum(body);
    body[kChecksumKey] = checksum;
    return body.dump(2) + "\n";
  } catch (const Json::exception& e) {
    // dump() refuses strings that are not UTF-8.
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint state cannot be written as JSON: ", e.what()));
  }
}

absl::StatusOr<Manifest> ParseManifest(std::string_view text) {
  // Checked before parsing: computing the checksum walks the whole value, one level per frame.
  if (JsonTextNestsDeeperThan(text, kMaxManifestDepth)) {
    return Bad(absl::StrCat("nested deeper than ", kMaxManifestDepth, " levels"));
  }
  Json body;
  try {
    body = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return Bad(absl::StrCat("not valid JSON (truncated?): ", e.what()));
  }
  if (!body.is_object()) return Bad("not a JSON object");
  const auto checksum = body.find(kChecksumKey);
  if (checksum == body.end() || !checksum->is_number_unsigned()) {
    return Bad(absl::StrCat("missing \"", kChecksumKey, "\""));
  }
  const uint64_t expected = checksum->get<uint64_t>();
  body.erase(checksum);
  const uint32_t actual = BodyChecksum(body);
  if (expected != actual) {
    return Bad(absl::StrFormat("content checksum mismatch: expected 0x%08x, actual 0x%08x",
                               expected, actual));
  }
  // The checksum matched, so what follows only fails for a file another program wrote.
  const auto version = body.find(kFormatVersionKey);
  if (version == body.end() || !version->is_number_integer()) {
    return Bad(absl::StrCat("missing \"", kFormatVersionKey, "\""));
  }
  const int64_t format_version = version->get<int64_t>();
  if (format_version < kPlainManifestFormatVersion || format_version > kManifestFormatVersion) {
    return Bad(absl::StrCat("format version ", format_version, " is not supported (this ",
                            "build reads versions ", kPlainManifestFormatVersion, " to ",
                            kManifestFormatVersion, ")"));
  }
  Manifest manifest;
  const auto step = body.find(kStepKey);
  const auto created = body.find(kCreatedTimeKey);
  const auto state = body.find(kStateKey);
  const auto shards = body.find(kShardsKey);
  if (step == body.end() || !step->is_number_integer()) return Bad("\"step\" is not an integer");
  if (created == body.end() || !created->is_string()) return Bad("\"created_time\" is missing");
  if (state == body.end() || !state->is_object()) return Bad("\"state\" is not an object");
  if (shards == body.end() || !shards->is_array()) return Bad("\"shards\" is not an array");
  manifest.step = step->get<int64_t>();
  manifest.created_time = created->get<std::string>();
  manifest.state = std::move(*state);
  for (size_t i = 0; i < shards->size(); ++i) {
    const Json& entry = (*shards)[i];
    const std::string where = absl::StrCat("shards[", i, "]");
    if (!entry.is_object()) return Bad(absl::StrCat(where, " is not an object"));
    const auto name = entry.find("name");
    const auto bytes = entry.find("bytes");
    const auto crc = entry.find("crc32c");
    if (name == entry.end() || !name->is_string() || bytes == entry.end() ||
        !bytes->is_number_unsigned() || crc == entry.end() || !crc->is_number_unsigned() ||
        crc->get<uint64_t>() > UINT32_MAX) {
      return Bad(
          absl::StrCat(where, " needs a string \"name\" and unsigned \"bytes\", \"crc32c\""));
    }
    ManifestShard shard{name->get<std::string>(),
                        {bytes->get<uint64_t>(), static_cast<uint32_t>(crc->get<uint64_t>())}};
    if (const auto earlier = entry.find(kCheckpointStepKey); earlier != entry.end()) {
      if (!earlier->is_number_integer()) {
        return Bad(absl::StrCat(where, ": \"", kCheckpointStepKey, "\" is not an integer"));
      }
      shard.checkpoint_step = earlier->get<int64_t>();
      if (shard.checkpoint_step < 0) {
        return Bad(absl::StrCat(where, ": \"", kCheckpointStepKey, "\" is negative"));
      }
    }
    if (absl::Status status = CheckShardName(shard.name); !status.ok()) {
      return Bad(absl::StrCat(where, ": ", status.message()));
    }
    if (absl::Status status = CheckEarlierStep(shard, manifest.step); !status.ok()) {
      return Bad(absl::StrCat(where, ": ", status.message()));
    }
    manifest.shards.push_back(std::move(shard));
  }
  if (format_version == kPlainManifestFormatVersion &&
      std::any_of(manifest.shards.begin(), manifest.shards.end(),
                  [](const ManifestShard& s) { return s.checkpoint_step >= 0; })) {
    return Bad(absl::StrCat("format version ", format_version,
                            " lists files of earlier checkpoints (only version ",
                            kManifestFormatVersion, " may)"));
  }
  return manifest;
}

}  // namespace tj
