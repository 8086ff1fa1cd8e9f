#include "server/request_record.h"

namespace tern::server {

nlohmann::json request_record(const std::string& endpoint, const Outcome& outcome) {
    const double tpot_ms = outcome.completion_tokens > 1 && outcome.ttft_ms >= 0
                               ? (outcome.total_ms - outcome.ttft_ms) / static_cast<double>(outcome.completion_tokens - 1)
                               : 0.0;
    nlohmann::json record = {{"event", "request"},        {"endpoint", endpoint},
                             {"status", outcome.status},  {"prompt_tokens", outcome.prompt_tokens},
                             {"completion_tokens", outcome.completion_tokens},
                             {"ttft_ms", outcome.ttft_ms}, {"tpot_ms", tpot_ms},
                             {"itl_p50_ms", outcome.itl_p50_ms}, {"itl_p99_ms", outcome.itl_p99_ms},
                             {"itl_max_ms", outcome.itl_max_ms}, {"total_ms", outcome.total_ms},
                             {"finish_reason", outcome.finish_reason}};
    if (!outcome.id.empty()) record["id"] = outcome.id;  // the id the client saw: its timings can be matched to these
    return record;
}

}  // namespace tern::server
