// Units for the planner's inputs and explanation lines. Memory and bandwidth are decimal (GB = 10^9 bytes,
// GB/s = 10^9 bytes/s) so the printed formulas can be checked by hand; GiB is accepted on input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::plan {

inline constexpr double kGB = 1e9;

// "24", "24GB", "24 GiB", "512MiB", "1.5TB" -> bytes. A bare number is GB (10^9 bytes).
Result<int64_t> parse_memory_size(std::string_view text);
// "0.2" or "20%" -> 0.2; must lie in [0, 1).
Result<double> parse_fraction(std::string_view text);

std::string format_bytes(double bytes);                             // "13.48 GB", "524.3 MB", "512 B"
std::string format_rate(double per_second, std::string_view unit);  // "1008 GB/s" style with 3 significant digits
std::string format_count(double value);                             // "6.74 B", "512 M", "4096"
std::string format_ms(double seconds);                              // "18.7 ms", "2.51 s"

}  // namespace tern::plan
