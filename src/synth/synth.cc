#include "synth/synth.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <vector>

#include "formats/gguf_writer.h"
#include "quant/quantize.h"
#include "synth/synth_vocab.h"

namespace tern {
namespace {

uint64_t splitmix64(uint64_t state) {
    state += 0x9e3779b97f4a7c15ull;
    state = (state ^ (state >> 30)) * 0xbf58476d1ce4e5b9ull;
    state = (state ^ (state >> 27)) * 0x94d049bb133111ebull;
    return state ^ (state >> 31);
}

uint64_t hash_name(const std::string& name, uint64_t seed) {
    uint64_t hash = 0xcbf29ce484222325ull ^ seed;
    for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return splitmix64(hash);
}

// Normal(0, stddev) values from a seed, by Box-Muller over splitmix64 draws.
void fill_normal(uint64_t seed, float stddev, float* out, int64_t count) {
    uint64_t state = seed;
    for (int64_t idx = 0; idx < count; idx += 2) {
        state = splitmix64(state);
        const double u1 = (static_cast<double>(state >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
        state = splitmix64(state);
        const double u2 = static_cast<double>(state >> 11) * 0x1.0p-53;
        const double radius = std::sqrt(-2.0 * std::log(u1)) * stddev;
        out[idx] = static_cast<float>(radius * std::cos(2.0 * std::numbers::pi * u2));
        if (idx + 1 < count) out[idx + 1] = static_cast<float>(radius * std::sin(2.0 * std::numbers::pi * u2));
    }
}

// The seed of one row's values in a tensor seeded `tensor_seed`.
uint64_t row_seed(uint64_t tensor_seed, int64_t row_idx) {
    return splitmix64(tensor_seed + static_cast<uint64_t>(row_idx));
}

// predecessor[j]: the token before j in one random cycle through all `count` tokens (Fisher-Yates order).
std::vector<int64_t> random_cycle_predecessors(int64_t count, uint64_t seed) {
    std::vector<int64_t> order(static_cast<size_t>(count));
    for (int64_t idx = 0; idx < count; ++idx) order[static_cast<size_t>(idx)] = idx;
    uint64_t state = hash_name("successor cycle", seed);
    for (int64_t idx = count - 1; idx > 0; --idx) {
        state = splitmix64(state);
        std::swap(order[static_cast<size_t>(idx)], order[static_cast<size_t>(state % static_cast<uint64_t>(idx + 1))]);
    }
    std::vector<int64_t> predecessor(static_cast<size_t>(count));
    for (int64_t idx = 0; idx < count; ++idx) {
        const int64_t next = order[static_cast<size_t>((idx + 1) % count)];
        predecessor[static_cast<size_t>(next)] = order[static_cast<size_t>(idx)];
    }
    return predecessor;
}

class SynthBuilder {
public:
    SynthBuilder(const SynthOptions& options, ThreadPool* pool) : options_(options), pool_(pool) {}

    void matrix(const std::string& name, int64_t row_length, int64_t num_rows, bool is_output = false) {
        rows(name, {row_length, num_rows}, num_rows, synth_tensor_type(options_.weight_type, row_length, is_output));
    }

    // The token embeddings; with SynthOptions::successor_gain, scaled by it.
    void token_embeddings(int64_t dim, int64_t vocab_size, bool tied) {
        const uint64_t seed = hash_name("token_embd.weight", options_.seed);
        rows("token_embd.weight", {dim, vocab_size}, vocab_size, synth_tensor_type(options_.weight_type, dim, tied),
             [seed](int64_t row_idx) { return row_seed(seed, row_idx); },
             options_.successor_gain > 0.0f ? options_.successor_gain : 1.0f);
    }

    // The untied output matrix: random rows, or with SynthOptions::successor_gain, row j = the embedding row of the
    // token before j in a random cycle (before the gain), so that a token's hidden state points at its successor.
    void output_matrix(int64_t dim, int64_t vocab_size) {
        if (options_.successor_gain <= 0.0f) return matrix("output.weight", dim, vocab_size, true);
        const uint64_t seed = hash_name("token_embd.weight", options_.seed);
        const std::vector<int64_t> predecessor = random_cycle_predecessors(vocab_size, options_.seed);
        rows("output.weight", {dim, vocab_size}, vocab_size, synth_tensor_type(options_.weight_type, dim, true),
             [=](int64_t row_idx) { return row_seed(seed, predecessor[static_cast<size_t>(row_idx)]); });
    }

    // `count` matrices of num_rows rows in one 3-D tensor: a mixture of experts' gate, up or down matrices.
    void experts(const std::string& name, int64_t row_length, int64_t num_rows, int64_t count) {
        rows(name, {row_length, num_rows, count}, num_rows * count,
             synth_tensor_type(options_.weight_type, row_length, false));
    }

    // A tensor of num_rows random rows of dims[0] values each.
    void rows(const std::string& name, std::vector<int64_t> dims, int64_t num_rows, DType type) {
        const uint64_t seed = hash_name(name, options_.seed);
        rows(name, std::move(dims), num_rows, type,
             [seed](int64_t row_idx) { return row_seed(seed, row_idx); });
    }

    // The same with each row's values drawn from seed_of_row(row) and multiplied by `scale`.
    void rows(const std::string& name, std::vector<int64_t> dims, int64_t num_rows, DType type,
              std::function<uint64_t(int64_t)> seed_of_row, float scale = 1.0f) {
        const int64_t row_length = dims[0];
        ThreadPool* pool = pool_;
        writer_.add_tensor(name, type, dims, [=](uint8_t* dst) {
            const int64_t stride = row_bytes(type, row_length);
            pool->parallel_for(num_rows, [&](int64_t begin, int64_t end, int) {
                std::vector<float> row(static_cast<size_t>(row_length));
                for (int64_t row_idx = begin; row_idx < end; ++row_idx) {
                    fill_normal(seed_of_row(row_idx), 0.02f * scale, row.data(), row_length);
                    quantize_row(type, row.data(), dst + row_idx * stride, row_length);
                }
            });
        });
    }

    void vector(const std::string& name, std::vector<float> values) {
        const int64_t length = static_cast<int64_t>(values.size());
        writer_.add_tensor(name, DType::kF32, {length}, [values = std::move(values)](uint8_t* dst) {
            std::memcpy(dst, values.data(), values.size() * sizeof(float));
        });
    }

    // 1 + a little noise: a norm's weights, distinct per element so that a wrong one shows in the output.
    void norm_vector(const std::string& name, int64_t length) {
        std::vector<float> values(static_cast<size_t>(length));
        fill_normal(hash_name(name, options_.seed), 0.1f, values.data(), length);
        for (float& value : values) value += 1.0f;
        vector(name, std::move(values));
    }

    void random_vector(const std::string& name, int64_t length) {
        std::vector<float> values(static_cast<size_t>(length));
        fill_normal(hash_name(name, options_.seed), 0.02f, values.data(), length);
        vector(name, std::move(values));
    }

    GgufWriter& writer() { return writer_; }

private:
    SynthOptions options_;
    ThreadPool* pool_;
    GgufWriter writer_;
};

void add_hparams(const ModelPreset& preset, const SynthOptions& options, GgufWriter* writer) {
    const std::string& arch = preset.architecture;
    writer->add_string("general.architecture", arch);
    writer->add_string("general.name", fmt::format("tern synth {} (random weights)", preset.name));
    writer->add_u32("general.file_type", llama_file_type(options.weight_type));
    writer->add_u32(arch + ".context_length", static_cast<uint32_t>(preset.context_length));
    writer->add_u32(arch + ".embedding_length", static_cast<uint32_t>(preset.embedding_dim));
    writer->add_u32(arch + ".block_count", static_cast<uint32_t>(preset.num_layers));
    writer->add_u32(arch + ".feed_forward_length", static_cast<uint32_t>(preset.ffn_dim));
    writer->add_u32(arch + ".attention.head_count", static_cast<uint32_t>(preset.num_heads));
    writer->add_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(preset.num_kv_heads));
    const int64_t head_dim = preset.q_dim() / preset.num_heads;
    writer->add_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(head_dim));
    const bool gemma = arch == "gemma2" || arch == "gemma3";
    if (head_dim != preset.embedding_dim / preset.num_heads || arch == "qwen3" || arch == "qwen3moe" || gemma) {
        writer->add_u32(arch + ".attention.key_length", static_cast<uint32_t>(head_dim));
        writer->add_u32(arch + ".attention.value_length", static_cast<uint32_t>(head_dim));
    }
    writer->add_f32(arch + ".rope.freq_base", preset.rope_freq_base);
    writer->add_f32(arch + ".attention.layer_norm_rms_epsilon", preset.rms_norm_eps);
    writer->add_u32(arch + ".vocab_size", static_cast<uint32_t>(preset.vocab_size));
    if (preset.sliding_window > 0) {
        writer->add_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(preset.sliding_window));
    }
    if (preset.rope_linear_factor > 0.0f) {
        writer->add_string(arch + ".rope.scaling.type", "linear");
        writer->add_f32(arch + ".rope.scaling.factor", preset.rope_linear_factor);
    }
    if (preset.longrope_original_context > 0) {  // as llama.cpp's converter writes Phi-3 128k: no scaling type
        writer->add_u32(arch + ".rope.scaling.original_context_length",
                        static_cast<uint32_t>(preset.longrope_original_context));
        writer->add_f32(arch + ".rope.scaling.attn_factor",
                        longrope_attention_factor(preset.context_length, preset.longrope_original_context));
    }
    if (arch == "gemma2") {  // Gemma 2's config.json values, which llama.cpp's converter writes
        writer->add_f32(arch + ".attn_logit_softcapping", 50.0f);
        writer->add_f32(arch + ".final_logit_softcapping", 30.0f);
    }
    if (preset.num_experts > 0) {
        writer->add_u32(arch + ".expert_count", static_cast<uint32_t>(preset.num_experts));
        writer->add_u32(arch + ".expert_used_count", static_cast<uint32_t>(preset.num_experts_used));
    }
    if (preset.num_experts > 0 && arch != "llama") {  // Mixtral's experts are feed_forward_length wide
        writer->add_u32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(preset.expert_ffn_dim));
        if (preset.shared_expert_ffn_dim > 0) {
            writer->add_u32(arch + ".expert_shared_feed_forward_length",
                            static_cast<uint32_t>(preset.shared_expert_ffn_dim));
        }
    }
}

