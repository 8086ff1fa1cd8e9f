#include "model_bench/model_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

namespace tern {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<int32_t> random_tokens(int64_t count, int64_t vocab_size, std::mt19937_64& generator) {
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab_size - 1));
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    for (int32_t& token : tokens) token = pick(generator);
    return tokens;
}

// Positions [0, depth) of `slot`: random tokens prefilled in chunks (untimed; only their KV rows matter).
Status fill_context(Model& model, ThreadPool& pool, KvCache& cache, int64_t slot, int64_t depth,
                    std::mt19937_64& generator) {
    constexpr int64_t kChunk = 512;  // bounds the scratch buffers whatever the depth
    const std::vector<int32_t> tokens = random_tokens(depth, model.hparams().vocab_size, generator);
    TokenBatch batch;
    std::vector<float> logits;
    for (int64_t first = 0; first < depth; first += kChunk) {
        batch.clear();
        const int64_t end = std::min(depth, first + kChunk);
        for (int64_t position = first; position < end; ++position) {
            batch.add(tokens[static_cast<size_t>(position)], static_cast<int32_t>(position), static_cast<int32_t>(slot),
                      position + 1 == end);
        }
        TERN_RETURN_IF_ERROR(model.forward(batch, &cache, &pool, &logits));
    }
    return Status::ok();
}

// Seconds to prefill `tokens` into slot 0 after `depth` cached positions, in one forward pass.
Result<double> time_prefill(Model& model, ThreadPool& pool, const ModelBenchOptions& options,
                            const std::vector<int32_t>& tokens, std::mt19937_64& generator) {
    KvCache cache(model.hparams(), 1, options.depth + static_cast<int64_t>(tokens.size()), options.kv_type);
    TERN_RETURN_IF_ERROR(fill_context(model, pool, cache, 0, options.depth, generator));
    TokenBatch batch;
    for (size_t idx = 0; idx < tokens.size(); ++idx) {
        batch.add(tokens[idx], static_cast<int32_t>(options.depth + static_cast<int64_t>(idx)), 0,
                  idx + 1 == tokens.size());
    }
    std::vector<float> logits;
    const Clock::time_point start = Clock::now();
    TERN_RETURN_IF_ERROR(model.forward(batch, &cache, &pool, &logits));
    return seconds_since(start);
}

// Seconds for `steps` decode steps of `num_sequences` sequences together (one token each per step), each after
// `depth` cached positions: slot 0's are prefilled, the other slots get copies of its blocks (the same context;
// attention reads as many keys as with distinct ones).
Result<double> time_decode(Model& model, ThreadPool& pool, const ModelBenchOptions& options, int64_t num_sequences,
                           int64_t steps, std::mt19937_64& generator) {
    KvCache cache(model.hparams(), num_sequences, options.depth + steps, options.kv_type);
    TERN_RETURN_IF_ERROR(fill_context(model, pool, cache, 0, options.depth, generator));
    const int64_t depth_blocks = (options.depth + cache.block_size() - 1) / cache.block_size();
    for (int64_t sequence = 1; sequence < num_sequences; ++sequence) {
        for (int64_t block_idx = 0; block_idx < depth_blocks; ++block_idx) {
            cache.copy_block(cache.slot_block_table(0)[static_cast<size_t>(block_idx)],
                             cache.slot_block_table(sequence)[static_cast<size_t>(block_idx)]);
        }
    }
    const std::vector<int32_t> tokens = random_tokens(num_sequences * steps, model.hparams().vocab_size, generator);
    TokenBatch batch;
    std::vector<float> logits;
    const Clock::time_point start = Clock::now();
    for (int64_t step = 0; step < steps; ++step) {
        batch.clear();
        for (int64_t sequence = 0; sequence < num_sequences; ++sequence) {
            batch.add(tokens[static_cast<size_t>(step * num_sequences + sequence)],
                      static_cast<int32_t>(options.depth + step), static_cast<int32_t>(sequence), true);
        }
        TERN_RETURN_IF_ERROR(model.forward(batch, &cache, &pool, &logits));
    }
    return seconds_since(start);
}

