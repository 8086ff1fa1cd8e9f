// The feed-forward of a mixture-of-experts layer (qwen3moe). Each token's router logits, softmaxed over all experts,
// pick its num_experts_used best; their probabilities, renormalized to sum to 1 (Qwen3-MoE's norm_topk_prob, as
// llama.cpp does), weigh the experts' outputs. The step's tokens are grouped by expert, so an expert's matrices are
// read once per step however many of the tokens chose it: what makes batched decoding of an MoE model cheap.
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
    // The block's output, which the next block's norm_input adds to the hidden state.
    std::copy(ws.expert_sum.begin(), ws.expert_sum.begin() + num_tokens * dim, ws.normed.begin());
}

void Model::route_tokens(int64_t num_tokens) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    for (auto& tokens : ws.expert_tokens) tokens.clear();
    std::vector<int64_t> order(static_cast<size_t>(hp.num_experts));
    std::vector<double> probabilities(static_cast<size_t>(hp.num_experts));
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
        double chosen_sum = 0.0;
        for (int64_t rank = 0; rank < hp.num_experts_used; ++rank) chosen_sum += probabilities[static_cast<size_t>(order[rank])];
        for (int64_t rank = 0; rank < hp.num_experts_used; ++rank) {
            const int64_t expert = order[static_cast<size_t>(rank)];
            const double weight = probabilities[static_cast<size_t>(expert)] / chosen_sum;
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
    matmuls({{&gate, ws.gate.data()}, {&up, ws.up.data()}}, pool);
    kernels::reserve_activations(ws.gate.data(), count, width, width, kernels::needs_q8_activations(down),
                                 &ws.activations);
    pool->parallel_for(count, [&](int64_t begin, int64_t end, int) {
        const int64_t offset = begin * width, length = (end - begin) * width;
        kernels_->silu_mul(ws.gate.data() + offset, ws.up.data() + offset, length, ws.gate.data() + offset);
        kernels::quantize_activation_rows(*kernels_, begin, end, &ws.activations);
    });
    matmul(down, ws.expert_out.data(), pool);
    for (int64_t row = 0; row < count; ++row) {
        const auto [token, weight] = tokens[static_cast<size_t>(row)];
        float* sum = ws.expert_sum.data() + token * dim;
        const float* out = ws.expert_out.data() + row * dim;
        for (int64_t idx = 0; idx < dim; ++idx) sum[idx] += weight * out[idx];
    }
}

}  // namespace tern
