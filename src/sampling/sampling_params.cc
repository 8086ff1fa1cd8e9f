#include "sampling/sampling_params.h"

#include <cmath>

#include <fmt/format.h>

namespace tern {

// Comparisons are written so that NaN fails them: `!(x >= 0)` rejects NaN where `x < 0` would let it through.
Status SamplingParams::validate() const {
    if (!(temperature >= 0.0f) || std::isinf(temperature)) {
        return invalid_argument(fmt::format("temperature must be finite and >= 0 (0 means greedy), got {}",
                                            temperature));
    }
    if (top_k < 0) {
        return invalid_argument(fmt::format("top_k must be >= 0 (0 turns it off), got {}", top_k));
    }
    if (!(top_p > 0.0f && top_p <= 1.0f)) {
        return invalid_argument(fmt::format("top_p must be in (0, 1] (1 turns it off), got {}", top_p));
    }
    if (!(min_p >= 0.0f && min_p <= 1.0f)) {
        return invalid_argument(fmt::format("min_p must be in [0, 1] (0 turns it off), got {}", min_p));
    }
    if (!(repetition_penalty > 0.0f) || std::isinf(repetition_penalty)) {
        return invalid_argument(fmt::format("repetition_penalty must be finite and > 0 (1 turns it off), got {}",
                                            repetition_penalty));
    }
    if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
        return invalid_argument(fmt::format("presence_penalty must be in [-2, 2] (0 turns it off), got {}",
                                            presence_penalty));
    }
    if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
        return invalid_argument(fmt::format("frequency_penalty must be in [-2, 2] (0 turns it off), got {}",
                                            frequency_penalty));
    }
    if (penalty_last_n < -1) {
        return invalid_argument(fmt::format(
            "penalty_last_n must be >= -1 (-1 means the whole history, 0 turns repetition_penalty off), got {}",
            penalty_last_n));
    }
    if (min_tokens < 0) return invalid_argument(fmt::format("min_tokens must be >= 0, got {}", min_tokens));
    for (const auto& [token, bias] : logit_bias) {
        if (token < 0) return invalid_argument(fmt::format("logit_bias token id must be >= 0, got {}", token));
        const bool never = std::isinf(bias) && bias < 0.0f;
        if (!never && !(bias >= -100.0f && bias <= 100.0f)) {
            return invalid_argument(fmt::format("logit_bias for token {} must be in [-100, 100] (or -inf: never), "
                                                "got {}", token, bias));
        }
    }
    return Status::ok();
}

}  // namespace tern
