// Scratch buffers of one Model's forward pass. They grow to the largest batch seen and are then reused,
// so decoding allocates nothing per token.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/activations.h"
#include "model/attention_split.h"
#include "model/expert_rows.h"
#include "model/hparams.h"
#include "model/model.h"

namespace tern {

struct Model::Workspace {
    std::vector<float> hidden, normed, q, k, v, attn_out, gate, up;
    // A mixture of experts (mixture_of_experts.cc): router logits [token][expert]; a wave's gathered rows (at most
    // expert_wave_rows): inputs [row][dim], gate, up and gated product [row][expert width], outputs [row][dim]; the
    // layer's output [token][dim].
    std::vector<float> router_logits, expert_in, expert_gate, expert_up, expert_out, expert_sum;
    int64_t expert_wave_rows = 0;
    ExpertRows expert_rows;                    // the step's (token, expert) pairs grouped by expert
    std::vector<int64_t> expert_order;         // one token's experts, best first
    std::vector<double> expert_probabilities;  // one token's softmax over the experts
    std::vector<float> expert_weights;         // one token's chosen experts' weights, best first
    std::vector<int64_t> expert_slots, expert_batches_by_size;  // by batch of the wave
    std::vector<kernels::Activations> expert_inputs, expert_hidden;  // by slot: a batch's prepared gate/up, down input
    std::vector<float> rope_cos, rope_sin;  // [token][pair]
    std::vector<float> sliding_rope_cos, sliding_rope_sin;  // Gemma 3's sliding layers' own (empty: the same)
    std::vector<float> row_scratch, scores;  // per thread
    std::vector<const uint8_t*> block_pointers;  // per thread: a sequence's K blocks, then its V blocks
    int64_t row_scratch_size = 0;
    int64_t scores_size = 0;
    int64_t block_pointers_size = 0;
    int64_t capacity_tokens = -1;
    kernels::Activations activations;  // the input of the next matmuls, prepared for the kernels
    AttentionSplit attention_split;  // attention's work units and their cut between threads

    void reserve(const HParams& hp, int64_t num_tokens, int64_t max_keys, int64_t block_size, int num_threads) {
        if (num_tokens > capacity_tokens) {
            capacity_tokens = num_tokens;
            const auto size = [&](int64_t width) { return static_cast<size_t>(num_tokens * width); };
            hidden.resize(size(hp.embedding_dim));
            normed.resize(size(hp.embedding_dim));
            q.resize(size(hp.q_dim()));
            attn_out.resize(size(hp.q_dim()));
            k.resize(size(hp.kv_dim()));
            v.resize(size(hp.kv_dim()));
            const int64_t widest = std::max({hp.ffn_dim, hp.expert_ffn_dim, hp.shared_expert_ffn_dim});
            gate.resize(size(widest));
            up.resize(size(widest));
            if (hp.is_moe()) reserve_experts(hp, num_tokens);
            rope_cos.resize(size(hp.rope_dim / 2));
            rope_sin.resize(size(hp.rope_dim / 2));
            if (hp.rope_freq_base_sliding > 0.0f) {
                sliding_rope_cos.resize(size(hp.rope_dim / 2));
                sliding_rope_sin.resize(size(hp.rope_dim / 2));
            }
        }
        row_scratch_size = std::max({hp.embedding_dim, hp.q_dim(), hp.ffn_dim, hp.expert_ffn_dim, hp.num_experts,
                                     hp.shared_expert_ffn_dim});
        // Key capacity grows in powers of two from 1024, so a growing context rarely reallocates.
        int64_t key_capacity = 1024;
        while (key_capacity < max_keys) key_capacity *= 2;
        max_keys = key_capacity;
        scores_size = std::max(scores_size, max_keys + 2 * hp.head_dim);
        block_pointers_size = std::max(block_pointers_size, 2 * ((max_keys + block_size - 1) / block_size));
        const auto per_thread = [&](int64_t width) { return static_cast<size_t>(width * num_threads); };
        if (row_scratch.size() < per_thread(row_scratch_size)) row_scratch.resize(per_thread(row_scratch_size));
        if (scores.size() < per_thread(scores_size)) scores.resize(per_thread(scores_size));
        if (block_pointers.size() < per_thread(block_pointers_size)) {
            block_pointers.resize(per_thread(block_pointers_size));
        }
    }

