// Single-sequence generation on token ids: prefill the prompt, then sample and decode one token at a time.
// The serving engine (continuous batching over many sequences) is separate; this drives `tern generate` and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "sampling/sampling_params.h"

namespace tern {

struct GenerationOptions {
    int64_t max_new_tokens = 64;       // stop after this many generated tokens
    SamplingParams sampling;           // temperature 0 = greedy
    std::vector<int32_t> stop_tokens;  // generation ends after emitting one of these (e.g. EOS); empty = never
    int64_t prefill_chunk = 512;       // prompt tokens per forward pass, bounding scratch memory
    int64_t context_length = 0;        // prompt + generated tokens at most; 0 = the model's trained context
};

struct GenerationResult {
    std::vector<int32_t> tokens;      // generated ids, including a final stop token if one was emitted
    std::string finish_reason;        // "stop" (a stop token), "length" (max_new_tokens or the context)
    double prefill_ms = 0.0;
    double decode_ms = 0.0;           // from the first sampled token to the last forward pass
    int64_t kv_cache_bytes = 0;
};

// Called with each generated token as soon as it is sampled; return false to stop early.
using TokenCallback = std::function<bool(int32_t token)>;

// Generates after `prompt` (which must not be empty and must fit the model's context).
Result<GenerationResult> generate(Model& model, ThreadPool& pool, const std::vector<int32_t>& prompt,
                                  const GenerationOptions& options, const TokenCallback& on_token = nullptr);

}  // namespace tern
