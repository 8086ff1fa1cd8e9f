#include "model/weights.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "base/huge_pages.h"
#include "quant/dequantize.h"

namespace tern {
namespace {

class Binder {
public:
    Binder(const GgufFile& file, const HParams& hparams, bool repack, ThreadPool* pool)
        : file_(file), hparams_(hparams), repack_(repack), pool_(pool) {}

    Status matrix(const std::string& name, int64_t row_length, int64_t num_rows, PackedWeights* out) {
        MatrixView view;
        TERN_RETURN_IF_ERROR(matrix_view(name, row_length, num_rows, &view));
        *out = pack(view);
        return Status::ok();
    }

    // The matrix repacked for the int8 kernels when its type has a packed layout, into the arena: every packed
    // matrix on huge pages, those under 2 MiB included. Alone those sat on 4 KiB pages: loading a 3.2 GB mixture
    // (3,072 experts of 0.9 MB) faulted in each page, and its decode ran at 60% of the read bandwidth for a TLB
    // miss per 4 KiB read, 101% after (scripts/bench-architectures, docs/perf/architectures.md).
    // A repacked matrix's file pages are dropped at once, so that the file's pages and the packed copy are not both
    // resident by the end of the load (a 9 GB file peaked at 18 GB); row-major ones go when copy_out_of_mapping
    // has copied them.
    PackedWeights pack(const MatrixView& view) {
        const int64_t bytes = kernels::packed_bytes(view, repack_);
        std::shared_ptr<uint8_t> destination = bytes > 0 ? arena_.allocate(static_cast<size_t>(bytes)) : nullptr;
        PackedWeights packed = kernels::pack_weights(view, repack_, std::move(destination), pool_);
        if (bytes > 0) file_.release_pages(view.data, view.num_rows * view.row_stride);
        return packed;
    }

    Status matrix_view(const std::string& name, int64_t row_length, int64_t num_rows, MatrixView* out) {
        const GgufTensorInfo* info = nullptr;
        TERN_RETURN_IF_ERROR(find(name, &info));
        if (info->dims.size() != 2 || info->dims[0] != row_length || info->dims[1] != num_rows) {
            return shape_error(*info, fmt::format("[{}, {}]", row_length, num_rows));
        }
        TERN_RETURN_IF_ERROR(computable(*info));
        *out = MatrixView{info->type, info->data, row_length, num_rows, row_bytes(info->type, row_length)};
        return Status::ok();
    }

    // A matrix stored as several stacked along its rows (phi3's attn_qkv, ffn_up): one PackedWeights per part.
    using FusedPart = std::pair<int64_t, PackedWeights*>;  // rows, where they go
    Status fused(const std::string& name, int64_t row_length, const std::vector<FusedPart>& parts) {
        int64_t total = 0;
        for (const auto& part : parts) total += part.first;
        MatrixView whole;
        TERN_RETURN_IF_ERROR(matrix_view(name, row_length, total, &whole));
        int64_t first_row = 0;
        for (const auto& [rows, out] : parts) {
            const MatrixView view{whole.type, whole.data + first_row * whole.row_stride, row_length, rows,
                                  whole.row_stride};
            *out = pack(view);
            first_row += rows;
        }
        return Status::ok();
    }

    // A 3-D tensor of num_experts matrices of num_rows rows each, one PackedWeights per expert.
    Status experts(const std::string& name, int64_t row_length, int64_t num_rows, std::vector<PackedWeights>* out) {
        const GgufTensorInfo* info = nullptr;
        TERN_RETURN_IF_ERROR(find(name, &info));
        const int64_t count = hparams_.num_experts;
        const bool shaped = info->dims.size() == 3 && info->dims[0] == row_length && info->dims[1] == num_rows &&
                            info->dims[2] == count;
        if (!shaped) {
            return shape_error(*info, fmt::format("[{}, {}, {}] ({} experts)", row_length, num_rows, count, count));
        }
        TERN_RETURN_IF_ERROR(computable(*info));
        const int64_t stride = row_bytes(info->type, row_length);
        for (int64_t expert = 0; expert < count; ++expert) {
            out->push_back(pack({info->type, info->data + expert * num_rows * stride, row_length, num_rows, stride}));
        }
        return Status::ok();
    }

