#include "api/v1alpha1/load.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/decode.h"
#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/yaml_json.h"
#include "coordinator/base/json_depth.h"

namespace tj::v1alpha1 {
namespace {

struct FileText {
  std::string text;
  int error = 0;  // errno when the file could not be read
  bool too_large = false;
};

FileText ReadFile(const std::string& path) {
  FileText out;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    out.error = EISDIR;
    return out;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out.error = errno != 0 ? errno : ENOENT;
    return out;
  }
  std::ostringstream buffer;
  char chunk[65536];
  std::streamsize total = 0;  // read in chunks: a huge file is refused before it is all read
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    total += in.gcount();
    if (static_cast<size_t>(total) > kMaxManifestBytes) {
      out.too_large = true;
      return out;
    }
    buffer.write(chunk, in.gcount());
  }
  if (in.bad()) {
    out.error = errno != 0 ? errno : EIO;
    return out;
  }
  out.text = std::move(buffer).str();
  return out;
}

absl::StatusOr<TrainingJob> ToStatusOr(CheckedTrainingJob checked, std::string_view source) {
  if (checked.ok()) return *std::move(checked.job);
  return absl::InvalidArgumentError(FormatFieldErrors(source, checked.errors));
}

CheckedTrainingJob CheckFileText(const FileText& file, const ValidationOptions& options) {
  if (file.too_large) {
    return {std::nullopt,
            {TextError(0, 0,
                       absl::StrCat("larger than ", kMaxManifestBytes >> 20,
                                    " MiB: not a TrainingJob manifest"))}};
  }
  if (file.error != 0) {
    return {std::nullopt,
            {TextError(0, 0, absl::StrCat("cannot read: ", std::strerror(file.error)))}};
  }
  return CheckTrainingJobText(file.text, options);
}

}  // namespace

CheckedTrainingJob CheckTrainingJobJson(const nlohmann::json& manifest,
                                        const ValidationOptions& options) {
  CheckedTrainingJob out;
  // Objects from the API server may nest up to 10,000 levels; decoding walks them recursively.
  if (JsonValueNestsDeeperThan(manifest, kMaxYamlDepth)) {
    out.errors.push_back(
        TextError(0, 0, absl::StrCat("nested deeper than ", kMaxYamlDepth, " levels")));
    return out;
  }
  DecodedTrainingJob decoded = DecodeTrainingJob(manifest);
  out.errors = std::move(decoded.errors);
  if (!manifest.is_object()) return out;
  TrainingJob job = WithDefaults(std::move(decoded.job));
  FieldErrors invalid = ValidateTrainingJob(job, options);
  out.errors.insert(out.errors.end(), invalid.begin(), invalid.end());
  if (out.errors.empty()) out.job = std::move(job);
  return out;
}

CheckedTrainingJob CheckTrainingJobText(std::string_view text, const ValidationOptions& options) {
  YamlDocument doc = ParseYamlDocument(text);
  if (!doc.errors.empty()) return {std::nullopt, std::move(doc.errors)};
  return CheckTrainingJobJson(doc.value, options);
}

CheckedTrainingJob CheckTrainingJobFile(const std::string& path, const ValidationOptions& options) {
  return CheckFileText(ReadFile(path), options);
}

absl::StatusOr<TrainingJob> LoadTrainingJobFile(const std::string& path,
                                                const ValidationOptions& options) {
  FileText file = ReadFile(path);
  if (file.error == ENOENT) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot read: ", std::strerror(file.error)));
  }
  return ToStatusOr(CheckFileText(file, options), path);
}

absl::StatusOr<TrainingJob> ParseTrainingJob(std::string_view text, std::string_view source_name,
                                             const ValidationOptions& options) {
  return ToStatusOr(CheckTrainingJobText(text, options), source_name);
}

}  // namespace tj::v1alpha1
