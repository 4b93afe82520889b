// Starting values of dense variables and sparse rows. Random initializers are counter-based:
// element i of the stream keyed by (seed, name[, row id]) depends on nothing else, so a restarted
// PS, or the PS holding another shard of the same variable, produces exactly the same numbers.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// InvalidArgument for an unknown kind, a non-finite parameter, minval > maxval or stddev < 0. The
// message does not name the variable; callers add that.
absl::Status ValidateInitializer(const v1::Initializer& initializer);

// The stream of the variable (or table) `name` under `initializer`'s seed.
uint64_t InitializerStream(const v1::Initializer& initializer, std::string_view name);
// The stream of one sparse row, derived from its table's stream and the id.
uint64_t RowStream(uint64_t table_stream, int64_t id);

// Writes elements [first, first + out.size()) of `stream` into `out`. `initializer` must be valid.
void FillInitialValues(const v1::Initializer& initializer, uint64_t stream, uint64_t first,
                       std::span<float> out);

}  // namespace tj
