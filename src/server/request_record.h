// The request log's record of one request: endpoint, status, tokens, TTFT, TPOT, inter-token gaps, finish reason and
// the response id. tern serve writes it to stderr as a JSON line and keeps the last ones for the dashboard.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/completion_handler.h"

namespace tern::server {

nlohmann::json request_record(const std::string& endpoint, const Outcome& outcome);

}  // namespace tern::server
