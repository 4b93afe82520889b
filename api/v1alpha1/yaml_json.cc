#include "api/v1alpha1/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace tj::v1alpha1 {
namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

int Line(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }
int Column(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.column + 1; }

FieldError ErrorAt(const YAML::Node& node, std::string message) {
  return TextError(Line(node.Mark()), Column(node.Mark()), std::move(message));
}

// go-yaml v2's boolean spellings, which kubectl uses.
std::optional<bool> ResolveBool(std::string_view s) {
  for (std::string_view t :
       {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}) {
    if (s == t) return true;
  }
  for (std::string_view f :
       {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}) {
    if (s == f) return false;
  }
  return std::nullopt;
}

bool IsNullSpelling(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::string WithoutUnderscores(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out.push_back(c);
  }
  return out;
}

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// Go's strconv.ParseInt(s, 0, 64) then ParseUint: 0x hex, 0o and leading-0 octal, 0b binary.
// nullopt when s is not an integer or does not fit 64 bits (it may still be a float).
std::optional<nlohmann::json> ResolveInt(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  for (char c : s) {
    const int d = DigitValue(c);
    if (d >= base) return std::nullopt;
    if (magnitude > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
      return std::nullopt;
    }
    magnitude = magnitude * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (negative) {
    constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;
    if (magnitude > kMinMagnitude) return std::nullopt;
    if (magnitude == kMinMagnitude) return nlohmann::json(INT64_MIN);
    return nlohmann::json(-static_cast<int64_t>(magnitude));
  }
  if (magnitude <= static_cast<uint64_t>(INT64_MAX)) {
    return nlohmann::json(static_cast<int64_t>(magnitude));
  }
  return nlohmann::json(magnitude);
}

// go-yaml's float syntax: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsFloatSyntax(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  } else {
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

bool IsNonFiniteSpelling(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return s == ".inf" || s == ".Inf" || s == ".INF" || s == ".nan" || s == ".NaN" || s == ".NAN";
}

class Converter {
 public:
  explicit Converter(FieldErrors& errors) : errors_(errors) {}

  nlohmann::json Convert(const YAML::Node& node, int depth) {
    if (depth > kMaxYamlDepth) {
      Fail(node, absl::StrCat("nested deeper than ", kMaxYamlDepth, " levels"));
      return nullptr;
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        return Scalar(node);
      case YAML::NodeType::Sequence: {
        nlohmann::json array = nlohmann::json::array();
        for (const YAML::Node& item : node) array.push_back(Convert(item, depth + 1));
        return array;
      }
      case YAML::NodeType::Map:
        return Map(node, depth);
    }
    return nullptr;
  }

 private:
  void Fail(const YAML::Node& node, std::string message) {
    errors_.push_back(ErrorAt(node, std::move(message)));
  }

  nlohmann::json Scalar(const YAML::Node& node) {
    const std::string& text = node.Scalar();
    const std::string& tag = node.Tag();
    if (tag == "!") return text;  // quoted or block scalar: always a string
    if (tag == "?" || tag.empty()) return Plain(node, text);
    const std::string_view short_tag =
        tag.starts_with(kTagPrefix) ? std::string_view(tag).substr(kTagPrefix.size()) : "";
    if (short_tag == "str") return text;
    if (short_tag == "null") return nullptr;
    if (short_tag != "int" && short_tag != "float" && short_tag != "bool") {
      Fail(node, absl::StrCat("unsupported YAML tag ", tag));
      return nullptr;
    }
    nlohmann::json value = Plain(node, text);
    const bool matches = (short_tag == "int" && value.is_number_integer()) ||
                         (short_tag == "float" && value.is_number()) ||
                         (short_tag == "bool" && value.is_boolean());
    if (!matches) {
      Fail(node, absl::StrCat("cannot use \"", text, "\" as ", tag));
      return nullptr;
    }
    if (short_tag == "float") return value.get<double>();
    return value;
  }

  nlohmann::json Plain(const YAML::Node& node, const std::string& text) {
    if (IsNullSpelling(text)) return nullptr;
    if (std::optional<bool> b = ResolveBool(text)) return *b;
    const char first = text[0];
    const bool numeric_start =
        first == '+' || first == '-' || first == '.' || (first >= '0' && first <= '9');
    if (!numeric_start) return text;
    if (IsNonFiniteSpelling(text)) {
      Fail(node,
           absl::StrCat("\"", text, "\" is not representable in JSON; quote it for a string"));
      return nullptr;
    }
    const std::string plain = WithoutUnderscores(text);
    if (std::optional<nlohmann::json> i = ResolveInt(plain)) return *i;
    if (IsFloatSyntax(plain)) {
      const double d = std::strtod(plain.c_str(), nullptr);
      if (std::isfinite(d)) return d;
      Fail(node, absl::StrCat("number \"", text, "\" is out of range"));
      return nullptr;
    }
    return text;
  }

  nlohmann::json Map(const YAML::Node& node, int depth) {
    nlohmann::json object = nlohmann::json::object();
    std::map<std::string, int> first_line;
    std::vector<YAML::Node> merges;
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) {
        Fail(key, "a mapping key must be a string");
        continue;
      }
      const std::string& name = key.Scalar();
      if (name == "<<" && key.Tag() == "?") {
        merges.push_back(entry.second);
        continue;
      }
      if (auto it = first_line.find(name); it != first_line.end()) {
        Fail(key, absl::StrCat("duplicate key \"", name, "\" (first at line ", it->second, ")"));
        continue;
      }
      first_line.emplace(name, Line(key.Mark()));
      object[name] = Convert(entry.second, depth + 1);
    }
    // Merge keys (<<: *defaults) fill in only what the mapping does not set itself.
    for (const YAML::Node& merge : merges) {
      std::vector<YAML::Node> sources;
      if (merge.IsSequence()) {
        for (const YAML::Node& s : merge) sources.push_back(s);
      } else {
        sources.push_back(merge);
      }
      for (const YAML::Node& source : sources) {
        if (!source.IsMap()) {
          Fail(merge, "a merge key (<<) needs a mapping or a list of mappings");
          continue;
        }
        nlohmann::json merged = Map(source, depth + 1);
        for (auto& [k, v] : merged.items()) {
          if (!object.contains(k)) object[k] = v;
        }
      }
    }
    return object;
  }

  FieldErrors& errors_;
};

}  // namespace

