// The feed-forward of a mixture-of-experts layer (qwen3moe, qwen2moe, Mixtral). Each token's router logits,
// softmaxed over all experts, pick its num_experts_used best; their probabilities, renormalized to sum to 1 for
// Qwen3-MoE and Mixtral and as they are for Qwen2-MoE, as llama.cpp does, weigh the experts' outputs. Qwen2-MoE adds
// a shared expert that every token runs, scaled by sigmoid(x . gate).
//
// The step's (token, expert) pairs are gathered into rows grouped by expert (model/expert_rows.h), and all the
// chosen experts run together: one parallel loop over every expert's gate and up work units, one for the gated
// product, one over every down: an expert's matrices are read once however many tokens chose it, and a step has
// four barriers per wave instead of four per expert. With four per expert, qwen3-30b-a3b's decode (8 experts of
// 768 rows a token) spent its threads on short streams and waits.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "model/model.h"
#include "model/work_segments.h"
#include "model/workspace.h"

namespace tern {
namespace {

// An expert's matrix of one kind (gate, up or down) for a batch.
const PackedWeights& of(const std::vector<PackedWeights>& matrices, const ExpertBatch& batch) {
    return matrices[static_cast<size_t>(batch.expert)];
}

// `count` rows of `length` prepared as one matmul input by the calling thread.
void prepare_rows(const kernels::KernelTable& table, const float* rows, int64_t count, int64_t length, bool quantize,
                  kernels::Activations* out) {
    kernels::reserve_activations(rows, count, length, length, quantize, out);
    kernels::quantize_activation_rows(table, 0, count, out);
}

// One parallel loop over the work units of every batch of a wave laid end to end, batch b owning
// units_of(batch) of them: fn(b, unit_begin, unit_end, thread_idx) for each batch's part of each thread's range.
template <typename UnitsOf, typename Fn>
void for_each_wave_unit(std::span<const ExpertBatch> wave_batches, ThreadPool* pool, UnitsOf&& units_of, Fn&& fn) {
    const auto batch_units = [&](size_t idx) { return units_of(wave_batches[idx]); };
    int64_t num_units = 0;
    for (size_t idx = 0; idx < wave_batches.size(); ++idx) num_units += batch_units(idx);
    pool->parallel_for_dynamic(num_units, [&](int64_t begin, int64_t end, int thread_idx) {
        for_each_segment_part(wave_batches.size(), batch_units, begin, end,
                              [&](size_t idx, int64_t part_begin, int64_t part_end) {
                                  fn(idx, part_begin, part_end, thread_idx);
                              });
    });
}

}  // namespace

void Model::expert_feed_forward(int64_t layer_idx, int64_t num_tokens, ThreadPool* pool) {
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    const int64_t dim = hp.embedding_dim;
    norm_input(ws.normed.data(), layer.ffn_norm, num_tokens, kernels::needs_q8_activations(layer.router), pool);
    matmul(layer.router, ws.router_logits.data(), pool);
    route_tokens(num_tokens);
    std::fill(ws.expert_sum.begin(), ws.expert_sum.begin() + num_tokens * dim, 0.0f);
    const std::vector<ExpertBatch>& batches = ws.expert_rows.batches;
    for (size_t begin = 0; begin < batches.size();) {
        const size_t end = expert_wave_end(batches, begin, ws.expert_wave_rows);
        const ExpertWave wave{{batches.data() + begin, end - begin}, batches[begin].first_row};
        assign_expert_slots(wave);
        prepare_expert_inputs(layer, wave, pool);
        expert_gate_up(layer, wave, pool);
        expert_gated_products(layer, wave, pool);
        expert_down(layer, wave, pool);
        add_expert_outputs(num_tokens, wave, pool);
        begin = end;
    }
    if (hp.shared_expert_ffn_dim > 0) run_shared_expert(layer, num_tokens, pool);
    // The block's output, which the next block's norm_input adds to the hidden state.
    std::copy(ws.expert_sum.begin(), ws.expert_sum.begin() + num_tokens * dim, ws.normed.begin());
}

void Model::route_tokens(int64_t num_tokens) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    std::vector<int64_t>& order = ws.expert_order;
    std::vector<double>& probabilities = ws.expert_probabilities;
    std::vector<float>& weights = ws.expert_weights;
    ws.expert_rows.reset(num_tokens, hp.num_experts_used);
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
            weights[static_cast<size_t>(rank)] = static_cast<float>(probabilities[static_cast<size_t>(expert)] / total);
        }
        ws.expert_rows.choose(token, order.data(), weights.data());
    }
    ws.expert_rows.group_rows(num_tokens, hp.num_experts);
}

