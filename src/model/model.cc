#include "model/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "base/fp16.h"

#include "model/work_segments.h"
#include "model/workspace.h"
#include "quant/dequantize.h"
#include "trace/trace.h"
#include "quant/quantize.h"

namespace tern {
namespace {

bool needs_q8(const PackedWeights& weights) { return kernels::needs_q8_activations(weights); }

// Adds `bias` (empty: none) to one token's row.
void add_bias(const std::vector<float>& bias, float* row) {
    for (size_t idx = 0; idx < bias.size(); ++idx) row[idx] += bias[idx];
}

// Writes one position's K or V row in the cache's element type.
void store_kv_row(KvType type, const float* row, int64_t length, uint8_t* destination) {
    switch (type) {
        case KvType::kF32:
            std::memcpy(destination, row, static_cast<size_t>(length) * sizeof(float));
            return;
        case KvType::kF16: {
            auto* halves = reinterpret_cast<uint16_t*>(destination);
            for (int64_t idx = 0; idx < length; ++idx) halves[idx] = fp32_to_fp16(row[idx]);
            return;
        }
        case KvType::kQ8_0:
            quantize_row_q8_0(row, reinterpret_cast<BlockQ8_0*>(destination), length);
            return;
    }
}

}  // namespace

Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelOptions& options) {
    std::unique_ptr<Model> model(new Model());
    TERN_ASSIGN_OR_RETURN(model->file_, GgufFile::open(path));
    TERN_ASSIGN_OR_RETURN(model->hparams_, hparams_from_gguf(*model->file_));
    {
        // Every hardware thread repacks: packing is a pass over every weight byte, and one thread took 7 of the 10 s
        // before an 8 GB model's first token (docs/perf/big-model.md).
        ThreadPool pool(std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
        TERN_ASSIGN_OR_RETURN(model->weights_, bind_weights(*model->file_, &model->hparams_, options.repack,
                                                            options.context_length, &pool));
    }
    TERN_RETURN_IF_ERROR(copy_out_of_mapping(*model->file_, &model->weights_));
    model->kv_groups_ = kv_groups_for(model->hparams_);
    model->single_group_ = single_kv_group(model->hparams_);
    model->file_->release_mapping();
    // Chosen (and logged) only once a model is known to be usable.
    model->kernels_ = options.kernels != nullptr ? options.kernels : &kernels::kernels();
    model->workspace_ = std::make_unique<Workspace>();
    return model;
}

// Prepares the input rows of the next matmuls (quantized to 8 bits when `quantize`, tokens split across the
// pool): q/k/v share one preparation, as do gate/up.
void Model::prepare_input(const float* x, int64_t num_tokens, int64_t length, bool quantize, ThreadPool* pool) {
    kernels::Activations& activations = workspace_->activations;
    kernels::reserve_activations(x, num_tokens, length, length, quantize, &activations);
    if (!quantize) return;
    pool->parallel_for(num_tokens, [&](int64_t begin, int64_t end, int) {
        kernels::quantize_activation_rows(*kernels_, begin, end, &activations);
    });
}

// The opening of each block, per token across the pool: hidden += delta (the previous block's output, when
// given), normed = rms_norm(hidden) * norm_weight, and normed's 8-bit copy for the block's first matmuls.
void Model::norm_input(const float* delta, const std::vector<float>& norm_weight, int64_t num_tokens, bool quantize,
                       ThreadPool* pool) {
    const int64_t dim = hparams_.embedding_dim;
    Workspace& ws = *workspace_;
    kernels::reserve_activations(ws.normed.data(), num_tokens, dim, dim, quantize, &ws.activations);
    pool->parallel_for(num_tokens, [&](int64_t begin, int64_t end, int) {
        for (int64_t token_idx = begin; token_idx < end; ++token_idx) {
            add_and_norm(token_idx, delta, norm_weight, ws.normed.data() + token_idx * dim);
        }
        kernels::quantize_activation_rows(*kernels_, begin, end, &ws.activations);
    });
}

// One token: hidden += delta (when given), then out = rms_norm(hidden) * norm_weight. `out` may be delta's row:
// the row is read whole before it is written.
void Model::add_and_norm(int64_t token_idx, const float* delta, const std::vector<float>& norm_weight, float* out) {
    const int64_t dim = hparams_.embedding_dim;
    float* hidden = workspace_->hidden.data() + token_idx * dim;
    if (delta != nullptr) {
        for (int64_t idx = 0; idx < dim; ++idx) hidden[idx] += delta[token_idx * dim + idx];
    }
    kernels_->rms_norm(hidden, norm_weight.data(), dim, hparams_.rms_norm_eps, out);
}

// y[T, rows] = input . W^T, split over work units (rows or 16-row groups) across the pool.
void Model::matmul(const PackedWeights& weights, float* y, ThreadPool* pool) { matmuls({{&weights, y}}, pool); }

// Several products of the same input (q/k/v, gate/up) as one loop over their work units laid end to end: one
// barrier instead of one per product, and the threads' shares balance over the whole instead of over each part.
void Model::matmuls(std::initializer_list<MatmulOutput> outputs, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    int64_t num_units = 0;
    for (const MatmulOutput& output : outputs) {
        TERN_CHECK(ws.activations.length == output.weights->view.row_length)
            << "matmul input does not match the weights";
        TERN_CHECK(ws.activations.has_q8 || !kernels::needs_q8_activations(*output.weights))
            << "matmul input not quantized";
        num_units += output.weights->num_work_units();
    }
    const auto units_of = [&](size_t idx) { return outputs.begin()[idx].weights->num_work_units(); };
    trace::Span span("matmul", "model");
    int64_t bytes = 0;
    for (const MatmulOutput& output : outputs) bytes += output.weights->view.row_stride * output.weights->view.num_rows;
    span.arg("bytes", bytes);
    pool->parallel_for_dynamic(num_units, [&](int64_t begin, int64_t end, int thread_idx) {
        const auto run_part = [&](size_t idx, int64_t part_begin, int64_t part_end) {
            const MatmulOutput& output = outputs.begin()[idx];
            kernels::matmul(*kernels_, *output.weights, ws.activations, part_begin, part_end, output.y,
                            output.weights->view.num_rows, ws.thread_row_scratch(thread_idx));
        };
        for_each_segment_part(outputs.size(), units_of, begin, end, run_part);
    });
}

Status Model::validate(const TokenBatch& batch, const KvCache& cache) const {
    const size_t count = batch.tokens.size();
    if (batch.positions.size() != count || batch.slots.size() != count || batch.want_logits.size() != count ||
        batch.want_hidden.size() != count) {
        return invalid_argument("token batch fields have different lengths");
    }
    for (size_t idx = 0; idx < count; ++idx) {
        if (batch.tokens[idx] < 0 || batch.tokens[idx] >= hparams_.vocab_size) {
            return invalid_argument(fmt::format("token id {} is outside the vocabulary [0, {})", batch.tokens[idx],
                                                hparams_.vocab_size));
        }
        if (batch.positions[idx] < 0) return invalid_argument("negative position in token batch");
    }
    return validate_tables(batch, cache);
}

// The batch's tables are one per KV group of the model, or one (a cache whose blocks hold every layer); the
// cache's blocks must hold as many layers as those groups put in a block.
Status Model::select_groups(const TokenBatch& batch, const KvCache& cache) {
    const bool grouped = batch.num_sequences() > 0 && batch.num_groups != 1;
    if (grouped && batch.num_groups != kv_groups_.num_groups()) {
        return invalid_argument(fmt::format("the batch has {} block tables per sequence; this model has {} KV groups",
                                            batch.num_groups, kv_groups_.num_groups()));
    }
    groups_ = grouped ? &kv_groups_ : &single_group_;
    if (cache.layers_per_block() != groups_->layers_per_block) {
        return invalid_argument(fmt::format("the KV cache's blocks hold {} layers; {} table(s) per sequence need {}",
                                            cache.layers_per_block(), batch.num_groups, groups_->layers_per_block));
    }
    return Status::ok();
}

// Every token's position must fall inside its sequence's block tables, and every block must exist.
Status Model::validate_tables(const TokenBatch& batch, const KvCache& cache) const {
    const int64_t num_sequences = batch.num_sequences() > 0 ? batch.num_sequences() : cache.num_slots();
    if (batch.num_groups < 1 ||
        (!batch.table_starts.empty() && (batch.table_starts.size() - 1) % static_cast<size_t>(batch.num_groups) != 0)) {
        return invalid_argument("the batch's block tables are not one per KV group of each sequence");
    }
    for (size_t idx = 0; idx < batch.tokens.size(); ++idx) {
        if (batch.slots[idx] < 0 || batch.slots[idx] >= num_sequences) {
            return invalid_argument(fmt::format("sequence {} does not exist ({} in the batch or cache)",
                                                batch.slots[idx], num_sequences));
        }
        for (int64_t group = 0; group < groups_->num_groups(); ++group) {
            const auto table = block_table(batch, cache, static_cast<int64_t>(idx), group);
            if (batch.positions[idx] >= static_cast<int64_t>(table.size()) * cache.block_size()) {
                return invalid_argument(fmt::format("position {} is beyond its sequence's {} KV blocks of {} tokens",
                                                    batch.positions[idx], table.size(), cache.block_size()));
            }
        }
    }
    for (int32_t block : batch.block_ids) {
        if (block < 0 || block >= cache.num_blocks()) {
            return invalid_argument(fmt::format("KV block {} does not exist ({} blocks)", block, cache.num_blocks()));
        }
    }
    return Status::ok();
}

std::span<const int32_t> Model::block_table(const TokenBatch& batch, const KvCache& cache, int64_t token_idx,
                                            int64_t group) const {
    const int32_t sequence = batch.slots[static_cast<size_t>(token_idx)];
    if (batch.num_sequences() == 0) return cache.slot_block_table(sequence);
    const auto index = static_cast<size_t>(sequence * batch.num_groups + group);
    const int32_t begin = batch.table_starts[index];
    const int32_t end = batch.table_starts[index + 1];
    return {batch.block_ids.data() + begin, static_cast<size_t>(end - begin)};
}

// Each token's embedding row, dequantized (and scaled by sqrt(d) for Gemma), into ws.hidden.
void Model::embed_tokens(const TokenBatch& batch) {
    trace::Span span("embed", "model");
    const HParams& hp = hparams_;
    for (int64_t token_idx = 0; token_idx < batch.size(); ++token_idx) {
        float* row = workspace_->hidden.data() + token_idx * hp.embedding_dim;
        dequantize_row(weights_.token_embedding.type, weights_.token_embedding.row(batch.tokens[token_idx]), row,
                       hp.embedding_dim);
        if (hp.embedding_scale != 1.0f) {
            for (int64_t idx = 0; idx < hp.embedding_dim; ++idx) row[idx] *= hp.embedding_scale;
        }
    }
}

int64_t Model::stored_weight_bytes() const {
    int64_t total = 0;
    for (const GgufTensorInfo& info : file_->tensors()) total += info.num_bytes;
    return total;
}

Status Model::forward(const TokenBatch& batch, KvCache* cache, ThreadPool* pool, std::vector<float>* logits,
                      std::vector<float>* hidden) {
    TERN_RETURN_IF_ERROR(select_groups(batch, *cache));
    TERN_RETURN_IF_ERROR(validate(batch, *cache));
    const HParams& hp = hparams_;
    const int64_t num_tokens = batch.size();
    Workspace& ws = *workspace_;
    int64_t max_keys = 0;
    for (int32_t position : batch.positions) max_keys = std::max<int64_t>(max_keys, position + 1);
    ws.reserve(hp, num_tokens, max_keys, cache->block_size(), pool->num_threads());
    if (num_tokens == 0) {
        logits->clear();
        if (hidden != nullptr) hidden->clear();
        return Status::ok();
    }
    embed_tokens(batch);
    ws.fill_rope_tables(hp, batch.positions, weights_.rope_freq_factors);
    // As many parts as parallel_for_dynamic hands out, each taken by whichever thread is free.
    ws.attention_split.build(batch.positions, batch.slots, hp.num_kv_heads,
                             static_cast<int>(pool->num_dynamic_ranges()));
    // Each block leaves its output in ws.normed; the next block's opening adds it to ws.hidden.
    for (int64_t layer_idx = 0; layer_idx < hp.num_layers; ++layer_idx) {
        {
            trace::Span span("attention", "model");
            span.arg("layer", layer_idx);
            attention_block(layer_idx, batch, cache, pool);
        }
        trace::Span span("ffn", "model");
        span.arg("layer", layer_idx);
        feed_forward_block(layer_idx, num_tokens, pool);
    }
    trace::Span span("output", "model");
    return compute_outputs(batch, pool, logits, hidden);
}

void Model::attention_block(int64_t layer_idx, const TokenBatch& batch, KvCache* cache, ThreadPool* pool) {
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    const int64_t num_tokens = batch.size();
    norm_input(layer_idx > 0 ? ws.normed.data() : nullptr, layer.attn_norm, num_tokens,
               needs_q8(layer.wq) || needs_q8(layer.wk) || needs_q8(layer.wv), pool);
    matmuls({{&layer.wq, ws.q.data()}, {&layer.wk, ws.k.data()}, {&layer.wv, ws.v.data()}}, pool);
    pool->parallel_for(num_tokens, [&](int64_t begin, int64_t end, int) {
        for (int64_t token_idx = begin; token_idx < end; ++token_idx) {
            rope_and_store(layer_idx, batch, token_idx, cache);
        }
    });
    attend(layer_idx, batch, cache, pool);
    prepare_input(ws.attn_out.data(), num_tokens, hp.q_dim(), needs_q8(layer.wo), pool);
    matmul(layer.wo, ws.normed.data(), pool);
    post_norm(layer.attn_post_norm, num_tokens, pool);
}

// Gemma's RMSNorm of a block's output rows (in ws.normed) before they join the residual stream; nothing when
// `weight` is empty (other families).
void Model::post_norm(const std::vector<float>& weight, int64_t num_tokens, ThreadPool* pool) {
    if (weight.empty()) return;
    const int64_t dim = hparams_.embedding_dim;
    float* rows = workspace_->normed.data();
    pool->parallel_for(num_tokens, [&](int64_t begin, int64_t end, int) {
        for (int64_t token_idx = begin; token_idx < end; ++token_idx) {
            float* row = rows + token_idx * dim;
            kernels_->rms_norm(row, weight.data(), dim, hparams_.rms_norm_eps, row);
        }
    });
}

// qwen3's RMSNorm of each head of one token's q or k, in place; nothing when `weight` is empty (other families).
void Model::normalize_heads(const std::vector<float>& weight, float* heads, int64_t num_heads) const {
    for (int64_t head_idx = 0; head_idx < num_heads && !weight.empty(); ++head_idx) {
        float* head = heads + head_idx * hparams_.head_dim;
        kernels_->rms_norm(head, weight.data(), hparams_.head_dim, hparams_.rms_norm_eps, head);
    }
}

// Adds the q/k/v biases of one token (qwen2) or normalizes its q and k heads (qwen3), rotates its q and k heads and
// writes its k and v rows into the cache.
void Model::rope_and_store(int64_t layer_idx, const TokenBatch& batch, int64_t token_idx, KvCache* cache) {
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    const bool pair_halves = hp.rope_style == RopeStyle::kHalves;
    const int64_t half = hp.rope_dim / 2;
    const bool own_tables = hp.rope_freq_base_sliding > 0.0f && hp.is_sliding_layer(layer_idx);
    const float* cos_table = (own_tables ? ws.sliding_rope_cos : ws.rope_cos).data() + token_idx * half;
    const float* sin_table = (own_tables ? ws.sliding_rope_sin : ws.rope_sin).data() + token_idx * half;
    float* q = ws.q.data() + token_idx * hp.q_dim();
    float* k = ws.k.data() + token_idx * hp.kv_dim();
    float* v = ws.v.data() + token_idx * hp.kv_dim();
    add_bias(layer.bq, q);
    add_bias(layer.bk, k);
    add_bias(layer.bv, v);
    normalize_heads(layer.q_norm, q, hp.num_heads);
    normalize_heads(layer.k_norm, k, hp.num_kv_heads);
    for (int64_t head_idx = 0; head_idx < hp.num_heads; ++head_idx) {
        kernels_->rope(q + head_idx * hp.head_dim, hp.rope_dim, cos_table, sin_table, pair_halves);
    }
    for (int64_t head_idx = 0; head_idx < hp.num_kv_heads; ++head_idx) {
        kernels_->rope(k + head_idx * hp.head_dim, hp.rope_dim, cos_table, sin_table, pair_halves);
    }
    const int64_t position = batch.positions[token_idx];
    const int64_t group = groups_->group_of_layer[static_cast<size_t>(layer_idx)];
    const int64_t slot = groups_->slot_of_layer[static_cast<size_t>(layer_idx)];
    const auto table = block_table(batch, *cache, token_idx, group);
    const int64_t block = table[static_cast<size_t>(position / cache->block_size())];
    const int64_t row = position % cache->block_size();
    for (int64_t head_idx = 0; head_idx < hp.num_kv_heads; ++head_idx) {
        store_kv_row(cache->type(), k + head_idx * hp.head_dim, hp.head_dim,
                     cache->key_slice(slot, block, head_idx, row));
        store_kv_row(cache->type(), v + head_idx * hp.head_dim, hp.head_dim,
                     cache->value_slice(slot, block, head_idx, row));
    }
}

void Model::attend(int64_t layer_idx, const TokenBatch& batch, KvCache* cache, ThreadPool* pool) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    const int64_t group_size = hp.num_heads / hp.num_kv_heads;
    const kernels::AttentionScoring scoring{hp.scores_scale(), hp.attention_softcap,
                                            hp.is_sliding_layer(layer_idx) ? hp.sliding_window : 0};
    const int64_t group = groups_->group_of_layer[static_cast<size_t>(layer_idx)];
    const int64_t slot = groups_->slot_of_layer[static_cast<size_t>(layer_idx)];
    // One work unit: a run of consecutive query tokens of one sequence x the query heads that share one KV head,
    // so each key is read once for them all. The threads take the parts of the cut as they come free
    // (model/attention_split.h).
    const AttentionSplit& split = ws.attention_split;
    pool->parallel_for_dynamic(split.num_parts(), [&](int64_t part_begin, int64_t part_end, int thread_idx) {
        const uint8_t** key_blocks = ws.thread_block_pointers(thread_idx);
        const uint8_t** value_blocks = key_blocks + ws.block_pointers_size / 2;
        const int64_t begin = split.part_begin(part_begin), end = split.part_begin(part_end);
        for (int64_t work_idx = begin; work_idx < end; ++work_idx) {
            const QueryRun& run = split.runs()[static_cast<size_t>(work_idx / hp.num_kv_heads)];
            const int64_t kv_head = work_idx % hp.num_kv_heads;
            const int64_t first_num_keys = batch.positions[static_cast<size_t>(run.first_token)] + 1;
            const int64_t num_keys = first_num_keys + run.num_tokens - 1;
            const auto table = block_table(batch, *cache, run.first_token, group);
            const int64_t num_blocks = (num_keys + cache->block_size() - 1) / cache->block_size();
            // Blocks before the first query's window may be the null block (released): never read.
            for (int64_t block_idx = 0; block_idx < num_blocks; ++block_idx) {
                const int32_t block = table[static_cast<size_t>(block_idx)];
                key_blocks[block_idx] = cache->key_slice(slot, block, kv_head, 0);
                value_blocks[block_idx] = cache->value_slice(slot, block, kv_head, 0);
            }
            const kernels::PagedKv kv{key_blocks, value_blocks, cache->block_size(), cache->slice_bytes(),
                                      cache->type()};
            const int64_t q_offset = run.first_token * hp.q_dim() + kv_head * group_size * hp.head_dim;
            const kernels::AttentionQueries queries{ws.q.data() + q_offset, hp.q_dim(), hp.head_dim, group_size,
                                                    run.num_tokens, first_num_keys, ws.attn_out.data() + q_offset,
                                                    hp.q_dim(), hp.head_dim};
            kernels_->attention_queries(queries, kv, hp.head_dim, scoring, ws.thread_scores(thread_idx));
        }
    });
}