    Status vector(const std::string& name, int64_t length, std::vector<float>* out, bool optional = false) {
        const GgufTensorInfo* info = file_.find_tensor(name);
        if (info == nullptr && optional) return Status::ok();
        TERN_RETURN_IF_ERROR(find(name, &info));
        if (info->dims.size() != 1 || info->dims[0] != length) return shape_error(*info, fmt::format("[{}]", length));
        if (!dtype_traits(info->type).can_dequantize) {
            return invalid_argument(fmt::format("{}: tensor '{}' has unsupported type {}", file_.path(), name,
                                                dtype_name(info->type)));
        }
        out->resize(static_cast<size_t>(length));
        dequantize_row(info->type, info->data, out->data(), length);
        return Status::ok();
    }

private:
    Status find(const std::string& name, const GgufTensorInfo** out) const {
        *out = file_.find_tensor(name);
        if (*out == nullptr) {
            return invalid_argument(fmt::format("{}: missing tensor '{}' required by architecture {}", file_.path(),
                                                name, hparams_.architecture_name));
        }
        return Status::ok();
    }

    Status computable(const GgufTensorInfo& info) const {
        if (dtype_traits(info.type).can_dequantize) return Status::ok();
        return invalid_argument(fmt::format("{}: tensor '{}' has type {}, which tern cannot compute with yet",
                                            file_.path(), info.name, dtype_name(info.type)));
    }

    Status shape_error(const GgufTensorInfo& info, const std::string& expected) const {
        std::string actual;
        for (int64_t dim : info.dims) actual += (actual.empty() ? "" : ", ") + std::to_string(dim);
        return invalid_argument(fmt::format("{}: tensor '{}' has shape [{}], expected {} from the model's metadata",
                                            file_.path(), info.name, actual, expected));
    }

    const GgufFile& file_;
    const HParams& hparams_;
    bool repack_;
    HugePageArena arena_{FirstTouch::kByCaller};  // each piece is written whole as it is packed
    ThreadPool* pool_;
};

// Phi-3: q, k and v stacked in attn_qkv, the gate and up halves of the feed-forward stacked in ffn_up (gate first, as
// Phi3MLP's gate_up_proj splits them); otherwise llama's layer.
Status bind_phi3_layer(Binder& binder, const HParams& hp, const std::string& prefix, LayerWeights* layer) {
    const int64_t dim = hp.embedding_dim;
    TERN_RETURN_IF_ERROR(binder.fused(prefix + "attn_qkv.weight", dim, {{hp.q_dim(), &layer->wq},
                                                                        {hp.kv_dim(), &layer->wk},
                                                                        {hp.kv_dim(), &layer->wv}}));
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "attn_output.weight", hp.q_dim(), dim, &layer->wo));
    TERN_RETURN_IF_ERROR(binder.vector(prefix + "ffn_norm.weight", dim, &layer->ffn_norm));
    TERN_RETURN_IF_ERROR(
        binder.fused(prefix + "ffn_up.weight", dim, {{hp.ffn_dim, &layer->w_gate}, {hp.ffn_dim, &layer->w_up}}));
    return binder.matrix(prefix + "ffn_down.weight", hp.ffn_dim, dim, &layer->w_down);
}