// Which prepared-input slot each batch of the wave uses: the largest batch the first slot, and so on, so that a
// slot's buffers, which grow to the largest input they see, hold at most expert_wave_rows / (slot + 1) rows.
void Model::assign_expert_slots(const ExpertWave& wave) {
    Workspace& ws = *workspace_;
    std::vector<int64_t>& by_size = ws.expert_batches_by_size;
    by_size.resize(wave.batches.size());
    std::iota(by_size.begin(), by_size.end(), 0);
    std::stable_sort(by_size.begin(), by_size.end(), [&](int64_t a, int64_t b) {
        return wave.batches[static_cast<size_t>(a)].count > wave.batches[static_cast<size_t>(b)].count;
    });
    ws.expert_slots.resize(by_size.size());
    for (size_t slot = 0; slot < by_size.size(); ++slot) {
        ws.expert_slots[static_cast<size_t>(by_size[slot])] = static_cast<int64_t>(slot);
    }
    if (ws.expert_inputs.size() < by_size.size()) {
        ws.expert_inputs.resize(by_size.size());
        ws.expert_hidden.resize(by_size.size());
    }
}

// Each batch's rows gathered from the normed tokens to the wave's place in expert_in, and prepared for gate and up.
void Model::prepare_expert_inputs(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    const int64_t dim = hparams_.embedding_dim;
    pool->parallel_for_dynamic(static_cast<int64_t>(wave.batches.size()), [&](int64_t begin, int64_t end, int) {
        for (auto idx = static_cast<size_t>(begin); idx < static_cast<size_t>(end); ++idx) {
            const ExpertBatch& batch = wave.batches[idx];
            float* in = ws.expert_in.data() + (batch.first_row - wave.first_row) * dim;
            for (int64_t row = 0; row < batch.count; ++row) {
                const int64_t token = ws.expert_rows.row_tokens[static_cast<size_t>(batch.first_row + row)];
                std::copy_n(ws.normed.data() + token * dim, dim, in + row * dim);
            }
            const bool quantize = kernels::needs_q8_activations(of(layer.expert_gate, batch)) ||
                                  kernels::needs_q8_activations(of(layer.expert_up, batch));
            prepare_rows(*kernels_, in, batch.count, dim, quantize,
                         &ws.expert_inputs[static_cast<size_t>(ws.expert_slots[idx])]);
        }
    });
}

// Every batch's gate and up as one loop over all their work units laid end to end.
void Model::expert_gate_up(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    const int64_t width = hparams_.expert_ffn_dim;
    const auto gate = [&](const ExpertBatch& batch) -> const PackedWeights& { return of(layer.expert_gate, batch); };
    const auto up = [&](const ExpertBatch& batch) -> const PackedWeights& { return of(layer.expert_up, batch); };
    for_each_wave_unit(
        wave.batches, pool,
        [&](const ExpertBatch& batch) { return gate(batch).num_work_units() + up(batch).num_work_units(); },
        [&](size_t idx, int64_t part_begin, int64_t part_end, int thread_idx) {
            const ExpertBatch& batch = wave.batches[idx];
            const int64_t offset = (batch.first_row - wave.first_row) * width;
            const int64_t gate_units = gate(batch).num_work_units();
            const kernels::Activations& input = ws.expert_inputs[static_cast<size_t>(ws.expert_slots[idx])];
            float* scratch = ws.thread_row_scratch(thread_idx);
            if (part_begin < gate_units) {
                kernels::matmul(*kernels_, gate(batch), input, part_begin, std::min(part_end, gate_units),
                                ws.expert_gate.data() + offset, width, scratch);
            }
            if (part_end > gate_units) {
                kernels::matmul(*kernels_, up(batch), input, std::max(part_begin, gate_units) - gate_units,
                                part_end - gate_units, ws.expert_up.data() + offset, width, scratch);
            }
        });
}

