#include "generate/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "sampling/sampler.h"

namespace tern {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

int64_t context_of(const Model& model, const GenerationOptions& options) {
    return options.context_length > 0 ? options.context_length : model.hparams().context_length;
}

Status check_request(const Model& model, const std::vector<int32_t>& prompt, const GenerationOptions& options) {
    const int64_t context = context_of(model, options);
    if (prompt.empty()) return invalid_argument("the prompt is empty; give at least one token");
    if (static_cast<int64_t>(prompt.size()) >= context) {
        return invalid_argument(fmt::format("the prompt has {} tokens but the context holds {}; shorten it",
                                            prompt.size(), context));
    }
    if (options.max_new_tokens < 0) return invalid_argument("the number of tokens to generate must be >= 0");
    if (options.prefill_chunk <= 0) return invalid_argument("the prefill chunk must be positive");
    return options.sampling.validate();
}

}  // namespace

Result<GenerationResult> generate(Model& model, ThreadPool& pool, const std::vector<int32_t>& prompt,
                                  const GenerationOptions& options, const TokenCallback& on_token) {
    TERN_RETURN_IF_ERROR(check_request(model, prompt, options));
    const HParams& hp = model.hparams();
    const int64_t num_prompt = static_cast<int64_t>(prompt.size());
    const int64_t max_tokens = std::min(context_of(model, options), num_prompt + options.max_new_tokens);
    KvCache cache(hp, 1, max_tokens);
    Sampler sampler(options.sampling, static_cast<int32_t>(hp.vocab_size));
    sampler.accept_prompt(prompt);

    GenerationResult result;
    result.kv_cache_bytes = cache.num_bytes();
    TokenBatch batch;
    std::vector<float> logits;
    const auto prefill_start = std::chrono::steady_clock::now();
    for (int64_t begin = 0; begin < num_prompt; begin += options.prefill_chunk) {
        const int64_t end = std::min(num_prompt, begin + options.prefill_chunk);
        batch.clear();
        for (int64_t idx = begin; idx < end; ++idx) {
            batch.add(prompt[static_cast<size_t>(idx)], static_cast<int32_t>(idx), 0, idx + 1 == num_prompt);
        }
        TERN_RETURN_IF_ERROR(model.forward(batch, &cache, &pool, &logits));
    }
    result.prefill_ms = elapsed_ms(prefill_start);

    const auto decode_start = std::chrono::steady_clock::now();
    result.finish_reason = "length";
    for (int64_t position = num_prompt; position < max_tokens; ++position) {
        const int32_t token = sampler.sample(logits.data());
        sampler.accept(token);
        result.tokens.push_back(token);
        const bool stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) !=
                          options.stop_tokens.end();
        if ((on_token && !on_token(token)) || stop) {
            if (stop) result.finish_reason = "stop";
            break;
        }
        if (position + 1 == max_tokens) break;  // the last token needs no forward pass
        batch.clear();
        batch.add(token, static_cast<int32_t>(position), 0, true);
        TERN_RETURN_IF_ERROR(model.forward(batch, &cache, &pool, &logits));
    }
    result.decode_ms = elapsed_ms(decode_start);
    return result;
}

}  // namespace tern