YamlDocument ParseYamlDocument(std::string_view text) {
  YamlDocument doc;
  // Bounded first: yaml-cpp's node graph and the JSON below grow with every alias expanded.
  if (std::optional<FieldError> crossed = CheckYamlLimits(text)) {
    doc.errors.push_back(*std::move(crossed));
    return doc;
  }
  std::vector<YAML::Node> documents;
  try {
    for (const YAML::Node& d : YAML::LoadAll(std::string(text))) {
      // kubectl skips empty documents ("---" with nothing after it), so do we.
      if (!d.IsNull()) documents.push_back(d);
    }
  } catch (const YAML::Exception& e) {
    doc.errors.push_back(
        TextError(Line(e.mark), Column(e.mark), absl::StrCat("YAML syntax error: ", e.msg)));
    return doc;
  }
  if (documents.empty()) {
    doc.errors.push_back(TextError(0, 0, "no YAML document: the text is empty"));
    return doc;
  }
  if (documents.size() > 1) {
    doc.errors.push_back(ErrorAt(documents[1], absl::StrCat("holds ", documents.size(),
                                                            " YAML documents; expected exactly "
                                                            "one TrainingJob")));
    return doc;
  }
  Converter converter(doc.errors);
  nlohmann::json value = converter.Convert(documents[0], 0);
  if (doc.errors.empty()) doc.value = std::move(value);
  return doc;
}

absl::StatusOr<nlohmann::json> YamlToJson(std::string_view text, std::string_view source_name) {
  YamlDocument doc = ParseYamlDocument(text);
  if (!doc.errors.empty()) {
    return absl::InvalidArgumentError(FormatFieldErrors(source_name, doc.errors));
  }
  return std::move(doc.value);
}

}  // namespace tj::v1alpha1