Status check_options(const Model& model, const ModelBenchOptions& options) {
    const int64_t context = model.hparams().context_length;
    if (options.repetitions < 1) return invalid_argument("repetitions must be at least 1");
    if (options.prompt_tokens < 0 || options.prompt_tokens > context) {
        return invalid_argument(fmt::format("the prompt length must be in [0, {}] (the model's context)", context));
    }
    if (options.generated_tokens < 0 || options.generated_tokens > context) {
        return invalid_argument(fmt::format("the generated length must be in [0, {}] (the model's context)", context));
    }
    const int64_t longest = std::max(options.prompt_tokens, options.generated_tokens);
    if (options.depth < 0 || options.depth + longest > context) {
        return invalid_argument(fmt::format("the depth must be in [0, {}]: depth plus the longer of the prompt and "
                                            "generated lengths must fit the model's context of {}",
                                            std::max<int64_t>(0, context - longest), context));
    }
    TERN_RETURN_IF_ERROR(KvCache::check_type(model.hparams(), options.kv_type));
    for (int64_t batch : options.batch_sizes) {
        if (batch < 1 || batch > 1024) return invalid_argument(fmt::format("batch size {} is outside [1, 1024]", batch));
    }
    return Status::ok();
}

}  // namespace

double Measurement::mean() const {
    if (samples.empty()) return 0.0;
    return std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
}

double Measurement::stddev() const {
    if (samples.size() < 2) return 0.0;
    const double average = mean();
    double squares = 0.0;
    for (double sample : samples) squares += (sample - average) * (sample - average);
    return std::sqrt(squares / static_cast<double>(samples.size() - 1));
}

double Measurement::median() const {
    if (samples.empty()) return 0.0;
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    const size_t middle = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2.0;
}

double Measurement::best() const { return samples.empty() ? 0.0 : *std::max_element(samples.begin(), samples.end()); }

Result<ModelBenchResult> bench_model(Model& model, ThreadPool& pool, const ModelBenchOptions& options) {
    TERN_RETURN_IF_ERROR(check_options(model, options));
    std::mt19937_64 generator(options.seed);
    ModelBenchResult result;
    // Warm-up (untimed): faults the weights in and sizes the scratch buffers for the prefill and for decode.
    // --warmup runs it for longer: memory that runs slower for a while after the load (a mixture's experts on 4 KiB
    // pages rose from 103 to 424 prefill tokens/s over 12 s on the 2-vCPU VM; on huge pages they run at speed
    // from the start) can be waited out and told apart from the steady state.
    ModelBenchOptions warm_up = options;
    warm_up.depth = 0;
    const Clock::time_point warm_up_start = Clock::now();
    do {
        if (options.prompt_tokens > 0) {
            const std::vector<int32_t> prompt = random_tokens(options.prompt_tokens, model.hparams().vocab_size, generator);
            TERN_RETURN_IF_ERROR(time_prefill(model, pool, warm_up, prompt, generator).status());
        }
        TERN_RETURN_IF_ERROR(time_decode(model, pool, warm_up, 1, 2, generator).status());
    } while (seconds_since(warm_up_start) < options.warmup_seconds);
    for (int repetition = 0; repetition < options.repetitions; ++repetition) {
        if (options.prompt_tokens > 0) {
            const std::vector<int32_t> prompt = random_tokens(options.prompt_tokens, model.hparams().vocab_size, generator);
            TERN_ASSIGN_OR_RETURN(const double seconds, time_prefill(model, pool, options, prompt, generator));
            result.prefill_tokens_per_s.samples.push_back(static_cast<double>(options.prompt_tokens) / seconds);
        }
        if (options.generated_tokens > 0) {
            TERN_ASSIGN_OR_RETURN(const double seconds,
                                  time_decode(model, pool, options, 1, options.generated_tokens, generator));
            result.decode_tokens_per_s.samples.push_back(static_cast<double>(options.generated_tokens) / seconds);
        }
    }
    for (int64_t batch : options.batch_sizes) {
        Measurement measurement;
        for (int repetition = 0; repetition < options.repetitions && options.generated_tokens > 0; ++repetition) {
            TERN_ASSIGN_OR_RETURN(const double seconds,
                                  time_decode(model, pool, options, batch, options.generated_tokens, generator));
            measurement.samples.push_back(static_cast<double>(batch * options.generated_tokens) / seconds);
        }
        result.batched_tokens_per_s.emplace_back(batch, measurement);
    }
    return result;
}

}  // namespace tern
