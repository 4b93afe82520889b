// Typed reads out of a manifest's JSON with field-path errors, shared by the decoder and the pod
// template checks. A value of the wrong type is reported once and read as absent, so one bad field
// never hides the problems after it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/field_error.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

// Each returns nullopt (after recording an error at `path`) when `value` has another type. Null is
// never passed in: callers treat null as absent, as the API server does.
std::optional<std::string> ReadString(const nlohmann::json& value, const std::string& path,
                                      FieldErrors& errors);
std::optional<bool> ReadBool(const nlohmann::json& value, const std::string& path,
                             FieldErrors& errors);
std::optional<int64_t> ReadInt64(const nlohmann::json& value, const std::string& path,
                                 FieldErrors& errors);
std::optional<int32_t> ReadInt32(const nlohmann::json& value, const std::string& path,
                                 FieldErrors& errors);
// Entries of the wrong type are reported and left out.
std::optional<std::map<std::string, std::string>> ReadStringMap(const nlohmann::json& value,
                                                                const std::string& path,
                                                                FieldErrors& errors);
std::optional<std::vector<std::string>> ReadStringList(const nlohmann::json& value,
                                                       const std::string& path,
                                                       FieldErrors& errors);
// False (after recording an error) unless `value` is an object / an array.
bool ExpectObject(const nlohmann::json& value, const std::string& path, FieldErrors& errors);
bool ExpectArray(const nlohmann::json& value, const std::string& path, FieldErrors& errors);

// Reads the fields of one schema object; RejectUnknown() then reports every key nobody read.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& value, std::string path, FieldErrors& errors);

  bool is_object() const { return object_ != nullptr; }
  const std::string& path() const { return path_; }
  std::string Path(std::string_view key) const { return ChildPath(path_, key); }
  FieldErrors& errors() { return errors_; }

  // The field's value, marked known; nullptr when absent or null.
  const nlohmann::json* Field(std::string_view key);
  std::optional<std::string> String(std::string_view key);
  std::optional<bool> Bool(std::string_view key);
  std::optional<int64_t> Int64(std::string_view key);
  std::optional<int32_t> Int32(std::string_view key);
  std::optional<std::map<std::string, std::string>> StringMap(std::string_view key);

  void RejectUnknown();

 private:
  const nlohmann::json* object_ = nullptr;
  std::string path_;
  FieldErrors& errors_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace tj::v1alpha1
