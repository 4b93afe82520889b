// Strict number parsing for the text readers: the whole cell must be one finite number (spaces
// around it allowed), so "1.5x", "", "nan" and "inf" are errors rather than silently read values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tj::train {

std::string_view TrimSpaces(std::string_view text);

// A finite float, e.g. "3", "-0.25", "1e-3", "+2". False otherwise.
bool ParseFloat(std::string_view text, float& value);

// A non-negative or negative integer without fraction, e.g. "42", "+1", "-1". False otherwise.
bool ParseInt64(std::string_view text, int64_t& value);

// A class label: an integer, also written as a float with no fraction ("3", "3.0", "+1", "-1").
bool ParseIntegralLabel(std::string_view text, int64_t& value);

// The cell as it appears in error messages: quoted, cut at 40 characters.
std::string QuoteCell(std::string_view text);

}  // namespace tj::train
