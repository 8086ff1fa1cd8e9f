// What `tern doctor` concludes: a model's expected decode speed from the measured read bandwidth alone (a decode
// step streams the matrices a token uses, so bytes per token / bandwidth bounds it), how many full contexts fit, and
// warnings that each say what to change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/machine_facts.h"

namespace tern::doctor {

struct ModelNeeds {
    std::string path;
    int64_t weight_bytes = 0;            // held in memory
    int64_t decode_bytes_per_token = 0;  // read by one decode step (a mixture's used experts only)
    int64_t kv_bytes_per_token = 0;      // f16 KV, every layer
    int64_t context_length = 0;
};

struct ModelOutlook {
    double decode_tokens_per_s = 0.0;     // read bandwidth / decode bytes per token
    int64_t contexts_at_default_budget = 0;  // full contexts in tern serve's default KV budget (40% of available)
    int64_t contexts_at_most = 0;         // full contexts in all the memory the weights leave
};

ModelOutlook outlook(const ModelNeeds& needs, double read_bytes_per_s, uint64_t available_bytes);

struct Warning {
    std::string problem;
    std::string fix;
};

std::vector<Warning> warnings_for(const MachineFacts& facts, const std::optional<ModelNeeds>& needs,
                                  const std::optional<ModelOutlook>& outlook);

}  // namespace tern::doctor
