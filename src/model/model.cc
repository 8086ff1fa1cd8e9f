#include "model/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_kernels.h"
#include "model/workspace.h"
#include "quant/dequantize.h"

namespace tern {
namespace {

bool needs_q8(const PackedWeights& weights) { return kernels::needs_q8_activations(weights); }

void add_bias(const std::vector<float>& bias, int64_t num_tokens, float* y) {
    if (bias.empty()) return;
    const int64_t width = static_cast<int64_t>(bias.size());
    for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
        for (int64_t idx = 0; idx < width; ++idx) y[token_idx * width + idx] += bias[static_cast<size_t>(idx)];
    }
}

}  // namespace

Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelOptions& options) {
    std::unique_ptr<Model> model(new Model());
    TERN_ASSIGN_OR_RETURN(model->file_, GgufFile::open(path));
    TERN_ASSIGN_OR_RETURN(model->hparams_, hparams_from_gguf(*model->file_));
    TERN_ASSIGN_OR_RETURN(model->weights_, bind_weights(*model->file_, &model->hparams_, options.repack));
    // Chosen (and logged) only once a model is known to be usable.
    model->kernels_ = options.kernels != nullptr ? options.kernels : &kernels::kernels();
    model->workspace_ = std::make_unique<Workspace>();
    return model;
}

// Prepares the input rows of the next matmuls (quantized to 8 bits when `quantize`): q/k/v share one
// preparation, as do gate/up.
void Model::prepare_input(const float* x, int64_t num_tokens, int64_t length, bool quantize) {
    kernels::prepare_activations(*kernels_, x, num_tokens, length, length, quantize, &workspace_->activations);
}

// y[T, rows] = input . W^T, split over work units (rows or 16-row groups) across the pool.
void Model::matmul(const PackedWeights& weights, float* y, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    TERN_CHECK(ws.activations.length == weights.view.row_length) << "matmul input does not match the weights";
    TERN_CHECK(ws.activations.has_q8 || !kernels::needs_q8_activations(weights)) << "matmul input not quantized";
    pool->parallel_for(weights.num_work_units(), [&](int64_t begin, int64_t end, int thread_idx) {
        kernels::matmul(*kernels_, weights, ws.activations, begin, end, y, weights.view.num_rows,
                        ws.thread_row_scratch(thread_idx));
    });
}

Status Model::validate(const TokenBatch& batch, const KvCache& cache) const {
    const size_t count = batch.tokens.size();
    if (batch.positions.size() != count || batch.slots.size() != count || batch.want_logits.size() != count) {
        return invalid_argument("token batch fields have different lengths");
    }
    for (size_t idx = 0; idx < count; ++idx) {
        if (batch.tokens[idx] < 0 || batch.tokens[idx] >= hparams_.vocab_size) {
            return invalid_argument(fmt::format("token id {} is outside the vocabulary [0, {})", batch.tokens[idx],
                                                hparams_.vocab_size));
        }
        if (batch.slots[idx] < 0 || batch.slots[idx] >= cache.num_slots()) {
            return invalid_argument(fmt::format("KV slot {} does not exist ({} slots)", batch.slots[idx],
                                                cache.num_slots()));
        }
        if (batch.positions[idx] < 0 || batch.positions[idx] >= cache.max_tokens()) {
            return invalid_argument(fmt::format("position {} is beyond the KV cache's {} tokens per sequence",
                                                batch.positions[idx], cache.max_tokens()));
        }
    }
    return Status::ok();
}

Status Model::forward(const TokenBatch& batch, KvCache* cache, ThreadPool* pool, std::vector<float>* logits) {
    TERN_RETURN_IF_ERROR(validate(batch, *cache));
    const HParams& hp = hparams_;
    const int64_t num_tokens = batch.size();
    Workspace& ws = *workspace_;
    ws.reserve(hp, num_tokens, cache->max_tokens(), pool->num_threads());
    if (num_tokens == 0) {
        logits->clear();
        return Status::ok();
    }
    for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
        dequantize_row(weights_.token_embedding.type, weights_.token_embedding.row(batch.tokens[token_idx]),
                       ws.hidden.data() + token_idx * hp.embedding_dim, hp.embedding_dim);
    }
    ws.fill_rope_tables(hp, batch.positions, weights_.rope_freq_factors);
    for (int64_t layer_idx = 0; layer_idx < hp.num_layers; ++layer_idx) {
        attention_block(layer_idx, batch, cache, pool);
        feed_forward_block(layer_idx, num_tokens, pool);
    }
    return compute_logits(batch, pool, logits);
}

void Model::attention_block(int64_t layer_idx, const TokenBatch& batch, KvCache* cache, ThreadPool* pool) {
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    const int64_t num_tokens = batch.size();
    for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
        kernels_->rms_norm(ws.hidden.data() + token_idx * hp.embedding_dim, layer.attn_norm.data(),
                               hp.embedding_dim, hp.rms_norm_eps, ws.normed.data() + token_idx * hp.embedding_dim);
    }
    prepare_input(ws.normed.data(), num_tokens, hp.embedding_dim,
                  needs_q8(layer.wq) || needs_q8(layer.wk) || needs_q8(layer.wv));
    matmul(layer.wq, ws.q.data(), pool);
    matmul(layer.wk, ws.k.data(), pool);
    matmul(layer.wv, ws.v.data(), pool);
    add_bias(layer.bq, num_tokens, ws.q.data());
    add_bias(layer.bk, num_tokens, ws.k.data());
    add_bias(layer.bv, num_tokens, ws.v.data());
    apply_rope_and_store(layer_idx, batch, cache);
    attend(layer_idx, batch, cache, pool);
    prepare_input(ws.attn_out.data(), num_tokens, hp.q_dim(), needs_q8(layer.wo));
    matmul(layer.wo, ws.normed.data(), pool);
    for (int64_t idx = 0; idx < num_tokens * hp.embedding_dim; ++idx) ws.hidden[idx] += ws.normed[idx];
}

