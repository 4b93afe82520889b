#include "api/v1alpha1/json_fields.h"

#include <limits>

namespace tj::v1alpha1 {

std::optional<std::string> ReadString(const nlohmann::json& value, const std::string& path,
                                      FieldErrors& errors) {
  if (value.is_string()) return value.get<std::string>();
  errors.push_back(InvalidError(path, value, "must be a string"));
  return std::nullopt;
}

std::optional<bool> ReadBool(const nlohmann::json& value, const std::string& path,
                             FieldErrors& errors) {
  if (value.is_boolean()) return value.get<bool>();
  errors.push_back(InvalidError(path, value, "must be a boolean"));
  return std::nullopt;
}

std::optional<int64_t> ReadInt64(const nlohmann::json& value, const std::string& path,
                                 FieldErrors& errors) {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(value.get<uint64_t>());
    }
  } else if (value.is_number_integer()) {
    return value.get<int64_t>();
  }
  errors.push_back(InvalidError(
      path, value, value.is_number() ? "must be a 64-bit integer" : "must be an integer"));
  return std::nullopt;
}

std::optional<int32_t> ReadInt32(const nlohmann::json& value, const std::string& path,
                                 FieldErrors& errors) {
  const bool fits =
      value.is_number_integer() &&
      (value.is_number_unsigned()
           ? value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
           : value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                 value.get<int64_t>() <= std::numeric_limits<int32_t>::max());
  if (fits) return static_cast<int32_t>(value.get<int64_t>());
  errors.push_back(InvalidError(
      path, value, value.is_number_integer() ? "must be a 32-bit integer" : "must be an integer"));
  return std::nullopt;
}

std::optional<std::map<std::string, std::string>> ReadStringMap(const nlohmann::json& value,
                                                                const std::string& path,
                                                                FieldErrors& errors) {
  if (!ExpectObject(value, path, errors)) return std::nullopt;
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : value.items()) {
    if (auto s = ReadString(v, KeyPath(path, k), errors)) out.emplace(k, *std::move(s));
  }
  return out;
}

std::optional<std::vector<std::string>> ReadStringList(const nlohmann::json& value,
                                                       const std::string& path,
                                                       FieldErrors& errors) {
  if (!ExpectArray(value, path, errors)) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (auto s = ReadString(value[i], IndexPath(path, i), errors)) out.push_back(*std::move(s));
  }
  return out;
}

bool ExpectObject(const nlohmann::json& value, const std::string& path, FieldErrors& errors) {
  if (value.is_object()) return true;
  errors.push_back(InvalidError(path, value, "must be an object"));
  return false;
}

bool ExpectArray(const nlohmann::json& value, const std::string& path, FieldErrors& errors) {
  if (value.is_array()) return true;
  errors.push_back(InvalidError(path, value, "must be a list"));
  return false;
}

ObjectReader::ObjectReader(const nlohmann::json& value, std::string path, FieldErrors& errors)
    : path_(std::move(path)), errors_(errors) {
  if (ExpectObject(value, path_, errors_)) object_ = &value;
}

const nlohmann::json* ObjectReader::Field(std::string_view key) {
  if (object_ == nullptr) return nullptr;
  read_.emplace(key);
  auto it = object_->find(std::string(key));
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::string> ObjectReader::String(std::string_view key) {
  const nlohmann::json* v = Field(key);
  return v ? ReadString(*v, Path(key), errors_) : std::nullopt;
}

std::optional<bool> ObjectReader::Bool(std::string_view key) {
  const nlohmann::json* v = Field(key);
  return v ? ReadBool(*v, Path(key), errors_) : std::nullopt;
}

std::optional<int64_t> ObjectReader::Int64(std::string_view key) {
  const nlohmann::json* v = Field(key);
  return v ? ReadInt64(*v, Path(key), errors_) : std::nullopt;
}

std::optional<int32_t> ObjectReader::Int32(std::string_view key) {
  const nlohmann::json* v = Field(key);
  return v ? ReadInt32(*v, Path(key), errors_) : std::nullopt;
}

std::optional<std::map<std::string, std::string>> ObjectReader::StringMap(std::string_view key) {
  const nlohmann::json* v = Field(key);
  return v ? ReadStringMap(*v, Path(key), errors_) : std::nullopt;
}

void ObjectReader::RejectUnknown() {
  if (object_ == nullptr) return;
  for (const auto& [key, value] : object_->items()) {
    if (!read_.contains(key)) errors_.push_back(UnknownFieldError(Path(key)));
  }
}

}  // namespace tj::v1alpha1
