#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>

namespace tern::engine {

TokenLogprobs token_logprobs(const float* logits, int64_t vocab_size, int32_t token, int num_top, Sampler& sampler) {
    const float max_logit = *std::max_element(logits, logits + vocab_size);
    double total = 0.0;
    int64_t num_above = 0;
    for (int64_t idx = 0; idx < vocab_size; ++idx) {
        total += std::exp(static_cast<double>(logits[idx] - max_logit));
        num_above += logits[idx] > logits[token] ? 1 : 0;
    }
    const double logprob = static_cast<double>(logits[token] - max_logit) - std::log(total);
    return TokenLogprobs{.logprob = static_cast<float>(logprob),
                         .rank = num_above + 1,
                         .top = sampler.top_logprobs(logits, num_top)};
}

}  // namespace tern::engine
