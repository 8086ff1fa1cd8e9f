// Pieces of the Prometheus text exposition format 0.0.4: name rules, escaping, number formatting and sample lines.
// Pure functions; the Registry assembles whole families from them.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tern::metrics {

// [a-zA-Z_:][a-zA-Z0-9_:]* (the colon is for recording rules and vLLM-style `vllm:` / `tern:` prefixes).
bool is_valid_metric_name(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus itself).
bool is_valid_label_name(std::string_view name);

// Label values escape backslash, double quote and newline; HELP text escapes backslash and newline only.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);

// "+Inf", "-Inf", "NaN"; integral values below 2^53 in magnitude as plain integers ("42", never "4.2e+01");
// anything else as the shortest text that reads back to the same double ("0.1", "1e+20").
std::string format_value(double value);

// Appends `name{label="value",...,le="bound"} value\n`. `label_values` pairs with `label_names`; `le` is appended
// last when non-empty (histogram buckets); braces are omitted when there are no labels at all.
void append_sample(std::string& out, std::string_view name, std::span<const std::string> label_names,
                   std::span<const std::string> label_values, std::string_view le, double value);

}  // namespace tern::metrics