void add_layer(const ModelPreset& preset, int64_t layer_idx, SynthBuilder* builder) {
    const std::string prefix = fmt::format("blk.{}.", layer_idx);
    const int64_t dim = preset.embedding_dim;
    const int64_t q_dim = preset.q_dim();
    const int64_t kv_dim = preset.kv_dim();
    builder->vector(prefix + "attn_norm.weight", std::vector<float>(static_cast<size_t>(dim), 1.0f));
    if (preset.architecture == "phi3") {  // fused, as Phi-3 checkpoints and llama.cpp's files hold them
        builder->matrix(prefix + "attn_qkv.weight", dim, q_dim + 2 * kv_dim);
        builder->matrix(prefix + "attn_output.weight", q_dim, dim);
        builder->vector(prefix + "ffn_norm.weight", std::vector<float>(static_cast<size_t>(dim), 1.0f));
        builder->matrix(prefix + "ffn_up.weight", dim, 2 * preset.ffn_dim);
        builder->matrix(prefix + "ffn_down.weight", preset.ffn_dim, dim);
        return;
    }
    builder->matrix(prefix + "attn_q.weight", dim, q_dim);
    builder->matrix(prefix + "attn_k.weight", dim, kv_dim);
    builder->matrix(prefix + "attn_v.weight", dim, kv_dim);
    if (preset.architecture == "qwen2" || preset.architecture == "qwen2moe") {
        builder->random_vector(prefix + "attn_q.bias", q_dim);
        builder->random_vector(prefix + "attn_k.bias", kv_dim);
        builder->random_vector(prefix + "attn_v.bias", kv_dim);
    }
    const bool gemma = preset.architecture == "gemma2" || preset.architecture == "gemma3";
    if (preset.architecture == "qwen3" || preset.architecture == "qwen3moe" ||
        preset.architecture == "gemma3") {  // around 1, as trained norms are
        builder->norm_vector(prefix + "attn_q_norm.weight", q_dim / preset.num_heads);
        builder->norm_vector(prefix + "attn_k_norm.weight", q_dim / preset.num_heads);
    }
    builder->matrix(prefix + "attn_output.weight", q_dim, dim);
    builder->vector(prefix + "ffn_norm.weight", std::vector<float>(static_cast<size_t>(dim), 1.0f));
    if (gemma) {  // GGUF holds Gemma's norms as 1 + w (llama.cpp's converter adds the 1)
        builder->norm_vector(prefix + "post_attention_norm.weight", dim);
        builder->norm_vector(prefix + "post_ffw_norm.weight", dim);
    }
    if (preset.num_experts > 0) {
        builder->matrix(prefix + "ffn_gate_inp.weight", dim, preset.num_experts);
        builder->experts(prefix + "ffn_gate_exps.weight", dim, preset.expert_ffn_dim, preset.num_experts);
        builder->experts(prefix + "ffn_up_exps.weight", dim, preset.expert_ffn_dim, preset.num_experts);
        builder->experts(prefix + "ffn_down_exps.weight", preset.expert_ffn_dim, dim, preset.num_experts);
        if (preset.shared_expert_ffn_dim > 0) {
            builder->random_vector(prefix + "ffn_gate_inp_shexp.weight", dim);
            builder->matrix(prefix + "ffn_gate_shexp.weight", dim, preset.shared_expert_ffn_dim);
            builder->matrix(prefix + "ffn_up_shexp.weight", dim, preset.shared_expert_ffn_dim);
            builder->matrix(prefix + "ffn_down_shexp.weight", preset.shared_expert_ffn_dim, dim);
        }
        return;
    }
    builder->matrix(prefix + "ffn_gate.weight", dim, preset.ffn_dim);
    builder->matrix(prefix + "ffn_up.weight", dim, preset.ffn_dim);
    builder->matrix(prefix + "ffn_down.weight", preset.ffn_dim, dim);
}

}  // namespace