void Model::feed_forward_block(int64_t layer_idx, int64_t num_tokens, ThreadPool* pool) {
    if (hparams_.is_moe()) return expert_feed_forward(layer_idx, num_tokens, pool);
    const HParams& hp = hparams_;
    const LayerWeights& layer = weights_.layers[static_cast<size_t>(layer_idx)];
    Workspace& ws = *workspace_;
    norm_input(ws.normed.data(), layer.ffn_norm, num_tokens, needs_q8(layer.w_gate) || needs_q8(layer.w_up), pool);
    gated_ffn(layer.w_gate, layer.w_up, layer.w_down, num_tokens, hp.ffn_dim, ws.normed.data(), pool);
    post_norm(layer.ffn_post_norm, num_tokens, pool);
}

// down(act(gate x) * up x) (act: SiLU or GELU) of the prepared input rows (`count` of them), `width` wide in
// between, into `out`.
void Model::gated_ffn(const PackedWeights& gate, const PackedWeights& up, const PackedWeights& down, int64_t count,
                      int64_t width, float* out, ThreadPool* pool) {
    Workspace& ws = *workspace_;
    matmuls({{&gate, ws.gate.data()}, {&up, ws.up.data()}}, pool);
    kernels::reserve_activations(ws.gate.data(), count, width, width, needs_q8(down), &ws.activations);
    pool->parallel_for(count, [&](int64_t begin, int64_t end, int) {
        const int64_t offset = begin * width, length = (end - begin) * width;
        const auto gated_product = hparams_.ffn_activation == FfnActivation::kGelu ? kernels_->gelu_mul
                                                                                   : kernels_->silu_mul;
        gated_product(ws.gate.data() + offset, ws.up.data() + offset, length, ws.gate.data() + offset);
        kernels::quantize_activation_rows(*kernels_, begin, end, &ws.activations);
    });
    matmul(down, out, pool);
}