Status bind_layer(Binder& binder, const HParams& hp, int64_t layer_idx, LayerWeights* layer) {
    const std::string prefix = fmt::format("blk.{}.", layer_idx);
    const int64_t dim = hp.embedding_dim;
    TERN_RETURN_IF_ERROR(binder.vector(prefix + "attn_norm.weight", dim, &layer->attn_norm));
    if (hp.architecture == Architecture::kPhi3) return bind_phi3_layer(binder, hp, prefix, layer);
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "attn_q.weight", dim, hp.q_dim(), &layer->wq));
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "attn_k.weight", dim, hp.kv_dim(), &layer->wk));
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "attn_v.weight", dim, hp.kv_dim(), &layer->wv));
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "attn_output.weight", hp.q_dim(), dim, &layer->wo));
    if (hp.has_qkv_bias()) {
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "attn_q.bias", hp.q_dim(), &layer->bq));
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "attn_k.bias", hp.kv_dim(), &layer->bk));
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "attn_v.bias", hp.kv_dim(), &layer->bv));
    }
    if (hp.has_head_norms()) {
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "attn_q_norm.weight", hp.head_dim, &layer->q_norm));
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "attn_k_norm.weight", hp.head_dim, &layer->k_norm));
    }
    TERN_RETURN_IF_ERROR(binder.vector(prefix + "ffn_norm.weight", dim, &layer->ffn_norm));
    if (hp.has_post_norms()) {  // llama.cpp's names for Gemma's post_attention_layernorm / post_feedforward_layernorm
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "post_attention_norm.weight", dim, &layer->attn_post_norm));
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "post_ffw_norm.weight", dim, &layer->ffn_post_norm));
    }
    if (hp.is_moe()) {
        TERN_RETURN_IF_ERROR(binder.matrix(prefix + "ffn_gate_inp.weight", dim, hp.num_experts, &layer->router));
        const int64_t width = hp.expert_ffn_dim;
        TERN_RETURN_IF_ERROR(binder.experts(prefix + "ffn_gate_exps.weight", dim, width, &layer->expert_gate));
        TERN_RETURN_IF_ERROR(binder.experts(prefix + "ffn_up_exps.weight", dim, width, &layer->expert_up));
        TERN_RETURN_IF_ERROR(binder.experts(prefix + "ffn_down_exps.weight", width, dim, &layer->expert_down));
        if (hp.shared_expert_ffn_dim == 0) return Status::ok();
        const int64_t shared = hp.shared_expert_ffn_dim;
        TERN_RETURN_IF_ERROR(binder.vector(prefix + "ffn_gate_inp_shexp.weight", dim, &layer->shared_expert_gate));
        TERN_RETURN_IF_ERROR(binder.matrix(prefix + "ffn_gate_shexp.weight", dim, shared, &layer->w_gate));
        TERN_RETURN_IF_ERROR(binder.matrix(prefix + "ffn_up_shexp.weight", dim, shared, &layer->w_up));
        return binder.matrix(prefix + "ffn_down_shexp.weight", shared, dim, &layer->w_down);
    }
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "ffn_gate.weight", dim, hp.ffn_dim, &layer->w_gate));
    TERN_RETURN_IF_ERROR(binder.matrix(prefix + "ffn_up.weight", dim, hp.ffn_dim, &layer->w_up));
    return binder.matrix(prefix + "ffn_down.weight", hp.ffn_dim, dim, &layer->w_down);
}

// A copy of `view`'s bytes in `storage`; `view` then reads the copy, and the file's pages are dropped.
Status copy_matrix(const GgufFile& file, MatrixView* view, std::shared_ptr<uint8_t>* storage) {
    const auto bytes = static_cast<size_t>(view->num_rows * view->row_stride);
    *storage = allocate_large(bytes, FirstTouch::kByCaller);  // the copy follows at once
    if (*storage == nullptr) {
        return Status(StatusCode::kResourceExhausted, fmt::format("cannot allocate {} bytes for the weights", bytes));
    }
    std::memcpy(storage->get(), view->data, bytes);
    file.release_pages(view->data, static_cast<int64_t>(bytes));
    view->data = storage->get();
    return Status::ok();
}

// A row-major matrix gets its own copy (or shares the embedding's, when it is the tied output); a repacked one
// never reads its source again.
Status copy_packed(const GgufFile& file, const MatrixView& embedding_in_file, const ModelWeights& weights,
                   PackedWeights* packed) {
    if (packed->layout != kernels::WeightLayout::kRowMajor) {
        packed->view.data = nullptr;
        return Status::ok();
    }
    if (packed->view.data == embedding_in_file.data) {
        packed->view.data = weights.token_embedding.data;
        packed->data = weights.token_embedding_storage;
        return Status::ok();
    }
    return copy_matrix(file, &packed->view, &packed->data);
}

