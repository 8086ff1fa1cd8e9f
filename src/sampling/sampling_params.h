// Per-request sampling settings, with the defaults and meanings users of llama.cpp and vLLM expect.
// Only the settings and their range checks live here; sampler.h applies them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tern {

// Plain settings struct: every field has a default that turns its stage off (except temperature, which
// defaults to plain sampling at 1.0). Fill it from user input, then call validate() before building a Sampler.
//
// Which tokens count for the penalties follows vLLM:
//   - repetition_penalty looks at prompt and output tokens (limited to the last `penalty_last_n` of them);
//   - presence_penalty and frequency_penalty look at generated (output) tokens only, with no window,
//     as in the OpenAI API.
struct SamplingParams {
    // Divides the logits before softmax: < 1 sharpens, > 1 flattens. 0 means greedy (argmax, ties to the lowest
    // token id); then top_k, top_p, min_p and seed have no effect. Must be >= 0.
    float temperature = 1.0f;

    // Keep only the k most likely tokens (ties to the lowest id). 0 turns it off. Must be >= 0.
    int32_t top_k = 0;

    // Nucleus sampling: keep the smallest set of most likely tokens whose probability sums to at least top_p
    // (always at least one). 1.0 turns it off. Must be in (0, 1].
    float top_p = 1.0f;

    // Drop tokens whose probability is below min_p times the most likely token's probability. 0 turns it off.
    // Must be in [0, 1].
    float min_p = 0.0f;

    // CTRL-style penalty (Keskar et al. 2019, as in llama.cpp and vLLM) on every token that occurs in the last
    // `penalty_last_n` prompt+output tokens, applied once per token however often it occurred: a positive logit
    // is divided by it, a negative one multiplied. 1.0 turns it off; > 1 discourages repeats. Must be > 0.
    float repetition_penalty = 1.0f;

    // OpenAI semantics: logit -= presence_penalty if the token occurs in the output so far. 0 turns it off.
    // Must be in [-2, 2], the OpenAI range; negative values encourage repeats.
    float presence_penalty = 0.0f;

    // OpenAI semantics: logit -= frequency_penalty * (times the token occurs in the output so far). 0 turns it off.
    // Must be in [-2, 2].
    float frequency_penalty = 0.0f;

    // How many of the most recent prompt+output tokens repetition_penalty looks at. -1 means the whole history,
    // 0 turns repetition_penalty off. Must be >= -1. Does not limit presence/frequency penalties.
    int32_t penalty_last_n = 64;

    // Seeds the sampler's PRNG: the same seed, settings, accepted tokens and logits give the same tokens, on any
    // platform. The default is fixed, so callers that want varied output across requests pick a seed themselves.
    uint64_t seed = 0;

    // OpenAI's logit_bias: (token id, bias) pairs, sparse, added to the raw logits before the penalties (vLLM's
    // order). A bias must be in [-100, 100], or -inf for llama-server's `false` ("never"): such a token is ranked
    // below every other one and is only picked when every token is banned. An id may repeat (the biases add up).
    // Ids must be >= 0 here; that they are inside the vocabulary is the Sampler's precondition.
    std::vector<std::pair<int32_t, float>> logit_bias;

    // vLLM's min_tokens: until this many tokens are generated, the stop tokens given to the Sampler cannot be
    // sampled, so that EOS and stop_token_ids cannot end the request early. 0 turns it off. Must be >= 0.
    int32_t min_tokens = 0;

    // Returns kInvalidArgument naming the first field out of range, its value and the accepted range.
    Status validate() const;
};

}  // namespace tern