    // A step's num_tokens * num_experts_used rows run in waves of at most expert_wave_rows: all at once up to 4,096
    // rows (decode, batched decode, short prefill), and at least num_tokens (any one expert's rows).
    void reserve_experts(const HParams& hp, int64_t num_tokens) {
        expert_wave_rows = std::max(num_tokens, std::min<int64_t>(num_tokens * hp.num_experts_used, 4096));
        const auto rows = [&](int64_t width) { return static_cast<size_t>(expert_wave_rows * width); };
        router_logits.resize(static_cast<size_t>(num_tokens * hp.num_experts));
        expert_in.resize(rows(hp.embedding_dim));
        expert_gate.resize(rows(hp.expert_ffn_dim));
        expert_up.resize(rows(hp.expert_ffn_dim));
        expert_out.resize(std::max(rows(hp.embedding_dim), static_cast<size_t>(num_tokens * hp.embedding_dim)));
        expert_sum.resize(static_cast<size_t>(num_tokens * hp.embedding_dim));
        expert_order.resize(static_cast<size_t>(hp.num_experts));
        expert_probabilities.resize(static_cast<size_t>(hp.num_experts));
        expert_weights.resize(static_cast<size_t>(hp.num_experts_used));
    }

    float* thread_row_scratch(int thread_idx) { return row_scratch.data() + thread_idx * row_scratch_size; }
    float* thread_scores(int thread_idx) { return scores.data() + thread_idx * scores_size; }
    const uint8_t** thread_block_pointers(int thread_idx) {
        return block_pointers.data() + thread_idx * block_pointers_size;
    }

    void fill_rope_tables(const HParams& hp, const std::vector<int32_t>& positions, const std::vector<float>& factors) {
        fill_rope_table(hp.rope_dim, hp.rope_freq_base, hp.rope_position_scale, hp.rope_attention_factor, positions,
                        factors, &rope_cos, &rope_sin);
        if (hp.rope_freq_base_sliding > 0.0f) {
            fill_rope_table(hp.rope_dim, hp.rope_freq_base_sliding, 1.0f, hp.rope_attention_factor, positions, {},
                            &sliding_rope_cos, &sliding_rope_sin);
        }
    }

    // magnitude * cos/sin of position * scale * base^(-2i/rope_dim) / factor[i] for every token and rotation pair.
    // A magnitude other than 1 (LongRoPE's attention factor) scales q and k alike, so every score by its square.
    static void fill_rope_table(int64_t rope_dim, float base, float position_scale, float magnitude,
                                const std::vector<int32_t>& positions, const std::vector<float>& factors,
                                std::vector<float>* cos, std::vector<float>* sin) {
        const int64_t half = rope_dim / 2;
        for (size_t token_idx = 0; token_idx < positions.size(); ++token_idx) {
            const double position = static_cast<double>(positions[token_idx]) * position_scale;
            for (int64_t pair_idx = 0; pair_idx < half; ++pair_idx) {
                double frequency = std::pow(static_cast<double>(base),
                                            -2.0 * static_cast<double>(pair_idx) / static_cast<double>(rope_dim));
                if (!factors.empty()) frequency /= factors[static_cast<size_t>(pair_idx)];
                const double angle = position * frequency;
                (*cos)[token_idx * half + pair_idx] = static_cast<float>(magnitude * std::cos(angle));
                (*sin)[token_idx * half + pair_idx] = static_cast<float>(magnitude * std::sin(angle));
            }
        }
    }
};

}  // namespace tern