DType synth_tensor_type(DType requested, int64_t row_length, bool is_output) {
    DType type = requested;
    const bool low_bit = type == DType::kQ4_0 || type == DType::kQ4_1 || type == DType::kQ5_0 ||
                         type == DType::kQ5_1 || type == DType::kQ4_K || type == DType::kQ5_K;
    if (is_output && low_bit) type = DType::kQ6_K;
    if (row_length % dtype_traits(type).block_size == 0) return type;
    switch (type) {
        case DType::kQ4_K: type = DType::kQ5_0; break;
        case DType::kQ5_K: type = DType::kQ5_1; break;
        case DType::kQ6_K: type = DType::kQ8_0; break;
        default: type = DType::kF16; break;
    }
    return row_length % dtype_traits(type).block_size == 0 ? type : DType::kF16;
}

Status write_synth_model(const ModelPreset& preset, const SynthOptions& options, const std::string& path,
                         ThreadPool* pool) {
    if (!can_quantize(options.weight_type)) {
        return invalid_argument(fmt::format("tern cannot write {} weights; use f32, f16, bf16, q8_0, q4_0, q4_K or q6_K",
                                            dtype_name(options.weight_type)));
    }
    TERN_ASSIGN_OR_RETURN(SynthVocab vocab, make_synth_vocab(preset.vocab_size));
    // Phi-3's chat tokens end its vocabulary (llama.cpp's loader looks them up by text for this architecture).
    if (preset.architecture == "phi3") replace_last_tokens(&vocab, {"<|endoftext|>", "<|assistant|>", "<|system|>",
                                                                   "<|end|>", "<|user|>"});
    if (options.successor_gain < 0.0f) {
        return invalid_argument(fmt::format("a successor gain must be >= 0, got {}", options.successor_gain));
    }
    if (options.successor_gain > 0.0f && preset.tied_embeddings) {
        return invalid_argument(fmt::format("a successor gain needs a preset with its own output matrix; {} ties it "
                                            "to the embeddings", preset.name));
    }
    SynthBuilder builder(options, pool);
    add_hparams(preset, options, &builder.writer());
    add_vocab_metadata(vocab, &builder.writer());
    builder.token_embeddings(preset.embedding_dim, preset.vocab_size, preset.tied_embeddings);
    builder.vector("output_norm.weight", std::vector<float>(static_cast<size_t>(preset.embedding_dim), 1.0f));
    if (!preset.tied_embeddings) builder.output_matrix(preset.embedding_dim, preset.vocab_size);
    if (preset.llama3_rope_scaling) {
        builder.vector("rope_freqs.weight", llama3_rope_factors(preset.q_dim() / preset.num_heads,
                                                                preset.rope_freq_base, 8.0f, 1.0f, 4.0f, 8192));
    }
    if (preset.longrope_original_context > 0) {
        const int64_t head_dim = preset.q_dim() / preset.num_heads;
        const float stretch = static_cast<float>(preset.context_length) / preset.longrope_original_context;
        builder.vector("rope_factors_long.weight", longrope_factors(head_dim, stretch));
        builder.vector("rope_factors_short.weight", longrope_factors(head_dim, 2.0f));
    }
    for (int64_t layer_idx = 0; layer_idx < preset.num_layers; ++layer_idx) add_layer(preset, layer_idx, &builder);
    return builder.writer().write(path);
}

}  // namespace tern
