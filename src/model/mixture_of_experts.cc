// The feed-forward of a mixture-of-experts layer (qwen3moe, qwen2moe). Each token's router logits, softmaxed over all
// experts, pick its num_experts_used best; their probabilities, renormalized to sum to 1 for Qwen3-MoE
// (norm_topk_prob) and as they are for Qwen2-MoE, as llama.cpp does, weigh the experts' outputs. Qwen2-MoE adds a
// shared expert that every token runs, scaled by sigmoid(x . gate). The step's tokens are grouped by expert, so an
// expert's matrices are read once per step however many of the tokens chose it: what makes batched decoding of an
// MoE model cheap.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/model.h"
#include "model/workspace.h"

namespace tern {

void Model::expert_feed_forward(int64_t layer_idx, int64_t num_tokens, ThreadPool* pool) {
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    const int64_t dim = hp.embedding_dim;
    norm_input(ws.normed.data(), layer.ffn_norm, num_tokens, kernels::needs_q8_activations(layer.router), pool);
    matmul(layer.router, ws.router_logits.data(), pool);
    route_tokens(num_tokens);
    std::fill(ws.expert_sum.begin(), ws.expert_sum.begin() + num_tokens * dim, 0.0f);
    for (int64_t expert = 0; expert < hp.num_experts; ++expert) {
        if (!ws.expert_tokens[static_cast<size_t>(expert)].empty()) run_expert(layer, expert, pool);
    }
    if (hp.shared_expert_ffn_dim > 0) run_shared_expert(layer, num_tokens, pool);
    // The block's output, which the next block's norm_input adds to the hidden state.
    std::copy(ws.expert_sum.begin(), ws.expert_sum.begin() + num_tokens * dim, ws.normed.begin());
}

void Model::route_tokens(int64_t num_tokens) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    for (auto& tokens : ws.expert_tokens) tokens.clear();
    std::vector<int64_t>& order = ws.expert_order;
    std::vector<double>& probabilities = ws.expert_probabilities;
    for (int64_t token = 0; token < num_tokens; ++token) {
        const float* logits = ws.router_logits.data() + token * hp.num_experts;
        const float max = *std::max_element(logits, logits + hp.num_experts);
        for (int64_t expert = 0; expert < hp.num_experts; ++expert) {
            probabilities[static_cast<size_t>(expert)] = std::exp(static_cast<double>(logits[expert] - max));
        }
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + hp.num_experts_used, order.end(), [&](int64_t a, int64_t b) {
            return probabilities[static_cast<size_t>(a)] > probabilities[static_cast<size_t>(b)] ||
                   (probabilities[static_cast<size_t>(a)] == probabilities[static_cast<size_t>(b)] && a < b);
        });
        // Softmax then renormalizing over the chosen ones is the softmax over the chosen ones alone.
        const auto chosen_end = order.begin() + hp.num_experts_used;
        const double total =
            hp.renormalize_experts
                ? std::accumulate(order.begin(), chosen_end, 0.0,
                                  [&](double sum, int64_t e) { return sum + probabilities[static_cast<size_t>(e)]; })
                : std::accumulate(probabilities.begin(), probabilities.end(), 0.0);
        for (int64_t rank = 0; rank < hp.num_experts_used; ++rank) {
            const int64_t expert = order[static_cast<size_t>(rank)];
            const double weight = probabilities[static_cast<size_t>(expert)] / total;
            ws.expert_tokens[static_cast<size_t>(expert)].emplace_back(token, static_cast<float>(weight));
        }
    }
}

// One expert over the tokens that chose it: their normed rows gathered, gate and up, SiLU(gate) * up, down, and the
// result added to each token's sum at its weight.
void Model::run_expert(const LayerWeights& layer, int64_t expert, ThreadPool* pool) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    const int64_t dim = hp.embedding_dim, width = hp.expert_ffn_dim;
    const auto& tokens = ws.expert_tokens[static_cast<size_t>(expert)];
    const auto count = static_cast<int64_t>(tokens.size());
    const PackedWeights& gate = layer.expert_gate[static_cast<size_t>(expert)];
    const PackedWeights& up = layer.expert_up[static_cast<size_t>(expert)];
    const PackedWeights& down = layer.expert_down[static_cast<size_t>(expert)];
    for (int64_t row = 0; row < count; ++row) {
        const float* source = ws.normed.data() + tokens[static_cast<size_t>(row)].first * dim;
        std::copy(source, source + dim, ws.expert_in.data() + row * dim);
    }
    prepare_input(ws.expert_in.data(), count, dim,
                  kernels::needs_q8_activations(gate) || kernels::needs_q8_activations(up), pool);
    gated_ffn(gate, up, down, count, width, ws.expert_out.data(), pool);
    for (int64_t row = 0; row < count; ++row) {
        const auto [token, weight] = tokens[static_cast<size_t>(row)];
        float* sum = ws.expert_sum.data() + token * dim;
        const float* out = ws.expert_out.data() + row * dim;
        for (int64_t idx = 0; idx < dim; ++idx) sum[idx] += weight * out[idx];
    }
}

// Qwen2-MoE's shared expert over every token (still normed in ws.normed), scaled by sigmoid(x . gate).
void Model::run_shared_expert(const LayerWeights& layer, int64_t num_tokens, ThreadPool* pool) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    const int64_t dim = hp.embedding_dim;
    prepare_input(ws.normed.data(), num_tokens, dim,
                  kernels::needs_q8_activations(layer.w_gate) || kernels::needs_q8_activations(layer.w_up), pool);
    gated_ffn(layer.w_gate, layer.w_up, layer.w_down, num_tokens, hp.shared_expert_ffn_dim, ws.expert_out.data(),
              pool);
    for (int64_t token = 0; token < num_tokens; ++token) {
        const float* x = ws.normed.data() + token * dim;
        double logit = 0.0;
        for (int64_t idx = 0; idx < dim; ++idx) logit += static_cast<double>(x[idx]) * layer.shared_expert_gate[idx];
        const auto scale = static_cast<float>(1.0 / (1.0 + std::exp(-logit)));
        float* sum = ws.expert_sum.data() + token * dim;
        const float* out = ws.expert_out.data() + token * dim;
        for (int64_t idx = 0; idx < dim; ++idx) sum[idx] += scale * out[idx];
    }
}

}  // namespace tern
