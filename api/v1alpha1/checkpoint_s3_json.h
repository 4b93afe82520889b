// spec.checkpoint.s3 in and out of JSON, its defaults and its rules, with the rules an s3://
// spec.checkpoint.dir must meet (docs/trainingjob-schema.md, "Checkpoints in object storage");
// called from decode.cc, encode.cc, defaults.cc and validation.cc for the checkpoint section.
#pragma once

#include <string>
#include <string_view>

#include "api/v1alpha1/checkpoint_s3.h"
#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

// Strict, like the rest of the decoder: unknown fields are errors at `path`.
CheckpointS3 DecodeCheckpointS3(const nlohmann::json& value, const std::string& path,
                                FieldErrors& errors);
nlohmann::json CheckpointS3ToJson(const CheckpointS3& s3);
// region us-east-1; the Secret's keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
void DefaultCheckpointS3(CheckpointS3& s3);
// The object-storage rules of spec.checkpoint: s3 exactly when dir is s3://, a well-formed
// s3://bucket/prefix, not together with volume, an endpoint URL, the Secret's name and keys.
void ValidateCheckpointStorage(const CheckpointSpec& checkpoint, FieldErrors& errors);

// s3://bucket[/prefix][/] as the runtime's ParseS3Location accepts it (bucket of 3-63
// [a-z0-9.-], starting and ending with a letter or digit; prefix parts neither empty, "." nor
// ".."). The CRD's CEL rule uses the same expression (kS3DirPattern).
bool IsValidS3CheckpointDir(std::string_view dir);
inline constexpr char kS3DirPattern[] =
    R"(^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/([^/.][^/]*|[.][^/.][^/]*|[.][.][^/]+))*/?$)";
// http(s)://host[:port][/]: no path (requests are path-style, endpoint/bucket/key), no user info
// (credentials come from the Secret, never from the spec).
bool IsValidS3Endpoint(std::string_view endpoint);
inline constexpr char kS3EndpointPattern[] = R"(^https?://[-A-Za-z0-9._:\[\]]+/?$)";

}  // namespace tj::v1alpha1