void Model::apply_rope_and_store(int64_t layer_idx, const TokenBatch& batch, KvCache* cache) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    const bool pair_halves = hp.rope_style == RopeStyle::kHalves;
    const int64_t half = hp.rope_dim / 2;
    for (int64_t token_idx = 0; token_idx < batch.size(); ++token_idx) {
        const float* cos_table = ws.rope_cos.data() + token_idx * half;
        const float* sin_table = ws.rope_sin.data() + token_idx * half;
        float* q = ws.q.data() + token_idx * hp.q_dim();
        float* k = ws.k.data() + token_idx * hp.kv_dim();
        for (int64_t head_idx = 0; head_idx < hp.num_heads; ++head_idx) {
            kernels::ref::rope(q + head_idx * hp.head_dim, hp.rope_dim, cos_table, sin_table, pair_halves);
        }
        for (int64_t head_idx = 0; head_idx < hp.num_kv_heads; ++head_idx) {
            kernels::ref::rope(k + head_idx * hp.head_dim, hp.rope_dim, cos_table, sin_table, pair_halves);
        }
        const int64_t slot = batch.slots[token_idx];
        const int64_t position = batch.positions[token_idx];
        std::copy_n(k, hp.kv_dim(), cache->keys(layer_idx, slot, position));
        std::copy_n(ws.v.data() + token_idx * hp.kv_dim(), hp.kv_dim(), cache->values(layer_idx, slot, position));
    }
}

void Model::attend(int64_t layer_idx, const TokenBatch& batch, KvCache* cache, ThreadPool* pool) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    const int64_t group_size = hp.num_heads / hp.num_kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    // One work unit: the query heads of one token that share a KV head, so each key is read once for them all.
    pool->parallel_for(batch.size() * hp.num_kv_heads, [&](int64_t begin, int64_t end, int thread_idx) {
        for (int64_t work_idx = begin; work_idx < end; ++work_idx) {
            const int64_t token_idx = work_idx / hp.num_kv_heads;
            const int64_t kv_head = work_idx % hp.num_kv_heads;
            const int64_t kv_offset = kv_head * hp.head_dim;
            const int64_t q_offset = token_idx * hp.q_dim() + kv_head * group_size * hp.head_dim;
            const int64_t slot = batch.slots[token_idx];
            kernels_->attention_group(ws.q.data() + q_offset, hp.head_dim, group_size,
                                      cache->keys(layer_idx, slot, 0) + kv_offset,
                                      cache->values(layer_idx, slot, 0) + kv_offset, cache->kv_dim(),
                                      batch.positions[token_idx] + 1, hp.head_dim, scale, ws.attn_out.data() + q_offset,
                                      hp.head_dim, ws.thread_scores(thread_idx));
        }
    });
}

void Model::feed_forward_block(int64_t layer_idx, int64_t num_tokens, ThreadPool* pool) {
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
        kernels_->rms_norm(ws.hidden.data() + token_idx * hp.embedding_dim, layer.ffn_norm.data(),
                               hp.embedding_dim, hp.rms_norm_eps, ws.normed.data() + token_idx * hp.embedding_dim);
    }
    prepare_input(ws.normed.data(), num_tokens, hp.embedding_dim, needs_q8(layer.w_gate) || needs_q8(layer.w_up));
    matmul(layer.w_gate, ws.gate.data(), pool);
    matmul(layer.w_up, ws.up.data(), pool);
    kernels_->silu_mul(ws.gate.data(), ws.up.data(), num_tokens * hp.ffn_dim, ws.gate.data());
    prepare_input(ws.gate.data(), num_tokens, hp.ffn_dim, needs_q8(layer.w_down));
    matmul(layer.w_down, ws.normed.data(), pool);
    for (int64_t idx = 0; idx < num_tokens * hp.embedding_dim; ++idx) ws.hidden[idx] += ws.normed[idx];
}

Status Model::compute_logits(const TokenBatch& batch, ThreadPool* pool, std::vector<float>* logits) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    int64_t num_outputs = 0;
    for (int64_t token_idx = 0; token_idx < batch.size(); ++token_idx) {
        if (!batch.want_logits[token_idx]) continue;
        kernels_->rms_norm(ws.hidden.data() + token_idx * hp.embedding_dim, weights_.output_norm.data(),
                               hp.embedding_dim, hp.rms_norm_eps, ws.normed.data() + num_outputs * hp.embedding_dim);
        ++num_outputs;
    }
    logits->resize(static_cast<size_t>(num_outputs * hp.vocab_size));
    prepare_input(ws.normed.data(), num_outputs, hp.embedding_dim, needs_q8(weights_.output));
    matmul(weights_.output, logits->data(), pool);
    return Status::ok();
}

}  // namespace tern
