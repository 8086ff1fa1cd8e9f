// Log-probabilities as the OpenAI API reports them: from the raw logits (no penalties, no temperature).
#pragma once

#include <cstdint>

#include "engine/engine.h"

namespace tern::engine {

// `token`'s log_softmax(logits) value and rank, with the `num_top` most likely tokens; the sum in double so that a
// long vocabulary's loses nothing.
TokenLogprobs token_logprobs(const float* logits, int64_t vocab_size, int32_t token, int num_top, Sampler& sampler);

}  // namespace tern::engine