// The divisors of RoPE's frequencies: Llama 3.1's rope_freqs, or of Phi-3's LongRoPE pair the long factors when the
// context the caller runs exceeds the original one, else the short. llama.cpp chooses so by its context size (and
// prefers rope_freqs where a file has both); Hugging Face switches per sequence length and vLLM per batch, which
// would make a request's tokens depend on how far it grows or on what else is batched.
Status bind_rope_factors(const GgufFile& file, Binder& binder, const HParams& hp, int64_t context_length,
                         std::vector<float>* factors) {
    const int64_t pairs = hp.rope_dim / 2;
    std::string chosen = "rope_freqs.weight";
    if (file.find_tensor(chosen) != nullptr) {
        TERN_RETURN_IF_ERROR(binder.vector(chosen, pairs, factors));
    } else if (file.find_tensor("rope_factors_long.weight") || file.find_tensor("rope_factors_short.weight")) {
        std::vector<float> long_factors, short_factors;  // both checked, one used
        TERN_RETURN_IF_ERROR(binder.vector("rope_factors_long.weight", pairs, &long_factors));
        TERN_RETURN_IF_ERROR(binder.vector("rope_factors_short.weight", pairs, &short_factors));
        const bool long_context = (context_length > 0 ? context_length : hp.context_length) > hp.rope_original_context;
        chosen = long_context ? "rope_factors_long.weight" : "rope_factors_short.weight";
        *factors = long_context ? std::move(long_factors) : std::move(short_factors);
    }
    for (float factor : *factors) {
        if (!(factor > 0.0f && std::isfinite(factor))) {
            return invalid_argument(fmt::format("{}: tensor '{}' holds {}; RoPE factors must be positive and finite",
                                                file.path(), chosen, factor));
        }
    }
    return Status::ok();
}

}  // namespace

Status copy_out_of_mapping(const GgufFile& file, ModelWeights* weights) {
    const MatrixView embedding_in_file = weights->token_embedding;
    TERN_RETURN_IF_ERROR(copy_matrix(file, &weights->token_embedding, &weights->token_embedding_storage));
    TERN_RETURN_IF_ERROR(copy_packed(file, embedding_in_file, *weights, &weights->output));
    for (LayerWeights& layer : weights->layers) {
        for (PackedWeights* matrix : {&layer.wq, &layer.wk, &layer.wv, &layer.wo, &layer.w_gate, &layer.w_up,
                                      &layer.w_down, &layer.router}) {
            if (matrix->view.num_rows == 0) continue;  // a dense or an expert feed-forward's, not both
            TERN_RETURN_IF_ERROR(copy_packed(file, embedding_in_file, *weights, matrix));
        }
        for (auto* experts : {&layer.expert_gate, &layer.expert_up, &layer.expert_down}) {
            for (PackedWeights& matrix : *experts) {
                TERN_RETURN_IF_ERROR(copy_packed(file, embedding_in_file, *weights, &matrix));
            }
        }
    }
    return Status::ok();
}

Result<ModelWeights> bind_weights(const GgufFile& file, HParams* hparams, bool repack, int64_t context_length,
                                  ThreadPool* pool) {
    const GgufTensorInfo* embedding = file.find_tensor("token_embd.weight");
    if (embedding == nullptr || embedding->dims.size() != 2) {
        return invalid_argument(file.path() + ": missing 2-D tensor 'token_embd.weight'");
    }
    hparams->vocab_size = embedding->dims[1];
    Binder binder(file, *hparams, repack, pool);
    ModelWeights weights;
    TERN_RETURN_IF_ERROR(binder.matrix_view("token_embd.weight", hparams->embedding_dim, hparams->vocab_size,
                                            &weights.token_embedding));
    TERN_RETURN_IF_ERROR(binder.vector("output_norm.weight", hparams->embedding_dim, &weights.output_norm));
    weights.output_tied = file.find_tensor("output.weight") == nullptr;
    if (weights.output_tied) {
        weights.output = kernels::pack_weights(weights.token_embedding, repack, nullptr, pool);
    } else {
        TERN_RETURN_IF_ERROR(
            binder.matrix("output.weight", hparams->embedding_dim, hparams->vocab_size, &weights.output));
    }
    TERN_RETURN_IF_ERROR(bind_rope_factors(file, binder, *hparams, context_length, &weights.rope_freq_factors));
    weights.layers.resize(static_cast<size_t>(hparams->num_layers));
    for (int64_t layer_idx = 0; layer_idx < hparams->num_layers; ++layer_idx) {
        TERN_RETURN_IF_ERROR(bind_layer(binder, *hparams, layer_idx, &weights.layers[static_cast<size_t>(layer_idx)]));
    }
    return weights;
}

}  // namespace tern
