// How a plan is shown: explanation lines that write out each formula with its numbers, a text report, and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/planner.h"

namespace tern::plan {

// One line per formula, in the order the plan computes them.
std::vector<std::string> explain(const Plan& plan);

// The whole plan as one JSON object. Always has weight_bytes, kv_bytes_per_token, kv_bytes_per_request,
// max_concurrent_requests, recommended_concurrent_requests and devices_needed; cost_per_million_output_tokens
// when a device-hour cost was given (null without a throughput estimate).
nlohmann::json plan_json(const Plan& plan);

// The report `tern plan` prints: the formulas, the tables (lengths, concurrency, calibration, what-if), warnings.
std::string plan_text(const Plan& plan);

}  // namespace tern::plan