Status Model::compute_outputs(const TokenBatch& batch, ThreadPool* pool, std::vector<float>* logits,
                              std::vector<float>* hidden) {
    const HParams& hp = hparams_;
    Workspace& ws = *workspace_;
    const int64_t dim = hp.embedding_dim;
    int64_t num_outputs = 0;
    if (hidden != nullptr) hidden->clear();
    // Row num_outputs <= token_idx of ws.normed is written only after the last block's output for it is added; a
    // token that wants only its hidden state borrows that row and leaves it to the next.
    for (int64_t token_idx = 0; token_idx < batch.size(); ++token_idx) {
        const bool wants_hidden = hidden != nullptr && batch.want_hidden[token_idx];
        if (!batch.want_logits[token_idx] && !wants_hidden) continue;
        float* row = ws.normed.data() + num_outputs * dim;
        add_and_norm(token_idx, hp.num_layers > 0 ? ws.normed.data() : nullptr, weights_.output_norm, row);
        if (wants_hidden) hidden->insert(hidden->end(), row, row + dim);
        if (batch.want_logits[token_idx]) ++num_outputs;
    }
    logits->resize(static_cast<size_t>(num_outputs * hp.vocab_size));
    prepare_input(ws.normed.data(), num_outputs, dim, needs_q8(weights_.output), pool);
    matmul(weights_.output, logits->data(), pool);
    if (hp.logit_softcap > 0.0f) soft_cap_logits(logits, pool);
    return Status::ok();
}

// Gemma 2's logits: cap * tanh(logit / cap), across the pool (a 256k vocabulary takes milliseconds on one core).
void Model::soft_cap_logits(std::vector<float>* logits, ThreadPool* pool) const {
    const float cap = hparams_.logit_softcap;
    pool->parallel_for(static_cast<int64_t>(logits->size()), [&](int64_t begin, int64_t end, int) {
        for (int64_t idx = begin; idx < end; ++idx) (*logits)[idx] = cap * std::tanh((*logits)[idx] / cap);
    });
}

}  // namespace tern