// act(gate) * up of every batch's rows, prepared for down.
void Model::expert_gated_products(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    const int64_t width = hparams_.expert_ffn_dim;
    const auto gated_product = hparams_.ffn_activation == FfnActivation::kGelu ? kernels_->gelu_mul
                                                                              : kernels_->silu_mul;
    pool->parallel_for_dynamic(static_cast<int64_t>(wave.batches.size()), [&](int64_t begin, int64_t end, int) {
        for (auto idx = static_cast<size_t>(begin); idx < static_cast<size_t>(end); ++idx) {
            const ExpertBatch& batch = wave.batches[idx];
            float* hidden = ws.expert_gate.data() + (batch.first_row - wave.first_row) * width;
            const float* up = ws.expert_up.data() + (batch.first_row - wave.first_row) * width;
            gated_product(hidden, up, batch.count * width, hidden);
            const bool quantize = kernels::needs_q8_activations(of(layer.expert_down, batch));
            prepare_rows(*kernels_, hidden, batch.count, width, quantize,
                         &ws.expert_hidden[static_cast<size_t>(ws.expert_slots[idx])]);
        }
    });
}

// Every batch's down as one loop, into the wave's place in expert_out.
void Model::expert_down(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    const int64_t dim = hparams_.embedding_dim;
    for_each_wave_unit(
        wave.batches, pool,
        [&](const ExpertBatch& batch) { return of(layer.expert_down, batch).num_work_units(); },
        [&](size_t idx, int64_t part_begin, int64_t part_end, int thread_idx) {
            const ExpertBatch& batch = wave.batches[idx];
            const kernels::Activations& input = ws.expert_hidden[static_cast<size_t>(ws.expert_slots[idx])];
            float* out = ws.expert_out.data() + (batch.first_row - wave.first_row) * dim;
            kernels::matmul(*kernels_, of(layer.expert_down, batch), input, part_begin, part_end, out, dim,
                            ws.thread_row_scratch(thread_idx));
        });
}

// expert_sum[token] += weight * expert_out[row] for the wave's rows, each token's experts in id order (as one
// expert at a time added them before: the sum's rounding does not depend on which tokens share the step).
void Model::add_expert_outputs(int64_t num_tokens, const ExpertWave& wave, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    const ExpertRows& rows = ws.expert_rows;
    const ExpertBatch& last = wave.batches.back();
    const int64_t dim = hparams_.embedding_dim, end_row = last.first_row + last.count;
    pool->parallel_for(num_tokens, [&](int64_t begin, int64_t end, int) {
        for (int64_t token = begin; token < end; ++token) {
            float* sum = ws.expert_sum.data() + token * dim;
            for (int64_t j = 0; j < rows.experts_per_token; ++j) {
                const auto idx = static_cast<size_t>(token * rows.experts_per_token + j);
                const int64_t row = rows.token_rows[idx];
                if (row < wave.first_row || row >= end_row) continue;
                const float weight = rows.token_weights[idx];
                const float* out = ws.expert_out.data() + (row - wave.first_row) * dim;
                for (int64_t element = 0; element < dim; ++element) sum[element] += weight * out[element];
            }
        }
    });
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
